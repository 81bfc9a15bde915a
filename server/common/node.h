/* A cluster node's id and the names that carry it: session and class ids ("n0-" + 16 hex) and
 * join codes ("n0-" + 6), so that a router can send each request to the node that owns it. */
#ifndef GRAINLAB_NODE_H
#define GRAINLAB_NODE_H

#include <stdbool.h>
#include <stddef.h>

#define NODE_ID_MAX 8     /* characters: [a-z][a-z0-9]* */
#define NODE_NAME_SIZE 32 /* an id with its node and NUL: 8 + '-' + 16 + 1 fits */
#define NODE_CODE_SIZE 16 /* a join code with its node and NUL: 8 + '-' + 6 + 1 fits */

/* 1..NODE_ID_MAX of [a-z0-9], starting with a letter (a DNS label's and a URL's safe subset).
 * One case only, also in codes: a router matches it as it is. */
bool node_id_ok(const char *id);

/* out = "node-rest", or rest alone when node is "" (a lone daemon). */
void node_join(char *out, size_t size, const char *node, const char *rest);

/* The node part of a name ("" when it has none, i.e. no '-') into node (NODE_ID_MAX + 1 bytes);
 * returns the rest, or NULL when the node part is not a node id. */
const char *node_split(const char *name, char *node);

/* A name of this node: its prefix (none when node is "") and rest_len characters of alphabet. */
bool node_name_ok(const char *name, const char *node, size_t rest_len, const char *alphabet);

#endif
