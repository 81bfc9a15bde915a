/* grainlabd's HTTP side on libmicrohttpd: connections, bounded request bodies, the checks every
 * request passes in the order the API promises, dispatch through the route table (http_routes.c),
 * and replies held for slow readers. The handlers live in http_*.c, one file per family. */
#define _GNU_SOURCE
#include "http_internal.h"
#include "log.h"

#include <limits.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BODY_LIMIT 16384

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
http_reply http_server_busy(void) {
  http_reply r = http_error(503, "server_busy", "",
                            "this server holds as many bytes as it may for clients still "
                            "reading (max-held-reply-mb): ask again in a few seconds");
  r.retry_after = 5;
  return r;
}

/* Whether what readers hold is at the bound already (a snapshot is not worth making then). */
bool http_held_full(const http_server *srv) {
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
    *r = http_server_busy();
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

/* Static files: the client's pages and what they name (static_site.c). */
static http_reply static_file(const http_server *srv, const char *url) {
  char *body = NULL;
  size_t len = 0;
  const char *type = "";
  const int status = srv->site ? static_site_read(srv->site, url, &body, &len, &type) : 404;
  if (status != 0) {
    return status == 404 ? http_error(404, "not_found", "", "no such file")
                         : http_error(500, "io_error", "", "could not read the file");
  }
  http_reply r = {200, body, type, "", "", len, 0, ""};
  return r;
}

/* The route's token check; false with an error reply. */
static bool route_authorized(const http_call *k, http_reply *err) {
  switch (k->m->route->auth) {
  case API_AUTH_NONE:
    return true;
  case API_AUTH_CONTROL:
  case API_AUTH_CONTROL_OR_ADMIN:
    if (!http_authorized(k->srv, k->c, k->s, k->m->route->auth == API_AUTH_CONTROL_OR_ADMIN, err)) {
      return false;
    }
    /* a class's lock holds its students; the admin (and the teacher's pushes) pass */
    if (sess_locked(k->s) && !http_admin_ok(k->srv, http_bearer(k->c))) {
      *err = http_error(409, "locked", "",
                        "the teacher has locked the class's controls: wait for them to unlock");
      return false;
    }
    return true;
  case API_AUTH_TEACHER:
    if (k->role == CLASS_TEACHER) {
      return true;
    }
    *err = http_bearer(k->c)
               ? http_error(403, "forbidden", "", "the token is not this class's teacher's")
               : http_error(401, "unauthorized", "",
                            "this needs \"Authorization: Bearer <teacher token>\"");
    return false;
  case API_AUTH_CLASS_CREATE: {
    const char *t = http_bearer(k->c);
    if (http_admin_ok(k->srv, t) || http_token_is(k->srv->teacher_token, t)) {
      return true;
    }
    *err = http_error(t ? 403 : 401, t ? "forbidden" : "unauthorized", "",
                      "creating a class needs \"Authorization: Bearer <teacher-creation "
                      "token>\" (teacher-token-file) or the admin token");
    return false;
  }
  case API_AUTH_ADMIN:
    break;
  }
  const char *t = http_bearer(k->c);
  if (!t) {
    *err = http_error(401, "unauthorized", "", "backups need the admin token");
    return false;
  }
  if (!http_admin_ok(k->srv, t)) {
    *err = http_error(403, "forbidden", "", "backups need the admin token");
    return false;
  }
  return true;
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
    return http_error(403, "host_not_allowed", "",
                      "this server does not answer for the host '%s' (see allowed-hosts)",
                      plain ? host : "(not shown)");
  }
  if (rq->too_big) {
    return http_error(413, "too_large", "", "request bodies are limited to %d bytes", BODY_LIMIT);
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
      return http_error(421, "wrong_node", "", "this is node '%s', not '%s'",
                        *node ? node : "(none)", asked);
    }
    url = slash;
  }
  api_match m;
  api_route_match(http_routes, http_route_count, method, url, &m);
  http_call k = {srv, c, method, rq, &m, NULL, 0, CLASS_ANYONE, url != full};
  if (m.scope == API_SCOPE_SESSION) {
    if (!m.id[0] || m.id_truncated || strlen(m.id) >= 64) {
      return http_error(404, "not_found", "id", "no such session");
    }
    /* ids and join codes are guessed by trying: a client that misses too often is refused,
     * hit or miss alike, so a refusal tells it nothing */
    char client[IPLIMIT_ADDR];
    http_client_of(srv, c, client);
    const int wait = srv->guesses ? iplimit_take(srv->guesses, client, false) : 0;
    if (wait > 0) {
      return http_too_many("too_many_guesses", wait,
                           "this client has looked up too many sessions that do not exist");
    }
    k.s = sess_find(srv->reg, m.id);
    if (!k.s) {
      if (srv->guesses) {
        iplimit_charge(srv->guesses, client);
      }
      return http_not_here(node, m.id, "not_found", "session");
    }
    const char *presented = http_bearer(c);
    if (!sess_viewer_ok(k.s, presented) && !http_admin_ok(srv, presented)) {
      sess_release(k.s);
      return http_error(403, "private", "",
                        "this session is private: send its viewer token as "
                        "\"Authorization: Bearer <viewer token>\"");
    }
  } else if (m.scope == API_SCOPE_RUNS && !srv->store) {
    return http_error(503, "no_store", "", "this server keeps no record");
  } else if (m.scope == API_SCOPE_CLASS && m.status == 200) {
    /* a class's routes are told apart by method first (405), then the class is looked up */
    char client[IPLIMIT_ADDR];
    http_client_of(srv, c, client);
    const int wait = srv->guesses ? iplimit_take(srv->guesses, client, false) : 0;
    if (wait > 0) {
      return http_too_many("too_many_guesses", wait,
                           "this client has looked up too many classes that do not exist");
    }
    api_error e;
    const char *t = http_bearer(c);
    if (!m.id[0] || m.id_truncated ||
        class_role_of(srv->classes, m.id, t, http_admin_ok(srv, t), &k.role, &e) != 0) {
      if (srv->guesses) {
        iplimit_charge(srv->guesses, client);
      }
      return http_not_here(node, m.id, "no_class", "class");
    }
  }
  http_reply r;
  if (m.status == 405) {
    r = http_method_not_allowed(method, m.allow);
  } else if (m.status == 404) {
    if (m.scope == API_SCOPE_STATIC) {
      r = strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0
              ? http_method_not_allowed(method, "GET")
              : static_file(srv, url);
    } else if (m.scope == API_SCOPE_RUNS) {
      r = http_runs_unmatched(method, url, &m);
    } else {
      r = http_error(404, "not_found", "", "no such resource");
    }
  } else if ((m.scope == API_SCOPE_RUNS && strstr(m.route->pattern, "{run}") &&
              !http_run_ref(node, &m, &k.run, &r)) ||
             !route_authorized(&k, &r)) {
    /* r is the refusal: a run that is not here, then the token */
  } else {
    r = m.route->handler(&k);
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
    http_peer_of(c, ip);
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
