/* grainlabd's websocket server (see ws.h). One libwebsockets service thread owns every
 * connection; other threads only ever wake it with lws_cancel_service(). */
#define _GNU_SOURCE
#include "ws.h"
#include "api_ops.h"
#include "class.h"
#include "log.h"

#include <libwebsockets.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

_Static_assert(LWS_PRE <= CHAN_HEADROOM, "a blob's headroom must hold the websocket header");

#define RX_MAX 4096 /* bytes of one client message */
#define BAD_MAX 32  /* rejected messages before the connection is closed */
#define OWN_MAX 8   /* replies waiting for one connection */
#define PATH_PREFIX "/ws/sessions/"
#define CLASS_PREFIX "/ws/classes/"
#define MEMBERS_MAX API_CLASS_GROUPS_MAX
#define REFRESH_US 1000000u /* a class stream looks for joined and gone groups this often */
/* A viewer's kernel send buffer: a few frames. Autotuned buffers grow to megabytes, where a
 * stalled viewer's frames would queue for seconds before "latest only" could skip any. */
#define SNDBUF_BYTES 65536
#define AUTH_SECONDS 10 /* a private session's viewer has this long to show its token */

/* One group's session on a class stream, with its own place in that session's stream. */
typedef struct member {
  session *s;
  chan_cursor cur;
  uint64_t due_us;
} member;

/* A connection: a session's viewer (s), or a class's dashboard (klass[0]: one connection for
 * every group's session, each frame preceded by a text {"type":"frame","session":ID}). */
typedef struct viewer {
  struct viewer *next, *prev;
  struct lws *wsi;
  session *s;
  chan_cursor cur;
  char klass[NODE_NAME_SIZE];
  char token[API_TOKEN_MAX + 1]; /* the teacher's, to look the class's groups up again */
  member *members;               /* MEMBERS_MAX of them once the teacher's token was shown */
  int nmembers, next_member;
  chan_blob *pending; /* the frame whose tag went out last */
  uint64_t refresh_us;
  bool joined, controller, awaiting, in_msg, rx_binary, rx_over;
  const char *refuse; /* close at the first chance, for this reason */
  uint64_t id;
  char ip[IPLIMIT_ADDR]; /* the peer, counted in ws->conns while `counted` */
  bool counted;
  chan_blob *own[OWN_MAX]; /* replies to this connection alone, before the stream */
  int own_n, bad;
  /* a rate ({"type":"rate"}): at most fps frames a second, the next not before due_us
   * (CLOCK_MONOTONIC); timer_us: when the lws timer armed for a held frame fires (0: none) */
  int fps;
  uint64_t due_us, timer_us;
  size_t rx_len;
  uint8_t rx[RX_MAX];
} viewer;

struct ws_server {
  struct lws_context *ctx;
  sess_registry *reg;
  pthread_t thread;
  bool stop;            /* __atomic */
  pthread_mutex_t wake; /* guards `serving` against a notify racing ws_stop */
  bool serving;
  viewer *head; /* service thread only */
  uint64_t next_id;
  ws_stats stats; /* written by the service thread, read with __atomic loads */
  int port;
  ws_options opt;
  iplimit *conns;       /* websocket connections per client */
  lws_retry_bo_t retry; /* the ping and hangup times */
};

static void count(uint64_t *c, uint64_t n) {
  __atomic_add_fetch(c, n, __ATOMIC_RELAXED);
}

static uint64_t mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* A handshake header, or NULL when the request has none. */
static const char *header(struct lws *wsi, enum lws_token_indexes h, char *buf, int size) {
  return lws_hdr_total_length(wsi, h) > 0 && lws_hdr_copy(wsi, buf, size, h) > 0 ? buf : NULL;
}

/* The client's address, as the per-client limits know it (behind a trusted proxy, the address
 * it forwarded). */
static void peer(const ws_server *ws, struct lws *wsi, char out[IPLIMIT_ADDR]) {
  struct sockaddr_storage sa;
  socklen_t len = sizeof sa;
  char ip[IPLIMIT_ADDR];
  if (getpeername(lws_get_socket_fd(wsi), (struct sockaddr *)&sa, &len) != 0) {
    out[0] = '\0';
    return;
  }
  iplimit_addr((const struct sockaddr *)&sa, ip);
  /* the whole header, however long (lws bounds all headers together): the client is its last
   * entry, and a header cut short would leave the proxy's own address counted instead */
  const int n = lws_hdr_total_length(wsi, WSI_TOKEN_X_FORWARDED_FOR);
  char *fwd = n > 0 ? malloc((size_t)n + 1) : NULL;
  allow_client(ws->opt.proxies, ip, fwd ? header(wsi, WSI_TOKEN_X_FORWARDED_FOR, fwd, n + 1) : NULL,
               ws->opt.v6_bits, out);
  free(fwd);
}

/* Why a handshake is refused before its session is looked up, or NULL: a Host or an Origin
 * not allowed, or a client that holds its share of connections or has guessed too often. */
static const char *refusal(ws_server *ws, struct lws *wsi, const char *ip) {
  char host[300], origin[300];
  if (!allow_host(ws->opt.hosts, header(wsi, WSI_TOKEN_HOST, host, sizeof host))) {
    return "the Host is not allowed (see allowed-hosts)";
  }
  if (!allow_origin(ws->opt.origins, ws->opt.hosts,
                    header(wsi, WSI_TOKEN_ORIGIN, origin, sizeof origin))) {
    return "pages of that origin may not connect (see allowed-origins)";
  }
  if (!iplimit_enter(ws->conns, ip, ws->opt.per_ip)) {
    return "this address holds its maximum of websocket connections";
  }
  iplimit_leave(ws->conns, ip); /* counted once established */
  if (ws->opt.guesses && iplimit_take(ws->opt.guesses, ip, false) > 0) {
    return "too many lookups of sessions that do not exist";
  }
  return NULL;
}

static void notify(void *arg) {
  ws_server *ws = arg;
  pthread_mutex_lock(&ws->wake);
  if (ws->serving) {
    lws_cancel_service(ws->ctx);
  }
  pthread_mutex_unlock(&ws->wake);
}

/* The id in a request path after `prefix`: a session's id or join code, or a class's id, either
 * with its node ("n0-…", node.h); NULL when the path is not of that shape. */
static const char *path_id(const char *path, const char *prefix) {
  const size_t pre = strlen(prefix);
  const char *id = path + pre;
  if (strncmp(path, prefix, pre) != 0 || strlen(id) < 6 || strlen(id) >= NODE_NAME_SIZE ||
      strspn(id, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-") != strlen(id)) {
    return NULL;
  }
  return id;
}

/* The session named by the request path, referenced; NULL if there is none. */
static session *path_session(ws_server *ws, struct lws *wsi, char *path, size_t size) {
  if (lws_hdr_copy(wsi, path, (int)size, WSI_TOKEN_GET_URI) <= 0) {
    path[0] = '\0';
    return NULL;
  }
  const char *id = path_id(path, PATH_PREFIX);
  return id ? sess_find(ws->reg, id) : NULL;
}

/* The class whose dashboard stream the path asks for (path from path_session), if it exists. */
static const char *path_class(const ws_server *ws, const char *path) {
  const char *id = path_id(path, CLASS_PREFIX);
  return id && ws->opt.classes && class_sessions(ws->opt.classes, id, NULL, NULL, 0) == -2 ? id
                                                                                           : NULL;
}

static void reply(viewer *v, json_t *msg) {
  char *text = json_dumps(msg, JSON_COMPACT);
  json_decref(msg);
  chan_blob *b = text ? chan_blob_new(text, strlen(text), CHAN_TEXT) : NULL;
  free(text);
  if (!b) {
    return;
  }
  if (v->own_n == OWN_MAX) { /* a client that floods and never reads loses old replies */
    chan_blob_unref(v->own[0]);
    memmove(v->own, v->own + 1, sizeof(chan_blob *) * (OWN_MAX - 1));
    v->own_n--;
  }
  v->own[v->own_n++] = b;
  lws_callback_on_writable(v->wsi);
}

/* Refuse one message: the client hears why, the log says so (never with its content, which may
 * hold a token), and the connection stays unless it keeps at it. Returns −1 to close. */
static int reject(ws_server *ws, viewer *v, const char *code, const char *field, const char *msg) {
  count(&ws->stats.messages_rejected, 1);
  log_msg(LOG_WARN, "ws_rejected", "connection=%llu session=%s: rejected message: %s: %s",
          (unsigned long long)v->id, v->s ? sess_id(v->s) : "-", code, msg);
  reply(v, api_ws_error_json(code, field, msg));
  if (++v->bad > BAD_MAX) {
    static const char why[] = "too many rejected messages";
    lws_close_reason(v->wsi, LWS_CLOSE_STATUS_POLICY_VIOLATION, (unsigned char *)why,
                     sizeof why - 1);
    return -1;
  }
  return 0;
}

/* Become a viewer of the session's stream, starting with the hello. */
static void join(ws_server *ws, viewer *v) {
  v->joined = v->s && chan_join(sess_chan(v->s), &v->cur, sess_max_viewers(ws->reg));
  if (!v->joined) {
    /* closed from the writeable callback, so CLOSED tidies up as for any other */
    v->refuse = "the session is full or has ended";
    lws_callback_on_writable(v->wsi);
    return;
  }
  api_session_view view;
  sess_view(v->s, &view);
  reply(v, api_ws_hello_json(&view));
}

/* A class stream lets a group's session go: it left the class, or its stream ended. */
static void drop_member(viewer *v, int i) {
  chan_leave(sess_chan(v->members[i].s));
  sess_release(v->members[i].s);
  v->members[i] = v->members[--v->nmembers];
}

/* The class's groups as they are now: sessions no longer in it let go, new ones joined (each
 * counts as one viewer of its session, as a dashboard's tile did with a connection of its own). */
static void class_refresh(ws_server *ws, viewer *v) {
  char(*ids)[NODE_NAME_SIZE] = calloc(MEMBERS_MAX, NODE_NAME_SIZE);
  if (!ids) {
    return;
  }
  int n = class_sessions(ws->opt.classes, v->klass, v->token, ids, MEMBERS_MAX);
  n = n < 0 ? 0 : n; /* the class is gone: so are its groups */
  for (int i = 0; i < v->nmembers;) {
    bool still = false;
    for (int k = 0; k < n && !still; k++) {
      still = strcmp(ids[k], sess_id(v->members[i].s)) == 0;
    }
    if (still) {
      i++;
    } else {
      drop_member(v, i);
    }
  }
  for (int k = 0; k < n && v->nmembers < MEMBERS_MAX; k++) {
    bool have = false;
    for (int i = 0; i < v->nmembers && !have; i++) {
      have = strcmp(ids[k], sess_id(v->members[i].s)) == 0;
    }
    session *s = have ? NULL : sess_find(ws->reg, ids[k]);
    member *m = &v->members[v->nmembers];
    if (s && chan_join(sess_chan(s), &m->cur, sess_max_viewers(ws->reg))) {
      m->s = s;
      m->due_us = 0;
      v->nmembers++;
    } else if (s) {
      sess_release(s); /* ended, or watched by its maximum already */
    }
  }
  free(ids);
}

/* The teacher's token opens a class stream: every group's session from now on. */
static int class_auth(ws_server *ws, viewer *v, const api_client_message *m) {
  const int n = m->has_token ? class_sessions(ws->opt.classes, v->klass, m->token, NULL, 0) : -2;
  if (n < 0) {
    return reject(ws, v, "bad_token", "token", "that is not the teacher token of this class");
  }
  if (!v->members) {
    v->members = calloc(MEMBERS_MAX, sizeof *v->members);
    if (!v->members) {
      v->refuse = "out of memory";
      lws_callback_on_writable(v->wsi);
      return 0;
    }
    snprintf(v->token, sizeof v->token, "%s", m->token);
    v->awaiting = false;
    lws_set_timeout(v->wsi, NO_PENDING_TIMEOUT, 0);
    class_refresh(ws, v);
    v->refresh_us = mono_us() + REFRESH_US;
  }
  reply(v, api_ws_auth_json("teacher"));
  return 0;
}

/* One whole client message: read by api_read_client_message, then judged here against this
 * connection (authenticated, controller) before the message's own refusals count. */
static int handle(ws_server *ws, viewer *v) {
  if (!v->joined && !v->awaiting && !v->members) {
    return 0; /* on its way out */
  }
  if (v->rx_over) {
    return reject(ws, v, "too_large", "", "a message may hold at most 4096 bytes");
  }
  if (v->rx_binary) {
    return reject(ws, v, "binary", "", "clients send JSON text messages only");
  }
  api_client_message m;
  sess_error err;
  const int bad = api_read_client_message((const char *)v->rx, v->rx_len, &m, &err);
  if (v->klass[0] && m.kind == API_MSG_AUTH && !bad) {
    return class_auth(ws, v, &m);
  }
  if (v->klass[0] && v->awaiting && m.kind != API_MSG_NONE) {
    return reject(ws, v, "unauthenticated", "type",
                  "a class stream is its teacher's: send {\"type\":\"auth\"} with the class's "
                  "teacher token first");
  }
  if (v->klass[0] && m.kind == API_MSG_ACTION) {
    return reject(ws, v, "forbidden", "",
                  "a class stream only watches: steer its groups with POST /api/classes/{id}/push");
  }
  if (m.kind == API_MSG_AUTH && !bad) {
    bool admitted = false;
    if (m.has_token && sess_token_ok(v->s, m.token)) {
      v->controller = true;
      reply(v, api_ws_auth_json("controller"));
      admitted = true;
    } else if (v->awaiting && m.has_token && sess_viewer_ok(v->s, m.token)) {
      reply(v, api_ws_auth_json("viewer"));
      admitted = true;
    }
    if (!admitted) {
      return reject(ws, v, "bad_token", "token", "that is not a token of this session");
    }
    if (v->awaiting) {
      v->awaiting = false;
      lws_set_timeout(v->wsi, NO_PENDING_TIMEOUT, 0);
      join(ws, v);
    }
    return 0;
  }
  if (m.kind != API_MSG_NONE && m.kind != API_MSG_AUTH && v->awaiting) {
    return reject(ws, v, "unauthenticated", "type",
                  "this session is private: send {\"type\":\"auth\"} with its viewer token first");
  }
  if (m.kind == API_MSG_RATE && !bad) {
    v->fps = m.fps;
    v->due_us = 0; /* the newest frame may go at once; the new rate counts from it */
    for (int i = 0; i < v->nmembers; i++) {
      v->members[i].due_us = 0;
    }
    reply(v, api_ws_rate_json(m.fps));
    return 0;
  }
  if (m.kind == API_MSG_ACTION && !v->controller) {
    return reject(ws, v, "forbidden", "",
                  "viewers cannot control the session: send {\"type\":\"auth\"} with the "
                  "control token first");
  }
  if (m.kind == API_MSG_ACTION && !bad && sess_locked(v->s)) {
    return reject(ws, v, "locked", "",
                  "the teacher has locked the class's controls: wait for them to unlock");
  }
  if (bad || sess_queue_action(v->s, &m.action, &err) != 0) {
    return reject(ws, v, err.code, err.field, err.message);
  }
  return 0;
}

/* Write one stream message; lws puts the frame header in the headroom in front of the shared
 * bytes: the same for every viewer, and only this thread ever writes there. */
static int send_blob(ws_server *ws, viewer *v, chan_blob *b) {
  const int n = lws_write(v->wsi, chan_blob_bytes(b), b->len,
                          b->kind == CHAN_BINARY ? LWS_WRITE_BINARY : LWS_WRITE_TEXT);
  count(b->kind == CHAN_BINARY ? &ws->stats.frames_sent : &ws->stats.texts_sent, 1);
  count(&ws->stats.bytes_sent, b->len);
  chan_blob_unref(b);
  if (n < 0) {
    return -1;
  }
  lws_callback_on_writable(v->wsi); /* there may be more; one write per callback */
  return 0;
}

/* A cursor's next message under a rate: `due` is when its next frame may go (0: at once). */
static chan_blob *rated_next(ws_server *ws, chan *c, chan_cursor *cur, int fps, uint64_t *due,
                             uint64_t now, bool *closed) {
  const uint64_t skipped = cur->skipped_frames, tskipped = cur->skipped_texts;
  cur->hold_frames = now < *due;
  chan_blob *b = chan_next(c, cur, closed);
  /* a rated viewer's gaps are its rate's doing, not slowness */
  count(fps ? &ws->stats.frames_held : &ws->stats.frames_skipped, cur->skipped_frames - skipped);
  count(&ws->stats.texts_skipped, cur->skipped_texts - tskipped);
  if (cur->shown && fps) {
    /* due times keep to the rate's grid, so N a second on average however late each frame
     * went; one later than a whole period (a paused stream) starts the grid again */
    const uint64_t period = 1000000u / (uint64_t)fps;
    *due = *due + period > now ? *due + period : now + period;
  }
  return b;
}

/* Wake a rated connection when its earliest held frame is due: the next frame is published
 * 1/60 s from now, which wakes every viewer anyway; the timer is for streams that have stopped
 * (a paused session), whose last frame must still come. */
static void wake_at(viewer *v, uint64_t when, uint64_t now) {
  if (!v->timer_us || v->timer_us > when) {
    lws_set_timer_usecs(v->wsi, (lws_usec_t)(when > now ? when - now : 1));
    v->timer_us = when;
  }
}

/* A class stream: each group's newest frame in turn, at the rate asked, each after its tag. Text
 * messages are for a session's own page: a tile needs only its frames. */
static int class_writeable(ws_server *ws, viewer *v) {
  const uint64_t now = mono_us();
  if (now >= v->refresh_us) {
    class_refresh(ws, v);
    v->refresh_us = now + REFRESH_US;
  }
  uint64_t wake = v->refresh_us;
  for (int k = 0; k < v->nmembers; k++) {
    const int i = (v->next_member + k) % v->nmembers;
    member *m = &v->members[i];
    bool closed = false;
    chan_blob *b = rated_next(ws, sess_chan(m->s), &m->cur, v->fps, &m->due_us, now, &closed);
    while (b && b->kind != CHAN_BINARY) {
      chan_blob_unref(b);
      b = rated_next(ws, sess_chan(m->s), &m->cur, v->fps, &m->due_us, now, &closed);
    }
    if (m->cur.held && m->due_us < wake) {
      wake = m->due_us;
    }
    if (!b && closed) {
      drop_member(v, i); /* its session ended; the others get their turn at the next callback */
      lws_callback_on_writable(v->wsi);
      return 0;
    }
    if (b) {
      unsigned char tag[LWS_PRE + 96];
      const int len = snprintf((char *)tag + LWS_PRE, sizeof tag - LWS_PRE,
                               "{\"type\":\"frame\",\"session\":\"%s\"}", sess_id(m->s));
      if (lws_write(v->wsi, tag + LWS_PRE, (size_t)len, LWS_WRITE_TEXT) < 0) {
        chan_blob_unref(b);
        return -1;
      }
      count(&ws->stats.texts_sent, 1);
      count(&ws->stats.bytes_sent, (uint64_t)len);
      v->pending = b;
      v->next_member = i + 1;
      lws_callback_on_writable(v->wsi);
      return 0;
    }
  }
  wake_at(v, wake, now);
  return 0;
}

static int on_writeable(ws_server *ws, viewer *v) {
  chan_blob *b = NULL;
  if (v->refuse) {
    lws_close_reason(v->wsi, LWS_CLOSE_STATUS_POLICY_VIOLATION, (unsigned char *)v->refuse,
                     strlen(v->refuse));
    return -1;
  }
  if (v->pending) { /* a frame whose tag went: nothing may come between them */
    b = v->pending;
    v->pending = NULL;
  } else if (v->own_n > 0) {
    b = v->own[0];
    memmove(v->own, v->own + 1, sizeof(chan_blob *) * (size_t)(v->own_n - 1));
    v->own_n--;
  } else if (v->members) {
    return class_writeable(ws, v);
  } else if (v->joined) {
    bool closed = false;
    const uint64_t now = v->fps ? mono_us() : 0;
    b = rated_next(ws, sess_chan(v->s), &v->cur, v->fps, &v->due_us, now, &closed);
    if (v->cur.held) {
      wake_at(v, v->due_us, now);
    }
    if (!b && closed) {
      static const char why[] = "the session ended";
      lws_close_reason(v->wsi, LWS_CLOSE_STATUS_GOINGAWAY, (unsigned char *)why, sizeof why - 1);
      return -1;
    }
  }
  return b ? send_blob(ws, v, b) : 0;
}

/* A connection's end: off the viewer list and the stream, its session released. */
static void forget(ws_server *ws, viewer *v) {
  if (!v || !v->wsi) {
    return;
  }
  if (v->joined) {
    chan_leave(sess_chan(v->s));
  }
  if (v->timer_us) {
    lws_set_timer_usecs(v->wsi, LWS_SET_TIMER_USEC_CANCEL);
    v->timer_us = 0;
  }
  for (int i = 0; i < v->own_n; i++) {
    chan_blob_unref(v->own[i]);
  }
  v->own_n = 0;
  while (v->nmembers > 0) {
    drop_member(v, v->nmembers - 1);
  }
  free(v->members);
  v->members = NULL;
  if (v->pending) {
    chan_blob_unref(v->pending);
    v->pending = NULL;
  }
  if (v->prev) {
    v->prev->next = v->next;
  } else if (ws->head == v) {
    ws->head = v->next;
  }
  if (v->next) {
    v->next->prev = v->prev;
  }
  if (v->s) {
    sess_release(v->s);
  }
  if (v->counted) {
    iplimit_leave(ws->conns, v->ip);
    v->counted = false;
  }
  v->wsi = NULL;
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len) {
  ws_server *ws = lws_context_user(lws_get_context(wsi));
  viewer *v = user;
  char path[128];
  switch (reason) {
  case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION: {
    char ip[IPLIMIT_ADDR];
    peer(ws, wsi, ip);
    const char *no = refusal(ws, wsi, ip);
    if (no) {
      count(&ws->stats.refused, 1);
      log_msg(LOG_WARN, "ws_refused", "client=%s: %s", ip, no);
      return -1;
    }
    session *s = path_session(ws, wsi, path, sizeof path);
    if (!s && path_class(ws, path)) {
      return 0; /* a class's dashboard: its teacher token comes as the first message */
    }
    if (!s && ws->opt.guesses) {
      iplimit_charge(ws->opt.guesses, ip);
    }
    const bool full = s && chan_viewers(sess_chan(s), NULL, NULL) >= sess_max_viewers(ws->reg);
    if (s) {
      sess_release(s);
    }
    if (!s || full) {
      count(&ws->stats.refused, 1);
      log_msg(LOG_WARN, "ws_refused", "path=%.100s: %s", path,
              s ? "the session has its maximum of viewers" : "no such session or class");
      return -1;
    }
    return 0;
  }
  case LWS_CALLBACK_ESTABLISHED: {
    memset(v, 0, sizeof *v);
    v->wsi = wsi;
    v->id = ++ws->next_id;
    v->s = path_session(ws, wsi, path, sizeof path);
    const char *klass = v->s ? NULL : path_class(ws, path);
    snprintf(v->klass, sizeof v->klass, "%s", klass ? klass : "");
    peer(ws, wsi, v->ip);
    v->counted = iplimit_enter(ws->conns, v->ip, ws->opt.per_ip);
    if (!v->counted) { /* checked at the handshake; only a race between two could get here */
      v->refuse = "this address holds its maximum of websocket connections";
      lws_callback_on_writable(wsi);
    }
    const int sndbuf = SNDBUF_BYTES;
    setsockopt(lws_get_socket_fd(wsi), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    v->next = ws->head;
    if (ws->head) {
      ws->head->prev = v;
    }
    ws->head = v;
    count(&ws->stats.connections, 1);
    if (v->counted && (v->klass[0] || (v->s && sess_private(v->s)))) {
      /* nothing, not even the hello, before the viewer token (a class's: its teacher's) */
      v->awaiting = true;
      lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, AUTH_SECONDS);
      return 0;
    }
    if (v->counted) {
      join(ws, v);
    }
    return 0;
  }
  case LWS_CALLBACK_SERVER_WRITEABLE:
    return on_writeable(ws, v);
  case LWS_CALLBACK_TIMER:
    /* a rated viewer's held frame is due */
    if (v && v->wsi) {
      v->timer_us = 0;
      lws_callback_on_writable(wsi);
    }
    return 0;
  case LWS_CALLBACK_RECEIVE: {
    if (!v->in_msg) {
      v->in_msg = true;
      v->rx_len = 0;
      v->rx_over = false;
      v->rx_binary = lws_frame_is_binary(wsi);
    }
    if (v->rx_len + len > RX_MAX) {
      v->rx_over = true; /* the rest is read and dropped: nothing grows */
    } else {
      memcpy(v->rx + v->rx_len, in, len);
      v->rx_len += len;
    }
    if (!lws_is_final_fragment(wsi) || lws_remaining_packet_payload(wsi) > 0) {
      return 0;
    }
    v->in_msg = false;
    return handle(ws, v);
  }
  case LWS_CALLBACK_CLOSED:
  case LWS_CALLBACK_WSI_DESTROY:
    /* both: whichever comes first forgets the viewer (a connection that dies while lws still
     * drains a partial send may skip CLOSED), the second finds nothing to do */
    forget(ws, v);
    return 0;
  case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
    /* some stream has news: every viewer looks once (a viewer still sending waits its turn) */
    for (viewer *x = ws->head; x; x = x->next) {
      lws_callback_on_writable(x->wsi);
    }
    return 0;
  case LWS_CALLBACK_HTTP:
    /* plain HTTP on the websocket port: say where things are */
    if (lws_return_http_status(wsi, HTTP_STATUS_NOT_FOUND,
                               "websocket streams only: /ws/sessions/{id}, /ws/classes/{id}")) {
      return -1;
    }
    return lws_http_transaction_completed(wsi);
  default:
    return 0;
  }
}

static const struct lws_protocols protocols[] = {
    /* first, so it serves clients that name no subprotocol */
    {"grainlab-stream", callback, sizeof(viewer), RX_MAX, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0}};

static void *service(void *arg) {
  ws_server *ws = arg;
  while (!__atomic_load_n(&ws->stop, __ATOMIC_ACQUIRE)) {
    if (lws_service(ws->ctx, 0) < 0) {
      break;
    }
  }
  return NULL;
}

ws_server *ws_start(sess_registry *reg, const char *bind, int port, const ws_options *opt,
                    char *err, size_t errlen) {
  ws_server *ws = calloc(1, sizeof *ws);
  iplimit *conns = iplimit_new(1.0); /* only its counts are used */
  if (!ws || !conns) {
    free(ws);
    iplimit_free(conns);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  ws->reg = reg;
  ws->opt = *opt;
  ws->conns = conns;
  /* lws pings a connection silent for ping_s and hangs up on one silent (no pong, nothing
   * read) for twice that: a viewer that never reads cannot hold its place for long */
  ws->retry.secs_since_valid_ping = (uint16_t)opt->ping_s;
  ws->retry.secs_since_valid_hangup = (uint16_t)(2 * opt->ping_s);
  pthread_mutex_init(&ws->wake, NULL);
  lws_set_log_level(LLL_ERR | LLL_WARN, NULL);
  struct lws_context_creation_info info;
  memset(&info, 0, sizeof info);
  info.port = port;
  info.iface = bind;
  info.protocols = protocols;
  info.user = ws;
  info.count_threads = 1;
  info.options = LWS_SERVER_OPTION_DISABLE_IPV6;
  info.retry_and_idle_policy = &ws->retry;
  info.timeout_secs = (unsigned)opt->timeout_s;
  /* no extensions: permessage-deflate would compress the zstd frames again, per viewer */
  info.extensions = NULL;
  ws->ctx = lws_create_context(&info);
  struct lws_vhost *vh = ws->ctx ? lws_get_vhost_by_name(ws->ctx, "default") : NULL;
  ws->port = vh ? lws_get_vhost_listen_port(vh) : -1;
  if (!ws->ctx || ws->port <= 0) {
    snprintf(err, errlen, "cannot listen for websockets on %s:%d", bind, port);
    if (ws->ctx) {
      lws_context_destroy(ws->ctx);
    }
    pthread_mutex_destroy(&ws->wake);
    iplimit_free(ws->conns);
    free(ws);
    return NULL;
  }
  ws->serving = true;
  if (pthread_create(&ws->thread, NULL, service, ws) != 0) {
    snprintf(err, errlen, "cannot start the websocket thread");
    lws_context_destroy(ws->ctx);
    pthread_mutex_destroy(&ws->wake);
    iplimit_free(ws->conns);
    free(ws);
    return NULL;
  }
  sess_registry_set_notify(reg, notify, ws);
  return ws;
}

int ws_port(const ws_server *ws) {
  return ws->port;
}

void ws_get_stats(const ws_server *ws, ws_stats *out) {
  const uint64_t *in = (const uint64_t *)&ws->stats;
  uint64_t *o = (uint64_t *)out;
  for (size_t i = 0; i < sizeof *out / sizeof *o; i++) {
    o[i] = __atomic_load_n(&in[i], __ATOMIC_RELAXED);
  }
}

void ws_stop(ws_server *ws) {
  __atomic_store_n(&ws->stop, true, __ATOMIC_RELEASE);
  lws_cancel_service(ws->ctx);
  pthread_join(ws->thread, NULL);
  pthread_mutex_lock(&ws->wake);
  ws->serving = false;
  pthread_mutex_unlock(&ws->wake);
  lws_context_destroy(ws->ctx); /* closes every connection: their session references go */
}

void ws_free(ws_server *ws) {
  pthread_mutex_destroy(&ws->wake);
  iplimit_free(ws->conns);
  free(ws);
}
