/* Classes (see class.h): one registry lock guards every class's fields for a few field updates;
 * it is never held while a session is made, changed or ended (those may wait for a worker). A
 * class's joins pass one at a time through its own join lock, so two students naming the same
 * new group get one session, and max_groups holds. */
#define _GNU_SOURCE
#include "class_internal.h"
#include "log.h"
#include "node.h"
#include "utc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double class__now_unix(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double class__now_mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Under the registry lock: one creation from the class's allowance, or the seconds until it has
 * one again. A full allowance is max_groups: every group's first student joins at once. */
double class__take_creation(class_registry *cr, klass *c) {
  const double t = class__now_mono();
  c->tokens += (t - c->stamp) * cr->refill;
  c->tokens = c->tokens > c->max_groups ? c->max_groups : c->tokens;
  c->stamp = t;
  if (c->tokens >= 1.0) {
    c->tokens -= 1.0;
    return 0.0;
  }
  return (1.0 - c->tokens) / cr->refill;
}

void class__free_class(klass *c) {
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

class_group *class__add_group(klass *c, const char *name, double at) {
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
bool class__same_group(const char *a, const char *b) {
  while (*a && *b) {
    if (next_folded(&a) != next_folded(&b)) {
      return false;
    }
  }
  return *a == *b;
}

class_group *class__group_of(klass *c, const char *name) {
  for (int i = 0; i < c->ngroups; i++) {
    if (class__same_group(c->groups[i].name, name)) {
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

/* Under the registry lock: one more user of c (NULL passes). */
static klass *take(klass *c) {
  if (c) {
    c->refs++;
  }
  return c;
}

/* A user of c is done with it; the last frees a class no longer in memory. */
void class__put(class_registry *cr, klass *c) {
  if (!c) {
    return;
  }
  pthread_mutex_lock(&cr->lock);
  const bool last = --c->refs == 0 && c->dropped;
  pthread_mutex_unlock(&cr->lock);
  if (last) {
    class__free_class(c);
  }
}

/* Class `key` (an id, or a join code) taken, from memory or else from the store; NULL: none. */
klass *class__take_class(class_registry *cr, const char *key, bool by_code) {
  pthread_mutex_lock(&cr->lock);
  klass *c = take(find(cr, key, by_code));
  pthread_mutex_unlock(&cr->lock);
  return c ? c : class__stored(cr, key, by_code);
}

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

void class__free_copy(class_copy *k) {
  json_decref(k->c.defaults);
  free(k->groups);
}

/* The group's session when it is still there and live (referenced), else NULL. */
session *class__live_session(class_registry *cr, const class_group *g) {
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

/* The class object (see class.h) of a copy, as `role` sees it (NULL: out of memory). The code
 * lets anyone who has it join, and a run names its class: it is the teacher's to give out, never
 * part of what anyone else reads (issue 32). */
static json_t *render(class_registry *cr, const class_copy *k, class_role role,
                      const char *teacher_token) {
  const klass *c = &k->c;
  const int ng = c->ngroups;
  api_class_group_view *gv = calloc((size_t)ng + 1, sizeof *gv);
  api_session_view *sv = calloc((size_t)ng + 1, sizeof *sv);
  if (!gv || !sv) {
    free(gv);
    free(sv);
    return NULL;
  }
  api_class_view v = {.teacher = role == CLASS_TEACHER,
                      .teacher_token = teacher_token,
                      .id = c->id,
                      .code = c->code,
                      .name = c->name,
                      .nscenes = c->nscenes,
                      .max_groups = c->max_groups,
                      .grain_budget = c->grain_budget,
                      .defaults = c->defaults,
                      .private_ = c->private_,
                      .second_controller = c->second_controller,
                      .own_seeds = c->own_seeds,
                      .locked = __atomic_load_n(&c->locked, __ATOMIC_ACQUIRE) != 0,
                      .created_at = c->created_at,
                      .ends_at = c->ends_at,
                      .ended_at = c->ended_at,
                      .groups = gv,
                      .ngroups = ng};
  for (int i = 0; i < c->nscenes; i++) {
    v.scenes[i] = c->scenes[i]->name;
  }
  for (int i = 0; i < ng; i++) {
    const class_group *g = &k->groups[i];
    session *s = class__live_session(cr, g);
    gv[i] = (api_class_group_view){.name = g->name, .joined_at = g->joined_at};
    if (s) {
      sess_view(s, &sv[i]);
      gv[i].session = &sv[i];
    }
    gv[i].control_token = s ? g->control_token : NULL;
    gv[i].viewer_token = s ? g->viewer_token : NULL;
    if (s && c->spotlight[0] && class__same_group(g->name, c->spotlight)) {
      v.spot_group = g->name;
      v.spot_session = g->session;
      v.spot_viewer_token = c->private_ && role != CLASS_ANYONE ? g->viewer_token : NULL;
    }
    if (s) {
      sess_release(s);
    }
  }
  json_t *j = api_class_json(&v);
  free(gv);
  free(sv);
  return j;
}

/* A copy of class `id`, or -1 with 404 no_class. */
int class__snapshot(class_registry *cr, const char *id, class_copy *out, api_error *err) {
  klass *c = class__take_class(cr, id, false);
  pthread_mutex_lock(&cr->lock);
  const int rc = c ? copy_class(c, out) : -1;
  pthread_mutex_unlock(&cr->lock);
  class__put(cr, c);
  if (!c) {
    api_fail(err, API_E_NO_CLASS, "id", "no class '%.40s'", id);
  } else if (rc != 0) {
    api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
  }
  return rc;
}

/* Class `id` as `role` sees it; teacher_token (NULL: none) is shown once, as the class is made. */
json_t *class__view(class_registry *cr, const char *id, class_role role, const char *teacher_token,
                    api_error *err) {
  class_copy k;
  if (class__snapshot(cr, id, &k, err) != 0) {
    return NULL;
  }
  json_t *j = render(cr, &k, role, teacher_token);
  class__free_copy(&k);
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
  c->stamp = class__now_mono();
  c->grain_budget = cmd->grain_budget;
  c->defaults = json_deep_copy(cmd->defaults); /* the request's own is released by its thread */
  if (!c->defaults) {
    class__free_class(c);
    api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
    return NULL;
  }
  c->private_ = cmd->private_;
  c->second_controller = cmd->second_controller;
  c->own_seeds = cmd->own_seeds;
  c->created_at = class__now_unix();
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
    klass *old = class__stored(cr, c->code, true);
    class__put(cr, old);
    pthread_mutex_lock(&cr->lock);
    if (!old && !find(cr, c->code, true)) {
      break; /* with the lock */
    }
    pthread_mutex_unlock(&cr->lock);
  }
  const int rc = add_class(cr, c);
  if (rc == 0) {
    class__record(cr, c);
  }
  pthread_mutex_unlock(&cr->lock);
  if (rc != 0) {
    class__free_class(c);
    api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
    return NULL;
  }
  log_msg(LOG_INFO, "class_created", "class=%s code=%s groups=%d ends=%.0f", c->id, c->code,
          c->max_groups, c->ends_at);
  return class__view(cr, c->id, CLASS_TEACHER, token, err);
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
  klass *c = class__take_class(cr, id, false);
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
  class__put(cr, c);
  return 0;
}

json_t *class_get(class_registry *cr, const char *id, class_role role, api_error *err) {
  class_copy k;
  if (class__snapshot(cr, id, &k, err) != 0) {
    return NULL;
  }
  json_t *j = NULL;
  if (k.c.private_ && role == CLASS_ANYONE) {
    api_fail(err, API_E_PRIVATE, "",
             "this class is private: send its teacher token or a token of one of its groups as "
             "\"Authorization: Bearer <token>\"");
  } else {
    j = render(cr, &k, role, NULL);
  }
  class__free_copy(&k);
  return j;
}

/* Under the registry lock: refused once the class has ended. */
int class__open_class(const klass *c, api_error *err) {
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
  klass *c = class__take_class(cr, id, false);
  pthread_mutex_lock(&cr->lock);
  int rc = c ? class__open_class(c, err) : -1;
  if (!c) {
    api_fail(err, API_E_NO_CLASS, "id", "no class '%.40s'", id);
  }
  class_group *g = NULL;
  if (rc == 0 && cmd->has_spotlight && cmd->spotlight[0]) {
    g = class__group_of(c, cmd->spotlight);
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
    class__put(cr, c);
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
      class__put(cr, c);
      return NULL;
    }
  }
  pthread_mutex_lock(&cr->lock);
  if (class__open_class(c, err) != 0) {
    pthread_mutex_unlock(&cr->lock);
    class__put(cr, c);
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
  class__record(cr, c);
  pthread_mutex_unlock(&cr->lock);
  class__put(cr, c);
  return class__view(cr, id, CLASS_TEACHER, NULL, err);
}

/* Ends class c (found under the lock, which is let go here): no more joins, then every group's
 * session finishes. Returns whether this call ended it. */
static bool end_class(class_registry *cr, klass *c, double at, const char *why) {
  if (c->ended_at > 0) {
    pthread_mutex_unlock(&cr->lock);
    return false;
  }
  c->ended_at = at;
  c->gone_after = class__now_mono() + cr->keep_s;
  class__record(cr, c);
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
  class__put(cr, c);
  if (rc != 0) {
    return true;
  }
  for (int i = 0; i < now.c.ngroups; i++) {
    session *s = class__live_session(cr, &now.groups[i]);
    if (s) {
      sess_error e;
      sess_finish(s, why, &e); /* a session that ended meanwhile is no loss */
      sess_release(s);
    }
  }
  class__free_copy(&now);
  return true;
}

json_t *class_end(class_registry *cr, const char *id, api_error *err) {
  pthread_mutex_lock(&cr->lock);
  klass *c = find(cr, id, false);
  if (!c) { /* none, or one ended a while ago that only the store keeps */
    pthread_mutex_unlock(&cr->lock);
    klass *old = class__stored(cr, id, false);
    if (old) {
      class__open_class(old, err);
      class__put(cr, old);
    } else {
      api_fail(err, API_E_NO_CLASS, "id", "no class '%.40s'", id);
    }
    return NULL;
  }
  if (class__open_class(c, err) != 0) {
    pthread_mutex_unlock(&cr->lock);
    return NULL;
  }
  if (!end_class(cr, c, class__now_unix(), "the teacher ended the class")) {
    api_fail(err, API_E_CLASS_ENDED, "", "the class has ended already");
    return NULL;
  }
  return class__view(cr, id, CLASS_TEACHER, NULL, err);
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

/* Classes ended a while ago leave memory (the store keeps them, and answers for them:
 * class__stored()). Only the ticker drops, after the class's end has been finished. */
static void drop_ended(class_registry *cr) {
  const double t = class__now_mono();
  pthread_mutex_lock(&cr->lock);
  for (int i = 0; i < cr->n;) {
    klass *c = cr->list[i];
    if (c->ended_at > 0 && t >= c->gone_after) {
      cr->list[i] = cr->list[--cr->n];
      c->dropped = true;
      if (c->refs == 0) {
        class__free_class(c);
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
    const double t = class__now_unix();
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
  if (st && store_load_classes(st, STORE_CLASSES_LIVE, NULL, class__now_unix() - keep_s, &rows,
                               &se) != STORE_OK) {
    snprintf(err, errlen, "cannot read the classes: %s", se.message);
    class_registry_free(cr);
    return NULL;
  }
  size_t i;
  const json_t *row;
  json_array_foreach(rows, i, row) {
    klass *c = class__from_row(row);
    if (c) {
      c->gone_after = class__now_mono() + keep_s;
    }
    if (!c || add_class(cr, c) != 0) {
      log_msg(LOG_WARN, "class_skipped", "class=%s cannot be loaded",
              class__text_or(json_object_get(row, "id"), "?"));
      if (c) {
        class__free_class(c);
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
    class__free_class(cr->list[i]);
  }
  free(cr->list);
  pthread_mutex_destroy(&cr->lock);
  pthread_mutex_destroy(&cr->tick_lock);
  pthread_cond_destroy(&cr->tick_wake);
  free(cr);
}
