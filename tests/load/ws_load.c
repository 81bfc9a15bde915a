/* ws_load: hundreds of websocket viewers of grainlabd in one process (libwebsockets client), for
 * the soak test (tests/load/test_soak.py), which drives it with one command per line on stdin:
 *
 *   port N                 the daemon's websocket port for the connections that follow
 *   view SESSION K [idle]  K viewers of SESSION, each from the next loopback source address
 *                          (127.0.0.2 .. 127.0.0.250, so per-address limits see many clients);
 *                          "idle": they never read a byte once connected (dead viewers)
 *   measure SECONDS TAG    after SECONDS, one JSON line: every viewer's frames in that window
 *   status                 one JSON line of totals
 *   quit                   the totals, then exit
 *
 * Every frame a reading viewer receives is decoded with the reference decoder (frame.c), and its
 * sequence numbers must rise. */
#define _GNU_SOURCE
#include "../support/ws_message.h"
#include "frame.h"

#include <fcntl.h>
#include <libwebsockets.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SRC_FIRST 2
#define SRC_LAST 250

typedef struct conn {
  struct lws *wsi;
  char session[32], src[24];
  bool idle, connected, closed, error;
  int close_status;
  char why[96];
  uint64_t frames, decode_errors, texts, mark;
  uint32_t last_seq;
  bool seen, seq_ok;
  ws_message msg;
  frame_decoder dec;
} conn;

static struct {
  struct lws_context *ctx;
  int port, next_src;
  conn **c;
  size_t n, cap;
  double measure_at, measure_from;
  char measure_tag[64];
  char line[512];
  size_t line_len;
  bool quit;
} L;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A reason as it may go inside a JSON string unescaped. */
static void set_why(conn *v, const char *text, size_t len) {
  snprintf(v->why, sizeof v->why, "%.*s", (int)len, text);
  for (char *p = v->why; *p; p++) {
    *p = *p == '"' || *p == '\\' || (unsigned char)*p < 0x20 ? '?' : *p;
  }
}

static void on_binary(conn *v, const uint8_t *buf, size_t len) {
  frame_header h;
  if (len < sizeof h) {
    v->decode_errors++;
    return;
  }
  memcpy(&h, buf, sizeof h);
  if (h.kind == FRAME_CHAINS) {
    return;
  }
  v->seq_ok = v->seq_ok && (!v->seen || h.seq > v->last_seq);
  v->seen = true;
  v->last_seq = h.seq;
  v->frames++;
  v->decode_errors += frame_decode(&v->dec, buf, len) != 0;
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len) {
  conn *v = user;
  switch (reason) {
  case LWS_CALLBACK_CLIENT_ESTABLISHED:
    v->connected = true;
    if (v->idle) {
      lws_rx_flow_control(wsi, 0); /* a dead viewer: the daemon's sends back up */
    }
    return 0;
  case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
    v->error = v->closed = true;
    set_why(v, in ? (const char *)in : "connection error", in ? strlen(in) : 16);
    return 0;
  case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
    if (len >= 2) {
      const uint8_t *p = in;
      v->close_status = p[0] << 8 | p[1];
      set_why(v, (const char *)in + 2, len - 2);
    }
    return 0;
  case LWS_CALLBACK_CLIENT_CLOSED:
    v->closed = true;
    return 0;
  case LWS_CALLBACK_CLIENT_RECEIVE: {
    const int whole = ws_message_add(&v->msg, wsi, in, len);
    if (whole <= 0) {
      return whole;
    }
    if (lws_frame_is_binary(wsi)) {
      on_binary(v, v->msg.bytes, v->msg.len);
    } else {
      v->texts++;
    }
    v->msg.len = 0;
    return 0;
  }
  default:
    return 0;
  }
}

static const struct lws_protocols protocols[] = {{"load", callback, 0, 65536, 0, NULL, 0},
                                                 {NULL, NULL, 0, 0, 0, NULL, 0}};

static void view(const char *session, int k, bool idle) {
  for (int i = 0; i < k; i++) {
    if (L.n == L.cap) {
      L.cap = L.cap ? 2 * L.cap : 256;
      L.c = realloc(L.c, sizeof *L.c * L.cap);
    }
    conn *v = L.c ? calloc(1, sizeof *v) : NULL;
    if (!v) {
      fprintf(stderr, "ws_load: out of memory\n");
      exit(1);
    }
    L.c[L.n++] = v;
    snprintf(v->session, sizeof v->session, "%s", session);
    snprintf(v->src, sizeof v->src, "127.0.0.%d", SRC_FIRST + L.next_src);
    L.next_src = (L.next_src + 1) % (SRC_LAST - SRC_FIRST + 1);
    v->idle = idle;
    v->seq_ok = true;
    char path[64];
    snprintf(path, sizeof path, "/ws/sessions/%s", session);
    struct lws_client_connect_info ci;
    memset(&ci, 0, sizeof ci);
    ci.context = L.ctx;
    ci.address = "127.0.0.1";
    ci.port = L.port;
    ci.path = path;
    ci.host = ci.address;
    ci.origin = ci.address;
    ci.iface = v->src;
    ci.local_protocol_name = "load";
    ci.userdata = v;
    ci.pwsi = &v->wsi;
    if (!lws_client_connect_via_info(&ci)) {
      v->error = v->closed = true;
      snprintf(v->why, sizeof v->why, "connect failed");
    }
  }
}

static void totals(const char *what) {
  size_t open = 0, connected = 0, errors = 0, idle_open = 0, seq_bad = 0;
  uint64_t frames = 0, bad = 0;
  for (size_t i = 0; i < L.n; i++) {
    const conn *v = L.c[i];
    open += v->connected && !v->closed && !v->idle;
    idle_open += v->connected && !v->closed && v->idle;
    connected += v->connected;
    errors += v->error;
    seq_bad += !v->seq_ok;
    frames += v->frames;
    bad += v->decode_errors;
  }
  printf("{\"event\":\"%s\",\"conns\":%zu,\"ever_connected\":%zu,\"open\":%zu,\"idle_open\":%zu,"
         "\"connect_errors\":%zu,\"frames\":%llu,\"decode_errors\":%llu,\"seq_bad\":%zu}\n",
         what, L.n, connected, open, idle_open, errors, (unsigned long long)frames,
         (unsigned long long)bad, seq_bad);
  fflush(stdout);
}

static void measure_done(void) {
  const double span = now() - L.measure_from;
  printf("{\"event\":\"measure\",\"tag\":\"%s\",\"seconds\":%.3f,\"viewers\":[", L.measure_tag,
         span);
  for (size_t i = 0; i < L.n; i++) {
    const conn *v = L.c[i];
    printf("%s{\"session\":\"%s\",\"src\":\"%s\",\"idle\":%s,\"open\":%s,\"frames\":%llu,"
           "\"fps\":%.2f,\"decode_errors\":%llu,\"seq_ok\":%s,\"close\":%d,\"connected\":%s,"
           "\"error\":%s,\"why\":\"%s\"}",
           i ? "," : "", v->session, v->src, v->idle ? "true" : "false",
           v->connected && !v->closed ? "true" : "false", (unsigned long long)v->frames,
           (double)(v->frames - v->mark) / span, (unsigned long long)v->decode_errors,
           v->seq_ok ? "true" : "false", v->close_status, v->connected ? "true" : "false",
           v->error ? "true" : "false", v->why);
  }
  printf("]}\n");
  fflush(stdout);
  L.measure_at = 0;
}

static void command(char *line) {
  char verb[16] = "", arg1[40] = "", arg2[40] = "", arg3[16] = "";
  const int got = sscanf(line, "%15s %39s %39s %15s", verb, arg1, arg2, arg3);
  if (got >= 2 && strcmp(verb, "port") == 0) {
    L.port = atoi(arg1);
  } else if (got >= 3 && strcmp(verb, "view") == 0) {
    view(arg1, atoi(arg2), got == 4 && strcmp(arg3, "idle") == 0);
  } else if (got >= 3 && strcmp(verb, "measure") == 0) {
    for (size_t i = 0; i < L.n; i++) {
      L.c[i]->mark = L.c[i]->frames;
    }
    L.measure_from = now();
    L.measure_at = L.measure_from + atof(arg1);
    snprintf(L.measure_tag, sizeof L.measure_tag, "%s", arg2);
  } else if (got >= 1 && strcmp(verb, "status") == 0) {
    totals("status");
  } else if (got >= 1 && strcmp(verb, "quit") == 0) {
    L.quit = true;
  } else if (got >= 1) {
    fprintf(stderr, "ws_load: unknown command '%s'\n", line);
  }
}

/* Whole lines from stdin (non-blocking); end of input is quit. */
static void read_commands(void) {
  char buf[256];
  for (;;) {
    const ssize_t r = read(0, buf, sizeof buf);
    if (r == 0) {
      L.quit = true;
      return;
    }
    if (r < 0) {
      return; /* EAGAIN: nothing yet */
    }
    for (ssize_t i = 0; i < r; i++) {
      if (buf[i] == '\n') {
        L.line[L.line_len] = '\0';
        command(L.line);
        L.line_len = 0;
      } else if (L.line_len + 1 < sizeof L.line) {
        L.line[L.line_len++] = buf[i];
      }
    }
  }
}

/* Every 10 ms on the service thread: commands, and the measurement when it is due (lws_service
 * itself sleeps until its next event, however long, so it needs a timer to come back). */
static void tick(lws_sorted_usec_list_t *sul) {
  read_commands();
  if (L.measure_at > 0 && now() >= L.measure_at) {
    measure_done();
  }
  if (L.quit) {
    lws_cancel_service(L.ctx);
    return;
  }
  lws_sul_schedule(L.ctx, 0, sul, tick, 10 * LWS_US_PER_MS);
}

int main(void) {
  lws_set_log_level(LLL_ERR, NULL);
  fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
  struct lws_context_creation_info info;
  memset(&info, 0, sizeof info);
  info.port = CONTEXT_PORT_NO_LISTEN;
  info.protocols = protocols;
  info.fd_limit_per_thread = 8192;
  L.ctx = lws_create_context(&info);
  if (!L.ctx) {
    fprintf(stderr, "ws_load: cannot create a libwebsockets context\n");
    return 1;
  }
  static lws_sorted_usec_list_t sul;
  lws_sul_schedule(L.ctx, 0, &sul, tick, 10 * LWS_US_PER_MS);
  while (!L.quit) {
    lws_service(L.ctx, 0);
  }
  totals("summary");
  /* no lws_context_destroy: it would wait out the close of every viewer that stopped reading and
   * of every connection still being made (tens of seconds); the process ends here anyway */
  return 0;
}
