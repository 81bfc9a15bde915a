/* grainlabd's REST routes as one table of {method, pattern, auth, handler}, and a pure matcher
 * (no libmicrohttpd) that http.c dispatches from and tests/unit/test_api_route.c checks. */
#ifndef GRAINLAB_API_ROUTE_H
#define GRAINLAB_API_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

/* Who may use a route, checked after the method and before the body. Every /api/sessions/{id}
 * route also needs, for a private session, its viewer token (or the admin's). */
typedef enum api_auth {
  API_AUTH_NONE = 0,
  API_AUTH_CONTROL,          /* the session's control token */
  API_AUTH_CONTROL_OR_ADMIN, /* the session's control token or the admin token */
  API_AUTH_ADMIN,            /* the admin token */
  API_AUTH_CLASS_CREATE,     /* the teacher-creation token or the admin token */
  API_AUTH_TEACHER           /* the class's teacher token or the admin token */
} api_auth;

/* What answers a route; http.c keeps one function per entry. */
typedef enum api_handler {
  API_H_HEALTHZ = 0,
  API_H_READYZ,
  API_H_METRICS,
  API_H_CONFIG,
  API_H_NODES,
  API_H_SCENES,
  API_H_SESSIONS_LIST,
  API_H_SESSIONS_CREATE,
  API_H_SESSION_GET,
  API_H_SESSION_PATCH,
  API_H_SESSION_DELETE,
  API_H_SESSION_PARAMS,
  API_H_SESSION_ACTION,
  API_H_SESSION_SCENE,
  API_H_SESSION_SNAPSHOT,
  API_H_BACKUP,
  API_H_RUNS_LIST,
  API_H_RUN_GET,
  API_H_RUN_SAMPLES,
  API_H_RUN_SNAPSHOT,
  API_H_RUN_REPLAY,
  API_H_RUN_FORK,
  API_H_CLASSES_CREATE,
  API_H_CLASS_GET,
  API_H_CLASS_PATCH,
  API_H_CLASS_PUSH,
  API_H_CLASS_END,
  API_H_JOIN_LOOKUP,
  API_H_JOIN,
  API_H_COUNT
} api_handler;

typedef struct api_route {
  const char *method;
  const char *pattern; /* literal segments and {name} (one non-empty segment) */
  api_auth auth;
  api_handler handler;
} api_route;

/* The table, in the order the Allow header lists methods. */
extern const api_route api_routes[];
extern const size_t api_route_count;

/* Which part of the URL space a path is in: the checks of a part come before its 404 and 405
 * (a session must exist and may be looked at; the record must be kept). */
typedef enum api_scope {
  API_SCOPE_STATIC = 0, /* not under /api and no route: the client's files (GET and HEAD) */
  API_SCOPE_API,        /* /api and /api/... */
  API_SCOPE_SESSION,    /* /api/sessions/... */
  API_SCOPE_RUNS,       /* /api/runs and /api/runs/... */
  API_SCOPE_CLASS       /* /api/classes/... */
} api_scope;

/* status 200: `route` answers; 404: no route has this path; 405: the path's routes are for other
 * methods, listed in `allow` as the Allow header lists them. `id` is the path's first segment
 * after /api/sessions/, /api/runs/ or /api/classes/ (empty when none); one longer than fits is cut,
 * and id_truncated set. */
typedef struct api_match {
  int status;
  const api_route *route;
  char allow[64];
  api_scope scope;
  char id[128];
  bool id_truncated;
} api_match;

/* Matches `path` (no query string) against the table. A pattern that ends in a parameter also
 * matches with one trailing slash (/api/sessions/{id}/ is the session). Always fills `m`. */
void api_route_match(const char *method, const char *path, api_match *m);

#endif
