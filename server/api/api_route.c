/* The REST route table and its matcher (see api_route.h). schema/openapi.yaml documents the same
 * routes; tests/service/test_daemon.sh checks that they agree. */
#include "api_route.h"

#include <stdio.h>
#include <string.h>

const api_route api_routes[] = {
    {"GET", "/healthz", API_AUTH_NONE, API_H_HEALTHZ},
    {"GET", "/readyz", API_AUTH_NONE, API_H_READYZ},
    {"GET", "/metrics", API_AUTH_NONE, API_H_METRICS},
    {"GET", "/api/config", API_AUTH_NONE, API_H_CONFIG},
    {"GET", "/api/nodes", API_AUTH_NONE, API_H_NODES},
    {"GET", "/api/scenes", API_AUTH_NONE, API_H_SCENES},
    /* private sessions are listed for the admin only */
    {"GET", "/api/sessions", API_AUTH_NONE, API_H_SESSIONS_LIST},
    {"POST", "/api/sessions", API_AUTH_NONE, API_H_SESSIONS_CREATE},
    {"GET", "/api/sessions/{id}", API_AUTH_NONE, API_H_SESSION_GET},
    {"PATCH", "/api/sessions/{id}", API_AUTH_CONTROL, API_H_SESSION_PATCH},
    {"DELETE", "/api/sessions/{id}", API_AUTH_CONTROL_OR_ADMIN, API_H_SESSION_DELETE},
    {"PATCH", "/api/sessions/{id}/params", API_AUTH_CONTROL, API_H_SESSION_PARAMS},
    {"POST", "/api/sessions/{id}/actions", API_AUTH_CONTROL, API_H_SESSION_ACTION},
    {"POST", "/api/sessions/{id}/scene", API_AUTH_CONTROL, API_H_SESSION_SCENE},
    /* whoever may watch a session may take its particles away */
    {"GET", "/api/sessions/{id}/snapshot", API_AUTH_NONE, API_H_SESSION_SNAPSHOT},
    {"POST", "/api/admin/backup", API_AUTH_ADMIN, API_H_BACKUP},
    {"GET", "/api/runs", API_AUTH_NONE, API_H_RUNS_LIST},
    {"GET", "/api/runs/{run}", API_AUTH_NONE, API_H_RUN_GET},
    {"GET", "/api/runs/{run}/samples", API_AUTH_NONE, API_H_RUN_SAMPLES},
    {"GET", "/api/runs/{run}/snapshot", API_AUTH_NONE, API_H_RUN_SNAPSHOT},
    {"POST", "/api/runs/{run}/replay", API_AUTH_NONE, API_H_RUN_REPLAY},
    {"POST", "/api/runs/{run}/fork", API_AUTH_NONE, API_H_RUN_FORK},
    /* classes (issue 17): a private class is shown to its teacher and its groups only */
    {"POST", "/api/classes", API_AUTH_CLASS_CREATE, API_H_CLASSES_CREATE},
    {"GET", "/api/classes/{id}", API_AUTH_NONE, API_H_CLASS_GET},
    {"PATCH", "/api/classes/{id}", API_AUTH_TEACHER, API_H_CLASS_PATCH},
    {"POST", "/api/classes/{id}/push", API_AUTH_TEACHER, API_H_CLASS_PUSH},
    {"POST", "/api/classes/{id}/end", API_AUTH_TEACHER, API_H_CLASS_END},
    /* a code's class before joining it (its name and scenes): a wrong code counts as a guess */
    {"GET", "/api/join", API_AUTH_NONE, API_H_JOIN_LOOKUP},
    {"POST", "/api/join", API_AUTH_NONE, API_H_JOIN},
};
const size_t api_route_count = sizeof api_routes / sizeof api_routes[0];

/* Literal characters match themselves, {name} one non-empty segment; a pattern ending in a
 * parameter takes one trailing slash too. */
static bool path_matches(const char *pat, const char *path) {
  while (*pat) {
    if (*pat == '{') {
      const char *close = strchr(pat, '}');
      const size_t n = strcspn(path, "/");
      if (!close || n == 0) {
        return false;
      }
      path += n;
      pat = close + 1;
      if (!*pat) {
        return *path == '\0' || strcmp(path, "/") == 0;
      }
    } else if (*pat++ != *path++) {
      return false;
    }
  }
  return *path == '\0';
}

static bool starts_with(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

void api_route_match(const char *method, const char *path, api_match *m) {
  memset(m, 0, sizeof *m);
  const char *id = NULL;
  if (starts_with(path, "/api/sessions/")) {
    m->scope = API_SCOPE_SESSION;
    id = path + strlen("/api/sessions/");
  } else if (strcmp(path, "/api/runs") == 0 || starts_with(path, "/api/runs/")) {
    m->scope = API_SCOPE_RUNS;
    id = path[strlen("/api/runs")] ? path + strlen("/api/runs/") : NULL;
  } else if (starts_with(path, "/api/classes/")) {
    m->scope = API_SCOPE_CLASS;
    id = path + strlen("/api/classes/");
  } else if (strcmp(path, "/api") == 0 || starts_with(path, "/api/")) {
    m->scope = API_SCOPE_API;
  }
  if (id) {
    const size_t n = strcspn(id, "/");
    m->id_truncated = n >= sizeof m->id;
    memcpy(m->id, id, m->id_truncated ? sizeof m->id - 1 : n);
  }
  bool path_known = false;
  for (size_t i = 0; i < api_route_count; i++) {
    const api_route *r = &api_routes[i];
    if (!path_matches(r->pattern, path)) {
      continue;
    }
    path_known = true;
    if (strcmp(r->method, method) == 0) {
      m->status = 200;
      m->route = r;
      m->allow[0] = '\0';
      return;
    }
    const size_t used = strlen(m->allow);
    snprintf(m->allow + used, sizeof m->allow - used, "%s%s", used ? ", " : "", r->method);
  }
  m->status = path_known ? 405 : 404;
}
