/* Classes (see class.h): one registry lock guards every class's fields for a few field updates;
 * it is never held while a session is made, changed or ended (those may wait for a worker). A
 * class's joins pass one at a time through its own join lock, so two students naming the same
 * new group get one session, and max_groups holds. */
#define _GNU_SOURCE
#include "class.h"
#include "log.h"
#include "node.h"
#include "utc.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct class_group {
  char name[API_CLASS_TEXT];
  double joined_at;
  char session[NODE_NAME_SIZE]; /* "" none (ended ones are found out when looked at) */
  char control_token[65], viewer_token[65];
} class_group;

typedef struct klass {
  char id[NODE_NAME_SIZE], code[NODE_CODE_SIZE];
  char name[API_CLASS_TEXT];
  const grn_scene_info *scenes[API_CLASS_SCENES_MAX];
  int nscenes;
  int max_groups, grain_budget;
  json_t *defaults;
  bool private_, second_controller;
  bool own_seeds; /* group k (in joining order, from 1) runs with seed k (api_class.h) */
  int locked;     /* __atomic: sessions read it (sess_locked) */
  char spotlight[API_CLASS_TEXT];
  char teacher_hash[65];
  double created_at, ends_at, ended_at; /* ended_at 0: open */
  class_group *groups;
  int ngroups, cap;
  /* the class's allowance of session creations (a token bucket of max_groups, refilled at the
   * server's create-rate): its joins count here, not against the joining address (class.h) */
  double tokens, stamp; /* tokens as of stamp (monotonic seconds) */
  /* an ended class leaves memory at this monotonic time (the store keeps it): long after any
   * request that found it while it was open has let go of it */
  double gone_after;
  /* requests that use the class without the registry lock (a join, a patch, its end): a class
   * dropped from memory, or read back from the store for one request, is freed by the last */
  int refs;
  bool dropped;
  pthread_mutex_t join_lock;
} klass;

struct class_registry {
  pthread_mutex_t lock;
  klass **list;
  int n, cap;
  sess_registry *reg;
  store *st;
  double refill; /* creations a class's allowance regains per second */
  double keep_s; /* how long an ended class stays in memory */
  pthread_t ticker;
  pthread_mutex_t tick_lock;
  pthread_cond_t tick_wake;
  bool stop, has_ticker;
};

static double now_unix(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double now_mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Under the registry lock: one creation from the class's allowance, or the seconds until it has
 * one again. A full allowance is max_groups: every group's first student joins at once. */
static double take_creation(class_registry *cr, klass *c) {
  const double t = now_mono();
  c->tokens += (t - c->stamp) * cr->refill;
  c->tokens = c->tokens > c->max_groups ? c->max_groups : c->tokens;
  c->stamp = t;
  if (c->tokens >= 1.0) {
    c->tokens -= 1.0;
    return 0.0;
  }
  return (1.0 - c->tokens) / cr->refill;
}

static const char *text_or(const json_t *v, const char *fallback) {
  return json_is_string(v) ? json_string_value(v) : fallback;
}

static json_t *time_json(double t) {
  if (t <= 0) {
    return json_null();
  }
  char text[24];
  utc_format(t, text);
  return json_string(text);
}

/* The row the store keeps (store_class_columns). */
static json_t *row_of(const klass *c) {
  json_t *scenes = json_array();
  for (int i = 0; i < c->nscenes; i++) {
    json_array_append_new(scenes, json_string(c->scenes[i]->name));
  }
  json_t *row =
      json_pack("{s:s, s:s, s:s, s:o, s:i, s:i, s:O, s:b, s:s, s:b, s:o, s:s, s:f, s:f, s:o}", "id",
                c->id, "code", c->code, "name", c->name, "scenes", scenes, "max_groups",
                c->max_groups, "grain_budget", c->grain_budget, "defaults", c->defaults, "private",
                c->private_, "second_join", c->second_controller ? "controller" : "viewer",
                "locked", __atomic_load_n(&c->locked, __ATOMIC_ACQUIRE) != 0, "spotlight",
                c->spotlight[0] ? json_string(c->spotlight) : json_null(), "teacher_hash",
                c->teacher_hash, "created_at", c->created_at, "ends_at", c->ends_at, "ended_at",
                c->ended_at > 0 ? json_real(c->ended_at) : json_null());
  json_object_set_new(row, "seeds", json_string(c->own_seeds ? "own" : "shared"));
  return row;
}

/* Under the registry lock: the class's record, written by the store's writer later. */
static void record(class_registry *cr, const klass *c) {
  if (cr->st) {
    json_t *row = row_of(c);
    store_class(cr->st, row);
    json_decref(row);
  }
}

static void free_class(klass *c) {
  json_decref(c->defaults);
  free(c->groups);
  pthread_mutex_destroy(&c->join_lock);
  free(c);
}

/* Under the registry lock. */
static int add_class(class_registry *cr, klass *c) {
  if (cr->n == cr->cap) {
    const int cap = cr->cap ? 2 * cr->cap : 16;
    klass **l = realloc(cr->list, sizeof(klass *) * (size_t)cap);
    if (!l) {
      return -1;
    }
    cr->list = l;
    cr->cap = cap;
  }
  cr->list[cr->n++] = c;
  return 0;
}

static class_group *add_group(klass *c, const char *name, double at) {
  if (c->ngroups == c->cap) {
    const int cap = c->cap ? 2 * c->cap : 8;
    class_group *g = realloc(c->groups, sizeof *g * (size_t)cap);
    if (!g) {
      return NULL;
    }
    c->groups = g;
    c->cap = cap;
  }
  class_group *g = &c->groups[c->ngroups++];
  memset(g, 0, sizeof *g);
  snprintf(g->name, sizeof g->name, "%s", name);
  g->joined_at = at;
  return g;
}

/* The next character of UTF-8 text (valid: jansson checked it) at *p, advancing *p, folded to the
 * form two spellings of a group's name share: upper case to lower in the Latin, Greek and
 * Cyrillic letters, and a Japanese keyboard's full-width Latin letters and digits to ASCII. */
static unsigned next_folded(const char **p) {
  const unsigned char *s = (const unsigned char *)*p;
  unsigned c = s[0];
  int n = 1;
  if (c >= 0xf0) {
    c = ((c & 0x07u) << 18) | ((s[1] & 0x3fu) << 12) | ((s[2] & 0x3fu) << 6) | (s[3] & 0x3fu);
    n = 4;
  } else if (c >= 0xe0) {
    c = ((c & 0x0fu) << 12) | ((s[1] & 0x3fu) << 6) | (s[2] & 0x3fu);
    n = 3;
  } else if (c >= 0xc0) {
    c = ((c & 0x1fu) << 6) | (s[1] & 0x3fu);
    n = 2;
  }
  *p += n;
  if (c >= 0xff01 && c <= 0xff5e) { /* full-width ASCII */
    c -= 0xfee0;
  }
  if ((c >= 'A' && c <= 'Z') || (c >= 0xc0 && c <= 0xde && c != 0xd7) ||
      (c >= 0x391 && c <= 0x3ab && c != 0x3a2) || (c >= 0x410 && c <= 0x42f)) {
    c += 0x20;
  } else if (c >= 0x400 && c <= 0x40f) {
    c += 0x50;
  } else if (c == 0x178) { /* Ÿ */
    c = 0xff;
  } else if (c >= 0x100 && c <= 0x17f && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 &&
             c != 0x17f) {
    /* Latin Extended-A pairs each capital with the small letter after it; the run from U+0139
     * to U+0148 and from U+0179 pairs odd with even */
    const bool odd_capitals = (c >= 0x139 && c <= 0x148) || c >= 0x179;
    c = (c % 2 == (odd_capitals ? 1u : 0u)) ? c + 1 : c;
  }
  return c;
}

/* Whether two group names are one group's: "Axe team" and "axe team" are (issue 31). */
static bool same_group(const char *a, const char *b) {
  while (*a && *b) {
    if (next_folded(&a) != next_folded(&b)) {
      return false;
    }
  }
  return *a == *b;
}

static class_group *group_of(klass *c, const char *name) {
  for (int i = 0; i < c->ngroups; i++) {
    if (same_group(c->groups[i].name, name)) {
      return &c->groups[i];
    }
  }
  return NULL;
}

/* Under the registry lock. */
static klass *find(class_registry *cr, const char *id, bool by_code) {
  for (int i = 0; i < cr->n; i++) {
    if (strcmp(by_code ? cr->list[i]->code : cr->list[i]->id, id) == 0) {
      return cr->list[i];
    }
  }
  return NULL;
}

static klass *from_row(const json_t *row);

/* Under the registry lock: one more user of c (NULL passes). */
static klass *take(klass *c) {
  if (c) {
    c->refs++;
  }
  return c;
}

/* A user of c is done with it; the last frees a class no longer in memory. */
static void put(class_registry *cr, klass *c) {
  if (!c) {
    return;
  }
  pthread_mutex_lock(&cr->lock);
  const bool last = --c->refs == 0 && c->dropped;
  pthread_mutex_unlock(&cr->lock);
  if (last) {
    free_class(c);
  }
}

/* A class that has left memory (ended a while ago), read back from the store for one request:
 * taken (put() frees it), or NULL when the store has none by that id or code. */
static klass *stored(class_registry *cr, const char *key, bool by_code) {
  json_t *rows = NULL;
  store_error se;
  if (!cr->st || store_load_classes(cr->st, by_code ? STORE_CLASS_CODE : STORE_CLASS_ID, key, 0,
                                    &rows, &se) != STORE_OK) {
    return NULL;
  }
  klass *c = json_array_size(rows) > 0 ? from_row(json_array_get(rows, 0)) : NULL;
  json_decref(rows);
  if (c) {
    c->refs = 1;
    c->dropped = true;
  }
  return c;
}

/* Class `key` (an id, or a join code) taken, from memory or else from the store; NULL: none. */
static klass *take_class(class_registry *cr, const char *key, bool by_code) {
  pthread_mutex_lock(&cr->lock);
  klass *c = take(find(cr, key, by_code));
  pthread_mutex_unlock(&cr->lock);
  return c ? c : stored(cr, key, by_code);
}

/* A class from the store's row; NULL when the row is not one this grainlabd can use. */
static klass *from_row(const json_t *row) {
  klass *c = calloc(1, sizeof *c);
  if (!c) {
    return NULL;
  }
  pthread_mutex_init(&c->join_lock, NULL);
  snprintf(c->id, sizeof c->id, "%s", text_or(json_object_get(row, "id"), ""));
  snprintf(c->code, sizeof c->code, "%s", text_or(json_object_get(row, "code"), ""));
  snprintf(c->name, sizeof c->name, "%s", text_or(json_object_get(row, "name"), ""));
  size_t i;
  const json_t *v;
  json_array_foreach(json_object_get(row, "scenes"), i, v) {
    const grn_scene_info *s = grn_scene_find(text_or(v, ""));
    if (s && c->nscenes < API_CLASS_SCENES_MAX) {
      c->scenes[c->nscenes++] = s;
    }
  }
  c->max_groups = (int)json_integer_value(json_object_get(row, "max_groups"));
  c->tokens = c->max_groups;
  c->stamp = now_mono();
  c->grain_budget = (int)json_integer_value(json_object_get(row, "grain_budget"));
  c->defaults = json_incref(json_object_get(row, "defaults"));
  c->private_ = json_is_true(json_object_get(row, "private"));
  c->second_controller =
      strcmp(text_or(json_object_get(row, "second_join"), ""), "controller") == 0;
  /* rows of older builds have none: their groups shared the seed */
  c->own_seeds = strcmp(text_or(json_object_get(row, "seeds"), ""), "own") == 0;
  c->locked = json_is_true(json_object_get(row, "locked"));
  snprintf(c->spotlight, sizeof c->spotlight, "%s", text_or(json_object_get(row, "spotlight"), ""));
  snprintf(c->teacher_hash, sizeof c->teacher_hash, "%s",
           text_or(json_object_get(row, "teacher_hash"), ""));
  c->created_at = json_number_value(json_object_get(row, "created_at"));
  c->ends_at = json_number_value(json_object_get(row, "ends_at"));
  c->ended_at = json_number_value(json_object_get(row, "ended_at"));
  /* groups as {name, joined_at}; a bare name (rows of older builds) joined when its class began */
  json_array_foreach(json_object_get(row, "groups"), i, v) {
    const char *name =
        json_is_string(v) ? json_string_value(v) : json_string_value(json_object_get(v, "name"));
    const json_t *at = json_object_get(v, "joined_at");
    if (name && !add_group(c, name, json_is_number(at) ? json_number_value(at) : c->created_at)) {
      free_class(c);
      return NULL;
    }
  }
  if (!c->defaults || c->nscenes == 0) { /* a scene this engine no longer has: kept stored only */
    free_class(c);
    return NULL;
  }
  return c;
}

/* A copy of one class (its groups with it), taken under the registry lock, so that its sessions
 * are looked at without it. */
typedef struct class_copy {
  klass c;
  class_group *groups;
} class_copy;

static int copy_class(const klass *c, class_copy *out) {
  out->c = *c;
  out->groups = calloc((size_t)(c->ngroups ? c->ngroups : 1), sizeof *out->groups);
  if (!out->groups) {
    return -1;
  }
  if (c->ngroups > 0) {
    memcpy(out->groups, c->groups, sizeof *out->groups * (size_t)c->ngroups);
  }
  /* a copy of its own: a jansson value's count is not safe to share between threads (its
   * increment reads it plainly), so the class's own is touched under the registry lock only */
  out->c.defaults = json_deep_copy(c->defaults);
  if (!out->c.defaults) {
    free(out->groups);
    return -1;
  }
  return 0;
}

static void free_copy(class_copy *k) {
  json_decref(k->c.defaults);
  free(k->groups);
}

/* The group's session when it is still there and live (referenced), else NULL. */
static session *live_session(class_registry *cr, const class_group *g) {
  if (!g->session[0]) {
    return NULL;
  }
  session *s = sess_find(cr->reg, g->session);
  if (s && !sess_alive(s)) {
    sess_release(s);
    return NULL;
  }
  return s;
}

static json_t *session_json(session *s) {
  api_session_view v;
  sess_view(s, &v);
  return api_session_json(&v);
}

/* The class object (see class.h) of a copy, as `role` sees it. */
static json_t *render(class_registry *cr, const class_copy *k, class_role role) {
  const klass *c = &k->c;
  json_t *row = row_of(c);
  json_object_del(row, "teacher_hash");
  /* the code lets anyone who has it join, and a run names its class: it is the teacher's to give
   * out, never part of what anyone else reads (issue 32) */
  if (role != CLASS_TEACHER) {
    json_object_del(row, "code");
  }
  json_object_set_new(row, "created_at", time_json(c->created_at));
  json_object_set_new(row, "ends_at", time_json(c->ends_at));
  json_object_set_new(row, "ended_at", time_json(c->ended_at));
  json_object_set_new(row, "state", json_string(c->ended_at > 0 ? "ended" : "open"));
  json_t *groups = json_array();
  json_t *spot = json_null();
  for (int i = 0; i < c->ngroups; i++) {
    const class_group *g = &k->groups[i];
    session *s = live_session(cr, g);
    json_t *gj = json_pack("{s:s, s:o, s:o}", "name", g->name, "joined_at", time_json(g->joined_at),
                           "session", s ? session_json(s) : json_null());
    if (role == CLASS_TEACHER) {
      json_object_set_new(gj, "control_token", s ? json_string(g->control_token) : json_null());
      if (c->private_) {
        json_object_set_new(gj, "viewer_token", s ? json_string(g->viewer_token) : json_null());
      }
    }
    if (s && c->spotlight[0] && same_group(g->name, c->spotlight)) {
      json_decref(spot);
      spot = json_pack("{s:s, s:s}", "group", g->name, "session", g->session);
      if (c->private_ && role != CLASS_ANYONE) {
        json_object_set_new(spot, "viewer_token", json_string(g->viewer_token));
      }
    }
    if (s) {
      sess_release(s);
    }
    json_array_append_new(groups, gj);
  }
  json_object_set_new(row, "spotlight", spot);
  json_object_set_new(row, "groups", groups);
  return row;
}

/* A copy of class `id`, or -1 with 404 no_class. */
static int snapshot(class_registry *cr, const char *id, class_copy *out, api_error *err) {
  klass *c = take_class(cr, id, false);
  pthread_mutex_lock(&cr->lock);
  const int rc = c ? copy_class(c, out) : -1;
  pthread_mutex_unlock(&cr->lock);
  put(cr, c);
  if (!c) {
    api_fail(err, API_E_NO_CLASS, "id", "no class '%.40s'", id);
  } else if (rc != 0) {
    api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
  }
  return rc;
}

static json_t *view(class_registry *cr, const char *id, class_role role, api_error *err) {
  class_copy k;
  if (snapshot(cr, id, &k, err) != 0) {
    return NULL;
  }
  json_t *j = render(cr, &k, role);
  free_copy(&k);
  return j;
}

json_t *class_create(class_registry *cr, const api_class_create *cmd, api_error *err) {
  klass *c = calloc(1, sizeof *c);
  if (!c) {
    api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
    return NULL;
  }
  pthread_mutex_init(&c->join_lock, NULL);
  snprintf(c->name, sizeof c->name, "%s", cmd->name);
  memcpy(c->scenes, cmd->scenes, sizeof c->scenes);
  c->nscenes = cmd->nscenes;
  c->max_groups = cmd->max_groups;
  c->tokens = c->max_groups;
  c->stamp = now_mono();
  c->grain_budget = cmd->grain_budget;
  c->defaults = json_deep_copy(cmd->defaults); /* the request's own is released by its thread */
  if (!c->defaults) {
    free_class(c);
    api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
    return NULL;
  }
  c->private_ = cmd->private_;
  c->second_controller = cmd->second_controller;
  c->own_seeds = cmd->own_seeds;
  c->created_at = now_unix();
  c->ends_at = cmd->ends_at;
  char token[65];
  sess_random_text(token, 64, "0123456789abcdef");
  store_token_hash(token, c->teacher_hash);
  char id[17], code[7];
  sess_random_text(id, 16, "0123456789abcdef");
  node_join(c->id, sizeof c->id, sess_node(cr->reg), id);
  /* a code names one class for ever (the store's UNIQUE), also one that has left memory: drawn
   * again on the rare clash (the store is asked without the registry lock) */
  for (;;) {
    sess_random_text(code, 6, SESS_CODE_ALPHABET);
    node_join(c->code, sizeof c->code, sess_node(cr->reg), code);
    klass *old = stored(cr, c->code, true);
    put(cr, old);
    pthread_mutex_lock(&cr->lock);
    if (!old && !find(cr, c->code, true)) {
      break; /* with the lock */
    }
    pthread_mutex_unlock(&cr->lock);
  }
  const int rc = add_class(cr, c);
  if (rc == 0) {
    record(cr, c);
  }
  pthread_mutex_unlock(&cr->lock);
  if (rc != 0) {
    free_class(c);
    api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
    return NULL;
  }
  log_msg(LOG_INFO, "class_created", "class=%s code=%s groups=%d ends=%.0f", c->id, c->code,
          c->max_groups, c->ends_at);
  json_t *j = view(cr, c->id, CLASS_TEACHER, err);
  if (j) {
    json_object_set_new(j, "teacher_token", json_string(token));
  }
  return j;
}

/* Whether a presented token is a group's (64 characters), in constant time. */
static bool same_token(const char *mine, const char *token) {
  if (!mine[0] || strlen(token) != strlen(mine)) {
    return false;
  }
  unsigned char diff = 0;
  for (size_t i = 0; mine[i]; i++) {
    diff |= (unsigned char)(mine[i] ^ token[i]);
  }
  return diff == 0;
}

int class_role_of(class_registry *cr, const char *id, const char *token, bool admin,
                  class_role *role, api_error *err) {
  char hash[65] = "";
  if (token && *token && strlen(token) <= 256) {
    store_token_hash(token, hash);
  }
  klass *c = take_class(cr, id, false);
  pthread_mutex_lock(&cr->lock);
  *role = CLASS_ANYONE;
  if (c && (admin || (*hash && strcmp(hash, c->teacher_hash) == 0))) {
    *role = CLASS_TEACHER;
  }
  for (int i = 0; c && token && *role == CLASS_ANYONE && i < c->ngroups; i++) {
    const class_group *g = &c->groups[i];
    if (g->session[0] &&
        (same_token(g->control_token, token) || same_token(g->viewer_token, token))) {
      *role = CLASS_MEMBER;
    }
  }
  pthread_mutex_unlock(&cr->lock);
  if (!c) {
    api_fail(err, API_E_NO_CLASS, "id", "no class '%.40s'", id);
    return -1;
  }
  put(cr, c);
  return 0;
}

json_t *class_get(class_registry *cr, const char *id, class_role role, api_error *err) {
  class_copy k;
  if (snapshot(cr, id, &k, err) != 0) {
    return NULL;
  }
  json_t *j = NULL;
  if (k.c.private_ && role == CLASS_ANYONE) {
    api_fail(err, API_E_PRIVATE, "",
             "this class is private: send its teacher token or a token of one of its groups as "
             "\"Authorization: Bearer <token>\"");
  } else {
    j = render(cr, &k, role);
  }
  free_copy(&k);
  return j;
}

/* Under the registry lock: refused once the class has ended. */
static int open_class(const klass *c, api_error *err) {
  if (c->ended_at > 0) {
    char at[24];
    utc_format(c->ended_at, at);
    api_fail(err, API_E_CLASS_ENDED, "", "the class ended at %s", at);
    return -1;
  }
  return 0;
}

json_t *class_patch(class_registry *cr, const char *id, const api_class_patch *cmd,
                    api_error *err) {
  klass *c = take_class(cr, id, false);
  pthread_mutex_lock(&cr->lock);
  int rc = c ? open_class(c, err) : -1;
  if (!c) {
    api_fail(err, API_E_NO_CLASS, "id", "no class '%.40s'", id);
  }
  class_group *g = NULL;
  if (rc == 0 && cmd->has_spotlight && cmd->spotlight[0]) {
    g = group_of(c, cmd->spotlight);
    if (!g || !g->session[0]) {
      api_fail(err, API_E_UNKNOWN_GROUP, "spotlight", "no group '%.40s' with a session here",
               cmd->spotlight);
      rc = -1;
    }
  }
  char spot[NODE_NAME_SIZE] = "";
  if (g) {
    snprintf(spot, sizeof spot, "%s", g->session);
  }
  pthread_mutex_unlock(&cr->lock);
  if (rc != 0) {
    put(cr, c);
    return NULL;
  }
  if (g) { /* the spotlit group's session must be live: the students are told to watch it */
    session *s = sess_find(cr->reg, spot);
    const bool alive = s && sess_alive(s);
    if (s) {
      sess_release(s);
    }
    if (!alive) {
      api_fail(err, API_E_UNKNOWN_GROUP, "spotlight", "group '%.40s' has no live session to watch",
               cmd->spotlight);
      put(cr, c);
      return NULL;
    }
  }
  pthread_mutex_lock(&cr->lock);
  if (open_class(c, err) != 0) {
    pthread_mutex_unlock(&cr->lock);
    put(cr, c);
    return NULL;
  }
  if (cmd->has_locked) {
    __atomic_store_n(&c->locked, cmd->locked ? 1 : 0, __ATOMIC_RELEASE);
  }
  if (cmd->has_spotlight) {
    snprintf(c->spotlight, sizeof c->spotlight, "%s", cmd->spotlight);
  }
  if (cmd->has_second_join) {
    c->second_controller = cmd->second_controller;
  }
  record(cr, c);
  pthread_mutex_unlock(&cr->lock);
  put(cr, c);
  return view(cr, id, CLASS_TEACHER, err);
}

static json_t *refusal(const char *group, const api_error *e) {
  return json_pack("{s:s, s:i, s:s, s:s}", "group", group, "status", e->status, "code", e->code,
                   "message", e->message);
}

/* Parameters pushed to one group's session: live ones change live; one fixed when the scene is
 * built (the grains' quality, a column's aspect) restarts the group's scene with the change and
 * its other parameters and seed as they are, as the session page's own slider does. */
static int push_params(class_registry *cr, session *s, const api_class_push *cmd, sess_error *e) {
  api_session_view v;
  sess_view(s, &v);
  bool restart = false;
  for (int i = 0; i < cmd->params.count; i++) {
    restart = restart || api_param_restart_only(v.def.scene, cmd->params.at[i].name);
  }
  if (!restart) {
    return sess_set_params(s, &cmd->params, e);
  }
  grn_world_def def = v.def;
  if (api_params_apply(&cmd->params, &def, API_PARAMS_DEFINE, e) != 0) {
    return -1;
  }
  return sess_switch_scene(cr->reg, s, &def, e);
}

json_t *class_push(class_registry *cr, const char *id, const api_class_push *cmd, api_error *err) {
  class_copy k;
  if (snapshot(cr, id, &k, err) != 0) {
    return NULL;
  }
  if (open_class(&k.c, err) != 0) {
    free_copy(&k);
    return NULL;
  }
  json_t *applied = json_array(), *refused = json_array();
  /* the groups named (each once, in the order given), or every group */
  const size_t named = cmd->groups ? json_array_size(cmd->groups) : 0;
  for (size_t i = 0; i < (cmd->groups ? named : (size_t)k.c.ngroups); i++) {
    const char *name =
        cmd->groups ? json_string_value(json_array_get(cmd->groups, i)) : k.groups[i].name;
    bool repeated = false;
    for (size_t j = 0; cmd->groups && j < i; j++) {
      repeated = repeated || same_group(json_string_value(json_array_get(cmd->groups, j)), name);
    }
    if (repeated) {
      continue;
    }
    const class_group *g = NULL;
    for (int j = 0; j < k.c.ngroups && !g; j++) {
      g = same_group(k.groups[j].name, name) ? &k.groups[j] : NULL;
    }
    if (!g) {
      sess_error e;
      api_fail(&e, API_E_NO_SUCH_GROUP, "", "no such group");
      json_array_append_new(refused, refusal(name, &e));
      continue;
    }
    session *s = live_session(cr, g);
    if (!s) {
      sess_error e;
      api_fail(&e, API_E_NO_SESSION, "", "the group has no live session");
      json_array_append_new(refused, refusal(name, &e));
      continue;
    }
    /* each group's session checks the whole change before any of it applies */
    sess_error e;
    const int rc = cmd->is_action ? sess_action(s, &cmd->action, &e) : push_params(cr, s, cmd, &e);
    sess_release(s);
    if (rc == 0) {
      json_array_append_new(applied, json_string(name));
    } else {
      json_array_append_new(refused, refusal(name, &e));
    }
  }
  free_copy(&k);
  return json_pack("{s:o, s:o}", "applied", applied, "refused", refused);
}

/* Ends class c (found under the lock, which is let go here): no more joins, then every group's
 * session finishes. Returns whether this call ended it. */
static bool end_class(class_registry *cr, klass *c, double at, const char *why) {
  if (c->ended_at > 0) {
    pthread_mutex_unlock(&cr->lock);
    return false;
  }
  c->ended_at = at;
  c->gone_after = now_mono() + cr->keep_s;
  record(cr, c);
  take(c);
  pthread_mutex_unlock(&cr->lock);
  log_msg(LOG_INFO, "class_ended", "class=%s: %s", c->id, why);
  /* joins are refused from here on; one in progress holds the join lock until its session is
   * listed in the class, and is ended below with the others */
  pthread_mutex_lock(&c->join_lock);
  pthread_mutex_unlock(&c->join_lock);
  pthread_mutex_lock(&cr->lock);
  class_copy now;
  const int rc = copy_class(c, &now);
  pthread_mutex_unlock(&cr->lock);
  put(cr, c);
  if (rc != 0) {
    return true;
  }
  for (int i = 0; i < now.c.ngroups; i++) {
    session *s = live_session(cr, &now.groups[i]);
    if (s) {
      sess_error e;
      sess_finish(s, why, &e); /* a session that ended meanwhile is no loss */
      sess_release(s);
    }
  }
  free_copy(&now);
  return true;
}

json_t *class_end(class_registry *cr, const char *id, api_error *err) {
  pthread_mutex_lock(&cr->lock);
  klass *c = find(cr, id, false);
  if (!c) { /* none, or one ended a while ago that only the store keeps */
    pthread_mutex_unlock(&cr->lock);
    klass *old = stored(cr, id, false);
    if (old) {
      open_class(old, err);
      put(cr, old);
    } else {
      api_fail(err, API_E_NO_CLASS, "id", "no class '%.40s'", id);
    }
    return NULL;
  }
  if (open_class(c, err) != 0) {
    pthread_mutex_unlock(&cr->lock);
    return NULL;
  }
  if (!end_class(cr, c, now_unix(), "the teacher ended the class")) {
    api_fail(err, API_E_CLASS_ENDED, "", "the class has ended already");
    return NULL;
  }
  return view(cr, id, CLASS_TEACHER, err);
}

/* The session's label: the class and the group, cut to fit on a character's boundary. */
static void label_of(const klass *c, const char *group, char out[64]) {
  char full[2 * API_CLASS_TEXT + 8];
  snprintf(full, sizeof full, "%s · %s", c->name, group);
  memcpy(out, full, 63);
  out[63] = '\0';
  api_utf8_clean(out);
}

/* The class of a join code, taken (put() it), or NULL with 404 no_class or 421 wrong_node. */
static klass *by_code(class_registry *cr, const char *code, api_error *err) {
  klass *c = node_name_ok(code, sess_node(cr->reg), 6, SESS_CODE_ALPHABET)
                 ? take_class(cr, code, true)
                 : NULL;
  char home[NODE_ID_MAX + 1];
  if (!c && node_split(code, home) && *home && strcmp(home, sess_node(cr->reg)) != 0) {
    /* the cluster's router sends a join to the code's node (/n/{node}/api/join): one that
     * reached another node is told where, not that the code is wrong */
    api_fail(err, API_E_WRONG_NODE, "code",
             "the class '%.16s' is on node '%s': join at /n/%s/api/join", code, home, home);
    return NULL;
  }
  if (!c) {
    api_fail(err, API_E_NO_CLASS, "code", "no class has the code '%.16s'", code);
  }
  return c;
}

json_t *class_lookup(class_registry *cr, const char *code, api_error *err) {
  klass *c = by_code(cr, code, err);
  if (!c) {
    return NULL;
  }
  pthread_mutex_lock(&cr->lock);
  json_t *scenes = json_array();
  for (int i = 0; i < c->nscenes; i++) {
    json_array_append_new(scenes, json_string(c->scenes[i]->name));
  }
  json_t *j = json_pack("{s:s, s:o, s:s}", "name", c->name, "scenes", scenes, "state",
                        c->ended_at > 0 ? "ended" : "open");
  pthread_mutex_unlock(&cr->lock);
  put(cr, c);
  return j;
}

json_t *class_join(class_registry *cr, const api_join *cmd, bool *created, api_error *err) {
  *created = false;
  klass *c = by_code(cr, cmd->code, err);
  if (!c) {
    return NULL;
  }
  /* c is taken: valid without the lock until put */
  pthread_mutex_lock(&c->join_lock);
  pthread_mutex_lock(&cr->lock);
  int rc = open_class(c, err);
  class_group *g = rc == 0 ? group_of(c, cmd->group) : NULL;
  const grn_scene_info *scene = cmd->scene ? cmd->scene : c->scenes[0];
  class_group found = {0};
  if (g) {
    found = *g;
  }
  /* the group as its first student spelt it, however a later one types it */
  char name[API_CLASS_TEXT];
  snprintf(name, sizeof name, "%s", g ? found.name : cmd->group);
  sess_class_link link;
  memset(&link, 0, sizeof link);
  char label[64];
  json_t *defaults = json_deep_copy(c->defaults); /* see copy_class */
  const bool private_ = c->private_, second_controller = c->second_controller;
  /* the group's number in joining order, from 1: its seed when the class gives each its own */
  const uint64_t own_seed = c->own_seeds ? (uint64_t)(g ? g - c->groups : c->ngroups) + 1 : 0;
  if (rc == 0 && !defaults) {
    api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
    rc = -1;
  }
  if (rc == 0) {
    snprintf(link.class_id, sizeof link.class_id, "%s", c->id);
    snprintf(link.group, sizeof link.group, "%s", name);
    link.grain_budget = c->grain_budget;
    for (int i = 0; i < c->nscenes; i++) {
      link.scenes[i] = c->scenes[i];
    }
    link.nscenes = c->nscenes;
    link.locked = &c->locked;
    label_of(c, name, label);
    if (!g && c->ngroups >= c->max_groups) {
      api_fail(err, API_E_CLASS_FULL, "group",
               "the class has its %d groups already: join one of them", c->max_groups);
      rc = -1;
    }
  }
  pthread_mutex_unlock(&cr->lock);
  session *s = rc == 0 && g ? live_session(cr, &found) : NULL;
  json_t *out = NULL;
  const char *control = NULL, *viewer = NULL;
  char token[65] = "", viewer_token[65] = "";
  if (s) { /* the group's session: a later student of the group */
    control = second_controller ? found.control_token : NULL;
    viewer = found.viewer_token[0] ? found.viewer_token : NULL;
  } else if (rc == 0) { /* the group's first student, or its session has gone */
    grn_world_def def;
    rc = api_class_definition(defaults, scene, &def, err);
    if (own_seed > 0) {
      def.seed = own_seed;
    }
    double wait = 0.0;
    if (rc == 0) {
      pthread_mutex_lock(&cr->lock);
      wait = take_creation(cr, c);
      pthread_mutex_unlock(&cr->lock);
    }
    if (wait > 0.0) {
      api_fail(err, API_E_CLASS_CREATE_RATE_LIMITED, "",
               "the class has started new sessions as fast as it may: try again in %.0f s",
               ceil(wait));
      err->seconds_left = wait;
      rc = -1;
    }
    s = rc == 0
            ? sess_create_in_class(cr->reg, &def, label, private_, &link, token, viewer_token, err)
            : NULL;
    if (!s && rc == 0) { /* refused (a scene the class does not use, ...): it cost nothing */
      pthread_mutex_lock(&cr->lock);
      c->tokens += 1.0;
      pthread_mutex_unlock(&cr->lock);
    }
    if (s) {
      *created = true;
      control = token;
      viewer = viewer_token[0] ? viewer_token : NULL;
      pthread_mutex_lock(&cr->lock);
      class_group *mine = group_of(c, name);
      const bool fresh = !mine;
      mine = mine ? mine : add_group(c, name, now_unix());
      if (mine) {
        snprintf(mine->session, sizeof mine->session, "%s", sess_id(s));
        memcpy(mine->control_token, token, sizeof token);
        memcpy(mine->viewer_token, viewer_token, sizeof viewer_token);
        if (fresh && cr->st) {
          store_group(cr->st, c->id, name);
        }
      }
      pthread_mutex_unlock(&cr->lock);
      if (!mine) {
        sess_delete(cr->reg, s);
        sess_release(s);
        s = NULL;
        api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
      }
    }
  }
  pthread_mutex_unlock(&c->join_lock);
  json_decref(defaults);
  if (s) {
    out = json_pack("{s:o, s:s, s:s, s:o}", "class", json_null(), "group", name, "role",
                    control ? "controller" : "viewer", "session", session_json(s));
    if (control) {
      json_object_set_new(out, "control_token", json_string(control));
    }
    if (viewer) {
      json_object_set_new(out, "viewer_token", json_string(viewer));
    }
    sess_release(s);
    json_t *cj = view(cr, c->id, CLASS_MEMBER, err);
    json_object_set_new(out, "class", cj ? cj : json_null());
  }
  put(cr, c);
  return out;
}

void class_totals(class_registry *cr, int *open, int *groups, int *held) {
  *open = 0;
  *groups = 0;
  pthread_mutex_lock(&cr->lock);
  *held = cr->n;
  for (int i = 0; i < cr->n; i++) {
    if (cr->list[i]->ended_at <= 0) {
      (*open)++;
      *groups += cr->list[i]->ngroups;
    }
  }
  pthread_mutex_unlock(&cr->lock);
}

int class_sessions(class_registry *cr, const char *id, const char *token,
                   char (*ids)[NODE_NAME_SIZE], int max) {
  char hash[65] = "";
  if (token && *token && strlen(token) <= 256) {
    store_token_hash(token, hash);
  }
  pthread_mutex_lock(&cr->lock);
  const klass *c = find(cr, id, false);
  int n = !c ? -1 : !*hash || strcmp(hash, c->teacher_hash) != 0 ? -2 : 0;
  for (int i = 0; n >= 0 && i < c->ngroups && n < max; i++) {
    if (c->groups[i].session[0]) {
      snprintf(ids[n++], NODE_NAME_SIZE, "%s", c->groups[i].session);
    }
  }
  pthread_mutex_unlock(&cr->lock);
  return n;
}

/* Classes ended a while ago leave memory (the store keeps them, and answers for them: stored()).
 * Only the ticker drops, after the class's end has been finished. */
static void drop_ended(class_registry *cr) {
  const double t = now_mono();
  pthread_mutex_lock(&cr->lock);
  for (int i = 0; i < cr->n;) {
    klass *c = cr->list[i];
    if (c->ended_at > 0 && t >= c->gone_after) {
      cr->list[i] = cr->list[--cr->n];
      c->dropped = true;
      if (c->refs == 0) {
        free_class(c);
      }
    } else {
      i++;
    }
  }
  pthread_mutex_unlock(&cr->lock);
}

/* Once a second: classes past their end time end (those a stopped daemon missed, at once). */
static void *ticker(void *arg) {
  class_registry *cr = arg;
  pthread_mutex_lock(&cr->tick_lock);
  while (!cr->stop) {
    pthread_mutex_unlock(&cr->tick_lock);
    const double t = now_unix();
    for (;;) {
      pthread_mutex_lock(&cr->lock);
      klass *due = NULL;
      for (int i = 0; i < cr->n && !due; i++) {
        due = cr->list[i]->ended_at <= 0 && cr->list[i]->ends_at <= t ? cr->list[i] : NULL;
      }
      if (!due) {
        pthread_mutex_unlock(&cr->lock);
        break;
      }
      end_class(cr, due, due->ends_at, "the class reached its end time");
    }
    drop_ended(cr);
    pthread_mutex_lock(&cr->tick_lock);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    if (!cr->stop) {
      pthread_cond_timedwait(&cr->tick_wake, &cr->tick_lock, &until);
    }
  }
  pthread_mutex_unlock(&cr->tick_lock);
  return NULL;
}

class_registry *class_registry_new(sess_registry *reg, store *st, double creates_per_minute,
                                   double keep_s, char *err, size_t errlen) {
  class_registry *cr = calloc(1, sizeof *cr);
  if (!cr) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  cr->reg = reg;
  cr->refill = creates_per_minute / 60.0;
  cr->keep_s = keep_s;
  cr->st = st;
  pthread_mutex_init(&cr->lock, NULL);
  pthread_mutex_init(&cr->tick_lock, NULL);
  pthread_cond_init(&cr->tick_wake, NULL);
  json_t *rows = NULL;
  store_error se;
  if (st && store_load_classes(st, STORE_CLASSES_LIVE, NULL, now_unix() - keep_s, &rows, &se) !=
                STORE_OK) {
    snprintf(err, errlen, "cannot read the classes: %s", se.message);
    class_registry_free(cr);
    return NULL;
  }
  size_t i;
  const json_t *row;
  json_array_foreach(rows, i, row) {
    klass *c = from_row(row);
    if (c) {
      c->gone_after = now_mono() + keep_s;
    }
    if (!c || add_class(cr, c) != 0) {
      log_msg(LOG_WARN, "class_skipped", "class=%s cannot be loaded",
              text_or(json_object_get(row, "id"), "?"));
      if (c) {
        free_class(c);
      }
    }
  }
  json_decref(rows);
  cr->has_ticker = pthread_create(&cr->ticker, NULL, ticker, cr) == 0;
  if (!cr->has_ticker) {
    snprintf(err, errlen, "cannot start the class ticker");
    class_registry_free(cr);
    return NULL;
  }
  return cr;
}

void class_registry_stop(class_registry *cr) {
  if (!cr) {
    return;
  }
  pthread_mutex_lock(&cr->tick_lock);
  cr->stop = true;
  pthread_cond_signal(&cr->tick_wake);
  pthread_mutex_unlock(&cr->tick_lock);
  if (cr->has_ticker) {
    pthread_join(cr->ticker, NULL);
    cr->has_ticker = false;
  }
}

void class_registry_free(class_registry *cr) {
  if (!cr) {
    return;
  }
  class_registry_stop(cr);
  for (int i = 0; i < cr->n; i++) {
    free_class(cr->list[i]);
  }
  free(cr->list);
  pthread_mutex_destroy(&cr->lock);
  pthread_mutex_destroy(&cr->tick_lock);
  pthread_cond_destroy(&cr->tick_wake);
  free(cr);
}
