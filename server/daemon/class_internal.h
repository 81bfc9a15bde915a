/* What the class registry's files share (class.c, class_groups.c, class_store.c): a class and
 * its groups as the registry keeps them, the registry, and the helpers each file offers. */
#ifndef GRAINLAB_CLASS_INTERNAL_H
#define GRAINLAB_CLASS_INTERNAL_H

#include "class.h"
#include "node.h"

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>

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

/* A copy of one class (its groups with it), taken under the registry lock, so that its sessions
 * are looked at without it. */
typedef struct class_copy {
  klass c;
  class_group *groups;
} class_copy;

/* class.c */
double class__now_unix(void);
double class__now_mono(void);
double class__take_creation(class_registry *cr, klass *c);
void class__free_class(klass *c);
class_group *class__add_group(klass *c, const char *name, double at);
bool class__same_group(const char *a, const char *b);
class_group *class__group_of(klass *c, const char *name);
void class__put(class_registry *cr, klass *c);
klass *class__take_class(class_registry *cr, const char *key, bool by_code);
void class__free_copy(class_copy *k);
session *class__live_session(class_registry *cr, const class_group *g);
int class__snapshot(class_registry *cr, const char *id, class_copy *out, api_error *err);
json_t *class__view(class_registry *cr, const char *id, class_role role, const char *teacher_token,
                    api_error *err);
int class__open_class(const klass *c, api_error *err);

/* class_store.c */
const char *class__text_or(const json_t *v, const char *fallback);
void class__record(class_registry *cr, const klass *c);
klass *class__stored(class_registry *cr, const char *key, bool by_code);
klass *class__from_row(const json_t *row);

#endif
