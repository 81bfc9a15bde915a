/* The cluster's side of the API: this node's load, placement's redirects, the node list, and
 * what another node's ids and unreachable runs are told. */
#define _GNU_SOURCE
#include "api_ops.h"
#include "api_runs.h"
#include "http_internal.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* This node's figure for placement (place.h): sessions holding a slot against the limit, and the
 * grain-steps per second its running sessions ask for, per core, in millions. */
void http_own_load(const http_server *srv, place_load *out) {
  sess_totals t;
  sess_get_totals(srv->reg, &t);
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  snprintf(out->node, sizeof out->node, "%s", sess_node(srv->reg));
  out->sessions = t.workers;
  out->max_sessions = t.max_sessions;
  out->cores = cores > 0 ? (int)cores : 1;
  out->load = t.work / out->cores / 1e6;
}

/* A new session or class that placement sends to another node: 307 to /n/{node}{path}, which the
 * cluster's router takes there with the method and body (the client follows it). Only where
 * this daemon is a node with peers, and never for a request already asked of this node. */
bool http_placed_elsewhere(const http_call *k, int need, double work, const char *path,
                           http_reply *out) {
  const char *node = sess_node(k->srv->reg);
  if (!*node || k->pinned || !k->srv->place) {
    return false;
  }
  place_load fig = {.cores = 0};
  http_own_load(k->srv, &fig);
  char to[NODE_ID_MAX + 1];
  place_choose(k->srv->place, &fig, need, work, to);
  if (strcmp(to, node) == 0) {
    return false;
  }
  *out =
      http_json_reply(307, api_moved_json(to, "placed on the node with room and the least load"));
  snprintf(out->location, sizeof out->location, "/n/%s%s", to, path);
  return true;
}

/* The cluster's nodes as this one last heard them (itself first): a page lists every node's
 * sessions by asking each at /n/{node}/ through the router. */
http_reply h_nodes(const http_call *k) {
  place_load fig = {.cores = 0}, peers[PLACE_PEERS_MAX];
  http_own_load(k->srv, &fig);
  const int n = place_peers(k->srv->place, peers, PLACE_PEERS_MAX);
  return http_json_reply(200, api_nodes_json(&fig, peers, n));
}

/* In a cluster's record, a run another node left open is running only as long as that node
 * answers: the peers heard from lately (place.c) say which (api_runs.h, issue 32). */
json_t *http_runs_json(const http_server *srv, const store_run_page *page) {
  const char *self = sess_node(srv->reg);
  if (!srv->place || !*self) {
    return api_runs_json(page, NULL);
  }
  place_load peers[PLACE_PEERS_MAX];
  const char *heard[PLACE_PEERS_MAX];
  const int n = place_peers(srv->place, peers, PLACE_PEERS_MAX);
  for (int p = 0; p < n; p++) {
    heard[p] = peers[p].node;
  }
  const api_reach reach = {self, heard, n};
  return api_runs_json(page, &reach);
}

/* A session or class that is not here: on another node's id, the router's mistake (421); else
 * none such (404). */
http_reply http_not_here(const char *node, const char *id, const char *code, const char *what) {
  char of[NODE_ID_MAX + 1];
  if (*node && node_split(id, of) && strcmp(of, node) != 0) {
    return http_error(421, "wrong_node", "id", "'%.40s' belongs to node '%s', this is '%s'", id,
                      *of ? of : "(none)", node);
  }
  return http_error(404, code, "id", "no %s '%.40s'", what, id);
}
