/* A cluster node's id and the names that carry it: session and class ids ("n0-" + 16 hex) and
 * join codes ("N0-" + 6), so that a router can send each request to the node that owns it. */
#ifndef GRAINLAB_NODE_H
#define GRAINLAB_NODE_H

#include <stdbool.h>
#include <stddef.h>

#define NODE_ID_MAX 8     /* characters: [a-z][a-z0-9]* */
#define NODE_NAME_SIZE 32 /* an id with its node and NUL: 8 + '-' + 16 + 1 fits */
#define NODE_CODE_SIZE 16 /* a join code with its node and NUL: 8 + '-' + 6 + 1 fits */

/* 1..NODE_ID_MAX of [a-z0-9], starting with a letter (a DNS label's and a URL's safe subset). */
bool node_id_ok(const char *id);

/* out = "node-rest" ("NODE-rest" when upper, for codes read aloud), or rest alone when node is
 * "" (a lone daemon). */
void node_join(char *out, size_t size, const char *node, bool upper, const char *rest);

/* The node part of a name ("" when it has none, i.e. no '-'), lowercased into node (NODE_ID_MAX
 * + 1 bytes); returns the rest, or NULL when the node part is not a node id. */
const char *node_split(const char *name, char *node);

/* A name of this node: rest_len characters of alphabet after this node's prefix (none when node
 * is ""), in either case for the node when upper. */
bool node_name_ok(const char *name, const char *node, bool upper, size_t rest_len,
                  const char *alphabet);

#endif
