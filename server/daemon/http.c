/* grainlabd's HTTP side on libmicrohttpd: the route table of server/api/api_route.c (documented
 * in schema/openapi.yaml) dispatched to one handler each, bounded request bodies, strict JSON into
 * typed commands (server/api/api_json.c), bearer tokens, JSON errors, and static files. */
#define _GNU_SOURCE
#include "http.h"
#include "api_class.h"
#include "api_json.h"
#include "api_route.h"
#include "log.h"
#include "snapshot.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BODY_LIMIT 16384

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

static http_reply json_reply(int status, json_t *j) {
  http_reply r = {status, api_dumps(j), "application/json", "", "", 0, 0, ""};
  json_decref(j);
  return r;
}

/* A refusal from the API's parsers, the registry or the store, as the API's JSON error. */
static http_reply api_error_reply(const api_error *e) {
  http_reply r = json_reply(e->status, api_error_json(e));
  r.retry_after = e->seconds_left > 0.0 ? (int)ceil(e->seconds_left) : 0;
  return r;
}

static http_reply error_reply(int status, const char *code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static http_reply error_reply(int status, const char *code, const char *field, const char *fmt,
                              ...) {
  api_error e = {status, code, "", "", 0.0};
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e.message, sizeof e.message, fmt, ap);
  va_end(ap);
  snprintf(e.field, sizeof e.field, "%s", field ? field : "");
  return api_error_reply(&e);
}

static http_reply method_not_allowed(const char *method, const char *allow) {
  http_reply r = error_reply(405, "method_not_allowed", "", "%s is not allowed here", method);
  snprintf(r.allow, sizeof r.allow, "%s", allow);
  return r;
}

/* Whether the request says its body is JSON: "application/json", any parameters after ';'. A
 * browser form cannot send that type to another site without a CORS preflight, which this server
 * never grants. */
/* A reply's body while its client reads it: counted against the server-wide bound on what is
 * held for readers (srv->held_max), so that clients who ask and never read cannot make the daemon
 * hold their snapshots and exports without end (issue 32). */
typedef struct held_reply {
  http_server *srv;
  char *body;
  size_t len;
} held_reply;

static void let_go(void *cls) {
  held_reply *h = cls;
  if (h->srv) {
    __atomic_sub_fetch(&h->srv->held, (unsigned long long)h->len, __ATOMIC_RELAXED);
  }
  free(h->body);
  free(h);
}

/* Replies this small always go out: an error, a page, a health check stays answerable. */
#define HELD_SMALL (64u << 10)

/* The refusal while readers hold as much as they may: it lifts as they read or go. */
static http_reply server_busy(void) {
  http_reply r = error_reply(503, "server_busy", "",
                             "this server holds as many bytes as it may for clients still "
                             "reading (max-held-reply-mb): ask again in a few seconds");
  r.retry_after = 5;
  return r;
}

/* Whether what readers hold is at the bound already (a snapshot is not worth making then). */
static bool held_full(const http_server *srv) {
  return srv->held_max > 0 &&
         __atomic_load_n(&srv->held, __ATOMIC_RELAXED) >= (unsigned long long)srv->held_max;
}

/* The body of r, counted (NULL when memory runs out); a large one past the bound is replaced by a
 * 503 with Retry-After (r and *len then describe that). */
static held_reply *hold(http_server *srv, http_reply *r, size_t *len) {
  const unsigned long long n = *len;
  unsigned long long now = 0;
  /* one reply larger than the bound goes out when nothing else is held */
  if (n > HELD_SMALL && srv->held_max > 0 &&
      (now = __atomic_add_fetch(&srv->held, n, __ATOMIC_RELAXED)) >
          (unsigned long long)srv->held_max &&
      now > n) {
    __atomic_sub_fetch(&srv->held, n, __ATOMIC_RELAXED);
    free(r->body);
    *r = server_busy();
    *len = strlen(r->body);
    return hold(srv, r, len);
  }
  held_reply *h = malloc(sizeof *h);
  if (!h) {
    if (n > HELD_SMALL && srv->held_max > 0) {
      __atomic_sub_fetch(&srv->held, n, __ATOMIC_RELAXED);
    }
    free(r->body);
    r->body = NULL;
    return NULL;
  }
  /* small replies are not counted: their count would be noise, and nothing waits on it */
  *h = (held_reply){n > HELD_SMALL && srv->held_max > 0 ? srv : NULL, r->body, n};
  return h;
}

static bool json_body_type(struct MHD_Connection *c) {
  const char *t = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
  static const char want[] = "application/json";
  if (!t || strncasecmp(t, want, sizeof want - 1) != 0) {
    return false;
  }
  const char next = t[sizeof want - 1];
  return next == '\0' || next == ';' || next == ' ' || next == '\t';
}

/* The connection's peer address. */
static void peer_of(struct MHD_Connection *c, char out[IPLIMIT_ADDR]) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  iplimit_addr(ci ? ci->client_addr : NULL, out);
}

/* The client's address, as the per-client limits know it (behind a trusted proxy, the address
 * that proxy forwarded). */
static void client_of(const http_server *srv, struct MHD_Connection *c, char out[IPLIMIT_ADDR]) {
  char peer[IPLIMIT_ADDR];
  peer_of(c, peer);
  allow_client(srv->proxies, peer,
               MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Forwarded-For"), srv->v6_bits,
               out);
}

static http_reply too_many(const char *code, int retry_after, const char *message) {
  http_reply r = error_reply(429, code, "", "%s (retry in %d s)", message, retry_after);
  r.retry_after = retry_after;
  return r;
}

/* The body as a JSON object, or an error reply. */
static json_t *parse_object(struct MHD_Connection *c, const http_req *rq, http_reply *err) {
  if (!json_body_type(c)) {
    *err = error_reply(415, "unsupported_media_type", "",
                       "request bodies are JSON, sent with \"Content-Type: application/json\"");
    return NULL;
  }
  api_error e;
  json_t *j = api_parse_object(rq->body, rq->len, &e);
  if (!j) {
    *err = api_error_reply(&e);
  }
  return j;
}

static const char *bearer(struct MHD_Connection *c) {
  const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
  if (!h || strncmp(h, "Bearer ", 7) != 0) {
    return NULL;
  }
  return h + 7;
}

/* Whether a presented token is a configured one (never when none is configured), in constant
 * time. */
static bool token_is(const char *configured, const char *token) {
  const size_t n = strlen(configured);
  if (n == 0 || !token || strlen(token) != n) {
    return false;
  }
  unsigned char diff = 0;
  for (size_t i = 0; i < n; i++) {
    diff |= (unsigned char)(configured[i] ^ token[i]);
  }
  return diff == 0;
}

static bool admin_ok(const http_server *srv, const char *token) {
  return token_is(srv->admin_token, token);
}

/* Control (or, where admin_too, admin) token check for a change; false with an error reply. */
static bool authorized(const http_server *srv, struct MHD_Connection *c, session *s, bool admin_too,
                       http_reply *err) {
  const char *t = bearer(c);
  if (!t) {
    *err = error_reply(401, "unauthorized", "",
                       "this change needs \"Authorization: Bearer "
                       "<control token>\"");
    return false;
  }
  if (sess_token_ok(s, t) || (admin_too && admin_ok(srv, t))) {
    return true;
  }
  *err = error_reply(403, "forbidden", "", "the token does not control this session");
  return false;
}

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

typedef http_reply (*http_handler)(const http_call *k);

static http_reply h_healthz(const http_call *k) {
  (void)k;
  return json_reply(200, json_pack("{s:s}", "status", "ok"));
}

/* Whether the store refuses a request that writes a new record (a session, a run) or needs what
 * is queued: while it cannot write, a 503 store_unavailable in err. Waits for what is queued
 * (bounded), so a refusal the disk has not reported yet is found before the request goes on. */
static bool store_refuses(const http_server *srv, http_reply *err) {
  char why[160];
  if (!srv->store || store_sync(srv->store, 2000) == STORE_OK) {
    return false;
  }
  store_writable(srv->store, why, sizeof why);
  *err = error_reply(503, "store_unavailable", "",
                     "the store cannot write now (%s); nothing recorded is lost, try again later",
                     why[0] ? why : "unknown");
  return true;
}

/* This node's figure for placement (place.h): sessions holding a slot against the limit, and the
 * grain-steps per second its running sessions ask for, per core, in millions. */
static void own_load(const http_server *srv, place_load *out) {
  sess_totals t;
  sess_get_totals(srv->reg, &t);
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  snprintf(out->node, sizeof out->node, "%s", sess_node(srv->reg));
  out->sessions = t.workers;
  out->max_sessions = t.max_sessions;
  out->cores = cores > 0 ? (int)cores : 1;
  out->load = t.work / out->cores / 1e6;
}

/* A node's figure as /readyz and /api/nodes say it (place.c reads it back). */
static json_t *load_json(const place_load *fig) {
  return json_pack("{s:s, s:i, s:i, s:i, s:f}", "node", fig->node, "sessions", fig->sessions,
                   "max_sessions", fig->max_sessions, "cores", fig->cores, "load", fig->load);
}

static http_reply h_readyz(const http_call *k) {
  char why[160];
  if (!__atomic_load_n(&k->srv->ready, __ATOMIC_ACQUIRE)) {
    return error_reply(503, "not_ready", "", "starting or stopping");
  }
  if (k->srv->store && !store_writable(k->srv->store, why, sizeof why)) {
    return error_reply(503, "store_unavailable", "", "the store cannot write (%s)", why);
  }
  place_load fig = {.cores = 0};
  own_load(k->srv, &fig);
  json_t *j = load_json(&fig);
  json_object_set_new(j, "ready", json_true());
  return json_reply(200, j);
}

/* A new session or class that placement sends to another node: 307 to /n/{node}{path}, which the
 * cluster's router takes there with the method and body (the client follows it). Only where
 * this daemon is a node with peers, and never for a request already asked of this node. */
static bool placed_elsewhere(const http_call *k, int need, double work, const char *path,
                             http_reply *out) {
  const char *node = sess_node(k->srv->reg);
  if (!*node || k->pinned || !k->srv->place) {
    return false;
  }
  place_load fig = {.cores = 0};
  own_load(k->srv, &fig);
  char to[NODE_ID_MAX + 1];
  place_choose(k->srv->place, &fig, need, work, to);
  if (strcmp(to, node) == 0) {
    return false;
  }
  *out = json_reply(307, json_pack("{s:s, s:s}", "node", to, "reason",
                                   "placed on the node with room and the least load"));
  snprintf(out->location, sizeof out->location, "/n/%s%s", to, path);
  return true;
}

/* The cluster's nodes as this one last heard them (itself first): a page lists every node's
 * sessions by asking each at /n/{node}/ through the router. */
static http_reply h_nodes(const http_call *k) {
  place_load fig = {.cores = 0}, peers[PLACE_PEERS_MAX];
  own_load(k->srv, &fig);
  json_t *list = json_array();
  json_t *own = load_json(&fig);
  json_object_set_new(own, "self", json_true());
  json_array_append_new(list, own);
  const int n = place_peers(k->srv->place, peers, PLACE_PEERS_MAX);
  for (int i = 0; i < n; i++) {
    json_array_append_new(list, load_json(&peers[i]));
  }
  return json_reply(200, json_pack("{s:o}", "nodes", list));
}

static http_reply h_config(const http_call *k) {
  json_t *j = json_pack("{s:i, s:s, s:s}", "ws_port", k->srv->ws_public_port, "ws_path",
                        "/ws/sessions/", "ws_class_path", "/ws/classes/");
  /* a teacher on this machine (127.0.0.1) shows the class the address its network reaches;
   * written once before ready is set (its port is known only once serving) */
  const bool set = __atomic_load_n(&k->srv->ready, __ATOMIC_ACQUIRE) && *k->srv->students;
  json_object_set_new(j, "students", set ? json_string(k->srv->students) : json_null());
  return json_reply(200, j);
}

static http_reply h_scenes(const http_call *k) {
  (void)k;
  return json_reply(200, api_scenes_json());
}

static json_t *session_json(session *s) {
  api_session_view v;
  sess_view(s, &v);
  return api_session_json(&v);
}

/* The reply to a session's creation: the session with its tokens (shown this once). */
static http_reply created(session *s, const char *token, const char *viewer_token) {
  json_t *j = session_json(s);
  json_object_set_new(j, "control_token", json_string(token));
  if (*viewer_token) {
    json_object_set_new(j, "viewer_token", json_string(viewer_token));
  }
  sess_release(s);
  return json_reply(201, j);
}

static http_reply h_sessions_list(const http_call *k) {
  /* private sessions are listed for the admin only */
  int n = 0;
  api_session_view *views = sess_list(k->srv->reg, admin_ok(k->srv, bearer(k->c)), &n);
  json_t *list = json_array();
  for (int i = 0; i < n; i++) {
    json_array_append_new(list, api_session_json(&views[i]));
  }
  free(views);
  return json_reply(200, json_pack("{s:o}", "sessions", list));
}

/* Whether the caller may create sessions (the create token, when one is set; the admin always
 * may); false with the refusal. `client` is what a new session counts against: the caller's
 * address, or "" for the admin, who is held to no per-client limit. */
static bool may_create(const http_call *k, char client[IPLIMIT_ADDR], http_reply *err) {
  const http_server *srv = k->srv;
  const char *t = bearer(k->c);
  client_of(srv, k->c, client);
  if (admin_ok(srv, t)) {
    client[0] = '\0';
    return true;
  }
  if (*srv->create_token) {
    if (!token_is(srv->create_token, t)) {
      *err = error_reply(t ? 403 : 401, t ? "forbidden" : "unauthorized", "",
                         "creating sessions on this server needs \"Authorization: Bearer <create "
                         "token>\" (or the admin token)");
      return false;
    }
  }
  return true;
}

/* The client's creation rate, taken once its request is valid (a typo costs nothing); false
 * with the refusal. */
static bool create_rate_ok(const http_call *k, const char *client, http_reply *err) {
  const int wait = *client ? iplimit_take(k->srv->creates, client, true) : 0;
  if (wait > 0) {
    *err = too_many("create_rate_limited", wait,
                    "this client has created sessions as fast as this server allows");
    return false;
  }
  return true;
}

/* A refused creation: a 429 says when to try again. */
static http_reply create_refused(const api_error *e) {
  http_reply r = api_error_reply(e);
  if (e->status == 429 && r.retry_after == 0) {
    r.retry_after = 60;
  }
  return r;
}

static http_reply h_sessions_create(const http_call *k) {
  http_reply err;
  char client[IPLIMIT_ADDR];
  if (!may_create(k, client, &err)) {
    return err;
  }
  json_t *body = parse_object(k->c, k->rq, &err);
  if (!body) {
    return err;
  }
  api_create cmd;
  api_error e;
  if (api_read_create(body, &cmd, &e) != 0) {
    json_decref(body);
    return api_error_reply(&e);
  }
  json_decref(body);
  const double work = grn_world_def_grains(&cmd.def) / GRN_STEP_SECONDS;
  if (placed_elsewhere(k, 1, work, "/api/sessions", &err) || store_refuses(k->srv, &err) ||
      !create_rate_ok(k, client, &err)) {
    return err;
  }
  char token[65], viewer_token[65];
  session *s = sess_create(k->srv->reg, &cmd.def, cmd.label, cmd.private_, *client ? client : NULL,
                           token, viewer_token, &e);
  return s ? created(s, token, viewer_token) : create_refused(&e);
}

static http_reply h_metrics(const http_call *k) {
  http_server *srv = k->srv;
  sess_totals t;
  sess_get_totals(srv->reg, &t);
  ws_stats w;
  memset(&w, 0, sizeof w);
  if (srv->ws) {
    ws_get_stats(srv->ws, &w);
  }
  char *out = NULL;
  const int n = asprintf(
      &out,
      "# HELP grainlab_sessions Live sessions.\n# TYPE grainlab_sessions gauge\n"
      "grainlab_sessions %d\n"
      "# HELP grainlab_sessions_running Sessions running or asleep.\n"
      "# TYPE grainlab_sessions_running gauge\ngrainlab_sessions_running %d\n"
      "# HELP grainlab_sessions_failed Sessions whose worker ended.\n"
      "# TYPE grainlab_sessions_failed gauge\ngrainlab_sessions_failed %d\n"
      "# HELP grainlab_sessions_created_total Sessions created.\n"
      "# TYPE grainlab_sessions_created_total counter\n"
      "grainlab_sessions_created_total %llu\n"
      "# HELP grainlab_worker_failures_total Workers that crashed, hung or broke a limit.\n"
      "# TYPE grainlab_worker_failures_total counter\ngrainlab_worker_failures_total %llu\n"
      "# HELP grainlab_http_requests_total HTTP requests answered.\n"
      "# TYPE grainlab_http_requests_total counter\ngrainlab_http_requests_total %llu\n"
      "# HELP grainlab_viewers Websocket viewers connected to a session.\n"
      "# TYPE grainlab_viewers gauge\ngrainlab_viewers %d\n"
      "# HELP grainlab_ws_connections_total Websocket connections accepted.\n"
      "# TYPE grainlab_ws_connections_total counter\ngrainlab_ws_connections_total %llu\n"
      "# HELP grainlab_ws_refused_total Websocket handshakes refused (no such session, full).\n"
      "# TYPE grainlab_ws_refused_total counter\ngrainlab_ws_refused_total %llu\n"
      "# HELP grainlab_ws_frames_sent_total Binary frames sent to viewers.\n"
      "# TYPE grainlab_ws_frames_sent_total counter\ngrainlab_ws_frames_sent_total %llu\n"
      "# HELP grainlab_ws_frames_skipped_total Frames a slow viewer skipped for a newer one.\n"
      "# TYPE grainlab_ws_frames_skipped_total counter\ngrainlab_ws_frames_skipped_total %llu\n"
      "# HELP grainlab_ws_frames_held_total Frames a viewer did not get for the rate it asked.\n"
      "# TYPE grainlab_ws_frames_held_total counter\ngrainlab_ws_frames_held_total %llu\n"
      "# HELP grainlab_ws_texts_sent_total Text messages sent to viewers.\n"
      "# TYPE grainlab_ws_texts_sent_total counter\ngrainlab_ws_texts_sent_total %llu\n"
      "# HELP grainlab_ws_texts_skipped_total Text messages a stalled viewer lost.\n"
      "# TYPE grainlab_ws_texts_skipped_total counter\ngrainlab_ws_texts_skipped_total %llu\n"
      "# HELP grainlab_ws_bytes_sent_total Payload bytes sent to viewers.\n"
      "# TYPE grainlab_ws_bytes_sent_total counter\ngrainlab_ws_bytes_sent_total %llu\n"
      "# HELP grainlab_ws_messages_rejected_total Client messages rejected.\n"
      "# TYPE grainlab_ws_messages_rejected_total counter\n"
      "grainlab_ws_messages_rejected_total %llu\n",
      t.sessions, t.running, t.failed, (unsigned long long)t.created,
      (unsigned long long)t.worker_failures,
      (unsigned long long)__atomic_load_n(&srv->requests, __ATOMIC_RELAXED), t.viewers,
      (unsigned long long)w.connections, (unsigned long long)w.refused,
      (unsigned long long)w.frames_sent, (unsigned long long)w.frames_skipped,
      (unsigned long long)w.frames_held, (unsigned long long)w.texts_sent,
      (unsigned long long)w.texts_skipped, (unsigned long long)w.bytes_sent,
      (unsigned long long)w.messages_rejected);
  if (n < 0) {
    return error_reply(500, "out_of_memory", "", "out of memory");
  }
  /* the rest, appended: workers, steps, per-session figures, responses by status, the store */
  char *more = NULL;
  size_t more_len = 0;
  FILE *f = open_memstream(&more, &more_len);
  fputs(out, f);
  free(out);
  fprintf(f,
          "# HELP grainlab_workers Session worker processes alive.\n# TYPE grainlab_workers gauge\n"
          "grainlab_workers %d\n"
          "# HELP grainlab_steps_total Simulation steps taken by every session (1/240 s each).\n"
          "# TYPE grainlab_steps_total counter\ngrainlab_steps_total %llu\n"
          "# HELP grainlab_http_held_bytes Bytes of large replies held for clients still reading.\n"
          "# TYPE grainlab_http_held_bytes gauge\ngrainlab_http_held_bytes %llu\n"
          "# HELP grainlab_snapshot_replays_total Stored runs replayed for their snapshots.\n"
          "# TYPE grainlab_snapshot_replays_total counter\ngrainlab_snapshot_replays_total %llu\n",
          t.workers, (unsigned long long)t.steps,
          (unsigned long long)__atomic_load_n(&srv->held, __ATOMIC_RELAXED),
          (unsigned long long)t.replays);
  sess_metrics(srv->reg, f);
  sess_settled_metrics(srv->reg, f);
  int classes_open = 0, class_groups = 0;
  int classes_held = 0;
  class_totals(srv->classes, &classes_open, &class_groups, &classes_held);
  fprintf(f,
          "# HELP grainlab_classes_open Classes not yet ended.\n"
          "# TYPE grainlab_classes_open gauge\ngrainlab_classes_open %d\n"
          "# HELP grainlab_class_groups Groups of the open classes.\n"
          "# TYPE grainlab_class_groups gauge\ngrainlab_class_groups %d\n"
          "# HELP grainlab_classes_in_memory Classes held in memory (open, and recently ended).\n"
          "# TYPE grainlab_classes_in_memory gauge\ngrainlab_classes_in_memory %d\n",
          classes_open, class_groups, classes_held);
  fputs("# HELP grainlab_http_responses_total HTTP responses by status.\n"
        "# TYPE grainlab_http_responses_total counter\n",
        f);
  for (int code = 100; code < 600; code++) {
    const unsigned long long k = __atomic_load_n(&srv->by_status[code], __ATOMIC_RELAXED);
    if (k > 0) {
      fprintf(f, "grainlab_http_responses_total{code=\"%d\"} %llu\n", code, k);
    }
  }
  if (srv->store) {
    store_stats ss;
    store_get_stats(srv->store, &ss);
    fprintf(f,
            "# HELP grainlab_store_queue_length Records waiting for the store's writer.\n"
            "# TYPE grainlab_store_queue_length gauge\ngrainlab_store_queue_length %llu\n"
            "# HELP grainlab_store_write_latency_seconds From queueing to commit, over every "
            "record.\n# TYPE grainlab_store_write_latency_seconds summary\n"
            "grainlab_store_write_latency_seconds_sum %.6f\n"
            "grainlab_store_write_latency_seconds_count %llu\n"
            "# HELP grainlab_store_write_latency_max_seconds The longest wait in the last batch.\n"
            "# TYPE grainlab_store_write_latency_max_seconds gauge\n"
            "grainlab_store_write_latency_max_seconds %.6f\n"
            "# HELP grainlab_store_batches_total Transactions the writer committed.\n"
            "# TYPE grainlab_store_batches_total counter\ngrainlab_store_batches_total %llu\n"
            "# HELP grainlab_store_writable 1 while the store commits, 0 while the disk refuses "
            "(records kept and retried).\n# TYPE grainlab_store_writable gauge\n"
            "grainlab_store_writable %d\n"
            "# HELP grainlab_store_write_failures_total Transactions the disk refused.\n"
            "# TYPE grainlab_store_write_failures_total counter\n"
            "grainlab_store_write_failures_total %llu\n"
            "# HELP grainlab_store_dropped_total Samples and events not recorded (the store's "
            "bounds).\n# TYPE grainlab_store_dropped_total counter\n"
            "grainlab_store_dropped_total %llu\n"
            "# HELP grainlab_store_memory_bytes Memory SQLite holds, its page caches included.\n"
            "# TYPE grainlab_store_memory_bytes gauge\ngrainlab_store_memory_bytes %llu\n"
            "# HELP grainlab_store_memory_peak_bytes The most memory SQLite has held.\n"
            "# TYPE grainlab_store_memory_peak_bytes gauge\n"
            "grainlab_store_memory_peak_bytes %llu\n",
            (unsigned long long)ss.queue_length, ss.latency_sum, (unsigned long long)ss.written,
            ss.latency_max, (unsigned long long)ss.batches, ss.writable ? 1 : 0,
            (unsigned long long)ss.write_failures, (unsigned long long)ss.dropped,
            (unsigned long long)ss.memory, (unsigned long long)ss.memory_peak);
    store_results_db_metrics(srv->store, f); /* the outbox and the results database, if any */
  }
  fclose(f);
  http_reply r = {200, more, "text/plain; version=0.0.4", "", "", 0, 0, ""};
  return r;
}

static http_reply h_session_get(const http_call *k) {
  return json_reply(200, session_json(k->s));
}

static http_reply h_session_delete(const http_call *k) {
  sess_delete(k->srv->reg, k->s);
  return json_reply(200, json_pack("{s:s}", "deleted", k->m->id));
}

static http_reply h_session_patch(const http_call *k) {
  http_reply err;
  json_t *body = parse_object(k->c, k->rq, &err);
  if (!body) {
    return err;
  }
  api_session_patch cmd;
  api_error e;
  const int rc = api_read_session_patch(body, &cmd, &e);
  json_decref(body);
  if (rc != 0 || (cmd.has_speed && sess_set_speed(k->s, cmd.speed, &e) != 0)) {
    return api_error_reply(&e);
  }
  return json_reply(200, session_json(k->s));
}

static http_reply h_session_params(const http_call *k) {
  http_reply err;
  json_t *body = parse_object(k->c, k->rq, &err);
  if (!body) {
    return err;
  }
  api_params cmd;
  api_params_read(body, &cmd); /* the names point into body, released after the change */
  api_error e;
  const http_reply r = sess_set_params(k->s, &cmd, &e) == 0 ? json_reply(200, session_json(k->s))
                                                            : api_error_reply(&e);
  json_decref(body);
  return r;
}

static http_reply h_session_action(const http_call *k) {
  http_reply err;
  json_t *body = parse_object(k->c, k->rq, &err);
  if (!body) {
    return err;
  }
  api_error e;
  api_action a;
  const http_reply r = api_read_action(body, &a, &e) == 0 && sess_action(k->s, &a, &e) == 0
                           ? json_reply(200, session_json(k->s))
                           : api_error_reply(&e);
  json_decref(body);
  return r;
}

/* GET .../snapshot?format=csv|vtk (csv when absent) of a session (its particles now) or of a
 * stored run (its final state, replayed): a download named after it and the step it is of. */
static http_reply snapshot_reply(const http_call *k, bool run) {
  const char *name = MHD_lookup_connection_value(k->c, MHD_GET_ARGUMENT_KIND, "format");
  snapshot_format f = SNAPSHOT_CSV;
  if (name && snapshot_format_parse(name, &f) != 0) {
    return error_reply(400, "bad_format", "format", "format is csv or vtk");
  }
  if (held_full(k->srv)) {
    return server_busy();
  }
  char *text;
  size_t len;
  uint64_t steps;
  api_error e;
  char client[IPLIMIT_ADDR] = ""; /* a replay's: one at a time each (the admin's: the pool's) */
  if (run && !admin_ok(k->srv, bearer(k->c))) {
    client_of(k->srv, k->c, client);
  }
  const int rc =
      run ? sess_run_snapshot(k->srv->reg, k->run, (int)f, client, &text, &len, &steps, &e)
          : sess_snapshot(k->s, (int)f, &text, &len, &steps, &e);
  if (rc != 0) {
    return api_error_reply(&e);
  }
  http_reply r = {200, text, snapshot_content_type(f), "", "", len, 0, ""};
  /* a run's number, or the session's own id (16 letters and digits): nothing else reaches the
   * header */
  char who[40];
  if (run) {
    snprintf(who, sizeof who, "run-%lld", k->run);
  } else {
    snprintf(who, sizeof who, "session-%.16s", k->m->id);
  }
  snprintf(r.disposition, sizeof r.disposition, "attachment; filename=\"%s-step-%llu.%s\"", who,
           (unsigned long long)steps, snapshot_format_name(f));
  return r;
}

static http_reply h_session_snapshot(const http_call *k) {
  return snapshot_reply(k, false);
}

static http_reply h_session_scene(const http_call *k) {
  http_reply err;
  json_t *body = parse_object(k->c, k->rq, &err);
  if (!body) {
    return err;
  }
  grn_world_def d;
  api_error e;
  const int rc = api_read_scene(body, &d, &e);
  json_decref(body);
  if (rc != 0) {
    return api_error_reply(&e);
  }
  if (store_refuses(k->srv, &err)) { /* a new run would start unrecorded */
    return err;
  }
  if (sess_switch_scene(k->srv->reg, k->s, &d, &e) != 0) {
    return api_error_reply(&e);
  }
  return json_reply(200, session_json(k->s));
}

/* Static files: the client's pages and what they name (static_site.c). */
static http_reply static_file(const http_server *srv, const char *url) {
  char *body = NULL;
  size_t len = 0;
  const char *type = "";
  const int status = srv->site ? static_site_read(srv->site, url, &body, &len, &type) : 404;
  if (status != 0) {
    return status == 404 ? error_reply(404, "not_found", "", "no such file")
                         : error_reply(500, "io_error", "", "could not read the file");
  }
  http_reply r = {200, body, type, "", "", len, 0, ""};
  return r;
}

/* The query arguments in request order (MHD keeps the strings until the request ends). */
typedef struct query_args {
  store_query_arg *args;
  size_t n, cap;
  bool no_memory;
} query_args;

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value) {
  (void)kind;
  query_args *q = cls;
  if (q->n == q->cap) {
    const size_t cap = q->cap ? 2 * q->cap : 16;
    store_query_arg *grown = realloc(q->args, sizeof *grown * cap);
    if (!grown) {
      q->no_memory = true;
      return MHD_NO;
    }
    q->args = grown;
    q->cap = cap;
  }
  q->args[q->n++] = (store_query_arg){key, value};
  return MHD_YES;
}

/* A refusal of the store as the API's JSON error: the one place a store status becomes HTTP. */
static http_reply store_error_reply(const store_error *e) {
  const int status = e->status == STORE_E_NOT_FOUND     ? 404
                     : e->status == STORE_E_BAD_FILTER  ? 400
                     : e->status == STORE_E_UNAVAILABLE ? 503
                                                        : 500;
  return error_reply(status, e->code ? e->code : "store_error", e->field, "%s", e->message);
}

/* Who reads the record: a private session's runs need its viewer or control token, or the
 * admin's (store.h); any other caller reads the public runs. */
static store_access run_access(const http_call *k) {
  store_access a;
  const char *t = bearer(k->c);
  store_access_init(&a, t, admin_ok(k->srv, t));
  return a;
}

/* The request's query arguments (the caller frees q->args), or a 500 when memory runs out. */
static bool read_args(const http_call *k, query_args *q, http_reply *err) {
  *q = (query_args){NULL, 0, 0, false};
  MHD_get_connection_values(k->c, MHD_GET_ARGUMENT_KIND, collect_arg, q);
  if (q->no_memory) {
    free(q->args);
    *err = error_reply(500, "store_error", "", "out of memory");
    return false;
  }
  return true;
}

/* /api/runs?filters: the record, read-only */
/* In a cluster's record, a run another node left open is running only as long as that node
 * answers: while it has not been heard from lately (place.c), its open runs are marked
 * "reachable": false, neither running nor ended, until it comes back and closes them (issue 32). */
static void mark_unreachable(const http_server *srv, json_t *runs) {
  const char *self = sess_node(srv->reg);
  if (!srv->place || !*self) {
    return;
  }
  place_load peers[PLACE_PEERS_MAX];
  const int n = place_peers(srv->place, peers, PLACE_PEERS_MAX);
  size_t i;
  json_t *run;
  json_array_foreach(runs, i, run) {
    const char *node = json_string_value(json_object_get(run, "node"));
    if (!node || strcmp(node, self) == 0 || !json_is_null(json_object_get(run, "end_reason"))) {
      continue;
    }
    bool heard = false;
    for (int p = 0; p < n && !heard; p++) {
      heard = strcmp(peers[p].node, node) == 0;
    }
    json_object_set_new(run, "reachable", json_boolean(heard));
  }
}

static http_reply h_runs_list(const http_call *k) {
  query_args q;
  http_reply err;
  if (!read_args(k, &q, &err)) {
    return err;
  }
  store_runs_filter filter;
  store_error se;
  json_t *out = NULL;
  const store_status rc = store_filter_parse(q.args, q.n, &filter, &se);
  free(q.args);
  if (rc != STORE_OK) {
    return store_error_reply(&se);
  }
  const store_access a = run_access(k);
  if (store_list_runs(k->srv->store, &filter, &a, &out, &se) != STORE_OK) {
    return store_error_reply(&se);
  }
  mark_unreachable(k->srv, json_object_get(out, "runs"));
  if (!filter.csv) {
    return json_reply(200, out);
  }
  char *text = NULL;
  size_t len = 0;
  const int failed = store_runs_csv(out, &text, &len);
  json_decref(out);
  if (failed) {
    return error_reply(500, "store_error", "", "out of memory");
  }
  http_reply r = {200, text, "text/csv; charset=utf-8", "", "", len, 0, ""};
  /* a class id is a node id and hex (it named a class that exists): nothing else reaches the
   * header */
  char node[NODE_ID_MAX + 1];
  const char *hex = filter.has_class ? node_split(filter.class_id, node) : NULL;
  const bool named = hex && strlen(hex) == 16 && strspn(hex, "0123456789abcdef") == 16;
  snprintf(r.disposition, sizeof r.disposition, "attachment; filename=\"%s%s.csv\"",
           named ? "class-" : "runs", named ? filter.class_id : "");
  return r;
}

/* /api/runs/{id}?events_after=&events_limit=: the run and one page of its events */
static http_reply h_run_get(const http_call *k) {
  query_args q;
  http_reply err;
  if (!read_args(k, &q, &err)) {
    return err;
  }
  store_events_page page;
  store_error se;
  const store_status rc = store_events_page_parse(q.args, q.n, &page, &se);
  free(q.args);
  if (rc != STORE_OK) {
    return store_error_reply(&se);
  }
  json_t *out = NULL;
  const store_access a = run_access(k);
  return store_get_run(k->srv->store, k->run, &a, &page, &out, &se) == STORE_OK
             ? json_reply(200, out)
             : store_error_reply(&se);
}

static http_reply h_run_samples(const http_call *k) {
  const char *format = MHD_lookup_connection_value(k->c, MHD_GET_ARGUMENT_KIND, "format");
  const char *accept = MHD_lookup_connection_value(k->c, MHD_HEADER_KIND, "Accept");
  if (format && strcmp(format, "csv") != 0 && strcmp(format, "json") != 0) {
    return error_reply(400, "bad_format", "format", "format is csv or json");
  }
  const bool csv = format ? strcmp(format, "csv") == 0 : accept && strstr(accept, "text/csv");
  char *body = NULL;
  size_t len = 0;
  store_error se;
  const store_access a = run_access(k);
  if (store_samples(k->srv->store, k->run, &a, csv, &body, &len, &se) != STORE_OK) {
    return store_error_reply(&se);
  }
  http_reply r = {200, body, csv ? "text/csv; charset=utf-8" : "application/json", "", "", 0,
                  0,   ""};
  if (csv) {
    const char *node = sess_node(k->srv->reg);
    snprintf(r.disposition, sizeof r.disposition, "attachment; filename=\"run-%s%s%lld.csv\"", node,
             *node ? "-" : "", k->run);
  }
  return r;
}

/* GET /api/runs/{id}/snapshot: who may read the run may have its final state. */
static http_reply h_run_snapshot(const http_call *k) {
  const store_access a = run_access(k);
  store_error se;
  bool private_ = false;
  if (store_run_access(k->srv->store, k->run, &a, &private_, &se) != STORE_OK) {
    return store_error_reply(&se);
  }
  return snapshot_reply(k, true);
}

/* POST /api/runs/{id}/replay {label?, private?} and /fork {params?, label?, private?}: a run the
 * caller may read; a private session's run makes a private session (asking for a public one is
 * refused, so what a viewer token reads is not republished to everyone). */
static http_reply from_run(const http_call *k, bool fork) {
  /* who may create first: without the create token nothing, not even whether the run exists, is
   * told (with one set, a private run is forked by the admin: one Authorization header carries
   * one token) */
  http_reply err;
  char client[IPLIMIT_ADDR];
  if (!may_create(k, client, &err)) {
    return err;
  }
  const store_access a = run_access(k);
  store_error se;
  bool source_private = false;
  if (store_run_access(k->srv->store, k->run, &a, &source_private, &se) != STORE_OK) {
    return store_error_reply(&se);
  }
  json_t *body = parse_object(k->c, k->rq, &err);
  if (!body) {
    return err;
  }
  api_from_run cmd;
  api_error e;
  http_reply r;
  if (api_read_from_run(body, fork, &cmd, &e) != 0) {
    r = api_error_reply(&e);
  } else if (source_private && json_is_false(json_object_get(body, "private"))) {
    r = error_reply(422, "private_run", "private",
                    "run %lld is a private session's: its %s is private too", k->run,
                    fork ? "fork" : "replay");
  } else if (store_refuses(k->srv, &r) || !create_rate_ok(k, client, &r)) {
    /* r is the refusal */
  } else {
    cmd.private_ = cmd.private_ || source_private;
    char token[65], viewer_token[65];
    api_params params; /* a fork's new parameters (none given: none), checked by the session */
    api_params_read(cmd.params, &params);
    session *s =
        sess_create_from_run(k->srv->reg, k->run, fork ? &params : NULL, cmd.label, cmd.private_,
                             *client ? client : NULL, token, viewer_token, &e);
    r = s ? created(s, token, viewer_token) : create_refused(&e);
  }
  json_decref(body);
  return r;
}

static http_reply h_run_replay(const http_call *k) {
  return from_run(k, false);
}

static http_reply h_run_fork(const http_call *k) {
  return from_run(k, true);
}

/* POST /api/admin/backup: a consistent copy of the database, made while sessions run */
static http_reply h_backup(const http_call *k) {
  http_server *srv = k->srv;
  if (!srv->store) {
    return error_reply(503, "no_store", "", "this server keeps no record");
  }
  char dir[4200], path[4300], when[32], err[300];
  snprintf(dir, sizeof dir, "%s/backups", srv->data_dir);
  if (mkdir(dir, 0750) != 0 && errno != EEXIST) {
    return error_reply(500, "io_error", "", "cannot create %s: %s", dir, strerror(errno));
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  strftime(when, sizeof when, "%Y%m%dT%H%M%S", &tm);
  snprintf(path, sizeof path, "%s/grainlab-%s-%03ldZ.db", dir, when, ts.tv_nsec / 1000000);
  store_sync(srv->store, 2000); /* what was recorded before the request is in the copy */
  const long runs = store_backup(store_path(srv->store), path, err, sizeof err);
  if (runs < 0) {
    return error_reply(500, "backup_failed", "", "%s", err);
  }
  struct stat st;
  const long long bytes = stat(path, &st) == 0 ? (long long)st.st_size : 0;
  log_msg(LOG_INFO, "backup", "path=%s runs=%ld bytes=%lld", path, runs, bytes);
  return json_reply(201, json_pack("{s:s, s:i, s:I}", "path", path, "runs", (int)runs, "bytes",
                                   (json_int_t)bytes));
}

/* ---- classes (issue 17) ------------------------------------------------------------------ */

static double unix_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static http_reply class_reply(int status, json_t *j, const api_error *e) {
  return j ? json_reply(status, j) : api_error_reply(e);
}

static http_reply h_classes_create(const http_call *k) {
  http_reply err;
  json_t *body = parse_object(k->c, k->rq, &err);
  if (!body) {
    return err;
  }
  api_class_create cmd;
  api_error e = {0}; /* status 0 until something refuses */
  const int rc = api_read_class_create(body, unix_now(), sess_max_grains(k->srv->reg), &cmd, &e);
  json_decref(body);
  if (rc != 0) {
    return api_error_reply(&e);
  }
  /* a class and all its groups live on one node: it goes where its groups fit; a class is a
   * creation of its teacher's address, at the same rate as a session (the admin's are free) */
  char client[IPLIMIT_ADDR] = "";
  if (!admin_ok(k->srv, bearer(k->c))) {
    client_of(k->srv, k->c, client);
  }
  if (placed_elsewhere(k, cmd.max_groups, 0, "/api/classes", &err) ||
      !create_rate_ok(k, client, &err)) {
    json_decref(cmd.defaults);
    return err;
  }
  json_t *j = NULL;
  if (!store_refuses(k->srv, &err)) { /* a class nobody could find again after a restart */
    j = class_create(k->srv->classes, &cmd, &e);
  }
  json_decref(cmd.defaults);
  return j ? json_reply(201, j) : e.status ? api_error_reply(&e) : err;
}

static http_reply h_class_get(const http_call *k) {
  api_error e = {0};
  return class_reply(200, class_get(k->srv->classes, k->m->id, k->role, &e), &e);
}

static http_reply h_class_patch(const http_call *k) {
  http_reply err;
  json_t *body = parse_object(k->c, k->rq, &err);
  if (!body) {
    return err;
  }
  api_class_patch cmd;
  api_error e = {0};
  json_t *j = api_read_class_patch(body, &cmd, &e) == 0
                  ? class_patch(k->srv->classes, k->m->id, &cmd, &e)
                  : NULL;
  json_decref(body);
  return class_reply(200, j, &e);
}

static http_reply h_class_push(const http_call *k) {
  http_reply err;
  json_t *body = parse_object(k->c, k->rq, &err);
  if (!body) {
    return err;
  }
  api_class_push cmd;
  api_error e = {0};
  /* the parameters' names and the groups point into the body: released after the push */
  json_t *j = api_read_class_push(body, &cmd, &e) == 0
                  ? class_push(k->srv->classes, k->m->id, &cmd, &e)
                  : NULL;
  json_decref(body);
  return class_reply(200, j, &e);
}

static http_reply h_class_end(const http_call *k) {
  api_error e = {0};
  return class_reply(200, class_end(k->srv->classes, k->m->id, &e), &e);
}

/* Class codes are guessed by trying, as session ids are: a client that misses too often is
 * refused, hit or miss alike. The seconds the client must wait (0: it may try); its address in
 * client. */
static int code_wait(const http_call *k, char client[IPLIMIT_ADDR]) {
  client_of(k->srv, k->c, client);
  return k->srv->guesses ? iplimit_take(k->srv->guesses, client, false) : 0;
}

static http_reply too_many_codes(int wait) {
  return too_many("too_many_guesses", wait,
                  "this client has tried too many class codes that do not exist");
}

/* A join that reached another node than its class's (the code names it): 307 to the class's
 * node through the cluster's router, which keeps the method and the body; a browser follows it
 * where it would not follow a 421 (issue 32). Anything else is left as it is. */
static http_reply join_reply(const char *code, const char *query, json_t *j, const api_error *e,
                             int status) {
  char home[NODE_ID_MAX + 1];
  if (!j && e->status == 421 && node_split(code, home) && *home &&
      node_name_ok(code, home, 6, SESS_CODE_ALPHABET)) { /* nothing else goes into Location */
    http_reply r = json_reply(307, json_pack("{s:s, s:s}", "node", home, "reason", e->message));
    snprintf(r.location, sizeof r.location, "/n/%s/api/join%s%s", home, *query ? "?code=" : "",
             query);
    return r;
  }
  return j ? json_reply(status, j) : create_refused(e);
}

/* GET /api/join?code=CODE: the class a student is about to join. */
static http_reply h_join_lookup(const http_call *k) {
  char client[IPLIMIT_ADDR];
  const int wait = code_wait(k, client);
  if (wait > 0) {
    return too_many_codes(wait);
  }
  const char *code = MHD_lookup_connection_value(k->c, MHD_GET_ARGUMENT_KIND, "code");
  if (!code) {
    return error_reply(400, "missing_field", "code", "give the class code: /api/join?code=CODE");
  }
  api_error e = {0};
  json_t *j = class_lookup(k->srv->classes, code, &e);
  if (!j && e.status == 404 && k->srv->guesses) {
    iplimit_charge(k->srv->guesses, client);
  }
  return join_reply(code, code, j, &e, 200);
}

/* POST /api/join */
static http_reply h_join(const http_call *k) {
  char client[IPLIMIT_ADDR];
  const int wait = code_wait(k, client);
  if (wait > 0) {
    return too_many_codes(wait);
  }
  http_reply err;
  json_t *body = parse_object(k->c, k->rq, &err);
  if (!body) {
    return err;
  }
  api_join cmd;
  api_error e = {0};
  const int rc = api_read_join(body, &cmd, &e);
  json_decref(body);
  if (rc != 0) {
    return api_error_reply(&e);
  }
  if (store_refuses(k->srv, &err)) {
    return err;
  }
  bool created = false;
  json_t *j = class_join(k->srv->classes, &cmd, &created, &e);
  if (!j && e.status == 404 && k->srv->guesses) {
    iplimit_charge(k->srv->guesses, client);
  }
  return join_reply(cmd.code, "", j, &e, created ? 201 : 200);
}

static const http_handler handlers[API_H_COUNT] = {
    [API_H_HEALTHZ] = h_healthz,
    [API_H_READYZ] = h_readyz,
    [API_H_METRICS] = h_metrics,
    [API_H_CONFIG] = h_config,
    [API_H_NODES] = h_nodes,
    [API_H_SCENES] = h_scenes,
    [API_H_SESSIONS_LIST] = h_sessions_list,
    [API_H_SESSIONS_CREATE] = h_sessions_create,
    [API_H_SESSION_GET] = h_session_get,
    [API_H_SESSION_SNAPSHOT] = h_session_snapshot,
    [API_H_SESSION_PATCH] = h_session_patch,
    [API_H_SESSION_DELETE] = h_session_delete,
    [API_H_SESSION_PARAMS] = h_session_params,
    [API_H_SESSION_ACTION] = h_session_action,
    [API_H_SESSION_SCENE] = h_session_scene,
    [API_H_BACKUP] = h_backup,
    [API_H_RUNS_LIST] = h_runs_list,
    [API_H_RUN_GET] = h_run_get,
    [API_H_RUN_SAMPLES] = h_run_samples,
    [API_H_RUN_SNAPSHOT] = h_run_snapshot,
    [API_H_RUN_REPLAY] = h_run_replay,
    [API_H_RUN_FORK] = h_run_fork,
    [API_H_CLASSES_CREATE] = h_classes_create,
    [API_H_CLASS_GET] = h_class_get,
    [API_H_CLASS_PATCH] = h_class_patch,
    [API_H_CLASS_PUSH] = h_class_push,
    [API_H_CLASS_END] = h_class_end,
    [API_H_JOIN_LOOKUP] = h_join_lookup,
    [API_H_JOIN] = h_join,
};

/* A run id: whole, 1 to 19 digits. */
static bool run_digits(const char *id, long long *out) {
  const size_t n = strlen(id);
  if (n == 0 || n >= 20 || strspn(id, "0123456789") != n) {
    return false;
  }
  *out = strtoll(id, NULL, 10);
  return true;
}

static bool run_id(const api_match *m, long long *out) {
  return !m->id_truncated && run_digits(m->id, out);
}

/* A run in a path: its id, or NODE-ID as the cluster's listing names it ("node" and "id", issue
 * 20). This node's is its own run; another node's is the router's mistake (421), as for sessions;
 * a node part on a daemon without one names no run here. false with the refusal in err. */
static bool run_ref(const char *node, const api_match *m, long long *out, http_reply *err) {
  char of[NODE_ID_MAX + 1];
  const char *id = m->id_truncated ? NULL : node_split(m->id, of);
  if (id && *of) {
    if (!run_digits(id, out)) {
      *err = error_reply(404, "not_found", "id", "run ids are whole numbers, or NODE-ID");
      return false;
    }
    if (strcmp(of, node) != 0) {
      *err = *node ? error_reply(421, "wrong_node", "id",
                                 "run '%.40s' belongs to node '%s', this is '%s'", m->id, of, node)
                   : error_reply(404, "not_found", "id",
                                 "no run '%.40s': this daemon is not a cluster node", m->id);
      return false;
    }
  }
  if (!id || !run_digits(id, out)) {
    *err = error_reply(404, "not_found", "id", "run ids are whole numbers");
    return false;
  }
  return true;
}

/* A path under /api/runs that no route has: answered as before the table, by the method its last
 * segment suggests, then its id. */
static http_reply runs_unmatched(const char *method, const char *url, const api_match *m) {
  const char *tail = strrchr(url, '/');
  const bool post = tail && (strcmp(tail, "/replay") == 0 || strcmp(tail, "/fork") == 0) &&
                    strncmp(url, "/api/runs/", 10) == 0 && tail > url + 10;
  long long id;
  if (strcmp(method, post ? "POST" : "GET") != 0) {
    return method_not_allowed(method, post ? "POST" : "GET");
  }
  if (!run_id(m, &id)) {
    return error_reply(404, "not_found", "id", "run ids are whole numbers");
  }
  return error_reply(404, "not_found", "", "no such resource");
}

/* The route's token check; false with an error reply. */
static bool route_authorized(const http_call *k, http_reply *err) {
  switch (k->m->route->auth) {
  case API_AUTH_NONE:
    return true;
  case API_AUTH_CONTROL:
  case API_AUTH_CONTROL_OR_ADMIN:
    if (!authorized(k->srv, k->c, k->s, k->m->route->auth == API_AUTH_CONTROL_OR_ADMIN, err)) {
      return false;
    }
    /* a class's lock holds its students; the admin (and the teacher's pushes) pass */
    if (sess_locked(k->s) && !admin_ok(k->srv, bearer(k->c))) {
      *err = error_reply(409, "locked", "",
                         "the teacher has locked the class's controls: wait for them to unlock");
      return false;
    }
    return true;
  case API_AUTH_TEACHER:
    if (k->role == CLASS_TEACHER) {
      return true;
    }
    *err = bearer(k->c)
               ? error_reply(403, "forbidden", "", "the token is not this class's teacher's")
               : error_reply(401, "unauthorized", "",
                             "this needs \"Authorization: Bearer <teacher token>\"");
    return false;
  case API_AUTH_CLASS_CREATE: {
    const char *t = bearer(k->c);
    if (admin_ok(k->srv, t) || token_is(k->srv->teacher_token, t)) {
      return true;
    }
    *err = error_reply(t ? 403 : 401, t ? "forbidden" : "unauthorized", "",
                       "creating a class needs \"Authorization: Bearer <teacher-creation "
                       "token>\" (teacher-token-file) or the admin token");
    return false;
  }
  case API_AUTH_ADMIN:
    break;
  }
  const char *t = bearer(k->c);
  if (!t) {
    *err = error_reply(401, "unauthorized", "", "backups need the admin token");
    return false;
  }
  if (!admin_ok(k->srv, t)) {
    *err = error_reply(403, "forbidden", "", "backups need the admin token");
    return false;
  }
  return true;
}

/* A session or class that is not here: on another node's id, the router's mistake (421); else
 * none such (404). */
static http_reply not_here(const char *node, const char *id, const char *code, const char *what) {
  char of[NODE_ID_MAX + 1];
  if (*node && node_split(id, of) && strcmp(of, node) != 0) {
    return error_reply(421, "wrong_node", "id", "'%.40s' belongs to node '%s', this is '%s'", id,
                       *of ? of : "(none)", node);
  }
  return error_reply(404, code, "id", "no %s '%.40s'", what, id);
}

/* Checks in the order the API promises: a session must exist and be visible before its 404 or
 * 405, the record must be kept before anything under /api/runs; then the method, the token, and
 * the handler (which reads the body). */
static http_reply route(http_server *srv, struct MHD_Connection *c, const char *method,
                        const char *full, const http_req *rq) {
  const char *url = full;
  const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
  if (srv->hosts && !allow_host(srv->hosts, host)) {
    /* a page of another site that a rebinding DNS points at this server: it must not talk */
    const bool plain = strlen(host) <= 60 &&
                       strspn(host, "abcdefghijklmnopqrstuvwxyz"
                                    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]") == strlen(host);
    return error_reply(403, "host_not_allowed", "",
                       "this server does not answer for the host '%s' (see allowed-hosts)",
                       plain ? host : "(not shown)");
  }
  if (rq->too_big) {
    return error_reply(413, "too_large", "", "request bodies are limited to %d bytes", BODY_LIMIT);
  }
  /* /n/{node}/…: the cluster's router sends it to that node (placement's redirects, a class's
   * joins); another node's is a router's mistake, said so rather than answered here */
  const char *node = sess_node(srv->reg);
  if (strncmp(url, "/n/", 3) == 0) {
    const char *slash = strchr(url + 3, '/');
    const size_t n = slash ? (size_t)(slash - (url + 3)) : strlen(url + 3);
    /* one more than a node id holds: a longer one cannot match */
    char asked[NODE_ID_MAX + 2];
    snprintf(asked, sizeof asked, "%.*s", (int)(n < sizeof asked ? n : sizeof asked - 1), url + 3);
    if (!*node || !slash || strcmp(asked, node) != 0) {
      return error_reply(421, "wrong_node", "", "this is node '%s', not '%s'",
                         *node ? node : "(none)", asked);
    }
    url = slash;
  }
  api_match m;
  api_route_match(method, url, &m);
  http_call k = {srv, c, method, rq, &m, NULL, 0, CLASS_ANYONE, url != full};
  if (m.scope == API_SCOPE_SESSION) {
    if (!m.id[0] || m.id_truncated || strlen(m.id) >= 64) {
      return error_reply(404, "not_found", "id", "no such session");
    }
    /* ids and join codes are guessed by trying: a client that misses too often is refused,
     * hit or miss alike, so a refusal tells it nothing */
    char client[IPLIMIT_ADDR];
    client_of(srv, c, client);
    const int wait = srv->guesses ? iplimit_take(srv->guesses, client, false) : 0;
    if (wait > 0) {
      return too_many("too_many_guesses", wait,
                      "this client has looked up too many sessions that do not exist");
    }
    k.s = sess_find(srv->reg, m.id);
    if (!k.s) {
      if (srv->guesses) {
        iplimit_charge(srv->guesses, client);
      }
      return not_here(node, m.id, "not_found", "session");
    }
    const char *presented = bearer(c);
    if (!sess_viewer_ok(k.s, presented) && !admin_ok(srv, presented)) {
      sess_release(k.s);
      return error_reply(403, "private", "",
                         "this session is private: send its viewer token as "
                         "\"Authorization: Bearer <viewer token>\"");
    }
  } else if (m.scope == API_SCOPE_RUNS && !srv->store) {
    return error_reply(503, "no_store", "", "this server keeps no record");
  } else if (m.scope == API_SCOPE_CLASS && m.status == 200) {
    /* a class's routes are told apart by method first (405), then the class is looked up */
    char client[IPLIMIT_ADDR];
    client_of(srv, c, client);
    const int wait = srv->guesses ? iplimit_take(srv->guesses, client, false) : 0;
    if (wait > 0) {
      return too_many("too_many_guesses", wait,
                      "this client has looked up too many classes that do not exist");
    }
    api_error e;
    const char *t = bearer(c);
    if (!m.id[0] || m.id_truncated ||
        class_role_of(srv->classes, m.id, t, admin_ok(srv, t), &k.role, &e) != 0) {
      if (srv->guesses) {
        iplimit_charge(srv->guesses, client);
      }
      return not_here(node, m.id, "no_class", "class");
    }
  }
  http_reply r;
  if (m.status == 405) {
    r = method_not_allowed(method, m.allow);
  } else if (m.status == 404) {
    if (m.scope == API_SCOPE_STATIC) {
      r = strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0
              ? method_not_allowed(method, "GET")
              : static_file(srv, url);
    } else if (m.scope == API_SCOPE_RUNS) {
      r = runs_unmatched(method, url, &m);
    } else {
      r = error_reply(404, "not_found", "", "no such resource");
    }
  } else if ((m.scope == API_SCOPE_RUNS && m.route->handler != API_H_RUNS_LIST &&
              !run_ref(node, &m, &k.run, &r)) ||
             !route_authorized(&k, &r)) {
    /* r is the refusal: a run that is not here, then the token */
  } else {
    r = handlers[m.route->handler](&k);
  }
  if (k.s) {
    sess_release(k.s);
  }
  return r;
}

/* The Content-Security-Policy of a reply. Anything but a page loads nothing and runs nothing.
 * A page runs only the client's own scripts (same origin, where three.js and uPlot are served
 * too) and its inline import maps, allowed by their SHA-256 (CSP3 hash-source, computed here from
 * the page itself so no second copy of them exists); it connects to the API and to the
 * websocket port that /api/config names, on the host the browser asked for; nobody frames it. */
static void page_policy(const http_server *srv, struct MHD_Connection *c, const http_reply *r,
                        char *out, size_t size) {
  if (!r->type || strncmp(r->type, "text/html", 9) != 0 || !r->body) {
    snprintf(out, size, "default-src 'none'; frame-ancestors 'none'");
    return;
  }
  char hashes[512] = "";
  size_t used = 0;
  static const char open_tag[] = "<script type=\"importmap\">";
  for (const char *p = strstr(r->body, open_tag); p; p = strstr(p, open_tag)) {
    p += sizeof open_tag - 1;
    const char *end = strstr(p, "</script>");
    if (!end) {
      break;
    }
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)p, (size_t)(end - p), digest);
    unsigned char b64[48];
    EVP_EncodeBlock(b64, digest, sizeof digest);
    const int n = snprintf(hashes + used, sizeof hashes - used, " 'sha256-%s'", (char *)b64);
    if (n < 0 || (size_t)n >= sizeof hashes - used) {
      break;
    }
    used += (size_t)n;
    p = end;
  }
  /* the host the browser used, without its port; only plain host characters are echoed */
  char ws[300] = "";
  const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
  if (srv->ws_public_port > 0 && host && strlen(host) < 256 &&
      strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]") ==
          strlen(host)) {
    const char *colon = strrchr(host, ':');
    const char *bracket = strrchr(host, ']');
    const size_t n = colon && (!bracket || colon > bracket) ? (size_t)(colon - host) : strlen(host);
    snprintf(ws, sizeof ws, " ws://%.*s:%d wss://%.*s:%d", (int)n, host, srv->ws_public_port,
             (int)n, host, srv->ws_public_port);
  }
  snprintf(out, size,
           "default-src 'self'; script-src 'self'%s; style-src 'self' 'unsafe-inline'; "
           "img-src 'self' data:; connect-src 'self'%s; object-src 'none'; base-uri 'none'; "
           "form-action 'self'; frame-ancestors 'none'",
           hashes, ws);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **con_cls) {
  (void)version;
  http_server *srv = cls;
  http_req *rq = *con_cls;
  if (!rq) {
    rq = calloc(1, sizeof *rq);
    if (!rq) {
      return MHD_NO;
    }
    *con_cls = rq;
    clock_gettime(CLOCK_MONOTONIC, &rq->started);
    return MHD_YES;
  }
  if (*upload_size > 0) {
    /* the idle timeout alone lets a body trickle in forever, a byte at a time */
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (srv->timeout_s > 0 && t.tv_sec - rq->started.tv_sec > (time_t)srv->timeout_s) {
      return MHD_NO;
    }
    /* keep reading past the limit (and drop it) so the client gets a clean 413 */
    if (!rq->too_big && rq->len + *upload_size <= BODY_LIMIT) {
      char *b = realloc(rq->body, rq->len + *upload_size + 1);
      if (b) {
        memcpy(b + rq->len, upload_data, *upload_size);
        rq->body = b;
        rq->len += *upload_size;
        rq->body[rq->len] = '\0';
      } else {
        rq->too_big = true;
      }
    } else {
      rq->too_big = true;
    }
    *upload_size = 0;
    return MHD_YES;
  }
  __atomic_add_fetch(&srv->requests, 1, __ATOMIC_RELAXED);
  http_reply r = route(srv, c, method, url, rq);
  if (r.status >= 100 && r.status < 600) {
    __atomic_add_fetch(&srv->by_status[r.status], 1, __ATOMIC_RELAXED);
  }
  size_t len = !r.body ? 0 : r.len ? r.len : strlen(r.body);
  held_reply *h = len ? hold(srv, &r, &len) : NULL;
  if (len && !h) { /* out of memory: no reply rather than its status with an empty body */
    return MHD_NO;
  }
  char csp[1024];
  page_policy(srv, c, &r, csp, sizeof csp);
  struct MHD_Response *resp =
      h ? MHD_create_response_from_buffer_with_free_callback_cls(len, h->body, let_go, h)
        : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  if (!resp) {
    if (h) {
      let_go(h);
    }
    return MHD_NO;
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r.type ? r.type : "text/plain");
  MHD_add_response_header(resp, "Cache-Control", "no-store");
  MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(resp, "X-Frame-Options", "DENY");
  MHD_add_response_header(resp, "Referrer-Policy", "same-origin");
  MHD_add_response_header(resp, "Content-Security-Policy", csp);
  if (r.allow[0]) {
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r.allow);
  }
  if (r.location[0]) {
    MHD_add_response_header(resp, "Location", r.location);
  }
  if (r.disposition[0]) {
    MHD_add_response_header(resp, "Content-Disposition", r.disposition);
  }
  if (r.retry_after > 0) {
    char secs[16];
    snprintf(secs, sizeof secs, "%d", r.retry_after);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, secs);
  }
  const enum MHD_Result ok = MHD_queue_response(c, (unsigned)r.status, resp);
  MHD_destroy_response(resp);
  return ok;
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode code) {
  (void)cls;
  (void)c;
  (void)code;
  http_req *rq = *con_cls;
  if (rq) {
    free(rq->body);
    free(rq);
    *con_cls = NULL;
  }
}

/* One thread per connection, as before: a handler may block for a moment (a store sync, a
 * session's lock) without holding up anyone else's request, which a small pool of event-loop
 * threads would not allow. What made idle connections dangerous was the limit of 256: it is now
 * large (max-connections), each client may hold only per_ip of them, silent ones go after
 * timeout_s, and the threads' stacks are small, so thousands cost little memory. The listening
 * socket's backlog holds a burst while threads start. poll(), not select(): descriptors past
 * 1024 (FD_SETSIZE) must work too. */
#define HTTP_STACK_BYTES (1024u * 1024u) /* deepest handler: SQLite queries and jansson */

/* Connections per address, counted here rather than by libmicrohttpd so that a trusted proxy,
 * which carries many clients, is exempt. Accepting and closing both happen on libmicrohttpd's
 * threads; the count is the iplimit's, under its lock. */
static enum MHD_Result admit(void *cls, const struct sockaddr *addr, socklen_t len) {
  (void)len;
  const http_server *srv = cls;
  char ip[IPLIMIT_ADDR], client[IPLIMIT_ADDR];
  iplimit_addr(addr, ip);
  iplimit_client(ip, srv->v6_bits, client);
  return allow_addr(srv->proxies, ip) || iplimit_enter(srv->conns, client, (int)srv->per_ip)
             ? MHD_YES
             : MHD_NO;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
  (void)socket_context;
  const http_server *srv = cls;
  if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
    char ip[IPLIMIT_ADDR], client[IPLIMIT_ADDR];
    peer_of(c, ip);
    iplimit_client(ip, srv->v6_bits, client);
    if (!allow_addr(srv->proxies, ip)) {
      iplimit_leave(srv->conns, client);
    }
  }
}

int http_start(http_server *srv, const struct sockaddr *addr) {
  char why[PATH_MAX + 80];
  srv->site = static_site_open(srv->static_dir, why, sizeof why);
  if (!srv->site) {
    return -1;
  }
  if (why[0]) {
    log_msg(LOG_WARN, "no_pages", "%s", why);
  }
  srv->mhd = MHD_start_daemon(
      MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG, 0, admit,
      srv, on_request, srv, MHD_OPTION_SOCK_ADDR, addr, MHD_OPTION_NOTIFY_COMPLETED, on_done, srv,
      MHD_OPTION_CONNECTION_LIMIT, srv->max_connections, MHD_OPTION_NOTIFY_CONNECTION,
      on_connection, srv, MHD_OPTION_CONNECTION_TIMEOUT, srv->timeout_s,
      MHD_OPTION_THREAD_STACK_SIZE, (size_t)HTTP_STACK_BYTES, MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u,
      MHD_OPTION_END);
  if (!srv->mhd) {
    static_site_free(srv->site);
    srv->site = NULL;
    return -1;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_BIND_PORT);
  srv->port = info ? info->port : 0;
  return 0;
}

void http_stop(http_server *srv) {
  if (srv->mhd) {
    MHD_stop_daemon(srv->mhd);
    srv->mhd = NULL;
  }
  static_site_free(srv->site);
  srv->site = NULL;
}
