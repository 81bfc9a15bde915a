/* ws_probe: a real websocket client of grainlabd's stream (libwebsockets client API), for the
 * service tests and the load benchmark. K viewers watch one session; viewer 0 may talk (auth,
 * actions, a rate, junk), stall, and check every frame it decodes against a headless re-run of
 * the same scene, seed and timed changes. Prints one JSON object with what it saw. */
#define _GNU_SOURCE
#include "../support/measured.h"
#include "../support/ws_message.h"
#include "frame.h"
#include "grainlab/grainlab.h"

#include <jansson.h>
#include <libwebsockets.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SEND 16
#define MAX_EVENTS 256
#define MAX_SAMPLES 1024 /* measurements messages remembered per viewer (viewers 0 and 1) */
#define RATE_WINDOW 4.0  /* seconds after a rate's answer in which every viewer's frames count */

typedef struct change {
  uint64_t steps;
  json_t *event; /* parameter_changed or action */
} change;

typedef struct viewer {
  int index;
  struct lws *wsi;
  bool connected, closed, error;
  int close_status;
  char close_reason[128];
  ws_message msg;
  /* what arrived */
  uint64_t frames, keyframes, texts, bytes, seq_gaps, skipped;
  uint32_t last_seq;
  bool seq_ok, first_seen;
  int first_kind;
  double first_t_wall, last_t_wall;
  uint64_t stall_frames, pre_frames; /* in the stall window, and in the window before it */
  double *ages;
  size_t nages, agecap;
  double key_bytes, key_grains, all_bytes, all_grains;
  uint64_t predicted, deltas; /* frames of those kinds */
  frame_decoder *dec;         /* --decode-all: this viewer's own (viewer 0's is P.dec) */
  /* the steps of each measurements message (viewers 0 and 1): which ones a viewer got */
  uint64_t samples[MAX_SAMPLES];
  int nsamples;
  uint64_t measurements;
  uint64_t rate_from, rate_to; /* frames when viewer 0's rate was answered, and 4 s later */
  bool rate_sent;              /* --rate: this viewer has asked for it */
} viewer;

typedef struct probe {
  int port, nviewers;
  char path[160];
  double seconds, start;
  uint64_t want_frames;
  const char *send[MAX_SEND];
  int nsend, sent, send_binary_at;
  double send_after;
  const char *end_event; /* --end-after EVENT S: stop S seconds after viewer 0 hears EVENT */
  double end_linger, end_at;
  double stall_at, stall_for;
  bool stalled, unstalled, verify, decode_all;
  const char *dump;          /* folder for viewer 0's binary messages and decoded positions */
  FILE *frame_log;           /* a line per frame viewer 0 got (--frame-log) */
  double *prev_pos;          /* viewer 0's positions of the frame before, for the log's `moved` */
  uint32_t prev_count;       /* and how many grains they are */
  char state[32];            /* the state of the latest measurements message */
  double flowing;            /* and its flowing fraction (−1: none) */
  const char *origin, *host; /* the handshake's Origin (lws puts "http://" in front) and Host */
  uint64_t dumped;
  viewer *v;
  /* viewer 0's decoding and checking */
  frame_decoder dec;
  uint64_t decoded, decode_errors, verified, chains_msgs, chains_bad, chains_checked, chains_equal;
  double max_err;
  grn_world *twin;
  bool twin_failed;
  char twin_error[200];
  change changes[MAX_EVENTS];
  int nchanges, applied;
  uint64_t measurements, measure_keys_missing;
  json_t *events, *errors, *hello;
  /* a class stream (/ws/classes/…): viewer 0's frames per session its tags named, and binary
   * messages that came without a tag right before them */
  json_t *tagged;
  bool tag_open;
  uint64_t untagged;
  char role[32];
  int rate_all;   /* --rate: every viewer asks for this many frames a second first */
  int rate_fps;   /* the rate the server answered viewer 0 (0: none) */
  double rate_at; /* when (since start) */
  bool rate_done; /* RATE_WINDOW has passed since */
  double rate_times[MAX_SAMPLES];
  int nrate_times;
} probe;

static probe P;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double wall_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static void twin_fail(const char *why) {
  if (!P.twin_failed) {
    P.twin_failed = true;
    snprintf(P.twin_error, sizeof P.twin_error, "%s", why);
  }
}

/* The headless twin of the session, from the hello message: same scene, parameters, seed. */
static void make_twin(json_t *sess) {
  grn_world_def d;
  grn_error e;
  const char *scene = json_string_value(json_object_get(sess, "scene"));
  if (!scene || grn_world_def_default(&d, scene, &e) != GRN_OK) {
    twin_fail("hello names no known scene");
    return;
  }
  const char *key;
  json_t *val;
  json_object_foreach(json_object_get(sess, "params"), key, val) {
    if (grn_world_def_set(&d, key, json_number_value(val), &e) != GRN_OK) {
      twin_fail("hello has a parameter the engine refuses");
      return;
    }
  }
  d.seed = (uint64_t)json_integer_value(json_object_get(sess, "seed"));
  /* A late joiner cannot know what changed before it came, so the twin starts from the start:
   * the tests make their first change 1.5 s after the probe joins, and a probe may take a few
   * seconds to start and join on a loaded 2-core machine (a change it missed would still show
   * as positions that disagree). */
  if (json_integer_value(json_object_get(sess, "steps")) > (json_int_t)(4.0 / GRN_STEP_SECONDS)) {
    twin_fail("joined more than 4 s into the run: cannot replay from the start");
    return;
  }
  if (grn_world_create(&d, &P.twin, &e) != GRN_OK) {
    twin_fail(e.message);
  }
}

/* An action event's body as the engine's "NAME:ARG,..." text. */
static int action_from(json_t *body, grn_action *out) {
  static const struct {
    const char *type, *args[6];
  } forms[] = {{"spout", {"x", "z"}},       {"tool", {"x", "y", "z", "vx", "vy", "vz"}},
               {"tool_off", {0}},           {"pull_dam", {"speed"}},
               {"tilt", {"angle", "rate"}}, {"open_hole", {0}},
               {"plug_hole", {0}}};
  const char *type = json_string_value(json_object_get(body, "type"));
  if (!type) {
    return -1;
  }
  char text[256];
  if (strcmp(type, "pour") == 0) {
    snprintf(text, sizeof text, "pour:%s",
             json_is_true(json_object_get(body, "on")) ? "on" : "off");
  } else if (strcmp(type, "tool_off") == 0) {
    snprintf(text, sizeof text, "tool_off");
  } else {
    int f = -1;
    for (int i = 0; i < (int)(sizeof forms / sizeof forms[0]); i++) {
      f = strcmp(forms[i].type, type) == 0 ? i : f;
    }
    if (f < 0) {
      return -1;
    }
    size_t at = (size_t)snprintf(text, sizeof text, "%s", type);
    for (int a = 0; a < 6 && forms[f].args[a]; a++) {
      json_t *x = json_object_get(body, forms[f].args[a]);
      if (!x) {
        break;
      }
      at += (size_t)snprintf(text + at, sizeof text - at, "%c%.17g", a ? ',' : ':',
                             json_number_value(x));
    }
  }
  grn_error e;
  return grn_action_parse(text, out, &e) == GRN_OK ? 0 : -1;
}

static void apply_change(const change *c) {
  grn_error e;
  const char *kind = json_string_value(json_object_get(c->event, "event"));
  if (strcmp(kind, "parameter_changed") == 0) {
    const char *key;
    json_t *val;
    json_object_foreach(json_object_get(c->event, "params"), key, val) {
      if (grn_world_set_param(P.twin, key, json_number_value(val), &e) != GRN_OK) {
        twin_fail("the twin refused a parameter change");
      }
    }
    return;
  }
  grn_action a;
  if (action_from(json_object_get(c->event, "action"), &a) != 0 ||
      grn_world_act(P.twin, &a, &e) != GRN_OK) {
    twin_fail("the twin cannot replay an action");
  }
}

/* Step the twin to `steps`, applying each change exactly where the session applied it. */
static void twin_to(uint64_t steps) {
  for (;;) {
    const uint64_t at = grn_world_step_count(P.twin);
    if (P.applied < P.nchanges && P.changes[P.applied].steps <= at) {
      if (P.changes[P.applied].steps < at) {
        twin_fail("a change arrived after the twin had passed its step");
        return;
      }
      apply_change(&P.changes[P.applied++]);
      continue;
    }
    if (at >= steps) {
      return;
    }
    uint64_t to = steps;
    if (P.applied < P.nchanges && P.changes[P.applied].steps < to) {
      to = P.changes[P.applied].steps;
    }
    grn_world_step(P.twin, (int)(to - at));
  }
}

static void verify_frame(void) {
  const uint64_t steps = (uint64_t)llround(P.dec.t / GRN_STEP_SECONDS);
  twin_to(steps);
  if (P.twin_failed) {
    return;
  }
  grn_grains_view g;
  grn_world_grains(P.twin, &g);
  /* the frame lists alive grains by ascending id */
  uint32_t max_id = 0;
  for (int i = 0; i < g.count; i++) {
    max_id = g.alive[i] && g.id[i] > max_id ? g.id[i] : max_id;
  }
  int *slot = malloc(sizeof *slot * (max_id + 1));
  memset(slot, 0xff, sizeof *slot * (max_id + 1));
  int alive = 0;
  for (int i = 0; i < g.count; i++) {
    if (g.alive[i]) {
      slot[g.id[i]] = i;
      alive++;
    }
  }
  if (alive != (int)P.dec.count) {
    twin_fail("the frame's grain count differs from the twin's");
  }
  int k = 0;
  for (uint32_t id = 0; id <= max_id && k < (int)P.dec.count; id++) {
    if (slot[id] < 0) {
      continue;
    }
    for (int a = 0; a < 3; a++) {
      const double err = fabs(P.dec.pos[3 * k + a] - g.pos[3 * slot[id] + a]) / P.dec.step;
      P.max_err = err > P.max_err ? err : P.max_err;
    }
    k++;
  }
  free(slot);
  P.verified++;
}

static void verify_chains(const uint8_t *buf, size_t len) {
  enum { CAP = 1 << 18 };
  static grn_contact got[CAP], want[CAP];
  P.chains_msgs++;
  const int n = frame_decode_chains(&P.dec, buf, len, got, CAP);
  if (n < 0) {
    P.chains_bad++;
    return;
  }
  for (int c = 0; c < n; c++) {
    P.chains_bad += !(got[c].fn > 0.0f) || got[c].a == got[c].b;
  }
  if (!P.verify || !P.twin || P.twin_failed) {
    return;
  }
  grn_measurements m;
  grn_world_measurements(P.twin, &m);
  const double cx = isfinite(measured_in(P.twin, &m, "cx")) ? measured_in(P.twin, &m, "cx") : 0.0;
  const double cz = isfinite(measured_in(P.twin, &m, "cz")) ? measured_in(P.twin, &m, "cz") : 0.0;
  const int nw = grn_world_chains(P.twin, cx, cz, 0.0, 1.0, want, CAP);
  /* map the twin's ids to frame indices (ascending id among alive grains) */
  grn_grains_view g;
  grn_world_grains(P.twin, &g);
  uint32_t max_id = 0;
  for (int i = 0; i < g.count; i++) {
    max_id = g.alive[i] && g.id[i] > max_id ? g.id[i] : max_id;
  }
  uint8_t *is = calloc(max_id + 1, 1);
  uint32_t *index = calloc(max_id + 1, sizeof *index);
  for (int i = 0; i < g.count; i++) {
    if (g.alive[i]) {
      is[g.id[i]] = 1;
    }
  }
  for (uint32_t id = 0, k = 0; id <= max_id; id++) {
    index[id] = k;
    k += is[id];
  }
  P.chains_checked++;
  bool same = nw == n;
  for (int c = 0; same && c < n; c++) {
    same = index[want[c].a] == got[c].a && index[want[c].b] == got[c].b && want[c].fn == got[c].fn;
  }
  P.chains_equal += same;
  free(is);
  free(index);
}

/* Viewer 0's message as NNNNNN.bin and, for a frame it decoded, the positions as NNNNNN.pos
 * (doubles, xyz per grain) and the grid coordinates as NNNNNN.q (u16, x, y, z planes): what
 * another decoder (the browser's) must reproduce. */
static void dump(const uint8_t *buf, size_t len, bool decoded) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%06llu.bin", P.dump, (unsigned long long)P.dumped);
  FILE *f = fopen(path, "wb");
  if (f) {
    fwrite(buf, 1, len, f);
    fclose(f);
  }
  if (decoded) {
    snprintf(path, sizeof path, "%s/%06llu.pos", P.dump, (unsigned long long)P.dumped);
    f = fopen(path, "wb");
    if (f) {
      fwrite(P.dec.pos, sizeof(double), 3 * (size_t)P.dec.count, f);
      fclose(f);
    }
    snprintf(path, sizeof path, "%s/%06llu.q", P.dump, (unsigned long long)P.dumped);
    f = fopen(path, "wb");
    if (f) {
      fwrite(P.dec.q, sizeof(uint16_t), 3 * (size_t)P.dec.count, f);
      fclose(f);
    }
  }
  P.dumped++;
}

/* One line of --frame-log for a frame viewer 0 decoded: simulated time, kind, grains, bytes, the
 * grains whose position changed since its frame before (all of them after a change of count),
 * and the state and flowing fraction of the latest measurements message. */
static void log_frame(const frame_header *h, size_t len) {
  const size_t n = P.dec.count;
  size_t moved = n;
  if (P.prev_pos && P.prev_count == n) {
    moved = 0;
    for (size_t k = 0; k < n; k++) {
      moved += memcmp(&P.prev_pos[3 * k], &P.dec.pos[3 * k], 3 * sizeof(double)) != 0;
    }
  }
  double *keep = realloc(P.prev_pos, sizeof(double) * (3 * n + 1));
  if (keep) {
    memcpy(keep, P.dec.pos, sizeof(double) * 3 * n);
    P.prev_pos = keep;
    P.prev_count = (uint32_t)n;
  }
  fprintf(P.frame_log, "%.6f %d %u %zu %zu %s %.6g\n", h->t, h->kind, h->count, len, moved,
          P.state[0] ? P.state : "-", P.flowing);
}

static void on_binary(viewer *v, const uint8_t *buf, size_t len) {
  if (v->index == 0) {
    P.untagged += !P.tag_open;
    P.tag_open = false;
  }
  frame_header h;
  if (len < sizeof h) {
    P.decode_errors += v->index == 0;
    return;
  }
  memcpy(&h, buf, sizeof h);
  const double t = now();
  if (h.kind == FRAME_CHAINS) {
    if (v->index == 0) {
      verify_chains(buf, len);
      if (P.dump) {
        dump(buf, len, false);
      }
    }
    return;
  }
  v->frames++;
  v->bytes += len;
  if (!v->first_seen) {
    v->first_seen = true;
    v->first_kind = h.kind;
    v->first_t_wall = t;
    v->seq_ok = true;
  } else {
    v->seq_ok = v->seq_ok && h.seq > v->last_seq;
    v->skipped += h.seq > v->last_seq + 1 ? h.seq - v->last_seq - 1 : 0;
  }
  v->last_seq = h.seq;
  v->last_t_wall = t;
  if (v->index == 0 && P.rate_fps && !P.rate_done && P.nrate_times < MAX_SAMPLES) {
    P.rate_times[P.nrate_times++] = t;
  }
  v->keyframes += h.kind == FRAME_KEY;
  v->predicted += h.kind == FRAME_PREDICTED;
  v->deltas += h.kind == FRAME_DELTA;
  v->all_bytes += (double)len;
  v->all_grains += h.count;
  if (h.kind == FRAME_KEY) {
    v->key_bytes += (double)len;
    v->key_grains += h.count;
  }
  if (h.published_us > 0) {
    if (v->nages == v->agecap) {
      v->agecap = v->agecap ? 2 * v->agecap : 1024;
      v->ages = realloc(v->ages, sizeof *v->ages * v->agecap);
    }
    v->ages[v->nages++] = (wall_us() - (double)h.published_us) * 1e-3;
  }
  const double since = t - P.start;
  if (P.stall_for > 0) {
    if (since >= P.stall_at && since < P.stall_at + P.stall_for) {
      v->stall_frames++;
    } else if (since >= P.stall_at - P.stall_for && since < P.stall_at) {
      v->pre_frames++;
    }
  }
  if (v->index == 0 || P.decode_all) {
    /* each viewer its own decoder: what a frame refers to is what this viewer got before */
    if (v->index != 0 && !v->dec) {
      v->dec = calloc(1, sizeof *v->dec);
    }
    frame_decoder *d = v->index == 0 ? &P.dec : v->dec;
    if (!d || frame_decode(d, buf, len) != 0) {
      P.decode_errors++;
    } else if (v->index == 0) {
      P.decoded++;
      if (P.dump) {
        dump(buf, len, true);
      }
      if (P.frame_log) {
        log_frame(&h, len);
      }
      if (P.verify && P.twin && !P.twin_failed) {
        verify_frame();
      }
    }
  }
}

static void on_text(viewer *v, const char *text, size_t len) {
  v->texts++;
  if (v->index > 1) {
    return;
  }
  json_t *m = json_loadb(text, len, 0, NULL);
  const char *type = json_string_value(json_object_get(m, "type"));
  if (type && strcmp(type, "measurements") == 0) {
    v->measurements++;
    if (v->nsamples < MAX_SAMPLES) {
      v->samples[v->nsamples++] = (uint64_t)json_integer_value(json_object_get(m, "steps"));
    }
  }
  if (v->index != 0) {
    json_decref(m);
    return;
  }
  if (!type) {
    json_array_append_new(P.errors, json_string("unparsable text message"));
  } else if (strcmp(type, "frame") == 0) {
    const char *sid = json_string_value(json_object_get(m, "session"));
    json_t *n = sid ? json_object_get(P.tagged, sid) : NULL;
    json_object_set_new(P.tagged, sid ? sid : "?", json_integer(n ? json_integer_value(n) + 1 : 1));
    P.tag_open = true;
  } else if (strcmp(type, "hello") == 0) {
    P.hello = json_incref(json_object_get(m, "session"));
    if (P.verify && !P.twin) {
      make_twin(P.hello);
    }
  } else if (strcmp(type, "measurements") == 0) {
    P.measurements++;
    json_t *values = json_object_get(m, "values");
    const char *state = json_string_value(json_object_get(m, "state"));
    snprintf(P.state, sizeof P.state, "%s", state ? state : "-");
    json_t *flowing = json_object_get(values, "flowing");
    P.flowing = json_is_number(flowing) ? json_number_value(flowing) : -1.0;
    P.measure_keys_missing +=
        !json_is_object(values) || json_object_size(values) == 0 || !json_object_get(values, "t");
  } else if (strcmp(type, "event") == 0) {
    const char *kind = json_string_value(json_object_get(m, "event"));
    if (kind && P.end_event && !P.end_at && strcmp(kind, P.end_event) == 0) {
      P.end_at = now() - P.start + P.end_linger;
    }
    json_array_append_new(P.events, json_string(kind ? kind : "?"));
    if (kind && (strcmp(kind, "parameter_changed") == 0 || strcmp(kind, "action") == 0) &&
        P.nchanges < MAX_EVENTS) {
      P.changes[P.nchanges].steps = (uint64_t)json_integer_value(json_object_get(m, "steps"));
      P.changes[P.nchanges++].event = json_incref(m);
    }
  } else if (strcmp(type, "error") == 0) {
    json_t *e = json_object_get(m, "error");
    json_array_append_new(P.errors, json_string(json_string_value(json_object_get(e, "code"))
                                                    ? json_string_value(json_object_get(e, "code"))
                                                    : "?"));
  } else if (strcmp(type, "auth") == 0) {
    snprintf(P.role, sizeof P.role, "%s",
             json_string_value(json_object_get(m, "role"))
                 ? json_string_value(json_object_get(m, "role"))
                 : "");
  } else if (strcmp(type, "rate") == 0 && !P.rate_fps) {
    /* the first rate answered opens the window in which every viewer's frames are counted */
    P.rate_fps = (int)json_integer_value(json_object_get(m, "fps"));
    P.rate_at = now() - P.start;
    for (int k = 0; k < P.nviewers; k++) {
      P.v[k].rate_from = P.v[k].rate_to = P.v[k].frames;
    }
  }
  json_decref(m);
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len) {
  viewer *v = user;
  switch (reason) {
  case LWS_CALLBACK_CLIENT_ESTABLISHED:
    v->connected = true;
    if ((v->index == 0 && P.nsend > 0) || P.rate_all) {
      lws_callback_on_writable(wsi);
    }
    return 0;
  case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
    v->error = true;
    v->closed = true;
    snprintf(v->close_reason, sizeof v->close_reason, "%s", in ? (const char *)in : "error");
    return 0;
  case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
    if (len >= 2) {
      const uint8_t *p = in;
      v->close_status = p[0] << 8 | p[1];
      snprintf(v->close_reason, sizeof v->close_reason, "%.*s", (int)(len - 2),
               (const char *)in + 2);
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
      on_text(v, (const char *)v->msg.bytes, v->msg.len);
    }
    v->msg.len = 0;
    return 0;
  }
  case LWS_CALLBACK_CLIENT_WRITEABLE: {
    if (P.rate_all && !v->rate_sent) {
      uint8_t rate[LWS_PRE + 64];
      const int n =
          snprintf((char *)rate + LWS_PRE, 64, "{\"type\":\"rate\",\"fps\":%d}", P.rate_all);
      v->rate_sent = true;
      if (lws_write(wsi, rate + LWS_PRE, (size_t)n, LWS_WRITE_TEXT) < 0) {
        return -1;
      }
      if (v->index == 0 && P.nsend > 0) {
        lws_callback_on_writable(wsi);
      }
      return 0;
    }
    if (v->index != 0 || P.sent >= P.nsend) {
      return 0;
    }
    if (now() - P.start < P.send_after) {
      lws_callback_on_writable(wsi);
      return 0;
    }
    const char *m = P.send[P.sent];
    static uint8_t buf[LWS_PRE + 65536];
    size_t n;
    enum lws_write_protocol kind = LWS_WRITE_TEXT;
    if (strncmp(m, "binary:", 7) == 0) {
      n = 16;
      memset(buf + LWS_PRE, 0xab, n);
      kind = LWS_WRITE_BINARY;
    } else if (strncmp(m, "big:", 4) == 0) {
      n = (size_t)atol(m + 4);
      n = n > 65536 ? 65536 : n;
      memset(buf + LWS_PRE, 'x', n);
    } else {
      n = strlen(m);
      memcpy(buf + LWS_PRE, m, n);
    }
    if (lws_write(wsi, buf + LWS_PRE, n, kind) < 0) {
      return -1;
    }
    if (++P.sent < P.nsend) {
      lws_callback_on_writable(wsi);
    }
    return 0;
  }
  default:
    return 0;
  }
}

static const struct lws_protocols protocols[] = {{"probe", callback, 0, 65536, 0, NULL, 0},
                                                 {NULL, NULL, 0, 0, 0, NULL, 0}};

/* lws_service waits for an event whatever its timeout says (lws ≥ 3.2): a tick every 50 ms keeps
 * the loop's clock going while a paused session sends nothing */
static struct lws_context *tick_ctx;
static lws_sorted_usec_list_t tick_sul;
static void tick(lws_sorted_usec_list_t *sul) {
  lws_sul_schedule(tick_ctx, 0, sul, tick, 50 * LWS_US_PER_MS);
}

static int cmp(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int usage(void) {
  fprintf(stderr,
          "usage: ws_probe --port P --session ID [--viewers K] [--seconds S] [--frames N]\n"
          "       [--send TEXT|binary:|big:N]... [--send-after S] [--stall-at S --stall-for S]\n"
          "       [--rate FPS (every viewer asks for it first)] [--end-after EVENT S]\n"
          "       [--verify] [--decode-all] [--path PATH] [--origin HOST] [--host HOST]\n"
          "       [--dump DIR] [--frame-log FILE]\n");
  return 2;
}

int main(int argc, char **argv) {
  P.nviewers = 1;
  P.seconds = 5;
  P.flowing = -1.0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--verify") == 0) {
      P.verify = true;
      continue;
    }
    if (strcmp(a, "--decode-all") == 0) {
      P.decode_all = true;
      continue;
    }
    if (!val) {
      return usage();
    }
    i++;
    if (strcmp(a, "--port") == 0) {
      P.port = atoi(val);
    } else if (strcmp(a, "--session") == 0) {
      snprintf(P.path, sizeof P.path, "/ws/sessions/%s", val);
    } else if (strcmp(a, "--path") == 0) {
      snprintf(P.path, sizeof P.path, "%s", val);
    } else if (strcmp(a, "--viewers") == 0) {
      P.nviewers = atoi(val);
    } else if (strcmp(a, "--seconds") == 0) {
      P.seconds = atof(val);
    } else if (strcmp(a, "--frames") == 0) {
      P.want_frames = (uint64_t)atol(val);
    } else if (strcmp(a, "--send") == 0 && P.nsend < MAX_SEND) {
      P.send[P.nsend++] = val;
    } else if (strcmp(a, "--send-after") == 0) {
      P.send_after = atof(val);
    } else if (strcmp(a, "--stall-at") == 0) {
      P.stall_at = atof(val);
    } else if (strcmp(a, "--origin") == 0) {
      P.origin = val;
    } else if (strcmp(a, "--host") == 0) {
      P.host = val;
    } else if (strcmp(a, "--dump") == 0) {
      P.dump = val;
    } else if (strcmp(a, "--frame-log") == 0) {
      if (!(P.frame_log = fopen(val, "w"))) {
        fprintf(stderr, "ws_probe: cannot write %s\n", val);
        return 1;
      }
    } else if (strcmp(a, "--end-after") == 0 && i + 1 < argc) {
      P.end_event = val;
      P.end_linger = atof(argv[++i]);
    } else if (strcmp(a, "--rate") == 0) {
      P.rate_all = atoi(val);
    } else if (strcmp(a, "--stall-for") == 0) {
      P.stall_for = atof(val);
    } else {
      return usage();
    }
  }
  if (P.port <= 0 || !P.path[0] || P.nviewers < 1) {
    return usage();
  }
  P.events = json_array();
  P.tagged = json_object();
  P.errors = json_array();
  lws_set_log_level(LLL_ERR, NULL);
  struct lws_context_creation_info info;
  memset(&info, 0, sizeof info);
  info.port = CONTEXT_PORT_NO_LISTEN;
  info.protocols = protocols;
  info.fd_limit_per_thread = (unsigned)(P.nviewers + 64);
  struct lws_context *ctx = lws_create_context(&info);
  if (!ctx) {
    fprintf(stderr, "ws_probe: cannot create a libwebsockets context\n");
    return 1;
  }
  tick_ctx = ctx;
  tick(&tick_sul);
  P.v = calloc((size_t)P.nviewers, sizeof *P.v);
  P.start = now();
  for (int k = 0; k < P.nviewers; k++) {
    viewer *v = &P.v[k];
    v->index = k;
    struct lws_client_connect_info ci;
    memset(&ci, 0, sizeof ci);
    ci.context = ctx;
    ci.address = "127.0.0.1";
    ci.port = P.port;
    ci.path = P.path;
    ci.host = P.host ? P.host : ci.address;
    ci.origin = P.origin ? P.origin : ci.address;
    ci.protocol = NULL;
    ci.local_protocol_name = "probe";
    ci.userdata = v;
    ci.pwsi = &v->wsi;
    if (!lws_client_connect_via_info(&ci)) {
      v->error = v->closed = true;
      snprintf(v->close_reason, sizeof v->close_reason, "connect failed");
    }
  }
  for (;;) {
    lws_service(ctx, 10);
    const double since = now() - P.start;
    if (P.stall_for > 0 && !P.stalled && since >= P.stall_at && P.v[0].wsi && !P.v[0].closed) {
      /* stop reading: the server's sends back up (outside a callback: apply it now) */
      lws_rx_flow_control(P.v[0].wsi, LWS_RXFLOW_REASON_APPLIES_DISABLE |
                                          LWS_RXFLOW_REASON_USER_BOOL |
                                          LWS_RXFLOW_REASON_FLAG_PROCESS_NOW);
      P.stalled = true;
    }
    if (P.stalled && !P.unstalled && since >= P.stall_at + P.stall_for && !P.v[0].closed) {
      lws_rx_flow_control(P.v[0].wsi, LWS_RXFLOW_REASON_APPLIES_ENABLE |
                                          LWS_RXFLOW_REASON_USER_BOOL |
                                          LWS_RXFLOW_REASON_FLAG_PROCESS_NOW);
      P.unstalled = true;
    }
    if (P.rate_fps && !P.rate_done) {
      P.rate_done = since >= P.rate_at + RATE_WINDOW;
      for (int k = 0; k < P.nviewers; k++) {
        P.v[k].rate_to = P.v[k].frames;
      }
    }
    bool all_closed = true;
    for (int k = 0; k < P.nviewers; k++) {
      all_closed = all_closed && P.v[k].closed;
    }
    if (since >= P.seconds || all_closed || (P.want_frames && P.v[0].frames >= P.want_frames) ||
        (P.end_at > 0 && since >= P.end_at)) {
      break;
    }
  }
  const double elapsed = now() - P.start;
  /* the summary */
  int connected = 0, errors = 0;
  double fps_min = INFINITY, fps_sum = 0, frames_min = INFINITY;
  size_t nages = 0;
  for (int k = 0; k < P.nviewers; k++) {
    viewer *v = &P.v[k];
    connected += v->connected;
    errors += v->error;
    const double span = v->frames > 1 ? v->last_t_wall - v->first_t_wall : 0.0;
    const double fps = span > 0 ? (double)(v->frames - 1) / span : 0.0;
    fps_min = fps < fps_min ? fps : fps_min;
    fps_sum += fps;
    frames_min = (double)v->frames < frames_min ? (double)v->frames : frames_min;
    nages += v->nages;
  }
  double *ages = malloc(sizeof *ages * (nages + 1));
  size_t at = 0;
  for (int k = 0; k < P.nviewers; k++) {
    memcpy(ages + at, P.v[k].ages, sizeof *ages * P.v[k].nages);
    at += P.v[k].nages;
  }
  qsort(ages, nages, sizeof *ages, cmp);
  viewer *v0 = &P.v[0], *v1 = P.nviewers > 1 ? &P.v[1] : NULL;
  json_t *out = json_pack(
      "{s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:I, s:I, s:I, s:i, s:b, s:I, s:I, s:I, s:I, s:I, s:f,"
      " s:I, s:I, s:o, s:o, s:s, s:i, s:s, s:f, s:f, s:f, s:f}",
      "viewers", P.nviewers, "connected", connected, "connect_errors", errors, "seconds", elapsed,
      "fps_min", isfinite(fps_min) ? fps_min : 0.0, "fps_mean", fps_sum / P.nviewers, "frames_min",
      isfinite(frames_min) ? frames_min : 0.0, "frames", (json_int_t)v0->frames, "keyframes",
      (json_int_t)v0->keyframes, "skipped", (json_int_t)v0->skipped, "first_kind", v0->first_kind,
      "seq_increasing", v0->seq_ok, "texts", (json_int_t)v0->texts, "decoded",
      (json_int_t)P.decoded, "decode_errors", (json_int_t)P.decode_errors, "verified",
      (json_int_t)P.verified, "measurements", (json_int_t)P.measurements, "max_err_steps",
      P.max_err, "measure_keys_missing", (json_int_t)P.measure_keys_missing, "bytes",
      (json_int_t)v0->bytes, "events", P.events, "errors", P.errors, "role", P.role, "close_status",
      v0->close_status, "close_reason", v0->close_reason, "key_bytes_per_grain",
      v0->key_grains > 0 ? v0->key_bytes / v0->key_grains : 0.0, "bytes_per_grain",
      v0->all_grains > 0 ? v0->all_bytes / v0->all_grains : 0.0, "age_p50_ms",
      nages ? ages[nages / 2] : 0.0, "age_p99_ms", nages ? ages[(nages * 99) / 100] : 0.0);
  json_object_set_new(out, "tagged", P.tagged);
  json_object_set_new(out, "kinds",
                      json_pack("{s:I, s:I, s:I}", "keyframes", (json_int_t)v0->keyframes,
                                "predicted", (json_int_t)v0->predicted, "deltas",
                                (json_int_t)v0->deltas));
  json_object_set_new(out, "untagged", json_integer((json_int_t)P.untagged));
  json_object_set_new(out, "chains",
                      json_pack("{s:I, s:I, s:I, s:I}", "messages", (json_int_t)P.chains_msgs,
                                "bad", (json_int_t)P.chains_bad, "checked",
                                (json_int_t)P.chains_checked, "equal", (json_int_t)P.chains_equal));
  if (P.stall_for > 0) {
    json_object_set_new(out, "stall",
                        json_pack("{s:I, s:I, s:I, s:I}", "stalled_frames",
                                  (json_int_t)v0->stall_frames, "stalled_pre_frames",
                                  (json_int_t)v0->pre_frames, "other_frames",
                                  (json_int_t)(v1 ? v1->stall_frames : 0), "other_pre_frames",
                                  (json_int_t)(v1 ? v1->pre_frames : 0)));
  }
  if (P.rate_fps) {
    /* each viewer's frames in the RATE_WINDOW seconds after viewer 0's rate was answered (or
     * until the probe ended), and viewer 0's most in any one second of it */
    const double seconds = (P.rate_done ? RATE_WINDOW : elapsed - P.rate_at);
    json_t *frames = json_array();
    for (int k = 0; k < P.nviewers; k++) {
      json_array_append_new(frames, json_integer((json_int_t)(P.v[k].rate_to - P.v[k].rate_from)));
    }
    int most = 0;
    for (int i = 0, j = 0; i < P.nrate_times; i++) {
      while (P.rate_times[i] - P.rate_times[j] >= 1.0) {
        j++;
      }
      most = i - j + 1 > most ? i - j + 1 : most;
    }
    json_object_set_new(out, "rate",
                        json_pack("{s:i, s:f, s:o, s:i}", "fps", P.rate_fps, "seconds", seconds,
                                  "frames", frames, "max_in_1s", most));
  }
  if (P.nviewers > 1) {
    /* measurements messages viewer 0 lacks that viewer 1 got while viewer 0 was connected, and
     * the other way round: a rate (or anything else) must not cost a viewer any */
    const viewer *a = &P.v[0], *b = &P.v[1];
    int missing = 0;
    for (int pass = 0; pass < 2; pass++) {
      const viewer *x = pass ? b : a, *y = pass ? a : b;
      for (int i = 0; y->nsamples > 0 && i < x->nsamples; i++) {
        bool found = x->samples[i] < y->samples[0] || x->samples[i] > y->samples[y->nsamples - 1];
        for (int j = 0; !found && j < y->nsamples; j++) {
          found = y->samples[j] == x->samples[i];
        }
        missing += !found;
      }
    }
    json_object_set_new(out, "last_seqs",
                        json_pack("[I, I]", (json_int_t)a->last_seq, (json_int_t)b->last_seq));
    json_object_set_new(
        out, "measurements_each",
        json_pack("[I, I]", (json_int_t)a->measurements, (json_int_t)b->measurements));
    json_object_set_new(out, "measurements_missing", json_integer(missing));
  }
  if (P.twin_failed) {
    json_object_set_new(out, "verify_error", json_string(P.twin_error));
  }
  if (P.decoded > 0) {
    /* the last keyframe's scene geometry; JSON has no infinity: an open bound is null */
    const grn_geometry *g = &P.dec.geometry;
    json_t *gj = json_object();
    const struct {
      const char *name;
      double v;
    } bounds[] = {{"floor_y", g->floor_y},
                  {"box_x0", g->box_x0},
                  {"box_x1", g->box_x1},
                  {"box_z0", g->box_z0},
                  {"box_z1", g->box_z1}};
    for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++) {
      json_object_set_new(gj, bounds[i].name,
                          isfinite(bounds[i].v) ? json_real(bounds[i].v) : json_null());
    }
    json_object_set_new(gj, "box", json_boolean(g->box));
    json_object_set_new(out, "geometry", gj);
  }
  char *text = json_dumps(out, JSON_COMPACT);
  puts(text);
  free(text);
  json_decref(out);
  if (P.frame_log) {
    fclose(P.frame_log);
  }
  free(P.prev_pos);
  lws_sul_cancel(&tick_sul);
  lws_context_destroy(ctx);
  return 0;
}
