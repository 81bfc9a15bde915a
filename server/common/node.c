/* Node ids and the names that carry them (node.h): one spelling for sessions, classes and codes,
 * and the one parser the router's rules mirror (deploy/nginx-cluster.conf). */
#include "node.h"

#include <stdio.h>
#include <string.h>

bool node_id_ok(const char *id) {
  const size_t n = strlen(id);
  return n >= 1 && n <= NODE_ID_MAX && id[0] >= 'a' && id[0] <= 'z' &&
         strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789") == n;
}

void node_join(char *out, size_t size, const char *node, const char *rest) {
  if (*node) {
    snprintf(out, size, "%s-%s", node, rest);
  } else {
    snprintf(out, size, "%s", rest);
  }
}

const char *node_split(const char *name, char *node) {
  const char *dash = strchr(name, '-');
  node[0] = '\0';
  if (!dash) {
    return name;
  }
  const size_t n = (size_t)(dash - name);
  if (n == 0 || n > NODE_ID_MAX) {
    return NULL;
  }
  memcpy(node, name, n);
  node[n] = '\0';
  return node_id_ok(node) ? dash + 1 : NULL;
}

bool node_name_ok(const char *name, const char *node, size_t rest_len, const char *alphabet) {
  char own[NODE_ID_MAX + 1];
  const char *rest = node_split(name, own);
  return rest && strcmp(own, node) == 0 && strlen(rest) == rest_len &&
         strspn(rest, alphabet) == rest_len;
}
