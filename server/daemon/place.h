/* Placement in a cluster: each node polls its peers' /readyz for the load figure they publish,
 * and a new session or class goes to the node with room and the least load per core. */
#ifndef GRAINLAB_PLACE_H
#define GRAINLAB_PLACE_H

#include "api_ops.h"
#include "node.h"

#include <stdbool.h>
#include <stddef.h>

/* What a node publishes in /readyz, and what placement compares (api_ops.h). */
typedef api_node_load place_load;

typedef struct place place;

/* Polls every peer of the comma-separated list of base URLs ("http://host:port", at most
 * PLACE_PEERS_MAX; a URL that answers as this node is left out) once a second. NULL with why
 * for a malformed list. */
#define PLACE_PEERS_MAX 64
place *place_start(const char *peers, const char *self, char *why, size_t whylen);
void place_stop(place *p);

/* The node a new session (need 1, work its grain-steps per second) or class (need its groups,
 * work 0: its groups come later) goes to, given this node's own figure: the one with room for
 * need and the least load once it takes work (this node on a tie); this node when no peer has
 * answered lately. Written to out. A peer chosen is counted as holding it until its next answer,
 * so that a burst of creations does not all land on the peer that looked emptiest. */
void place_choose(place *p, const place_load *self, int need, double work,
                  char out[NODE_ID_MAX + 1]);

/* The peers last heard from (for /metrics and tests): up to max figures, their count. */
int place_peers(place *p, place_load *out, int max);

#endif
