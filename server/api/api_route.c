/* The REST routes' matcher (see api_route.h): a path and method against a table of patterns. */
#include "api_route.h"

#include <stdio.h>
#include <string.h>

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

void api_route_match(const api_route *routes, size_t count, const char *method, const char *path,
                     api_match *m) {
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
  for (size_t i = 0; i < count; i++) {
    const api_route *r = &routes[i];
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
