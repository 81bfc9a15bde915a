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
  CHECK("uppercase is not", !node_id_ok("N0"));
  CHECK("a dash is not", !node_id_ok("n-0"));

  char out[NODE_NAME_SIZE];
  node_join(out, sizeof out, "n12", false, "0123456789abcdef");
  CHECK("an id carries its node", strcmp(out, "n12-0123456789abcdef") == 0);
  node_join(out, sizeof out, "n12", true, "K7QX3P");
  CHECK("a code carries its node in capitals", strcmp(out, "N12-K7QX3P") == 0);
  node_join(out, sizeof out, "", false, "0123456789abcdef");
  CHECK("a lone daemon's id has no node", strcmp(out, "0123456789abcdef") == 0);
  node_join(out, sizeof out, "abcdefgh", false, "0123456789abcdef");
  CHECK("the longest fits NODE_NAME_SIZE", strlen(out) == 25 && strlen(out) < NODE_NAME_SIZE);

  char node[NODE_ID_MAX + 1];
  const char *rest = node_split("N3-K7QX3P", node);
  CHECK("split: a code's node, lowercased", rest && strcmp(node, "n3") == 0);
  CHECK("split: the rest", rest && strcmp(rest, "K7QX3P") == 0);
  rest = node_split("0123456789abcdef", node);
  CHECK("split: no dash, no node", rest && !*node && strcmp(rest, "0123456789abcdef") == 0);
  CHECK("split: an empty node part is refused", !node_split("-abc", node));
  CHECK("split: a too long node part is refused", !node_split("abcdefghi-abc", node));
  CHECK("split: a node part with a digit first is refused", !node_split("9x-abc", node));

  CHECK("own id", node_name_ok("n1-0123456789abcdef", "n1", false, 16, HEX));
  CHECK("another node's id", !node_name_ok("n2-0123456789abcdef", "n1", false, 16, HEX));
  CHECK("an id in capitals", !node_name_ok("N1-0123456789abcdef", "n1", false, 16, HEX));
  CHECK("own code", node_name_ok("N1-K7QX3P", "n1", true, 6, CODE));
  CHECK("a code in small letters", !node_name_ok("n1-K7QX3P", "n1", true, 6, CODE));
  CHECK("a short code", !node_name_ok("N1-K7QX3", "n1", true, 6, CODE));
  CHECK("a code with an O", !node_name_ok("N1-K7QXOP", "n1", true, 6, CODE));
  CHECK("a lone daemon's code", node_name_ok("K7QX3P", "", true, 6, CODE));
  CHECK("a node's code at a lone daemon", !node_name_ok("N1-K7QX3P", "", true, 6, CODE));
  CHECK("a lone code at a node", !node_name_ok("K7QX3P", "n1", true, 6, CODE));
  CHECK_DONE();
}
