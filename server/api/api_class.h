/* Class mode's request bodies (issue 17) read into typed commands: a class's creation, a
 * student's join, the teacher's changes and pushes. Pure, like api_json.c: no I/O; tested by
 * tests/unit/test_api_class.c and fuzzed with the other REST bodies. */
#ifndef GRAINLAB_API_CLASS_H
#define GRAINLAB_API_CLASS_H

#include "api_json.h"

#define API_CLASS_NAME_MAX 80    /* characters of a class's name */
#define API_GROUP_NAME_MAX 40    /* characters of a group's name */
#define API_CLASS_GROUPS_MAX 200 /* groups one class may hold at most */
#define API_CLASS_DAYS_MAX 7     /* how far ahead a class may end */
#define API_CLASS_SCENES_MAX 32  /* more than the catalogue holds */
#define API_CLASS_TEXT 321       /* bytes for a name of API_CLASS_NAME_MAX characters */

/* POST /api/classes {name, scenes, max_groups, grain_budget, defaults?, ends_at, private?,
 * second_join?, seeds?}. `now` (Unix seconds) bounds ends_at; `max_grains` (the server's) bounds
 * the budget. Each allowed scene's grain count, with the class's defaults, must fit the budget (422
 * over_grain_budget). `defaults` is a new reference ({} when none was given). */
typedef struct api_class_create {
  char name[API_CLASS_TEXT];
  const grn_scene_info *scenes[API_CLASS_SCENES_MAX];
  int nscenes;
  int max_groups, grain_budget;
  json_t *defaults;
  double ends_at;
  bool private_, second_controller;
  /* seeds "own": group k (in joining order, from 1) runs with seed k; "shared" (the default):
   * every group the definition's seed, so the class's groups start from one settle (issue 33) */
  bool own_seeds;
} api_class_create;
int api_read_class_create(const json_t *body, double now, int max_grains, api_class_create *out,
                          api_error *err);

/* The definition a group of the class starts with in `scene`: the scene's defaults, the class's
 * defaults for it on top (checked when the class was created). */
int api_class_definition(const json_t *defaults, const grn_scene_info *scene, grn_world_def *def,
                         api_error *err);

/* POST /api/join {code, group, scene?}: the code as given (checked against the classes by the
 * caller), the group's name, and the scene (NULL: the class's first). */
typedef struct api_join {
  char code[NODE_CODE_SIZE + 1]; /* one more: a longer one is told apart */
  char group[API_CLASS_TEXT];
  const grn_scene_info *scene;
} api_join;
int api_read_join(const json_t *body, api_join *out, api_error *err);

/* PATCH /api/classes/{id} {locked?, spotlight?, second_join?}: what is given is set. */
typedef struct api_class_patch {
  bool has_locked, locked;
  bool has_spotlight;
  char spotlight[API_CLASS_TEXT]; /* "" with has_spotlight: no spotlight (null) */
  bool has_second_join, second_controller;
} api_class_patch;
int api_read_class_patch(const json_t *body, api_class_patch *out, api_error *err);

/* POST /api/classes/{id}/push {params | action, groups?}. The parameters' names and `groups`
 * point into the body (groups NULL: every group). */
typedef struct api_class_push {
  bool is_action;
  api_action action;
  api_params params;
  const json_t *groups;
} api_class_push;
int api_read_class_push(const json_t *body, api_class_push *out, api_error *err);

/* ---- a class as the API shows it --------------------------------------------------------------
 */
/* A group of a class view: its session's view when it has a live one, and its tokens (shown to
 * the teacher only, as null where the group has no live session). */
typedef struct api_class_group_view {
  const char *name;
  double joined_at;
  const api_session_view *session; /* NULL: no live session */
  const char *control_token, *viewer_token;
} api_class_group_view;

/* A class as the registry (server/daemon/class.c) copies it out for one caller, already cut to
 * what that caller may see: the code and tokens for its teacher only, the spotlit group
 * while its session lives, with the viewer token of a private class for its members. */
typedef struct api_class_view {
  bool teacher; /* the caller is the class's teacher: the code and the groups' tokens are shown */
  const char *teacher_token; /* shown once, as the class is made; NULL otherwise */
  const char *id, *code, *name;
  const char *scenes[API_CLASS_SCENES_MAX];
  int nscenes;
  int max_groups, grain_budget;
  const json_t *defaults;
  bool private_, second_controller, own_seeds, locked;
  double created_at, ends_at, ended_at; /* Unix seconds; ended_at 0: open */
  const api_class_group_view *groups;
  int ngroups;
  const char *spot_group, *spot_session, *spot_viewer_token; /* spot_group NULL: none */
} api_class_view;

/* The class object of GET /api/classes/{id} and of the dashboard's stream (class.h). */
json_t *api_class_json(const api_class_view *v);

/* A code's class before joining it (GET /api/join): its name, scenes and state. */
json_t *api_class_lookup_json(const api_class_view *v);

/* The reply to a join: the group, its session (taken: `class` and `session` are stolen), the
 * tokens it was given (NULL: none), and the role they make. */
json_t *api_join_json(const char *group, json_t *session, const char *control_token,
                      const char *viewer_token, json_t *klass);

/* One group's part of a push: applied, or refused with the refusal (NULL). */
typedef struct api_push_result {
  const char *group;
  const api_error *refused;
} api_push_result;
/* The reply to a push: the groups it applied to and those that refused it, in order. */
json_t *api_push_json(const api_push_result *r, int n);

#endif
