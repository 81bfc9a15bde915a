/* The daemon's smaller documents, each written here once: health and readiness, the pages'
 * configuration, a node's load and the node list, a redirect to another node, a deletion, a
 * backup, the sessions list and a creation's reply, and the session stream's control messages
 * (schema/stream.md). New references. */
#ifndef GRAINLAB_API_OPS_H
#define GRAINLAB_API_OPS_H

#include "api_json.h"
#include "node.h"

#include <jansson.h>
#include <stdbool.h>

/* What a node publishes in /readyz and /api/nodes, and what placement compares (place.c reads it
 * back from a peer). */
typedef struct api_node_load {
  char node[NODE_ID_MAX + 1];
  int sessions, max_sessions; /* room: max_sessions - sessions */
  int cores;
  double load; /* grain-steps per second asked for, per core, in millions */
} api_node_load;

/* GET /healthz: {"status": "ok"}. */
json_t *api_health_json(void);
/* GET /readyz: the node's load and "ready": true. */
json_t *api_ready_json(const api_node_load *self);
/* GET /api/nodes: {"nodes": [this node's load with "self": true, then each peer's]}. */
json_t *api_nodes_json(const api_node_load *self, const api_node_load *peers, int npeers);
/* GET /api/config: the stream's port and paths, and the address students reach (NULL: not known
 * yet, or none set). */
json_t *api_config_json(int ws_port, const char *students, int max_grains);
/* A 307 to another node: {"node", "reason"}. */
json_t *api_moved_json(const char *node, const char *reason);
/* DELETE /api/sessions/{id}: {"deleted": id}. */
json_t *api_deleted_json(const char *id);
/* POST /api/admin/backup: {"path", "runs", "bytes"}. */
json_t *api_backup_json(const char *path, long runs, long long bytes);
/* GET /api/sessions: {"sessions": [...]}. */
json_t *api_sessions_json(const api_session_view *views, int n);
/* A session's creation: the session with its control token, and its viewer token where it has
 * one ("" for a public session), shown this once. */
json_t *api_created_json(const api_session_view *v, const char *token, const char *viewer_token);

/* The stream's control messages: a refused message ({"type": "error", "error": {...}}), the
 * hello with the session, the role a token gave, and the frame rate a viewer is sent. */
json_t *api_ws_error_json(const char *code, const char *field, const char *message);
json_t *api_ws_hello_json(const api_session_view *v);
json_t *api_ws_auth_json(const char *role);
json_t *api_ws_rate_json(int fps);

#endif
