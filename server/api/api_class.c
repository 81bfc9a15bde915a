/* Class mode's request bodies (see api_class.h): every check before anything is created, each
 * refusal naming its field. */
#include "api_class.h"
#include "utc.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Characters (code points) of a valid UTF-8 string, as jansson hands them over. */
static size_t utf8_chars(const char *s) {
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    n += (*p & 0xc0) != 0x80;
  }
  return n;
}

static bool has_control(const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p < 0x20 || *p == 0x7f) {
      return true;
    }
  }
  return false;
}

/* A name field: a string of 1..max characters, no control characters, no space at either end. */
static int read_name(const json_t *v, const char *field, size_t max, api_code code, char *out,
                     size_t size, api_error *err) {
  if (!json_is_string(v)) {
    api_fail(err, v ? API_E_WRONG_TYPE : API_E_MISSING_FIELD, field, "\"%s\" must be a string",
             field);
    return -1;
  }
  const char *s = json_string_value(v);
  const size_t n = utf8_chars(s), len = strlen(s);
  if (n == 0 || n > max || len != json_string_length(v) || len >= size || has_control(s) ||
      s[0] == ' ' || s[len - 1] == ' ') {
    api_fail(err, code, field,
             "\"%s\" must be 1 to %zu characters, without control characters or spaces at "
             "either end",
             field, max);
    return -1;
  }
  memcpy(out, s, len + 1);
  return 0;
}

static int whole(const json_t *v, const char *field, long lo, long hi, long *out, api_error *err) {
  if (!json_is_integer(v)) {
    api_fail(err, v ? API_E_WRONG_TYPE : API_E_MISSING_FIELD, field,
             "\"%s\" must be a whole number in %ld..%ld", field, lo, hi);
    return -1;
  }
  const json_int_t x = json_integer_value(v);
  if (x < lo || x > hi) {
    api_fail(err, API_E_OUT_OF_RANGE, field, "\"%s\" must be in %ld..%ld (got %lld)", field, lo, hi,
             (long long)x);
    return -1;
  }
  *out = (long)x;
  return 0;
}

int api_class_definition(const json_t *defaults, const grn_scene_info *scene, grn_world_def *def,
                         api_error *err) {
  grn_error e;
  if (grn_world_def_default(def, scene->name, &e) != GRN_OK) {
    api_fail(err, API_E_INTERNAL, "scenes", "scene '%s' has no default", scene->name);
    return -1;
  }
  const json_t *mine = json_object_get(defaults, scene->name);
  if (mine && !json_is_object(mine)) {
    api_fail(err, API_E_WRONG_TYPE, "defaults", "\"defaults.%s\" must be an object of numbers",
             scene->name);
    return -1;
  }
  api_params p;
  api_params_read(mine, &p);
  return api_params_apply(&p, def, API_PARAMS_DEFINE, err);
}

/* second_join: "viewer" or "controller" */
static int read_second_join(const json_t *v, bool *controller, api_error *err) {
  const char *s = json_string_value(v);
  if (!s || (strcmp(s, "viewer") != 0 && strcmp(s, "controller") != 0)) {
    api_fail(err, API_E_WRONG_TYPE, "second_join",
             "\"second_join\" is \"viewer\" or \"controller\": what a group's second student "
             "gets");
    return -1;
  }
  *controller = strcmp(s, "controller") == 0;
  return 0;
}

/* seeds: "shared" or "own" */
static int read_seeds(const json_t *v, bool *own, api_error *err) {
  const char *s = json_string_value(v);
  if (!s || (strcmp(s, "shared") != 0 && strcmp(s, "own") != 0)) {
    api_fail(err, API_E_WRONG_TYPE, "seeds",
             "\"seeds\" is \"shared\" (every group the same seed: their grains settle once for "
             "the class) or \"own\" (each group its own seed: group k, in joining order, seed k)");
    return -1;
  }
  *own = strcmp(s, "own") == 0;
  return 0;
}

static int read_scenes(const json_t *v, api_class_create *out, api_error *err) {
  if (!json_is_array(v) || json_array_size(v) == 0 ||
      json_array_size(v) > (size_t)grn_scene_count()) {
    api_fail(err, v ? API_E_WRONG_TYPE : API_E_MISSING_FIELD, "scenes",
             "\"scenes\" must list 1 to %d scene names (GET /api/scenes)", grn_scene_count());
    return -1;
  }
  size_t i;
  const json_t *s;
  json_array_foreach(v, i, s) {
    const grn_scene_info *scene = json_is_string(s) ? grn_scene_find(json_string_value(s)) : NULL;
    if (!scene) {
      api_fail(err, API_E_UNKNOWN_SCENE, "scenes", "\"scenes\"[%zu] is not a scene name", i);
      return -1;
    }
    for (int k = 0; k < out->nscenes; k++) {
      if (out->scenes[k] == scene) {
        api_fail(err, API_E_DUPLICATE_SCENE, "scenes", "\"scenes\" names '%s' twice", scene->name);
        return -1;
      }
    }
    out->scenes[out->nscenes++] = scene;
  }
  return 0;
}

static int read_defaults(const json_t *v, api_class_create *out, api_error *err) {
  if (v && !json_is_object(v)) {
    api_fail(err, API_E_WRONG_TYPE, "defaults",
             "\"defaults\" must be an object: {scene: {parameter: value}}");
    return -1;
  }
  const char *name;
  json_t *params;
  json_object_foreach((json_t *)v, name, params) {
    bool allowed = false;
    for (int k = 0; k < out->nscenes; k++) {
      allowed = allowed || strcmp(out->scenes[k]->name, name) == 0;
    }
    if (!allowed) {
      api_fail(err, API_E_SCENE_NOT_ALLOWED, "defaults",
               "\"defaults\" names '%.40s', which is not among the class's scenes", name);
      return -1;
    }
  }
  for (int k = 0; k < out->nscenes; k++) {
    grn_world_def def;
    if (api_class_definition(v, out->scenes[k], &def, err) != 0) {
      char field[64];
      snprintf(field, sizeof field, "defaults.%s", out->scenes[k]->name);
      snprintf(err->field, sizeof err->field, "%s", field);
      return -1;
    }
    const int grains = grn_world_def_grains(&def);
    if (grains > out->grain_budget) {
      api_fail(err, API_E_OVER_GRAIN_BUDGET, "grain_budget",
               "scene '%s' starts with %d grains, over the grain budget of %d: raise the budget "
               "or lower the scene's amount in \"defaults\"",
               out->scenes[k]->name, grains, out->grain_budget);
      return -1;
    }
  }
  out->defaults = v ? json_deep_copy(v) : json_object();
  return out->defaults ? 0 : (api_fail(err, API_E_INTERNAL, "", "out of memory"), -1);
}

int api_read_class_create(const json_t *body, double now, int max_grains, api_class_create *out,
                          api_error *err) {
  static const char *const keys[] = {"name",     "scenes",  "max_groups", "grain_budget",
                                     "defaults", "ends_at", "private",    "second_join",
                                     "seeds",    NULL};
  memset(out, 0, sizeof *out);
  if (api_only_keys(body, keys, err) != 0 ||
      read_name(json_object_get(body, "name"), "name", API_CLASS_NAME_MAX, API_E_BAD_NAME,
                out->name, sizeof out->name, err) != 0 ||
      read_scenes(json_object_get(body, "scenes"), out, err) != 0) {
    return -1;
  }
  long groups, budget;
  if (whole(json_object_get(body, "max_groups"), "max_groups", 1, API_CLASS_GROUPS_MAX, &groups,
            err) != 0 ||
      whole(json_object_get(body, "grain_budget"), "grain_budget", 1, max_grains, &budget, err) !=
          0) {
    return -1;
  }
  out->max_groups = (int)groups;
  out->grain_budget = (int)budget;
  const json_t *ends = json_object_get(body, "ends_at"), *priv = json_object_get(body, "private");
  const json_t *second = json_object_get(body, "second_join");
  double at = 0;
  if (!json_is_string(ends) || !utc_parse(json_string_value(ends), &at)) {
    api_fail(err, ends ? API_E_BAD_TIME : API_E_MISSING_FIELD, "ends_at",
             "\"ends_at\" must be a UTC time such as \"2026-12-03T15:00:00Z\"");
    return -1;
  }
  if (at <= now || at > now + API_CLASS_DAYS_MAX * 86400.0) {
    api_fail(err, API_E_OUT_OF_RANGE, "ends_at",
             "\"ends_at\" must be in the future and at most %d days ahead", API_CLASS_DAYS_MAX);
    return -1;
  }
  out->ends_at = at;
  if (priv && !json_is_boolean(priv)) {
    api_fail(err, API_E_WRONG_TYPE, "private", "\"private\" must be true or false");
    return -1;
  }
  out->private_ = json_is_true(priv);
  if (second && read_second_join(second, &out->second_controller, err) != 0) {
    return -1;
  }
  const json_t *seeds = json_object_get(body, "seeds");
  if (seeds && read_seeds(seeds, &out->own_seeds, err) != 0) {
    return -1;
  }
  return read_defaults(json_object_get(body, "defaults"), out, err);
}

/* s (no NUL inside) without the spaces at either end (U+0020 and the ideographic U+3000), as a
 * new JSON string; NULL when memory runs out. */
static json_t *trim_spaces(const char *s) {
  static const char wide[] = "\xe3\x80\x80";
  size_t len = strlen(s);
  for (;;) {
    if (*s == ' ') {
      s++, len--;
    } else if (strncmp(s, wide, 3) == 0) {
      s += 3, len -= 3;
    } else {
      break;
    }
  }
  for (;;) {
    if (len && s[len - 1] == ' ') {
      len--;
    } else if (len >= 3 && memcmp(s + len - 3, wide, 3) == 0) {
      len -= 3;
    } else {
      break;
    }
  }
  return json_stringn(s, len);
}

int api_read_join(const json_t *body, api_join *out, api_error *err) {
  static const char *const keys[] = {"code", "group", "scene", NULL};
  memset(out, 0, sizeof *out);
  if (api_only_keys(body, keys, err) != 0) {
    return -1;
  }
  const json_t *code = json_object_get(body, "code"), *scene = json_object_get(body, "scene");
  if (!json_is_string(code)) {
    api_fail(err, code ? API_E_WRONG_TYPE : API_E_MISSING_FIELD, "code",
             "\"code\" must be the class code the teacher gave");
    return -1;
  }
  /* a code of another length is no code: told as a wrong one (404) by the caller */
  snprintf(out->code, sizeof out->code, "%.*s", (int)sizeof out->code - 1, json_string_value(code));
  /* a group's name as a student types it: spaces around it (also a Japanese keyboard's wide
   * one) are no part of it */
  const json_t *group = json_object_get(body, "group");
  const bool text =
      json_is_string(group) && strlen(json_string_value(group)) == json_string_length(group);
  json_t *trimmed = text ? trim_spaces(json_string_value(group)) : NULL;
  const int rc = read_name(trimmed ? trimmed : group, "group", API_GROUP_NAME_MAX, API_E_BAD_GROUP,
                           out->group, sizeof out->group, err);
  json_decref(trimmed);
  if (rc != 0) {
    return -1;
  }
  if (scene) {
    out->scene = json_is_string(scene) ? grn_scene_find(json_string_value(scene)) : NULL;
    if (!out->scene) {
      api_fail(err, json_is_string(scene) ? API_E_UNKNOWN_SCENE : API_E_WRONG_TYPE, "scene",
               "\"scene\" must name a scene of the class");
      return -1;
    }
  }
  return 0;
}

int api_read_class_patch(const json_t *body, api_class_patch *out, api_error *err) {
  static const char *const keys[] = {"locked", "spotlight", "second_join", NULL};
  memset(out, 0, sizeof *out);
  if (api_only_keys(body, keys, err) != 0) {
    return -1;
  }
  const json_t *locked = json_object_get(body, "locked"),
               *spot = json_object_get(body, "spotlight");
  const json_t *second = json_object_get(body, "second_join");
  if (json_object_size(body) == 0) {
    api_fail(err, API_E_MISSING_FIELD, "",
             "nothing to change: give locked, spotlight or second_join");
    return -1;
  }
  if (locked && !json_is_boolean(locked)) {
    api_fail(err, API_E_WRONG_TYPE, "locked", "\"locked\" must be true or false");
    return -1;
  }
  out->has_locked = locked != NULL;
  out->locked = json_is_true(locked);
  if (spot) {
    out->has_spotlight = true;
    if (!json_is_null(spot) && read_name(spot, "spotlight", API_GROUP_NAME_MAX, API_E_BAD_GROUP,
                                         out->spotlight, sizeof out->spotlight, err) != 0) {
      return -1;
    }
  }
  if (second) {
    out->has_second_join = true;
    return read_second_join(second, &out->second_controller, err);
  }
  return 0;
}

int api_read_class_push(const json_t *body, api_class_push *out, api_error *err) {
  static const char *const keys[] = {"params", "action", "groups", NULL};
  memset(out, 0, sizeof *out);
  if (api_only_keys(body, keys, err) != 0) {
    return -1;
  }
  const json_t *params = json_object_get(body, "params"), *action = json_object_get(body, "action");
  const json_t *groups = json_object_get(body, "groups");
  if (!params == !action) {
    api_fail(err, API_E_MISSING_FIELD, "", "give exactly one of \"params\" and \"action\"");
    return -1;
  }
  if (groups) {
    if (!json_is_array(groups) || json_array_size(groups) == 0 ||
        json_array_size(groups) > API_CLASS_GROUPS_MAX) {
      api_fail(err, API_E_WRONG_TYPE, "groups", "\"groups\" must list 1 to %d group names",
               API_CLASS_GROUPS_MAX);
      return -1;
    }
    size_t i;
    const json_t *g;
    json_array_foreach(groups, i, g) {
      if (!json_is_string(g)) {
        api_fail(err, API_E_WRONG_TYPE, "groups", "\"groups\"[%zu] must be a group's name", i);
        return -1;
      }
    }
    out->groups = groups;
  }
  if (action) {
    if (!json_is_object(action)) {
      api_fail(err, API_E_WRONG_TYPE, "action", "\"action\" must be an action object");
      return -1;
    }
    out->is_action = true;
    return api_read_action(action, &out->action, err);
  }
  if (!json_is_object(params) || json_object_size(params) == 0) {
    api_fail(err, API_E_WRONG_TYPE, "params", "\"params\" must be an object of numbers");
    return -1;
  }
  api_params_read(params, &out->params);
  return 0;
}

static json_t *time_or_null(double t) {
  if (t <= 0) {
    return json_null();
  }
  char text[24];
  utc_format(t, text);
  return json_string(text);
}

json_t *api_class_json(const api_class_view *v) {
  json_t *scenes = json_array();
  for (int i = 0; i < v->nscenes; i++) {
    json_array_append_new(scenes, json_string(v->scenes[i]));
  }
  json_t *groups = json_array();
  for (int i = 0; i < v->ngroups; i++) {
    const api_class_group_view *g = &v->groups[i];
    json_t *gj =
        json_pack("{s:s, s:o, s:o}", "name", g->name, "joined_at", time_or_null(g->joined_at),
                  "session", g->session ? api_session_json(g->session) : json_null());
    if (v->teacher) {
      json_object_set_new(gj, "control_token",
                          g->control_token ? json_string(g->control_token) : json_null());
      if (v->private_) {
        json_object_set_new(gj, "viewer_token",
                            g->viewer_token ? json_string(g->viewer_token) : json_null());
      }
    }
    json_array_append_new(groups, gj);
  }
  json_t *spot = json_null();
  if (v->spot_group) {
    spot = json_pack("{s:s, s:s}", "group", v->spot_group, "session", v->spot_session);
    if (v->spot_viewer_token) {
      json_object_set_new(spot, "viewer_token", json_string(v->spot_viewer_token));
    }
  }
  json_t *j = json_pack(
      "{s:s, s:s, s:o, s:i, s:i, s:O, s:b, s:s, s:b, s:o, s:o, s:o, s:o, s:s, s:s, s:o}", "id",
      v->id, "name", v->name, "scenes", scenes, "max_groups", v->max_groups, "grain_budget",
      v->grain_budget, "defaults", v->defaults, "private", v->private_, "second_join",
      v->second_controller ? "controller" : "viewer", "locked", v->locked, "spotlight", spot,
      "created_at", time_or_null(v->created_at), "ends_at", time_or_null(v->ends_at), "ended_at",
      time_or_null(v->ended_at), "seeds", v->own_seeds ? "own" : "shared", "state",
      v->ended_at > 0 ? "ended" : "open", "groups", groups);
  if (j && v->teacher) {
    json_object_set_new(j, "code", json_string(v->code));
  }
  if (j && v->teacher_token) {
    json_object_set_new(j, "teacher_token", json_string(v->teacher_token));
  }
  return j;
}

json_t *api_class_lookup_json(const api_class_view *v) {
  json_t *scenes = json_array();
  for (int i = 0; i < v->nscenes; i++) {
    json_array_append_new(scenes, json_string(v->scenes[i]));
  }
  return json_pack("{s:s, s:o, s:s}", "name", v->name, "scenes", scenes, "state",
                   v->ended_at > 0 ? "ended" : "open");
}

json_t *api_join_json(const char *group, json_t *session, const char *control_token,
                      const char *viewer_token, json_t *klass) {
  json_t *out = json_pack("{s:o, s:s, s:s, s:o}", "class", klass ? klass : json_null(), "group",
                          group, "role", control_token ? "controller" : "viewer", "session",
                          session ? session : json_null());
  if (out && control_token) {
    json_object_set_new(out, "control_token", json_string(control_token));
  }
  if (out && viewer_token) {
    json_object_set_new(out, "viewer_token", json_string(viewer_token));
  }
  return out;
}

json_t *api_push_json(const api_push_result *r, int n) {
  json_t *applied = json_array(), *refused = json_array();
  for (int i = 0; i < n; i++) {
    const api_error *e = r[i].refused;
    json_array_append_new(e ? refused : applied,
                          e ? json_pack("{s:s, s:i, s:s, s:s}", "group", r[i].group, "status",
                                        e->status, "code", e->code, "message", e->message)
                            : json_string(r[i].group));
  }
  return json_pack("{s:o, s:o}", "applied", applied, "refused", refused);
}
