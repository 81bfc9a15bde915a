/* The REST API's JSON (see api_json.h): one error mapping, one error object, one catalogue, and
 * request bodies read into typed commands with the API's refusals. */
#include "api_json.h"

#include <stdio.h>
#include <string.h>

char *api_dumps(const json_t *j) {
  return json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(15));
}

json_t *api_scenes_json(void) {
  json_t *a = json_array();
  for (int i = 0; i < grn_scene_count(); i++) {
    const grn_scene_info *sc = grn_scene_at(i);
    json_t *params = json_array(), *actions = json_array(), *meas = json_array();
    for (int k = 0; k < sc->param_count; k++) {
      const grn_param_info *p = &sc->param_info[k];
      json_array_append_new(
          params, json_pack("{s:s, s:s, s:f, s:f, s:f, s:b, s:b, s:s}", "name", p->name, "unit",
                            p->unit, "min", p->min, "max", p->max, "default", p->def, "integer",
                            p->integer, "restart", p->restart, "description", p->description));
    }
    for (int k = 0; k < sc->action_count; k++) {
      json_array_append_new(actions, json_string(sc->actions[k]));
    }
    /* the scene's own measurements; every sample also carries its state, which is no measurement */
    for (int k = 0; k < GRN_MEASURE_COUNT; k++) {
      if (sc->measures & (1u << k)) {
        json_array_append_new(meas, json_string(grn_measure_name((grn_measure_key)k)));
      }
    }
    json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:o, s:o, s:o}", "name", sc->name, "model",
                                       grn_model_name(sc->model), "description", sc->description,
                                       "params", params, "actions", actions, "measurements", meas));
  }
  return json_pack("{s:o}", "scenes", a);
}

json_t *api_error_object(const char *code, const char *field, const char *message) {
  json_t *e = json_pack("{s:s, s:s}", "code", code, "message", message);
  if (e && field && *field) {
    json_object_set_new(e, "field", json_string(field));
  }
  return e;
}

json_t *api_error_json(const api_error *e) {
  return json_pack("{s:o}", "error", api_error_object(e->code, e->field, e->message));
}

/* Engine status → HTTP, by context; the first row of a context that names the status (or any,
 * GRN_OK standing for "any other") answers. A live change the engine cannot make is the same
 * answer as the daemon's own check of restart-only parameters. */
static const struct {
  api_engine_ctx ctx;
  int grn_code; /* GRN_OK: any other status */
  int status;
  const char *code;
} engine_map[] = {
    {API_ON_PARAM, GRN_E_UNKNOWN_PARAM, 400, "unknown_parameter"},
    {API_ON_PARAM, GRN_OK, 422, "out_of_range"},
    {API_ON_ACTION, GRN_E_UNSUPPORTED, 409, "unsupported_action"},
    {API_ON_ACTION, GRN_OK, 422, "out_of_range"},
    {API_ON_WORKER_SET, GRN_E_UNSUPPORTED, 409, "needs_restart"},
    {API_ON_WORKER_SET, GRN_OK, 422, "rejected"},
    {API_ON_WORKER, GRN_OK, 422, "rejected"},
};

void api_engine_status(api_engine_ctx ctx, int grn_code, int *http_status, const char **code) {
  for (size_t i = 0; i < sizeof engine_map / sizeof engine_map[0]; i++) {
    if (engine_map[i].ctx == ctx &&
        (engine_map[i].grn_code == grn_code || !engine_map[i].grn_code)) {
      *http_status = engine_map[i].status;
      *code = engine_map[i].code;
      return;
    }
  }
  /* a context outside the enum: our own bug, answered as the worker's refusal */
  *http_status = 422;
  *code = "rejected";
}

void api_engine_error(api_error *out, api_engine_ctx ctx, const grn_error *e) {
  int status;
  const char *code;
  api_engine_status(ctx, e->code, &status, &code);
  api_fail(out, status, code, e->field, "%s", e->message);
}

json_t *api_parse_object(const char *body, size_t len, api_error *err) {
  json_error_t je;
  json_t *j = json_loadb(body ? body : "", body ? len : 0, JSON_REJECT_DUPLICATES, &je);
  if (!j) {
    api_fail(err, 400, "bad_json", "", "malformed JSON at line %d column %d: %s", je.line,
             je.column, je.text);
    return NULL;
  }
  if (!json_is_object(j)) {
    json_decref(j);
    api_fail(err, 400, "bad_json", "", "the body must be a JSON object");
    return NULL;
  }
  return j;
}

int api_only_keys(const json_t *obj, const char *const *allowed, api_error *err) {
  const char *key;
  json_t *v;
  /* json_object_foreach takes a non-const object; it only reads it */
  json_t *o = (json_t *)obj;
  json_object_foreach(o, key, v) {
    bool ok = false;
    for (int i = 0; allowed[i] && !ok; i++) {
      ok = strcmp(allowed[i], key) == 0;
    }
    if (!ok) {
      api_fail(err, 400, "unknown_field", key, "unknown field '%.60s'", key);
      return -1;
    }
  }
  return 0;
}

void api_params_read(const json_t *obj, api_params *out) {
  out->count = 0;
  out->not_number = NULL;
  const char *key;
  json_t *v;
  json_t *o = (json_t *)obj;
  json_object_foreach(o, key, v) {
    if (!json_is_number(v)) {
      out->not_number = key;
      return;
    }
    if (out->count == API_MAX_PARAMS) {
      return; /* one of those read is unknown to every scene (see API_MAX_PARAMS) */
    }
    out->at[out->count++] = (api_param){key, json_number_value(v), json_is_integer(v)};
  }
}

bool api_param_restart_only(const grn_scene_info *scene, const char *name) {
  const int k = grn_scene_param_index(scene, name);
  return k >= 0 && scene->param_info[k].restart;
}

int api_params_apply(const api_params *p, grn_world_def *def, api_params_use use, api_error *err) {
  for (int i = 0; i < p->count; i++) {
    const char *name = p->at[i].name;
    grn_error e;
    if (grn_world_def_set(def, name, p->at[i].value, &e) != GRN_OK) {
      api_engine_error(err, API_ON_PARAM, &e);
      return -1;
    }
    if (use == API_PARAMS_LIVE && api_param_restart_only(def->scene, name)) {
      api_fail(err, 409, "needs_restart", name,
               "parameter '%s' is fixed when the scene starts: restart it (POST "
               "/api/sessions/{id}/scene) to change it",
               name);
      return -1;
    }
    if (use == API_PARAMS_FORK && api_param_restart_only(def->scene, name)) {
      api_fail(err, 409, "needs_restart", name,
               "a fork goes on from the run's end: '%s' is fixed when the scene starts", name);
      return -1;
    }
  }
  if (p->not_number) {
    if (use == API_PARAMS_DEFINE) {
      api_fail(err, 400, "wrong_type", p->not_number, "parameter '%.60s' must be a number",
               p->not_number);
    } else {
      api_fail(err, 400, "wrong_type", p->not_number, "parameter '%s' must be a number",
               p->not_number);
    }
    return -1;
  }
  return 0;
}

/* {scene, params?, seed?} into a validated definition (the keys were checked by the caller). */
static int read_definition(const json_t *body, grn_world_def *d, api_error *err) {
  json_t *scene = json_object_get(body, "scene"), *params = json_object_get(body, "params");
  json_t *seed = json_object_get(body, "seed");
  if (!json_is_string(scene)) {
    api_fail(err, 400, scene ? "wrong_type" : "missing_field", "scene",
             "\"scene\" must be a string naming a scene");
    return -1;
  }
  grn_error e;
  if (grn_world_def_default(d, json_string_value(scene), &e) != GRN_OK) {
    api_fail(err, 400, "unknown_scene", "scene", "unknown scene '%.60s'", json_string_value(scene));
    return -1;
  }
  if (params && !json_is_object(params)) {
    api_fail(err, 400, "wrong_type", "params", "\"params\" must be an object");
    return -1;
  }
  api_params p;
  api_params_read(params, &p);
  if (api_params_apply(&p, d, API_PARAMS_DEFINE, err) != 0) {
    return -1;
  }
  if (seed) {
    if (!json_is_integer(seed)) {
      api_fail(err, 400, "wrong_type", "seed", "\"seed\" must be an integer");
      return -1;
    }
    d->seed = (uint64_t)json_integer_value(seed);
  }
  return 0;
}

int api_read_scene(const json_t *body, grn_world_def *def, api_error *err) {
  static const char *const keys[] = {"scene", "params", "seed", NULL};
  return api_only_keys(body, keys, err) != 0 ? -1 : read_definition(body, def, err);
}

/* label? (a string of at most 63 bytes) and private? (a boolean) */
static int read_label_private(const json_t *body, char label[64], bool *private_, api_error *err) {
  json_t *label_j = json_object_get(body, "label"), *priv = json_object_get(body, "private");
  if (label_j && (!json_is_string(label_j) || json_string_length(label_j) > 63)) {
    api_fail(err, 400, "wrong_type", "label", "\"label\" must be a string of 63 bytes or fewer");
    return -1;
  }
  if (priv && !json_is_boolean(priv)) {
    api_fail(err, 400, "wrong_type", "private", "\"private\" must be true or false");
    return -1;
  }
  snprintf(label, 64, "%s", label_j ? json_string_value(label_j) : "");
  *private_ = json_is_true(priv);
  return 0;
}

int api_read_create(const json_t *body, api_create *out, api_error *err) {
  static const char *const keys[] = {"scene", "params", "seed", "label", "private", NULL};
  if (api_only_keys(body, keys, err) != 0 || read_definition(body, &out->def, err) != 0) {
    return -1;
  }
  return read_label_private(body, out->label, &out->private_, err);
}

int api_read_session_patch(const json_t *body, api_session_patch *out, api_error *err) {
  static const char *const keys[] = {"speed", "label", NULL};
  if (api_only_keys(body, keys, err) != 0) {
    return -1;
  }
  json_t *speed = json_object_get(body, "speed");
  if (speed && !json_is_number(speed)) {
    api_fail(err, 400, "wrong_type", "speed", "\"speed\" must be a number");
    return -1;
  }
  if (json_object_get(body, "label")) {
    api_fail(err, 400, "read_only", "label", "a session's label is set when it is created");
    return -1;
  }
  out->has_speed = speed != NULL;
  out->speed = speed ? json_number_value(speed) : 0.0;
  return 0;
}

int api_read_from_run(const json_t *body, bool fork, api_from_run *out, api_error *err) {
  static const char *const replay_keys[] = {"label", "private", NULL};
  static const char *const fork_keys[] = {"params", "label", "private", NULL};
  if (api_only_keys(body, fork ? fork_keys : replay_keys, err) != 0 ||
      read_label_private(body, out->label, &out->private_, err) != 0) {
    return -1;
  }
  json_t *params = json_object_get(body, "params");
  if (params && !json_is_object(params)) {
    api_fail(err, 400, "wrong_type", "params", "\"params\" must be an object");
    return -1;
  }
  out->params = params;
  return 0;
}
