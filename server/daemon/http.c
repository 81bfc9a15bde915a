/* grainlabd's HTTP side on libmicrohttpd: one route table (documented in schema/openapi.yaml),
 * bounded request bodies, strict JSON, bearer tokens, JSON errors, and static files. */
#define _GNU_SOURCE
#include "http.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BODY_LIMIT 16384

typedef struct http_req {
  char *body;
  size_t len;
  bool too_big;
} http_req;

typedef struct http_reply {
  int status;
  char *body; /* malloc'd */
  const char *type;
  const char *allow;    /* for 405 */
  char disposition[64]; /* Content-Disposition, for downloads */
} http_reply;

static http_reply json_reply(int status, json_t *j) {
  /* 15 significant digits: 0.1 reads as 0.1, and nothing a double carries is lost to a reader */
  http_reply r = {status, json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(15)), "application/json",
                  NULL, ""};
  json_decref(j);
  return r;
}

static http_reply error_reply(int status, const char *code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static http_reply error_reply(int status, const char *code, const char *field, const char *fmt,
                              ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  json_t *e = json_pack("{s:s, s:s}", "code", code, "message", msg);
  if (field && *field) {
    json_object_set_new(e, "field", json_string(field));
  }
  return json_reply(status, json_pack("{s:o}", "error", e));
}

/* A refusal from the registry or the store, as the API's JSON error. */
static http_reply api_error_reply(const api_error *e) {
  return error_reply(e->status, e->code, e->field, "%s", e->message);
}

/* The body as a JSON object, or an error reply. */
static json_t *parse_object(const http_req *rq, http_reply *err) {
  json_error_t je;
  json_t *j = json_loadb(rq->body ? rq->body : "", rq->len, JSON_REJECT_DUPLICATES, &je);
  if (!j) {
    *err = error_reply(400, "bad_json", "", "malformed JSON at line %d column %d: %s", je.line,
                       je.column, je.text);
    return NULL;
  }
  if (!json_is_object(j)) {
    json_decref(j);
    *err = error_reply(400, "bad_json", "", "the body must be a JSON object");
    return NULL;
  }
  return j;
}

/* Every key of `j` must be one of `allowed` (NULL-terminated). */
static bool only_keys(json_t *j, const char *const *allowed, http_reply *err) {
  const char *key;
  json_t *v;
  json_object_foreach(j, key, v) {
    bool ok = false;
    for (int i = 0; allowed[i] && !ok; i++) {
      ok = strcmp(allowed[i], key) == 0;
    }
    if (!ok) {
      *err = error_reply(400, "unknown_field", key, "unknown field '%.60s'", key);
      return false;
    }
  }
  return true;
}

/* {scene, params?, seed?} into a validated definition, or an error reply. */
static bool read_definition(json_t *body, grn_world_def *d, http_reply *err) {
  json_t *scene = json_object_get(body, "scene"), *params = json_object_get(body, "params");
  json_t *seed = json_object_get(body, "seed");
  if (!json_is_string(scene)) {
    *err = error_reply(400, scene ? "wrong_type" : "missing_field", "scene",
                       "\"scene\" must be a string naming a scene");
    return false;
  }
  grn_error e;
  if (grn_world_def_default(d, json_string_value(scene), &e) != GRN_OK) {
    *err = error_reply(400, "unknown_scene", "scene", "unknown scene '%.60s'",
                       json_string_value(scene));
    return false;
  }
  if (params && !json_is_object(params)) {
    *err = error_reply(400, "wrong_type", "params", "\"params\" must be an object");
    return false;
  }
  const char *key;
  json_t *v;
  json_object_foreach(params, key, v) {
    if (!json_is_number(v)) {
      *err = error_reply(400, "wrong_type", key, "parameter '%.60s' must be a number", key);
      return false;
    }
    if (grn_world_def_set(d, key, json_number_value(v), &e) != GRN_OK) {
      *err = error_reply(e.code == GRN_E_UNKNOWN_PARAM ? 400 : 422,
                         e.code == GRN_E_UNKNOWN_PARAM ? "unknown_parameter" : "out_of_range",
                         e.field, "%s", e.message);
      return false;
    }
  }
  if (seed) {
    if (!json_is_integer(seed)) {
      *err = error_reply(400, "wrong_type", "seed", "\"seed\" must be an integer");
      return false;
    }
    d->seed = (uint64_t)json_integer_value(seed);
  }
  return true;
}

static const char *bearer(struct MHD_Connection *c) {
  const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
  if (!h || strncmp(h, "Bearer ", 7) != 0) {
    return NULL;
  }
  return h + 7;
}

static bool admin_ok(const http_server *srv, const char *token) {
  const size_t n = strlen(srv->admin_token);
  if (n == 0 || !token || strlen(token) != n) {
    return false;
  }
  unsigned char diff = 0;
  for (size_t i = 0; i < n; i++) {
    diff |= (unsigned char)(srv->admin_token[i] ^ token[i]);
  }
  return diff == 0;
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

static http_reply scenes_reply(void) {
  json_t *a = json_array();
  for (int i = 0; i < grn_scene_count(); i++) {
    const grn_scene_info *sc = grn_scene_at(i);
    json_t *params = json_array(), *actions = json_array(), *meas = json_array();
    for (int k = 0; k < sc->param_count; k++) {
      const grn_param_info *p = &sc->param_info[k];
      json_array_append_new(
          params, json_pack("{s:s, s:s, s:f, s:f, s:f, s:b, s:b, s:s}", "name", p->name, "unit",
                            p->unit, "min", p->min, "max", p->max, "default", p->def, "integer",
                            p->integer, "restart", p->restart, "description", p->description));
    }
    for (int k = 0; k < sc->action_count; k++) {
      json_array_append_new(actions, json_string(sc->actions[k]));
    }
    for (int k = 0; k < GRN_MEASURE_COUNT; k++) {
      if (sc->measures & (1u << k)) {
        json_array_append_new(meas, json_string(grn_measure_name((grn_measure_key)k)));
      }
    }
    json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:o, s:o, s:o}", "name", sc->name, "model",
                                       grn_model_name(sc->model), "description", sc->description,
                                       "params", params, "actions", actions, "measurements", meas));
  }
  return json_reply(200, json_pack("{s:o}", "scenes", a));
}

/* The reply to a session's creation: the session with its tokens (shown this once). */
static http_reply created(session *s, const char *token, const char *viewer_token) {
  json_t *j = sess_json(s);
  json_object_set_new(j, "control_token", json_string(token));
  if (*viewer_token) {
    json_object_set_new(j, "viewer_token", json_string(viewer_token));
  }
  sess_release(s);
  return json_reply(201, j);
}

static http_reply create_session(http_server *srv, const http_req *rq) {
  http_reply err;
  json_t *body = parse_object(rq, &err);
  if (!body) {
    return err;
  }
  static const char *const keys[] = {"scene", "params", "seed", "label", "private", NULL};
  grn_world_def d;
  json_t *label = json_object_get(body, "label");
  json_t *priv = json_object_get(body, "private");
  if (!only_keys(body, keys, &err) || !read_definition(body, &d, &err)) {
    json_decref(body);
    return err;
  }
  if (label && (!json_is_string(label) || strlen(json_string_value(label)) > 63)) {
    json_decref(body);
    return error_reply(400, "wrong_type", "label",
                       "\"label\" must be a string of 63 bytes or "
                       "fewer");
  }
  if (priv && !json_is_boolean(priv)) {
    json_decref(body);
    return error_reply(400, "wrong_type", "private", "\"private\" must be true or false");
  }
  sess_error se;
  char token[65], viewer_token[65];
  session *s = sess_create(srv->reg, &d, label ? json_string_value(label) : "", json_is_true(priv),
                           token, viewer_token, &se);
  json_decref(body);
  return s ? created(s, token, viewer_token) : api_error_reply(&se);
}

static http_reply metrics_reply(http_server *srv) {
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
      (unsigned long long)w.texts_sent, (unsigned long long)w.texts_skipped,
      (unsigned long long)w.bytes_sent, (unsigned long long)w.messages_rejected);
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
          "# TYPE grainlab_steps_total counter\ngrainlab_steps_total %llu\n",
          t.workers, (unsigned long long)t.steps);
  sess_metrics(srv->reg, f);
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
            "# TYPE grainlab_store_batches_total counter\ngrainlab_store_batches_total %llu\n",
            (unsigned long long)ss.queue_length, ss.latency_sum, (unsigned long long)ss.written,
            ss.latency_max, (unsigned long long)ss.batches);
  }
  fclose(f);
  http_reply r = {200, more, "text/plain; version=0.0.4", NULL, ""};
  return r;
}

/* /api/sessions/{id}[/what] */
static http_reply session_route(http_server *srv, struct MHD_Connection *c, const char *method,
                                const char *id, const char *what, const http_req *rq) {
  session *s = sess_find(srv->reg, id);
  if (!s) {
    return error_reply(404, "not_found", "id", "no session '%.40s'", id);
  }
  const char *presented = bearer(c);
  if (!sess_viewer_ok(s, presented) && !admin_ok(srv, presented)) {
    sess_release(s);
    return error_reply(403, "private", "",
                       "this session is private: send its viewer token as "
                       "\"Authorization: Bearer <viewer token>\"");
  }
  http_reply r, err;
  json_t *body = NULL;
  sess_error se;
  if (!*what) {
    if (strcmp(method, "GET") == 0) {
      r = json_reply(200, sess_json(s));
    } else if (strcmp(method, "DELETE") == 0) {
      if (authorized(srv, c, s, true, &err)) {
        sess_delete(srv->reg, s);
        r = json_reply(200, json_pack("{s:s}", "deleted", id));
      } else {
        r = err;
      }
    } else if (strcmp(method, "PATCH") == 0) {
      static const char *const keys[] = {"speed", "label", NULL};
      json_t *speed;
      if (!authorized(srv, c, s, false, &err) || !(body = parse_object(rq, &err)) ||
          !only_keys(body, keys, &err)) {
        r = err;
      } else if ((speed = json_object_get(body, "speed")) && !json_is_number(speed)) {
        r = error_reply(400, "wrong_type", "speed", "\"speed\" must be a number");
      } else if (json_object_get(body, "label")) {
        r = error_reply(400, "read_only", "label", "a session's label is set when it is created");
      } else if (speed && sess_set_speed(s, json_number_value(speed), &se) != 0) {
        r = api_error_reply(&se);
      } else {
        r = json_reply(200, sess_json(s));
      }
    } else {
      r = error_reply(405, "method_not_allowed", "", "%s is not allowed here", method);
      r.allow = "GET, PATCH, DELETE";
    }
  } else if (strcmp(what, "params") == 0 || strcmp(what, "actions") == 0 ||
             strcmp(what, "scene") == 0) {
    const char *want = strcmp(what, "params") == 0 ? "PATCH" : "POST";
    if (strcmp(method, want) != 0) {
      r = error_reply(405, "method_not_allowed", "", "%s is not allowed here", method);
      r.allow = want;
    } else if (!authorized(srv, c, s, false, &err) || !(body = parse_object(rq, &err))) {
      r = err;
    } else if (strcmp(what, "params") == 0) {
      r = sess_set_params(s, body, &se) == 0 ? json_reply(200, sess_json(s)) : api_error_reply(&se);
    } else if (strcmp(what, "actions") == 0) {
      r = sess_action(s, body, &se) == 0 ? json_reply(200, sess_json(s)) : api_error_reply(&se);
    } else {
      static const char *const keys[] = {"scene", "params", "seed", NULL};
      grn_world_def d;
      if (!only_keys(body, keys, &err) || !read_definition(body, &d, &err)) {
        r = err;
      } else {
        r = sess_switch_scene(srv->reg, s, &d, &se) == 0 ? json_reply(200, sess_json(s))
                                                         : api_error_reply(&se);
      }
    }
  } else {
    r = error_reply(404, "not_found", "", "no such resource");
  }
  json_decref(body);
  sess_release(s);
  return r;
}

static const char *mime(const char *path) {
  const char *dot = strrchr(path, '.');
  static const char *const map[][2] = {{".html", "text/html; charset=utf-8"},
                                       {".js", "text/javascript"},
                                       {".mjs", "text/javascript"},
                                       {".css", "text/css"},
                                       {".json", "application/json"},
                                       {".svg", "image/svg+xml"},
                                       {".png", "image/png"}};
  for (size_t i = 0; dot && i < sizeof map / sizeof map[0]; i++) {
    if (strcmp(dot, map[i][0]) == 0) {
      return map[i][1];
    }
  }
  return "application/octet-stream";
}

/* Static files from the client folder; nothing outside it (checked on the resolved path). */
static http_reply static_file(const http_server *srv, const char *url) {
  if (strstr(url, "..") || strchr(url, '\\')) {
    return error_reply(404, "not_found", "", "no such file");
  }
  /* the client's pages: /s/{id} is a session's (viewer or, with #control=TOKEN, controller) */
  const char *rel = strcmp(url, "/") == 0          ? "/index.html"
                    : strncmp(url, "/s/", 3) == 0  ? "/session.html"
                    : strcmp(url, "/results") == 0 ? "/results.html"
                                                   : url;
  /* of node_modules only the browser libraries, never the test tools */
  static const char *const libs[] = {"/node_modules/three/", "/node_modules/uplot/",
                                     "/node_modules/fzstd/"};
  bool lib = false;
  for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
    lib = lib || strstr(rel, libs[i]) == rel;
  }
  if (strncmp(rel, "/node_modules/", 14) == 0 && !lib) {
    return error_reply(404, "not_found", "", "no such file");
  }
  char path[PATH_MAX], real[PATH_MAX], root[PATH_MAX];
  if (snprintf(path, sizeof path, "%s%s", srv->static_dir, rel) >= (int)sizeof path ||
      !realpath(srv->static_dir, root) || !realpath(path, real) ||
      strncmp(real, root, strlen(root)) != 0 || real[strlen(root)] != '/') {
    return error_reply(404, "not_found", "", "no such file");
  }
  const int fd = open(real, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (64 << 20)) {
    if (fd >= 0) {
      close(fd);
    }
    return error_reply(404, "not_found", "", "no such file");
  }
  char *buf = malloc((size_t)st.st_size + 1);
  const ssize_t got = buf ? read(fd, buf, (size_t)st.st_size) : -1;
  close(fd);
  if (got != st.st_size) {
    free(buf);
    return error_reply(500, "io_error", "", "could not read the file");
  }
  buf[got] = '\0';
  http_reply r = {200, buf, mime(real), NULL, ""};
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
  int status = 500;
  switch (e->status) {
  case STORE_E_NOT_FOUND:
    status = 404;
    break;
  case STORE_E_BAD_FILTER:
    status = 400;
    break;
  default:
    break;
  }
  return error_reply(status, e->code ? e->code : "store_error", e->field, "%s", e->message);
}

static http_reply method_not_allowed(const char *method, const char *allow) {
  http_reply r = error_reply(405, "method_not_allowed", "", "%s is not allowed here", method);
  r.allow = allow;
  return r;
}

/* /api/runs and /api/runs/{id}[/samples]: the record, read-only */
/* POST /api/runs/{id}/replay {label?, private?} and /fork {params?, label?, private?} */
static http_reply from_run(http_server *srv, long long id, bool fork, const http_req *rq) {
  http_reply err;
  json_t *body = parse_object(rq, &err);
  if (!body) {
    return err;
  }
  static const char *const replay_keys[] = {"label", "private", NULL};
  static const char *const fork_keys[] = {"params", "label", "private", NULL};
  json_t *label = json_object_get(body, "label"), *priv = json_object_get(body, "private");
  json_t *params = json_object_get(body, "params");
  http_reply r;
  if (!only_keys(body, fork ? fork_keys : replay_keys, &err)) {
    r = err;
  } else if (label && (!json_is_string(label) || strlen(json_string_value(label)) > 63)) {
    r = error_reply(400, "wrong_type", "label", "\"label\" must be a string of 63 bytes or fewer");
  } else if (priv && !json_is_boolean(priv)) {
    r = error_reply(400, "wrong_type", "private", "\"private\" must be true or false");
  } else if (params && !json_is_object(params)) {
    r = error_reply(400, "wrong_type", "params", "\"params\" must be an object");
  } else {
    sess_error se;
    char token[65], viewer_token[65];
    json_t *none = json_object();
    session *s = sess_create_from_run(srv->reg, id, fork ? (params ? params : none) : NULL,
                                      label ? json_string_value(label) : "", json_is_true(priv),
                                      token, viewer_token, &se);
    json_decref(none);
    r = s ? created(s, token, viewer_token) : api_error_reply(&se);
  }
  json_decref(body);
  return r;
}

static http_reply runs_route(http_server *srv, struct MHD_Connection *c, const char *method,
                             const char *url, const http_req *rq) {
  if (!srv->store) {
    return error_reply(503, "no_store", "", "this server keeps no record");
  }
  const char *tail = strrchr(url, '/');
  const bool post = tail && (strcmp(tail, "/replay") == 0 || strcmp(tail, "/fork") == 0) &&
                    strncmp(url, "/api/runs/", 10) == 0 && tail > url + 10;
  if (strcmp(method, post ? "POST" : "GET") != 0) {
    return method_not_allowed(method, post ? "POST" : "GET");
  }
  store_error se;
  if (strcmp(url, "/api/runs") == 0) {
    query_args q = {NULL, 0, 0, false};
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, &q);
    store_runs_filter filter;
    json_t *out = NULL;
    if (q.no_memory) {
      free(q.args);
      return error_reply(500, "store_error", "", "out of memory");
    }
    const store_status rc = store_filter_parse(q.args, q.n, &filter, &se);
    free(q.args);
    if (rc != STORE_OK) {
      return store_error_reply(&se);
    }
    return store_list_runs(srv->store, &filter, &out, &se) == STORE_OK ? json_reply(200, out)
                                                                       : store_error_reply(&se);
  }
  const char *rest = url + strlen("/api/runs/"), *slash = strchr(rest, '/');
  const size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
  char digits[20];
  if (n == 0 || n >= sizeof digits || strspn(rest, "0123456789") != n) {
    return error_reply(404, "not_found", "id", "run ids are whole numbers");
  }
  memcpy(digits, rest, n);
  digits[n] = '\0';
  const long long id = strtoll(digits, NULL, 10);
  const char *what = slash ? slash + 1 : "";
  if (!*what) {
    json_t *out = NULL;
    return store_get_run(srv->store, id, &out, &se) == STORE_OK ? json_reply(200, out)
                                                                : store_error_reply(&se);
  }
  if (strcmp(what, "samples") == 0) {
    const char *format = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
    const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
    if (format && strcmp(format, "csv") != 0 && strcmp(format, "json") != 0) {
      return error_reply(400, "bad_format", "format", "format is csv or json");
    }
    const bool csv = format ? strcmp(format, "csv") == 0 : accept && strstr(accept, "text/csv");
    char *body = NULL;
    size_t len = 0;
    if (store_samples(srv->store, id, csv, &body, &len, &se) != STORE_OK) {
      return store_error_reply(&se);
    }
    http_reply r = {200, body, csv ? "text/csv; charset=utf-8" : "application/json", NULL, ""};
    if (csv) {
      snprintf(r.disposition, sizeof r.disposition, "attachment; filename=\"run-%lld.csv\"", id);
    }
    return r;
  }
  if (strcmp(what, "replay") == 0 || strcmp(what, "fork") == 0) {
    return from_run(srv, id, strcmp(what, "fork") == 0, rq);
  }
  return error_reply(404, "not_found", "", "no such resource");
}

/* POST /api/admin/backup: a consistent copy of the database, made while sessions run */
static http_reply backup_reply(http_server *srv, struct MHD_Connection *c, const char *method) {
  if (strcmp(method, "POST") != 0) {
    return method_not_allowed(method, "POST");
  }
  const char *t = bearer(c);
  if (!t) {
    return error_reply(401, "unauthorized", "", "backups need the admin token");
  }
  if (!admin_ok(srv, t)) {
    return error_reply(403, "forbidden", "", "backups need the admin token");
  }
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

static http_reply route(http_server *srv, struct MHD_Connection *c, const char *method,
                        const char *url, const http_req *rq) {
  if (rq->too_big) {
    return error_reply(413, "too_large", "", "request bodies are limited to %d bytes", BODY_LIMIT);
  }
  const bool get = strcmp(method, "GET") == 0;
  if (strcmp(url, "/healthz") == 0 || strcmp(url, "/readyz") == 0 || strcmp(url, "/metrics") == 0 ||
      strcmp(url, "/api/scenes") == 0 || strcmp(url, "/api/config") == 0) {
    if (!get) {
      http_reply r = error_reply(405, "method_not_allowed", "", "%s is not allowed here", method);
      r.allow = "GET";
      return r;
    }
    if (strcmp(url, "/api/config") == 0) {
      return json_reply(
          200, json_pack("{s:i, s:s}", "ws_port", srv->ws_public_port, "ws_path", "/ws/sessions/"));
    }
    if (strcmp(url, "/healthz") == 0) {
      return json_reply(200, json_pack("{s:s}", "status", "ok"));
    }
    if (strcmp(url, "/readyz") == 0) {
      return __atomic_load_n(&srv->ready, __ATOMIC_ACQUIRE)
                 ? json_reply(200, json_pack("{s:b}", "ready", 1))
                 : error_reply(503, "not_ready", "", "starting or stopping");
    }
    return strcmp(url, "/metrics") == 0 ? metrics_reply(srv) : scenes_reply();
  }
  if (strcmp(url, "/api/sessions") == 0) {
    if (get) {
      /* private sessions are listed for the admin only */
      return json_reply(
          200, json_pack("{s:o}", "sessions", sess_list_json(srv->reg, admin_ok(srv, bearer(c)))));
    }
    if (strcmp(method, "POST") == 0) {
      return create_session(srv, rq);
    }
    http_reply r = error_reply(405, "method_not_allowed", "", "%s is not allowed here", method);
    r.allow = "GET, POST";
    return r;
  }
  if (strncmp(url, "/api/sessions/", 14) == 0) {
    char id[64];
    const char *rest = url + 14, *slash = strchr(rest, '/');
    const size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
    if (n == 0 || n >= sizeof id) {
      return error_reply(404, "not_found", "id", "no such session");
    }
    memcpy(id, rest, n);
    id[n] = '\0';
    return session_route(srv, c, method, id, slash ? slash + 1 : "", rq);
  }
  if (strcmp(url, "/api/admin/backup") == 0) {
    return backup_reply(srv, c, method);
  }
  if (strcmp(url, "/api/runs") == 0 || strncmp(url, "/api/runs/", 10) == 0) {
    return runs_route(srv, c, method, url, rq);
  }
  if (strncmp(url, "/api/", 5) == 0 || strcmp(url, "/api") == 0) {
    return error_reply(404, "not_found", "", "no such resource");
  }
  if (!get && strcmp(method, "HEAD") != 0) {
    http_reply r = error_reply(405, "method_not_allowed", "", "%s is not allowed here", method);
    r.allow = "GET";
    return r;
  }
  return static_file(srv, url);
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
    return MHD_YES;
  }
  if (*upload_size > 0) {
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
  const size_t len = r.body ? strlen(r.body) : 0;
  struct MHD_Response *resp =
      r.body ? MHD_create_response_from_buffer(len, r.body, MHD_RESPMEM_MUST_FREE)
             : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  if (!resp) {
    free(r.body);
    return MHD_NO;
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r.type ? r.type : "text/plain");
  MHD_add_response_header(resp, "Cache-Control", "no-store");
  if (r.allow) {
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r.allow);
  }
  if (r.disposition[0]) {
    MHD_add_response_header(resp, "Content-Disposition", r.disposition);
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

int http_start(http_server *srv, const struct sockaddr *addr, int max_connections) {
  srv->mhd = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG, 0, NULL,
      NULL, on_request, srv, MHD_OPTION_SOCK_ADDR, addr, MHD_OPTION_NOTIFY_COMPLETED, on_done, srv,
      MHD_OPTION_CONNECTION_LIMIT, (unsigned)max_connections, MHD_OPTION_CONNECTION_TIMEOUT, 30u,
      MHD_OPTION_END);
  if (!srv->mhd) {
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
}
