/* What the HTTP layer's files share (http.c and http_*.c): a request, its reply, the call a
 * handler gets, and the helpers and handlers each file offers the others. */
#ifndef GRAINLAB_HTTP_INTERNAL_H
#define GRAINLAB_HTTP_INTERNAL_H

#include "api_route.h"
#include "http.h"

#include <jansson.h>
#include <stdbool.h>
#include <time.h>

typedef struct http_req {
  char *body;
  size_t len;
  bool too_big;
  struct timespec started; /* the request's headers were in; its body must follow in time */
} http_req;

typedef struct http_reply {
  int status;
  char *body; /* malloc'd */
  const char *type;
  char allow[64];        /* for 405 */
  char disposition[128]; /* Content-Disposition, for downloads */
  size_t len;            /* bytes of body when set (static files may hold NULs); else strlen */
  int retry_after;       /* seconds, for a 429 or a refusal that lifts; 0: no Retry-After */
  char location[64];     /* for a 307: where placement sends a creation */
} http_reply;

/* One request, as its handler sees it: the route matched, and its session when it has one. */
typedef struct http_call {
  http_server *srv;
  struct MHD_Connection *c;
  const char *method;
  const http_req *rq;
  const api_match *m;
  session *s;      /* /api/sessions/{id}/...: found, and visible to the caller */
  long long run;   /* /api/runs/{run}/...: its id */
  class_role role; /* /api/classes/{id}/...: who the caller is in the class */
  bool pinned;     /* asked of this node by name (/n/{node}/...): never placed elsewhere */
} http_call;

/* The route table: each row names its handler (http_routes.c). */
extern const api_route http_routes[];
extern const size_t http_route_count;

/* http_reply.c */
http_reply http_json_reply(int status, json_t *j);
http_reply http_api_error(const api_error *e);
http_reply http_error(int status, const char *code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
http_reply http_method_not_allowed(const char *method, const char *allow);
void http_peer_of(struct MHD_Connection *c, char out[IPLIMIT_ADDR]);
void http_client_of(const http_server *srv, struct MHD_Connection *c, char out[IPLIMIT_ADDR]);
http_reply http_too_many(const char *code, int retry_after, const char *message);
json_t *http_parse_object(struct MHD_Connection *c, const http_req *rq, http_reply *err);
const char *http_bearer(struct MHD_Connection *c);
bool http_token_is(const char *configured, const char *token);
bool http_admin_ok(const http_server *srv, const char *token);
bool http_authorized(const http_server *srv, struct MHD_Connection *c, session *s, bool admin_too,
                     http_reply *err);
bool http_store_refuses(const http_server *srv, http_reply *err);
http_reply http_store_error(const store_error *e);
double http_unix_now(void);

/* http.c */
http_reply http_server_busy(void);
bool http_held_full(const http_server *srv);

/* http_cluster.c */
void http_own_load(const http_server *srv, place_load *out);
bool http_placed_elsewhere(const http_call *k, int need, double work, const char *path,
                           http_reply *out);
http_reply h_nodes(const http_call *k);
/* The runs page as JSON, each open run of a peer not heard from lately marked unreachable. */
json_t *http_runs_json(const http_server *srv, const store_run_page *page);
http_reply http_not_here(const char *node, const char *id, const char *code, const char *what);

/* http_sessions.c */
http_reply h_scenes(const http_call *k);
http_reply http_created(session *s, const char *token, const char *viewer_token);
http_reply h_sessions_list(const http_call *k);
bool http_may_create(const http_call *k, char client[IPLIMIT_ADDR], http_reply *err);
bool http_create_rate_ok(const http_call *k, const char *client, http_reply *err);
http_reply http_create_refused(const api_error *e);
http_reply h_sessions_create(const http_call *k);
http_reply h_session_get(const http_call *k);
http_reply h_session_delete(const http_call *k);
http_reply h_session_patch(const http_call *k);
http_reply h_session_params(const http_call *k);
http_reply h_session_action(const http_call *k);
http_reply http_snapshot_reply(const http_call *k, bool run);
http_reply h_session_snapshot(const http_call *k);
http_reply h_session_scene(const http_call *k);

/* http_runs.c */
http_reply h_runs_list(const http_call *k);
http_reply h_run_get(const http_call *k);
http_reply h_run_samples(const http_call *k);
http_reply h_run_snapshot(const http_call *k);
http_reply h_run_replay(const http_call *k);
http_reply h_run_fork(const http_call *k);
bool http_run_ref(const char *node, const api_match *m, long long *out, http_reply *err);
http_reply http_runs_unmatched(const char *method, const char *url, const api_match *m);

/* http_ops.c */
http_reply h_healthz(const http_call *k);
http_reply h_readyz(const http_call *k);
http_reply h_config(const http_call *k);
http_reply h_metrics(const http_call *k);
http_reply h_backup(const http_call *k);

/* http_classes.c */
http_reply h_classes_create(const http_call *k);
http_reply h_class_get(const http_call *k);
http_reply h_class_patch(const http_call *k);
http_reply h_class_push(const http_call *k);
http_reply h_class_end(const http_call *k);
http_reply h_join_lookup(const http_call *k);
http_reply h_join(const http_call *k);

#endif
