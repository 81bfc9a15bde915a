/* A REST route as {method, pattern, auth, handler}, and a pure matcher (no libmicrohttpd) that
 * http.c dispatches from through the daemon's table (server/daemon/http_routes.c). */
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

/* What answers a route: a function of the daemon's HTTP layer (server/daemon/http_internal.h),
 * opaque here so that the matcher stays free of libmicrohttpd. */
struct http_call;
struct http_reply;
typedef struct http_reply (*api_handler)(const struct http_call *k);

typedef struct api_route {
  const char *method;
  const char *pattern; /* literal segments and {name} (one non-empty segment) */
  api_auth auth;
  api_handler handler;
} api_route;

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

/* Matches `path` (no query string) against a table of `count` routes, listed in the order the
 * Allow header lists methods. A pattern that ends in a parameter also matches with one trailing
 * slash (/api/sessions/{id}/ is the session). Always fills `m`. */
void api_route_match(const api_route *routes, size_t count, const char *method, const char *path,
                     api_match *m);

#endif
