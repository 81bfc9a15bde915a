/* Node ids and the names that carry them (server/common/node.c): what a router and a daemon must
 * agree on, including the malformed names a hostile client sends. */
#include "../support/check.h"
#include "node.h"

#include <string.h>

#define HEX "0123456789abcdef"
#define CODE "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

int main(void) {
  CHECK("n0 is an id", node_id_ok("n0"));
  CHECK("eight characters are an id", node_id_ok("abcdefgh"));
  CHECK("nine are not", !node_id_ok("abcdefghi"));
  CHECK("empty is not", !node_id_ok(""));
  CHECK("a digit first is not", !node_id_ok("0n"));
  CHECK("capitals are not (a router matches the node as it is)", !node_id_ok("N0"));
  CHECK("a dash is not", !node_id_ok("n-0"));

  char out[NODE_NAME_SIZE];
  node_join(out, sizeof out, "n12", "0123456789abcdef");
  CHECK("an id carries its node", strcmp(out, "n12-0123456789abcdef") == 0);
  node_join(out, sizeof out, "", "0123456789abcdef");
  CHECK("a lone daemon's id has no node", strcmp(out, "0123456789abcdef") == 0);
  node_join(out, sizeof out, "abcdefgh", "0123456789abcdef");
  CHECK("the longest fits NODE_NAME_SIZE", strlen(out) == 25 && strlen(out) < NODE_NAME_SIZE);
  char code[NODE_CODE_SIZE];
  node_join(code, sizeof code, "abcdefgh", "K7QX3P");
  CHECK("the longest code fits NODE_CODE_SIZE", strcmp(code, "abcdefgh-K7QX3P") == 0);

  char node[NODE_ID_MAX + 1];
  const char *rest = node_split("n3-K7QX3P", node);
  CHECK("split: a code's node", rest && strcmp(node, "n3") == 0);
  CHECK("split: the rest", rest && strcmp(rest, "K7QX3P") == 0);
  rest = node_split("0123456789abcdef", node);
  CHECK("split: no dash, no node", rest && !*node && strcmp(rest, "0123456789abcdef") == 0);
  CHECK("split: an empty node part is refused", !node_split("-abc", node));
  CHECK("split: a too long node part is refused", !node_split("abcdefghi-abc", node));
  CHECK("split: a node part with a digit first is refused", !node_split("9x-abc", node));
  CHECK("split: a node part in capitals is refused", !node_split("N3-K7QX3P", node));

  CHECK("own id", node_name_ok("n1-0123456789abcdef", "n1", 16, HEX));
  CHECK("another node's id", !node_name_ok("n2-0123456789abcdef", "n1", 16, HEX));
  CHECK("an id with a capital", !node_name_ok("n1-0123456789abcdeF", "n1", 16, HEX));
  CHECK("own code", node_name_ok("n1-K7QX3P", "n1", 6, CODE));
  CHECK("a short code", !node_name_ok("n1-K7QX3", "n1", 6, CODE));
  CHECK("a code with an O", !node_name_ok("n1-K7QXOP", "n1", 6, CODE));
  CHECK("a lone daemon's code", node_name_ok("K7QX3P", "", 6, CODE));
  CHECK("a node's code at a lone daemon", !node_name_ok("n1-K7QX3P", "", 6, CODE));
  CHECK("a lone code at a node", !node_name_ok("K7QX3P", "n1", 6, CODE));
  CHECK_DONE();
}
