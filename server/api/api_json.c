/* The REST API's JSON (see api_json.h): one error mapping, one error object, one catalogue, and
 * request bodies read into typed commands with the API's refusals. */
#include "api_json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

char *api_dumps(const json_t *j) {
  return json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(15));
}

json_t *api_params_json(const grn_world_def *def) {
  json_t *params = json_object();
  for (int i = 0; i < def->scene->param_count; i++) {
    json_object_set_new(params, def->scene->params[i].name, json_real(def->param[i]));
  }
  return params;
}

json_t *api_measurements_json(const grn_scene_info *scene, const grn_measurements *m) {
  json_t *values = json_object();
  for (int k = 0; k < scene->measure_count && k < m->count; k++) {
    json_object_set_new(values, scene->measures[k].name,
                        isfinite(m->value[k]) ? json_real(m->value[k]) : json_null());
  }
  return values;
}

/* How many particles a definition starts with at each quality, its other parameters as they are
 * (a catalogue's defaults, or a session's own amount): counted by the engine that builds them. */
static json_t *quality_particles(const grn_world_def *at, const grn_param_info *p) {
  json_t *a = json_array();
  for (int q = (int)p->min; q <= (int)p->max; q++) {
    grn_world_def def = *at;
    grn_error e;
    if (grn_world_def_set(&def, p->name, q, &e) == GRN_OK) {
      json_array_append_new(a, json_integer(grn_world_def_grains(&def)));
    }
  }
  return a;
}

/* The scene's quality parameter (a grain count chosen by its words), or NULL. */
static const grn_param_info *quality_param(const grn_scene_info *sc) {
  for (int k = 0; k < sc->param_count; k++) {
    if (strcmp(sc->params[k].name, "quality") == 0) {
      return &sc->params[k];
    }
  }
  return NULL;
}

json_t *api_session_json(const api_session_view *v) {
  json_t *meas = api_measurements_json(v->def.scene, &v->meas);
  json_object_set_new(meas, "state", json_string(grn_state_name(v->meas.state)));
  json_t *j = json_pack(
      "{s:s, s:s, s:s, s:s, s:b, s:o, s:I, s:s, s:f, s:f, s:f, s:i, s:I, s:I, s:o}", "id", v->id,
      "join_code", v->join_code, "scene", v->def.scene->name, "label", v->label, "private",
      v->private_, "params", api_params_json(&v->def), "seed", (json_int_t)v->def.seed, "state",
      v->state, "t", v->t, "rt_factor", v->rt_factor, "speed", v->speed, "viewers", v->viewers,
      "run_id", (json_int_t)v->run_id, "steps", (json_int_t)v->steps, "measurements", meas);
  if (strcmp(v->state, "failed") == 0) {
    json_object_set_new(j, "reason", json_string(v->reason));
  }
  /* seconds of simulated time the grains may still settle, at most (no experiment starts before:
   * 409 settling); 0 once they rest */
  json_object_set_new(j, "settling_left", json_real(v->settle_left));
  /* while another session settles the same grains this one does not step: its countdown stands
   * still until it starts from their state (issue 33) */
  json_object_set_new(j, "settle_wait", json_boolean(v->settle_wait));
  if (v->script) { /* a replay or fork still playing */
    json_object_set_new(j, "script",
                        json_pack("{s:s, s:I, s:I}", "kind", v->script, "run",
                                  (json_int_t)v->script_run, "end_steps",
                                  (json_int_t)v->script_end_steps));
  }
  if (v->in_class) { /* the session page shows its class, group and lock */
    json_object_set_new(j, "class",
                        json_pack("{s:s, s:s, s:b}", "id", v->class_id, "group", v->group, "locked",
                                  v->class_locked));
  }
  /* what each quality would start with at this session's other settings (its amount): the words
   * its page offers are then true of this session, not of the catalogue's defaults */
  const grn_param_info *quality = quality_param(v->def.scene);
  if (quality) {
    json_object_set_new(j, "quality_particles", quality_particles(&v->def, quality));
  }
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)v->digest);
  /* of the state at `steps`; taken when the session stops changing (paused, ended) */
  json_object_set_new(j, "digest", v->digest_known ? json_string(hex) : json_null());
  return j;
}

/* The daemon's own actions; test builds add commands that break a worker's limits on purpose. */
static const grn_action_arg step_args[] = {
    {"n", "steps", 1.0, 14400.0, true, false, "steps to take while paused (a whole number)"}};
static const grn_action_info own_actions[] = {
    {"pause", GRN_ACTION_COUNT, 0, NULL, false, "stop the clock; viewers keep the last frame"},
    {"resume", GRN_ACTION_COUNT, 0, NULL, false, "start the clock again"},
    {"step", GRN_ACTION_COUNT, 1, step_args, false, "advance a paused session by n steps"},
    {"finish", GRN_ACTION_COUNT, 0, NULL, false, "record the run as finished and end the session"},
    {"cancel", GRN_ACTION_COUNT, 0, NULL, false, "stop a step in progress after its current call"},
#ifdef GRAINLAB_TEST_COMMANDS
    {"test_hog", GRN_ACTION_COUNT, 0, NULL, false, ""},
    {"test_syscall", GRN_ACTION_COUNT, 0, NULL, false, ""},
    {"test_hang", GRN_ACTION_COUNT, 0, NULL, false, ""},
#endif
};
enum { OWN_LISTED = 5 }; /* the test commands are not part of the catalogue */

const grn_action_info *api_session_actions(int *count) {
  *count = OWN_LISTED;
  return own_actions;
}

static json_t *action_info_json(const grn_action_info *info, bool session) {
  json_t *args = json_array();
  for (int k = 0; k < info->arg_count; k++) {
    const grn_action_arg *g = &info->args[k];
    json_array_append_new(args, json_pack("{s:s, s:s, s:f, s:f, s:b, s:s, s:s}", "name", g->name,
                                          "unit", g->unit, "min", g->min, "max", g->max, "required",
                                          g->required, "type", g->boolean ? "boolean" : "number",
                                          "description", g->description));
  }
  return json_pack("{s:s, s:s, s:b, s:o}", "name", info->name, "description", info->description,
                   "session", session, "args", args);
}

static json_t *plots_json(const grn_scene_info *sc) {
  json_t *plots = json_array();
  for (int p = 0; p < sc->plot_count; p++) {
    json_t *series = json_array();
    for (int i = 0; i < sc->plots[p].series_count; i++) {
      const grn_plot_series *ps = &sc->plots[p].series[i];
      json_array_append_new(
          series, json_pack("{s:s, s:s, s:b}", "key", sc->measures[ps->measure].name, "axis",
                            ps->right ? "right" : "left", "reference", ps->reference));
    }
    json_array_append_new(plots,
                          json_pack("{s:s, s:o}", "title", sc->plots[p].title, "series", series));
  }
  return plots;
}

static bool listed(const json_t *infos, const char *name) {
  size_t i;
  const json_t *v;
  json_array_foreach(infos, i, v) {
    if (strcmp(json_string_value(json_object_get(v, "name")), name) == 0) {
      return true;
    }
  }
  return false;
}

json_t *api_scenes_json(void) {
  json_t *a = json_array();
  for (int i = 0; i < grn_scene_count(); i++) {
    const grn_scene_info *sc = grn_scene_at(i);
    json_t *params = json_array(), *actions = json_array(), *meas = json_array();
    for (int k = 0; k < sc->param_count; k++) {
      const grn_param_info *p = &sc->params[k];
      json_t *pj = json_pack("{s:s, s:s, s:f, s:f, s:f, s:b, s:b, s:s}", "name", p->name, "unit",
                             p->unit, "min", p->min, "max", p->max, "default", p->def, "integer",
                             p->integer, "restart", p->restart, "description", p->description);
      grn_world_def def;
      grn_error e;
      if (p == quality_param(sc) && grn_world_def_default(&def, sc->name, &e) == GRN_OK) {
        json_object_set_new(pj, "particles", quality_particles(&def, p));
      }
      json_array_append_new(params, pj);
    }
    for (int k = 0; k < sc->action_count; k++) {
      json_array_append_new(actions, json_string(sc->actions[k]));
    }
    /* the scene's own measurements; every sample also carries its state, which is no measurement */
    for (int k = 0; k < sc->measure_count; k++) {
      json_array_append_new(meas, json_string(sc->measures[k].name));
    }
    const int every = grn_scene_sample_steps(sc);
    json_array_append_new(
        a, json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:i, s:f}", "name", sc->name, "model",
                     grn_model_name(sc->model), "description", sc->description, "params", params,
                     "actions", actions, "measurements", meas, "plots", plots_json(sc),
                     "sample_steps", every, "sample_seconds", every * GRN_STEP_SECONDS));
  }
  json_t *actions = json_array(), *measures = json_array();
  for (int k = 0; k < GRN_ACTION_COUNT; k++) {
    json_array_append_new(actions, action_info_json(grn_action_info_of((grn_action_kind)k), false));
  }
  for (int k = 0; k < OWN_LISTED; k++) {
    json_array_append_new(actions, action_info_json(&own_actions[k], true));
  }
  /* every scene's measurements, each name once (a name means the same in every scene) */
  for (int i = 0; i < grn_scene_count(); i++) {
    const grn_scene_info *sc = grn_scene_at(i);
    for (int k = 0; k < sc->measure_count; k++) {
      const grn_measure_info *m = &sc->measures[k];
      if (!listed(measures, m->name)) {
        json_array_append_new(measures, json_pack("{s:s, s:s, s:s, s:b, s:b}", "name", m->name,
                                                  "unit", m->unit, "label", m->label, "window",
                                                  m->window, "count", m->count));
      }
    }
  }
  json_t *states = json_array();
  for (int k = 0; *grn_state_name((grn_state)k); k++) {
    json_array_append_new(states, json_string(grn_state_name((grn_state)k)));
  }
  json_t *models = json_array();
  for (int k = 0; grn_model_info_of((grn_model)k); k++) {
    const grn_model_info *m = grn_model_info_of((grn_model)k);
    json_array_append_new(models, json_pack("{s:s, s:s, s:b, s:b}", "name", m->name, "particles",
                                            m->particles, "settles", m->settles, "si", m->si));
  }
  /* the engine's version and state version: a stored run of another state version is not replayed
   * (its run's state_version) */
  json_t *engine = json_pack("{s:s, s:i}", "version", GRN_ENGINE_VERSION, "state_version",
                             (int)GRN_ENGINE_STATE_VERSION);
  return json_pack("{s:o, s:o, s:o, s:o, s:o, s:f, s:o}", "scenes", a, "models", models, "actions",
                   actions, "measurements", measures, "states", states, "step_seconds",
                   GRN_STEP_SECONDS, "engine", engine);
}

int api_read_action(const json_t *body, api_action *out, api_error *err) {
  const json_t *type = json_object_get(body, "type");
  if (!json_is_string(type)) {
    api_fail(err, API_E_MISSING_FIELD, "type", "an action needs a \"type\" string");
    return -1;
  }
  const char *name = json_string_value(type);
  api_action p = {grn_action_find(name), API_ACT_ENGINE, {0}};
  for (size_t i = 0; !p.info && i < sizeof own_actions / sizeof own_actions[0]; i++) {
    if (strcmp(own_actions[i].name, name) == 0) {
      p.info = &own_actions[i];
      p.own = i < OWN_LISTED ? (api_own_action)(i + 1) : API_ACT_TEST;
    }
  }
  if (!p.info) {
    api_fail(err, API_E_UNKNOWN_ACTION, "type", "unknown action '%.60s'", name);
    return -1;
  }
  const grn_action_info *info = p.info;
  unsigned given = 0;
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)body, key, v) {
    if (strcmp(key, "type") == 0) {
      continue;
    }
    int k = -1;
    for (int a = 0; a < info->arg_count; a++) {
      k = strcmp(info->args[a].name, key) == 0 ? a : k;
    }
    if (k < 0) {
      api_fail(err, API_E_UNKNOWN_FIELD, key, "action '%s' takes no '%.60s'", info->name, key);
      return -1;
    }
    const bool boolean = info->args[k].boolean;
    if (boolean ? !json_is_boolean(v) : !json_is_number(v)) {
      api_fail(err, API_E_WRONG_TYPE, key, "'%s' must be a %s", key,
               boolean ? "boolean" : "number");
      return -1;
    }
    p.action.args[k] = boolean ? (json_is_true(v) ? 1.0 : 0.0) : json_number_value(v);
    given |= 1u << k;
  }
  /* the given arguments must be the required ones and then a run of optional ones without a gap,
   * all of them where the catalogue says they come together */
  int nargs = 0, required = 0;
  while (nargs < info->arg_count && ((given >> nargs) & 1)) {
    nargs++;
  }
  while (required < info->arg_count && info->args[required].required) {
    required++;
  }
  const bool partial = info->optional_together && nargs > required && nargs < info->arg_count;
  if ((given >> nargs) != 0 || nargs < required || partial) {
    const char *missing = info->args[nargs].name;
    api_fail(err, API_E_MISSING_FIELD, missing, "action '%s' needs '%s'%s", info->name, missing,
             nargs < required ? "" : " (its optional arguments come all together or not at all)");
    return -1;
  }
  p.action.kind = info->kind;
  p.action.nargs = nargs;
  *out = p;
  return 0;
}

json_t *api_action_json(const api_action *a) {
  json_t *j = json_pack("{s:s}", "type", a->info->name);
  for (int k = 0; k < a->action.nargs && k < a->info->arg_count; k++) {
    const grn_action_arg *g = &a->info->args[k];
    const double v = a->action.args[k];
    /* whole numbers as integers, as a client writes them (step n, a spout at 1 m); but not −0,
     * which an integer cannot carry and a replay must get back bit for bit (found by fuzzing) */
    const bool whole = fabs(v) < 9e15 && v == (double)(json_int_t)v && !(v == 0.0 && signbit(v));
    json_t *value = g->boolean ? json_boolean(v != 0.0)
                    : whole    ? json_integer((json_int_t)v)
                               : json_real(v);
    json_object_set_new(j, g->name, value);
  }
  return j;
}

json_t *api_error_object(const char *code, const char *field, const char *message) {
  /* cleaned copies: one byte of invalid UTF-8 would make jansson refuse the whole body */
  char msg[512];
  char fld[128];
  snprintf(msg, sizeof msg, "%s", message);
  snprintf(fld, sizeof fld, "%s", field ? field : "");
  json_t *e = json_pack("{s:s, s:s}", "code", code, "message", api_utf8_clean(msg));
  if (e && *fld) {
    json_object_set_new(e, "field", json_string(api_utf8_clean(fld)));
  }
  return e;
}

json_t *api_error_json(const api_error *e) {
  json_t *o = api_error_object(e->code, e->field, e->message);
  if (o && e->seconds_left > 0.0) {
    json_object_set_new(o, "seconds_left", json_real(e->seconds_left));
  }
  return json_pack("{s:o}", "error", o);
}

/* Engine status → HTTP, by context; the first row of a context that names the status (or any,
 * GRN_OK standing for "any other") answers. A live change the engine cannot make is the same
 * answer as the daemon's own check of restart-only parameters. */
static const struct {
  api_engine_ctx ctx;
  int grn_code; /* GRN_OK: any other status */
  api_code kind;
} engine_map[] = {
    /* an experiment asked for while the grains settle: it waits for nothing, try again */
    {API_ON_WORKER_SET, GRN_E_SETTLING, API_E_SETTLING},
    {API_ON_WORKER, GRN_E_SETTLING, API_E_SETTLING},
    {API_ON_PARAM, GRN_E_UNKNOWN_PARAM, API_E_UNKNOWN_PARAMETER},
    {API_ON_PARAM, GRN_OK, API_E_OUT_OF_RANGE},
    {API_ON_ACTION, GRN_E_UNSUPPORTED, API_E_UNSUPPORTED_ACTION},
    {API_ON_ACTION, GRN_OK, API_E_OUT_OF_RANGE},
    {API_ON_WORKER_SET, GRN_E_UNSUPPORTED, API_E_NEEDS_RESTART},
    {API_ON_WORKER_SET, GRN_OK, API_E_REJECTED},
    {API_ON_WORKER, GRN_OK, API_E_REJECTED},
};

static api_code engine_kind(api_engine_ctx ctx, int grn_code) {
  for (size_t i = 0; i < sizeof engine_map / sizeof engine_map[0]; i++) {
    if (engine_map[i].ctx == ctx &&
        (engine_map[i].grn_code == grn_code || !engine_map[i].grn_code)) {
      return engine_map[i].kind;
    }
  }
  return API_E_REJECTED; /* a context outside the enum: our own bug, answered as a refusal */
}

void api_engine_status(api_engine_ctx ctx, int grn_code, int *http_status, const char **code) {
  const api_code kind = engine_kind(ctx, grn_code);
  *http_status = api_code_status(kind);
  *code = api_code_word(kind);
}

void api_engine_error(api_error *out, api_engine_ctx ctx, const grn_error *e) {
  api_fail(out, engine_kind(ctx, e->code), e->field, "%s", e->message);
}

json_t *api_parse_object(const char *body, size_t len, api_error *err) {
  json_error_t je;
  json_t *j = json_loadb(body ? body : "", body ? len : 0, JSON_REJECT_DUPLICATES, &je);
  if (!j) {
    api_fail(err, API_E_BAD_JSON, "", "malformed JSON at line %d column %d: %s", je.line, je.column,
             je.text);
    return NULL;
  }
  if (!json_is_object(j)) {
    json_decref(j);
    api_fail(err, API_E_BAD_JSON, "", "the body must be a JSON object");
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
      api_fail(err, API_E_UNKNOWN_FIELD, key, "unknown field '%.60s'", key);
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
    out->at[out->count++] = (api_param){key, json_number_value(v), json_is_integer(v), -1};
  }
}

int api_params_apply(api_params *p, grn_world_def *def, api_params_use use, api_error *err) {
  for (int i = 0; i < p->count; i++) {
    api_param *q = &p->at[i];
    q->index = grn_scene_param_index(def->scene, q->name);
    grn_error e;
    const int rc = q->index < 0 ? grn_world_def_set(def, q->name, q->value, &e)
                                : grn_world_def_set_at(def, q->index, q->value, &e);
    if (rc != GRN_OK) {
      api_engine_error(err, API_ON_PARAM, &e);
      return -1;
    }
    const bool fixed = def->scene->params[q->index].restart;
    if (use == API_PARAMS_LIVE && fixed) {
      api_fail(err, API_E_NEEDS_RESTART, q->name,
               "parameter '%s' is fixed when the scene starts: restart it (POST "
               "/api/sessions/{id}/scene) to change it",
               q->name);
      return -1;
    }
    if (use == API_PARAMS_FORK && fixed) {
      api_fail(err, API_E_NEEDS_RESTART, q->name,
               "a fork goes on from the run's end: '%s' is fixed when the scene starts", q->name);
      return -1;
    }
  }
  if (p->not_number) {
    if (use == API_PARAMS_DEFINE) {
      api_fail(err, API_E_WRONG_TYPE, p->not_number, "parameter '%.60s' must be a number",
               p->not_number);
    } else {
      api_fail(err, API_E_WRONG_TYPE, p->not_number, "parameter '%s' must be a number",
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
    api_fail(err, scene ? API_E_WRONG_TYPE : API_E_MISSING_FIELD, "scene",
             "\"scene\" must be a string naming a scene");
    return -1;
  }
  grn_error e;
  if (grn_world_def_default(d, json_string_value(scene), &e) != GRN_OK) {
    api_fail(err, API_E_UNKNOWN_SCENE, "scene", "unknown scene '%.60s'", json_string_value(scene));
    return -1;
  }
  if (params && !json_is_object(params)) {
    api_fail(err, API_E_WRONG_TYPE, "params", "\"params\" must be an object");
    return -1;
  }
  api_params p;
  api_params_read(params, &p);
  if (api_params_apply(&p, d, API_PARAMS_DEFINE, err) != 0) {
    return -1;
  }
  if (seed) {
    if (!json_is_integer(seed)) {
      api_fail(err, API_E_WRONG_TYPE, "seed", "\"seed\" must be an integer");
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
    api_fail(err, API_E_WRONG_TYPE, "label", "\"label\" must be a string of 63 bytes or fewer");
    return -1;
  }
  if (priv && !json_is_boolean(priv)) {
    api_fail(err, API_E_WRONG_TYPE, "private", "\"private\" must be true or false");
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
    api_fail(err, API_E_WRONG_TYPE, "speed", "\"speed\" must be a number");
    return -1;
  }
  if (json_object_get(body, "label")) {
    api_fail(err, API_E_READ_ONLY, "label", "a session's label is set when it is created");
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
    api_fail(err, API_E_WRONG_TYPE, "params", "\"params\" must be an object");
    return -1;
  }
  out->params = params;
  return 0;
}

int api_read_client_message(const char *text, size_t len, api_client_message *out, api_error *err) {
  memset(out, 0, sizeof *out);
  json_error_t jerr;
  json_t *m = json_loadb(text ? text : "", text ? len : 0, JSON_REJECT_DUPLICATES, &jerr);
  if (!m || !json_is_object(m) || !json_is_string(json_object_get(m, "type"))) {
    json_decref(m);
    api_fail(err, API_E_BAD_MESSAGE, "type", "expected a JSON object with a \"type\" string");
    return -1;
  }
  const char *type = json_string_value(json_object_get(m, "type"));
  int rc = 0;
  if (strcmp(type, "auth") == 0) {
    static const char *const keys[] = {"type", "token", NULL};
    out->kind = API_MSG_AUTH;
    const json_t *token = json_object_get(m, "token");
    if (api_only_keys(m, keys, err) != 0) {
      snprintf(err->message, sizeof err->message, "auth takes only \"token\"");
      rc = -1;
    } else if (json_is_string(token) && json_string_length(token) <= API_TOKEN_MAX) {
      out->has_token = true;
      memcpy(out->token, json_string_value(token), json_string_length(token) + 1);
    }
  } else if (strcmp(type, "action") == 0) {
    static const char *const keys[] = {"type", "action", NULL};
    out->kind = API_MSG_ACTION;
    const json_t *action = json_object_get(m, "action");
    if (api_only_keys(m, keys, err) != 0) {
      snprintf(err->message, sizeof err->message, "action takes only \"action\"");
      rc = -1;
    } else if (!json_is_object(action)) {
      api_fail(err, API_E_BAD_MESSAGE, "action", "\"action\" must be an object");
      rc = -1;
    } else {
      rc = api_read_action(action, &out->action, err);
    }
  } else if (strcmp(type, "rate") == 0) {
    static const char *const keys[] = {"type", "fps", NULL};
    out->kind = API_MSG_RATE;
    const json_t *fps = json_object_get(m, "fps");
    if (api_only_keys(m, keys, err) != 0) {
      snprintf(err->message, sizeof err->message, "rate takes only \"fps\"");
      rc = -1;
    } else if (!json_is_integer(fps) || json_integer_value(fps) < API_RATE_MIN ||
               json_integer_value(fps) > API_RATE_MAX) {
      /* 2.5 or "5" is refused rather than rounded: nothing is clamped */
      api_fail(err, API_E_BAD_RATE, "fps", "\"fps\" must be an integer from %d to %d", API_RATE_MIN,
               API_RATE_MAX);
      rc = -1;
    } else {
      out->fps = (int)json_integer_value(fps);
    }
  } else {
    out->kind = API_MSG_UNKNOWN;
    api_fail(err, API_E_UNKNOWN_TYPE, "type", "known types: auth, action, rate");
    rc = -1;
  }
  json_decref(m);
  return rc;
}
