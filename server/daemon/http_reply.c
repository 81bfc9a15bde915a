/* What every handler shares: JSON replies and errors, the request body as a JSON object, the
 * caller's address and tokens, and the store's refusals. */
#define _GNU_SOURCE
#include "api_json.h"
#include "http_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

http_reply http_json_reply(int status, json_t *j) {
  http_reply r = {status, api_dumps(j), "application/json", "", "", 0, 0, ""};
  json_decref(j);
  return r;
}

/* A refusal from the API's parsers, the registry or the store, as the API's JSON error. */
http_reply http_api_error(const api_error *e) {
  http_reply r = http_json_reply(e->status, api_error_json(e));
  r.retry_after = e->seconds_left > 0.0 ? (int)ceil(e->seconds_left) : 0;
  return r;
}

http_reply http_error(int status, const char *code, const char *field, const char *fmt, ...) {
  api_error e = {status, code, "", "", 0.0};
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e.message, sizeof e.message, fmt, ap);
  va_end(ap);
  snprintf(e.field, sizeof e.field, "%s", field ? field : "");
  return http_api_error(&e);
}

http_reply http_method_not_allowed(const char *method, const char *allow) {
  http_reply r = http_error(405, "method_not_allowed", "", "%s is not allowed here", method);
  snprintf(r.allow, sizeof r.allow, "%s", allow);
  return r;
}

/* Whether the request says its body is JSON: "application/json", any parameters after ';'. A
 * browser form cannot send that type to another site without a CORS preflight, which this server
 * never grants. */
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
void http_peer_of(struct MHD_Connection *c, char out[IPLIMIT_ADDR]) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  iplimit_addr(ci ? ci->client_addr : NULL, out);
}

/* The client's address, as the per-client limits know it (behind a trusted proxy, the address
 * that proxy forwarded). */
void http_client_of(const http_server *srv, struct MHD_Connection *c, char out[IPLIMIT_ADDR]) {
  char peer[IPLIMIT_ADDR];
  http_peer_of(c, peer);
  allow_client(srv->proxies, peer,
               MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Forwarded-For"), srv->v6_bits,
               out);
}

http_reply http_too_many(const char *code, int retry_after, const char *message) {
  http_reply r = http_error(429, code, "", "%s (retry in %d s)", message, retry_after);
  r.retry_after = retry_after;
  return r;
}

/* The body as a JSON object, or an error reply. */
json_t *http_parse_object(struct MHD_Connection *c, const http_req *rq, http_reply *err) {
  if (!json_body_type(c)) {
    *err = http_error(415, "unsupported_media_type", "",
                      "request bodies are JSON, sent with \"Content-Type: application/json\"");
    return NULL;
  }
  api_error e;
  json_t *j = api_parse_object(rq->body, rq->len, &e);
  if (!j) {
    *err = http_api_error(&e);
  }
  return j;
}

const char *http_bearer(struct MHD_Connection *c) {
  const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
  if (!h || strncmp(h, "Bearer ", 7) != 0) {
    return NULL;
  }
  return h + 7;
}

/* Whether a presented token is a configured one (never when none is configured), in constant
 * time. */
bool http_token_is(const char *configured, const char *token) {
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

bool http_admin_ok(const http_server *srv, const char *token) {
  return http_token_is(srv->admin_token, token);
}

/* Control (or, where admin_too, admin) token check for a change; false with an error reply. */
bool http_authorized(const http_server *srv, struct MHD_Connection *c, session *s, bool admin_too,
                     http_reply *err) {
  const char *t = http_bearer(c);
  if (!t) {
    *err = http_error(401, "unauthorized", "",
                      "this change needs \"Authorization: Bearer "
                      "<control token>\"");
    return false;
  }
  if (sess_token_ok(s, t) || (admin_too && http_admin_ok(srv, t))) {
    return true;
  }
  *err = http_error(403, "forbidden", "", "the token does not control this session");
  return false;
}

/* Whether the store refuses a request that writes a new record (a session, a run) or needs what
 * is queued: while it cannot write, a 503 store_unavailable in err. Waits for what is queued
 * (bounded), so a refusal the disk has not reported yet is found before the request goes on. */
bool http_store_refuses(const http_server *srv, http_reply *err) {
  char why[160];
  if (!srv->store || store_sync(srv->store, 2000) == STORE_OK) {
    return false;
  }
  store_writable(srv->store, why, sizeof why);
  *err = http_error(503, "store_unavailable", "",
                    "the store cannot write now (%s); nothing recorded is lost, try again later",
                    why[0] ? why : "unknown");
  return true;
}

/* A refusal of the store as the API's JSON error: the one place a store status becomes HTTP. */
http_reply http_store_error(const store_error *e) {
  const int status = e->status == STORE_E_NOT_FOUND     ? 404
                     : e->status == STORE_E_BAD_FILTER  ? 400
                     : e->status == STORE_E_UNAVAILABLE ? 503
                                                        : 500;
  return http_error(status, e->code ? e->code : "store_error", e->field, "%s", e->message);
}

/* ---- classes (issue 17) ------------------------------------------------------------------ */

double http_unix_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
