/* The REST route table (server/daemon/http_routes.c) and its matcher (server/api/api_route.c)
 * without a server: every route reaches its own handler, every wrong method gets 405 with the
 * Allow list, unknown paths 404; trailing junk and slashes, and odd or over-long ids. */
#include "../support/check.h"
#include "http_internal.h"

#include <stdio.h>
#include <string.h>

typedef struct route_case {
  const char *method, *path;
  int status;          /* 200, 404, 405 */
  api_handler handler; /* when 200 */
  const char *allow;   /* when 405 */
  api_scope scope;
  const char *id;
} route_case;

#define NONE NULL

static const route_case cases[] = {
    /* every route, as documented in schema/openapi.yaml */
    {"GET", "/healthz", 200, h_healthz, "", API_SCOPE_STATIC, ""},
    {"GET", "/readyz", 200, h_readyz, "", API_SCOPE_STATIC, ""},
    {"GET", "/metrics", 200, h_metrics, "", API_SCOPE_STATIC, ""},
    {"GET", "/api/config", 200, h_config, "", API_SCOPE_API, ""},
    {"GET", "/api/scenes", 200, h_scenes, "", API_SCOPE_API, ""},
    {"GET", "/api/sessions", 200, h_sessions_list, "", API_SCOPE_API, ""},
    {"POST", "/api/sessions", 200, h_sessions_create, "", API_SCOPE_API, ""},
    {"GET", "/api/sessions/abc123", 200, h_session_get, "", API_SCOPE_SESSION, "abc123"},
    {"PATCH", "/api/sessions/abc123", 200, h_session_patch, "", API_SCOPE_SESSION, "abc123"},
    {"DELETE", "/api/sessions/abc123", 200, h_session_delete, "", API_SCOPE_SESSION, "abc123"},
    {"PATCH", "/api/sessions/abc123/params", 200, h_session_params, "", API_SCOPE_SESSION,
     "abc123"},
    {"POST", "/api/sessions/abc123/actions", 200, h_session_action, "", API_SCOPE_SESSION,
     "abc123"},
    {"POST", "/api/sessions/abc123/scene", 200, h_session_scene, "", API_SCOPE_SESSION, "abc123"},
    {"GET", "/api/sessions/abc123/snapshot", 200, h_session_snapshot, "", API_SCOPE_SESSION,
     "abc123"},
    {"POST", "/api/sessions/abc123/snapshot", 405, NONE, "GET", API_SCOPE_SESSION, "abc123"},
    {"POST", "/api/admin/backup", 200, h_backup, "", API_SCOPE_API, ""},
    {"GET", "/api/runs", 200, h_runs_list, "", API_SCOPE_RUNS, ""},
    {"GET", "/api/runs/42", 200, h_run_get, "", API_SCOPE_RUNS, "42"},
    {"GET", "/api/runs/42/samples", 200, h_run_samples, "", API_SCOPE_RUNS, "42"},
    {"GET", "/api/runs/42/snapshot", 200, h_run_snapshot, "", API_SCOPE_RUNS, "42"},
    {"POST", "/api/runs/42/replay", 200, h_run_replay, "", API_SCOPE_RUNS, "42"},
    {"POST", "/api/runs/42/fork", 200, h_run_fork, "", API_SCOPE_RUNS, "42"},
    {"POST", "/api/classes", 200, h_classes_create, "", API_SCOPE_API, ""},
    {"GET", "/api/classes/c1", 200, h_class_get, "", API_SCOPE_CLASS, "c1"},
    {"PATCH", "/api/classes/c1/", 200, h_class_patch, "", API_SCOPE_CLASS, "c1"},
    {"POST", "/api/classes/c1/push", 200, h_class_push, "", API_SCOPE_CLASS, "c1"},
    {"POST", "/api/classes/c1/end", 200, h_class_end, "", API_SCOPE_CLASS, "c1"},
    {"GET", "/api/classes/c1/end", 405, NONE, "POST", API_SCOPE_CLASS, "c1"},
    {"DELETE", "/api/classes/c1", 405, NONE, "GET, PATCH", API_SCOPE_CLASS, "c1"},
    {"GET", "/api/classes/c1/nope", 404, NONE, "", API_SCOPE_CLASS, "c1"},
    {"POST", "/api/join", 200, h_join, "", API_SCOPE_API, ""},
    /* a join code is a session id too; the id's checks are the registry's */
    {"GET", "/api/sessions/K7Q2", 200, h_session_get, "", API_SCOPE_SESSION, "K7Q2"},
    /* one trailing slash after a parameter is the same resource (as before the table) */
    {"GET", "/api/sessions/abc123/", 200, h_session_get, "", API_SCOPE_SESSION, "abc123"},
    {"GET", "/api/runs/42/", 200, h_run_get, "", API_SCOPE_RUNS, "42"},
    /* a run id that is no number still matches: the handler answers 404 after the method */
    {"GET", "/api/runs/abc", 200, h_run_get, "", API_SCOPE_RUNS, "abc"},
    {"POST", "/api/runs/abc/replay", 200, h_run_replay, "", API_SCOPE_RUNS, "abc"},
    /* wrong methods: 405 and the methods the path has, in table order */
    {"POST", "/healthz", 405, NONE, "GET", API_SCOPE_STATIC, ""},
    {"HEAD", "/healthz", 405, NONE, "GET", API_SCOPE_STATIC, ""},
    {"DELETE", "/readyz", 405, NONE, "GET", API_SCOPE_STATIC, ""},
    {"PUT", "/metrics", 405, NONE, "GET", API_SCOPE_STATIC, ""},
    {"POST", "/api/config", 405, NONE, "GET", API_SCOPE_API, ""},
    {"POST", "/api/scenes", 405, NONE, "GET", API_SCOPE_API, ""},
    {"PUT", "/api/sessions", 405, NONE, "GET, POST", API_SCOPE_API, ""},
    {"DELETE", "/api/sessions", 405, NONE, "GET, POST", API_SCOPE_API, ""},
    {"POST", "/api/sessions/abc123", 405, NONE, "GET, PATCH, DELETE", API_SCOPE_SESSION, "abc123"},
    {"PUT", "/api/sessions/abc123/", 405, NONE, "GET, PATCH, DELETE", API_SCOPE_SESSION, "abc123"},
    {"GET", "/api/sessions/abc123/params", 405, NONE, "PATCH", API_SCOPE_SESSION, "abc123"},
    {"POST", "/api/sessions/abc123/params", 405, NONE, "PATCH", API_SCOPE_SESSION, "abc123"},
    {"GET", "/api/sessions/abc123/actions", 405, NONE, "POST", API_SCOPE_SESSION, "abc123"},
    {"PATCH", "/api/sessions/abc123/scene", 405, NONE, "POST", API_SCOPE_SESSION, "abc123"},
    {"GET", "/api/admin/backup", 405, NONE, "POST", API_SCOPE_API, ""},
    {"POST", "/api/runs", 405, NONE, "GET", API_SCOPE_RUNS, ""},
    {"DELETE", "/api/runs/42", 405, NONE, "GET", API_SCOPE_RUNS, "42"},
    {"POST", "/api/runs/42/samples", 405, NONE, "GET", API_SCOPE_RUNS, "42"},
    {"GET", "/api/runs/42/replay", 405, NONE, "POST", API_SCOPE_RUNS, "42"},
    {"GET", "/api/runs/42/fork", 405, NONE, "POST", API_SCOPE_RUNS, "42"},
    /* methods are case-sensitive (RFC 9110 §9.1) */
    {"get", "/healthz", 405, NONE, "GET", API_SCOPE_STATIC, ""},
    /* unknown paths and trailing junk: 404, whatever the method */
    {"GET", "/api", 404, NONE, "", API_SCOPE_API, ""},
    {"GET", "/api/", 404, NONE, "", API_SCOPE_API, ""},
    {"GET", "/api/nothing", 404, NONE, "", API_SCOPE_API, ""},
    {"POST", "/api/nothing", 404, NONE, "", API_SCOPE_API, ""},
    {"GET", "/api/scenesX", 404, NONE, "", API_SCOPE_API, ""},
    {"GET", "/api/scenes/", 404, NONE, "", API_SCOPE_API, ""},
    {"GET", "/api/scenes/pour", 404, NONE, "", API_SCOPE_API, ""},
    {"GET", "/api/sessionsX", 404, NONE, "", API_SCOPE_API, ""},
    {"GET", "/api/admin/backup/", 404, NONE, "", API_SCOPE_API, ""},
    {"POST", "/api/admin", 404, NONE, "", API_SCOPE_API, ""},
    {"GET", "/api/sessions/", 404, NONE, "", API_SCOPE_SESSION, ""},
    {"GET", "/api/sessions//params", 404, NONE, "", API_SCOPE_SESSION, ""},
    {"GET", "/api/sessions/abc123//", 404, NONE, "", API_SCOPE_SESSION, "abc123"},
    {"PATCH", "/api/sessions/abc123/params/", 404, NONE, "", API_SCOPE_SESSION, "abc123"},
    {"PATCH", "/api/sessions/abc123/params/x", 404, NONE, "", API_SCOPE_SESSION, "abc123"},
    {"POST", "/api/sessions/abc123/actionsX", 404, NONE, "", API_SCOPE_SESSION, "abc123"},
    {"GET", "/api/sessions/abc123/nothing", 404, NONE, "", API_SCOPE_SESSION, "abc123"},
    {"GET", "/api/runs/", 404, NONE, "", API_SCOPE_RUNS, ""},
    {"GET", "/api/runs//samples", 404, NONE, "", API_SCOPE_RUNS, ""},
    {"GET", "/api/runs/42/nothing", 404, NONE, "", API_SCOPE_RUNS, "42"},
    {"GET", "/api/runs/42/samples/", 404, NONE, "", API_SCOPE_RUNS, "42"},
    {"GET", "/api/runsX", 404, NONE, "", API_SCOPE_API, ""},
    /* the client's files: no route, the static scope */
    {"GET", "/", 404, NONE, "", API_SCOPE_STATIC, ""},
    {"GET", "/index.html", 404, NONE, "", API_SCOPE_STATIC, ""},
    {"GET", "/s/abc123", 404, NONE, "", API_SCOPE_STATIC, ""},
    {"GET", "/healthz/", 404, NONE, "", API_SCOPE_STATIC, ""},
    {"GET", "/healthzX", 404, NONE, "", API_SCOPE_STATIC, ""},
    {"GET", "/apix", 404, NONE, "", API_SCOPE_STATIC, ""},
    {"GET", "", 404, NONE, "", API_SCOPE_STATIC, ""},
};

static const char *handler_name(const api_match *m) {
  return m->route ? m->route->pattern : "(none)";
}

int main(void) {
  char name[1024];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const route_case *c = &cases[i];
    api_match m;
    api_route_match(http_routes, http_route_count, c->method, c->path, &m);
    const bool ok = m.status == c->status &&
                    (c->status != 200 || (m.route && m.route->handler == c->handler)) &&
                    strcmp(m.allow, c->allow) == 0 && m.scope == c->scope &&
                    strcmp(m.id, c->id) == 0 && !m.id_truncated;
    snprintf(
        name, sizeof name,
        "%s '%s': got %d %s allow '%s' scope %d id '%s', want %d%s allow '%s' scope %d id '%s'",
        c->method, c->path, m.status, handler_name(&m), m.allow, (int)m.scope, m.id, c->status,
        c->handler ? " and its handler" : "", c->allow, (int)c->scope, c->id);
    CHECK(name, ok);
  }

  /* every table entry is reached by its own pattern (with an id filled in), and by nothing else */
  int reached = 0;
  for (size_t i = 0; i < http_route_count; i++) {
    char path[256];
    const char *p = http_routes[i].pattern;
    size_t n = 0;
    while (*p && n + 8 < sizeof path) {
      if (*p == '{') {
        n += (size_t)snprintf(path + n, sizeof path - n, "7");
        p = strchr(p, '}') + 1;
      } else {
        path[n++] = *p++;
      }
    }
    path[n] = '\0';
    api_match m;
    api_route_match(http_routes, http_route_count, http_routes[i].method, path, &m);
    reached += m.status == 200 && m.route == &http_routes[i];
  }
  snprintf(name, sizeof name, "every route is reached by its own pattern: got %d of %zu", reached,
           http_route_count);
  CHECK(name, reached == (int)http_route_count);

  /* over-long ids: cut to fit, flagged, and the route still found (the caller answers 404) */
  char path[600];
  char longid[400];
  memset(longid, 'a', sizeof longid - 1);
  longid[sizeof longid - 1] = '\0';
  snprintf(path, sizeof path, "/api/sessions/%s/params", longid);
  api_match m;
  api_route_match(http_routes, http_route_count, "PATCH", path, &m);
  snprintf(name, sizeof name,
           "a 399-byte session id: got status %d, truncated %d, id length %zu; want 200, 1, %zu",
           m.status, (int)m.id_truncated, strlen(m.id), sizeof m.id - 1);
  CHECK(name, m.status == 200 && m.id_truncated && strlen(m.id) == sizeof m.id - 1);
  snprintf(path, sizeof path, "/api/runs/%s", longid);
  api_route_match(http_routes, http_route_count, "GET", path, &m);
  snprintf(name, sizeof name, "a 399-digit run path: got status %d, truncated %d; want 200, 1",
           m.status, (int)m.id_truncated);
  CHECK(name, m.status == 200 && m.id_truncated);
  /* an id of exactly the buffer's size less one is whole */
  memset(longid, 'b', sizeof m.id - 1);
  longid[sizeof m.id - 1] = '\0';
  snprintf(path, sizeof path, "/api/sessions/%s", longid);
  api_route_match(http_routes, http_route_count, "GET", path, &m);
  snprintf(name, sizeof name, "a %zu-byte id: got truncated %d, length %zu", sizeof m.id - 1,
           (int)m.id_truncated, strlen(m.id));
  CHECK(name, m.status == 200 && !m.id_truncated && strlen(m.id) == sizeof m.id - 1);
  /* odd bytes in an id are the registry's to refuse, never the matcher's to crash on */
  api_route_match(http_routes, http_route_count, "GET", "/api/sessions/%00\x01\xff", &m);
  snprintf(name, sizeof name, "odd bytes in an id: got %d id '%s'", m.status, m.id);
  CHECK(name, m.status == 200 && strcmp(m.id, "%00\x01\xff") == 0);
  CHECK_DONE();
}
