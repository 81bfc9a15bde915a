/* The REST API's JSON (server/api/api_json.c) without a server: the engine-error → HTTP mapping
 * for every engine status in every context, the error object, the catalogue, and request bodies
 * into typed commands with every refusal (wrong types, unknown fields, missing fields, numbers
 * out of range or not finite, bad JSON). */
#include "../support/check.h"
#include "api_json.h"
#include "api_ops.h"
#include "api_runs.h"

#include <stdio.h>
#include <string.h>

static char name[512];

/* what each context answered before the mapping was one table (the six inline expressions) */
static void expected(api_engine_ctx ctx, int code, int *status, const char **word) {
  switch (ctx) {
  case API_ON_PARAM:
    *status = code == GRN_E_UNKNOWN_PARAM ? 400 : 422;
    *word = code == GRN_E_UNKNOWN_PARAM ? "unknown_parameter" : "out_of_range";
    return;
  case API_ON_ACTION:
    *status = code == GRN_E_UNSUPPORTED ? 409 : 422;
    *word = code == GRN_E_UNSUPPORTED ? "unsupported_action" : "out_of_range";
    return;
  case API_ON_WORKER_SET:
    *status = code == GRN_E_UNSUPPORTED || code == GRN_E_SETTLING ? 409 : 422;
    *word = code == GRN_E_UNSUPPORTED ? "needs_restart"
            : code == GRN_E_SETTLING  ? "settling"
                                      : "rejected";
    return;
  default:
    *status = code == GRN_E_SETTLING ? 409 : 422;
    *word = code == GRN_E_SETTLING ? "settling" : "rejected";
  }
}

static void check_mapping(void) {
  static const int codes[] = {
#define GRN_X_CODE(n, value, msg) n,
      GRN_STATUS_TABLE(GRN_X_CODE)
#undef GRN_X_CODE
  };
  static const char *const ctx_names[] = {"param", "action", "worker_set", "worker"};
  for (int ctx = 0; ctx < API_ON_COUNT; ctx++) {
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
      if (codes[i] == GRN_OK) {
        continue; /* not a refusal */
      }
      int got_status = 0, want_status = 0;
      const char *got = "", *want = "";
      api_engine_status((api_engine_ctx)ctx, codes[i], &got_status, &got);
      expected((api_engine_ctx)ctx, codes[i], &want_status, &want);
      snprintf(name, sizeof name, "%s in context %s: got %d %s, want %d %s",
               grn_status_name(codes[i]), ctx_names[ctx], got_status, got, want_status, want);
      CHECK(name, got_status == want_status && strcmp(got, want) == 0);
    }
  }
  /* the whole error: the engine's field and message kept */
  grn_error e = {GRN_E_RANGE, "mu", "mu = 9 is outside 0..1.5"};
  api_error out;
  api_engine_error(&out, API_ON_PARAM, &e);
  snprintf(name, sizeof name, "api_engine_error: got %d %s field '%s' message '%s'", out.status,
           out.code, out.field, out.message);
  CHECK(name, out.status == 422 && strcmp(out.code, "out_of_range") == 0 &&
                  strcmp(out.field, "mu") == 0 && strcmp(out.message, e.message) == 0);
}

static void check_dump(const char *what, json_t *j, const char *want) {
  char *got = j ? api_dumps(j) : NULL;
  snprintf(name, sizeof name, "%s: got %s, want %s", what, got ? got : "(null)", want);
  CHECK(name, got && strcmp(got, want) == 0);
  free(got);
  json_decref(j);
}

static void check_error_object(void) {
  check_dump("error object with a field",
             api_error_object("wrong_type", "mu", "mu must be a number"),
             "{\"code\":\"wrong_type\",\"message\":\"mu must be a number\",\"field\":\"mu\"}");
  check_dump("error object, empty field left out", api_error_object("bad_json", "", "m"),
             "{\"code\":\"bad_json\",\"message\":\"m\"}");
  check_dump("error object, NULL field left out", api_error_object("bad_json", NULL, "m"),
             "{\"code\":\"bad_json\",\"message\":\"m\"}");
  api_error e;
  api_fail(&e, API_E_NOT_FOUND, "id", "no session '%s'", "x\"y");
  CHECK("a kind's status comes from the one table", e.status == 404);
  /* the table names every kind: a word and a refusal's status (a kind left out would be NULL) */
  int named = 0;
  for (int k = 0; k < API_E_COUNT; k++) {
    const int st = api_code_status((api_code)k);
    const char *w = api_code_word((api_code)k);
    named += w && *w && st >= 400 && st < 600;
  }
  CHECK("every kind of refusal has a code word and a 4xx or 5xx status", named == API_E_COUNT);
  check_dump("error reply body", api_error_json(&e),
             "{\"error\":{\"code\":\"not_found\",\"message\":\"no session 'x\\\"y'\",\"field\":"
             "\"id\"}}");
  check_dump("numbers: 15 digits, reals stay reals", json_pack("[f, f, i]", 0.1, 0.0, 3),
             "[0.1,0.0,3]");
  /* a refusal that lifts by itself says when (grains settling) */
  const grn_error settling = {GRN_E_SETTLING, "open_hole", "the grains are still settling"};
  api_engine_error(&e, API_ON_WORKER, &settling);
  e.seconds_left = 2.5;
  check_dump("a settling refusal", api_error_json(&e),
             "{\"error\":{\"code\":\"settling\",\"message\":\"the grains are still "
             "settling\",\"field\":\"open_hole\",\"seconds_left\":2.5}}");
  api_engine_error(&e, API_ON_PARAM, &settling);
  check_dump("any other refusal has no seconds_left", api_error_json(&e),
             "{\"error\":{\"code\":\"out_of_range\",\"message\":\"the grains are still "
             "settling\",\"field\":\"open_hole\"}}");
}

static void check_catalogue(void) {
  json_t *j = api_scenes_json();
  json_t *scenes = json_object_get(j, "scenes");
  snprintf(name, sizeof name, "catalogue: got %zu scenes, want %d", json_array_size(scenes),
           grn_scene_count());
  CHECK(name, json_is_array(scenes) && (int)json_array_size(scenes) == grn_scene_count());
  size_t i;
  json_t *sc;
  int bad = 0, state = 0;
  json_array_foreach(scenes, i, sc) {
    const grn_scene_info *info = grn_scene_at((int)i);
    bad +=
        !json_is_string(json_object_get(sc, "name")) ||
        strcmp(json_string_value(json_object_get(sc, "name")), info->name) != 0 ||
        !json_is_string(json_object_get(sc, "model")) ||
        !json_is_string(json_object_get(sc, "description")) ||
        (int)json_array_size(json_object_get(sc, "params")) != info->param_count ||
        (int)json_array_size(json_object_get(sc, "actions")) != info->action_count ||
        !json_is_array(json_object_get(sc, "measurements")) ||
        (int)json_array_size(json_object_get(sc, "plots")) != info->plot_count ||
        json_integer_value(json_object_get(sc, "sample_steps")) != grn_scene_sample_steps(info) ||
        json_object_size(sc) != 9;
    size_t k;
    json_t *m;
    json_array_foreach(json_object_get(sc, "measurements"), k, m) {
      state += strcmp(json_string_value(m), "state") == 0;
    }
  }
  snprintf(name, sizeof name, "catalogue: %d scenes differ from the engine's catalogue", bad);
  CHECK(name, bad == 0);
  snprintf(name, sizeof name, "catalogue: 'state' listed as a measurement %d times, want 0", state);
  CHECK(name, state == 0);
  json_t *mu = json_array_get(json_object_get(json_array_get(scenes, 0), "params"), 0);
  char *text = api_dumps(mu);
  snprintf(name, sizeof name, "the first parameter: %s", text ? text : "(null)");
  CHECK(name,
        text && strncmp(text,
                        "{\"name\":\"mu\",\"unit\":\"\",\"min\":0.0,\"max\":1.5,\"default\":0.5,"
                        "\"integer\":false,\"restart\":false,\"description\":",
                        strlen("{\"name\":\"mu\",\"unit\":\"\",\"min\":0.0,\"max\":1.5,"
                               "\"default\":0.5,\"integer\":false,\"restart\":false,"
                               "\"description\":")) == 0);
  free(text);
  /* every action and measurement a scene names is described once, at the top */
  int undescribed = 0;
  json_array_foreach(scenes, i, sc) {
    size_t k;
    json_t *m;
    json_array_foreach(json_object_get(sc, "actions"), k, m) {
      bool found = false;
      size_t a;
      json_t *desc;
      json_array_foreach(json_object_get(j, "actions"), a, desc) {
        found = found ||
                strcmp(json_string_value(json_object_get(desc, "name")), json_string_value(m)) == 0;
      }
      undescribed += !found;
    }
  }
  snprintf(name, sizeof name, "catalogue: %d scene actions without a description", undescribed);
  CHECK(name, undescribed == 0);
  int own = 0;
  const grn_action_info *mine = api_session_actions(&own);
  snprintf(name, sizeof name, "catalogue: %zu actions described, want the engine's %d + %d own",
           json_array_size(json_object_get(j, "actions")), GRN_ACTION_COUNT, own);
  CHECK(name, (int)json_array_size(json_object_get(j, "actions")) == GRN_ACTION_COUNT + own &&
                  own == 5 && strcmp(mine[0].name, "pause") == 0);
  text = api_dumps(json_array_get(json_object_get(j, "actions"), GRN_A_TILT));
  snprintf(name, sizeof name, "tilt's description: %.300s", text ? text : "(null)");
  CHECK(name, text &&
                  strstr(text, "\"name\":\"angle\",\"unit\":\"deg\",\"min\":-60.0,"
                               "\"max\":60.0,\"required\":true,\"type\":\"number\"") &&
                  strstr(text, "\"name\":\"rate\",\"unit\":\"deg/s\",\"min\":0.1,\"max\":90.0,"
                               "\"required\":false"));
  free(text);
  json_t *flow = NULL, *mv;
  size_t mi;
  json_array_foreach(json_object_get(j, "measurements"), mi, mv) {
    if (strcmp(json_string_value(json_object_get(mv, "name")), "flow") == 0) {
      flow = flow ? json_null() : mv; /* listed once: a second would make it null */
    }
  }
  text = api_dumps(flow);
  snprintf(name, sizeof name, "flow's description: %s", text ? text : "(null)");
  CHECK(name, text && strcmp(text, "{\"name\":\"flow\",\"unit\":\"kg/s\",\"label\":"
                                   "\"discharge rate\",\"window\":true,\"count\":false}") == 0);
  free(text);
  /* the particles are a count: a page shows "2", not "2.00" bodies */
  json_t *alive = NULL;
  json_array_foreach(json_object_get(j, "measurements"), mi, mv) {
    alive = strcmp(json_string_value(json_object_get(mv, "name")), "alive") == 0 ? mv : alive;
  }
  CHECK("the particles are a count, the flow is not",
        json_is_true(json_object_get(alive, "count")) &&
            json_is_false(json_object_get(flow, "count")));
  CHECK("catalogue: every model with its particles",
        json_array_size(json_object_get(j, "models")) == 3 &&
            strcmp(json_string_value(json_object_get(
                       json_array_get(json_object_get(j, "models"), GRN_MODEL_FLUID), "particles")),
                   "water particles") == 0);
  CHECK("catalogue: the step length",
        json_real_value(json_object_get(j, "step_seconds")) == GRN_STEP_SECONDS);
  /* each scene's own sample interval: the dam break's 60 Hz, a pile's 4 Hz */
  const json_t *catalogue = json_object_get(j, "scenes");
  int fast = 0, slow = 0;
  for (size_t k = 0; k < json_array_size(catalogue); k++) {
    const json_t *sc = json_array_get(catalogue, k);
    const char *name = json_string_value(json_object_get(sc, "name"));
    const json_int_t every = json_integer_value(json_object_get(sc, "sample_steps"));
    const double secs = json_real_value(json_object_get(sc, "sample_seconds"));
    fast += strcmp(name, "dambreak") == 0 && every == 4 && secs == 4 * GRN_STEP_SECONDS;
    slow += strcmp(name, "pour") == 0 && every == GRN_SAMPLE_STEPS && secs == 0.25;
  }
  CHECK("catalogue: each scene's sample interval (dambreak every 4 steps, pour every 60)",
        fast == 1 && slow == 1);
  json_decref(j);
}

/* A refusal: `rc` non-zero, and the error's status, code and field as given. */
static void check_refusal(const char *what, int rc, const api_error *e, int status,
                          const char *code, const char *field) {
  const bool ok =
      rc != 0 && e->status == status && strcmp(e->code, code) == 0 && strcmp(e->field, field) == 0;
  static char line[1200];
  snprintf(line, sizeof line, "%s: got rc %d, %d %s field '%s' (%s); want %d %s field '%s'", what,
           rc, rc ? e->status : 0, rc ? e->code : "-", rc ? e->field : "", rc ? e->message : "",
           status, code, field);
  CHECK(line, ok);
}

static json_t *body(const char *text) {
  api_error e;
  json_t *j = api_parse_object(text, strlen(text), &e);
  if (!j) {
    printf("FAIL test body does not parse: %s: %s\n", text, e.message);
    check_failures++;
  }
  return j;
}

static void check_parse_object(void) {
  static const char *const bad[] = {
      "",
      "{",
      "[]",
      "3",
      "\"x\"",
      "null",
      "{\"a\":1,\"a\":2}",
      "{\"a\":NaN}",
      "{\"a\":Infinity}",
      "{\"a\":1e999}",
      "{\"a\":01}",
      "{'a':1}",
      "{\"a\":1}x",
      "{\"a\":\"\\u0000\"}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    api_error e = {0, "", "", "", 0.0};
    json_t *j = api_parse_object(bad[i], strlen(bad[i]), &e);
    snprintf(name, sizeof name, "body '%s' → 400 bad_json", bad[i]);
    check_refusal(name, j != NULL ? 0 : -1, &e, 400, "bad_json", "");
    json_decref(j);
  }
  api_error e;
  json_t *j = api_parse_object(NULL, 0, &e);
  check_refusal("no body at all → 400 bad_json", j ? 0 : -1, &e, 400, "bad_json", "");
  json_decref(j);
  /* the body need not be NUL-terminated: only len bytes are read */
  j = api_parse_object("{\"a\":1}garbage", 7, &e);
  snprintf(name, sizeof name, "a body of exactly len bytes parses: %s", j ? "yes" : e.message);
  CHECK(name, json_is_object(j));
  json_decref(j);
}

static void check_create(void) {
  struct {
    const char *body;
    int status;
    const char *code, *field;
  } bad[] = {
      {"{}", 400, "missing_field", "scene"},
      {"{\"scene\":3}", 400, "wrong_type", "scene"},
      {"{\"scene\":null}", 400, "wrong_type", "scene"},
      {"{\"scene\":\"nope\"}", 400, "unknown_scene", "scene"},
      {"{\"scene\":\"\"}", 400, "unknown_scene", "scene"},
      {"{\"scene\":\"pour\",\"extra\":1}", 400, "unknown_field", "extra"},
      {"{\"extra\":1,\"scene\":\"pour\"}", 400, "unknown_field", "extra"},
      {"{\"scene\":\"pour\",\"params\":[]}", 400, "wrong_type", "params"},
      {"{\"scene\":\"pour\",\"params\":null}", 400, "wrong_type", "params"},
      {"{\"scene\":\"pour\",\"params\":{\"mu\":\"0.3\"}}", 400, "wrong_type", "mu"},
      {"{\"scene\":\"pour\",\"params\":{\"mu\":true}}", 400, "wrong_type", "mu"},
      {"{\"scene\":\"pour\",\"params\":{\"mu\":null}}", 400, "wrong_type", "mu"},
      {"{\"scene\":\"pour\",\"params\":{\"nope\":1}}", 400, "unknown_parameter", "nope"},
      {"{\"scene\":\"pour\",\"params\":{\"mu\":9}}", 422, "out_of_range", "mu"},
      {"{\"scene\":\"pour\",\"params\":{\"mu\":-0.1}}", 422, "out_of_range", "mu"},
      {"{\"scene\":\"pour\",\"params\":{\"mu\":1e308}}", 422, "out_of_range", "mu"},
      /* in the body's order: the first bad key decides, whatever its kind */
      {"{\"scene\":\"pour\",\"params\":{\"mu\":9,\"mur\":\"x\"}}", 422, "out_of_range", "mu"},
      {"{\"scene\":\"pour\",\"params\":{\"mur\":\"x\",\"mu\":9}}", 400, "wrong_type", "mur"},
      {"{\"scene\":\"pour\",\"params\":{\"nope\":1,\"mu\":\"x\"}}", 400, "unknown_parameter",
       "nope"},
      {"{\"scene\":\"pour\",\"seed\":1.5}", 400, "wrong_type", "seed"},
      {"{\"scene\":\"pour\",\"seed\":\"1\"}", 400, "wrong_type", "seed"},
      {"{\"scene\":\"pour\",\"label\":3}", 400, "wrong_type", "label"},
      {"{\"scene\":\"pour\",\"label\":\"0123456789012345678901234567890123456789012345678901234"
       "567890123\"}",
       400, "wrong_type", "label"},
      {"{\"scene\":\"pour\",\"private\":1}", 400, "wrong_type", "private"},
      {"{\"scene\":\"pour\",\"private\":\"true\"}", 400, "wrong_type", "private"},
      /* a scene error comes before a label error */
      {"{\"scene\":\"nope\",\"label\":3}", 400, "unknown_scene", "scene"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_t *j = body(bad[i].body);
    api_create cmd;
    api_error e;
    const int rc = j ? api_read_create(j, &cmd, &e) : 0;
    snprintf(name, sizeof name, "create %s", bad[i].body);
    check_refusal(name, rc, &e, bad[i].status, bad[i].code, bad[i].field);
    json_decref(j);
  }
  json_t *j = body("{\"scene\":\"pour\",\"params\":{\"mu\":0.25,\"amount\":50},\"seed\":-1,"
                   "\"label\":\"012345678901234567890123456789012345678901234567890123456789012\","
                   "\"private\":true}");
  api_create cmd;
  api_error e;
  const int rc = api_read_create(j, &cmd, &e);
  json_decref(j);
  snprintf(
      name, sizeof name,
      "create, all fields: rc %d (%s), scene %s, mu %g, seed %llu, label %zu bytes, private %d", rc,
      rc ? e.message : "", rc == 0 ? cmd.def.scene->name : "-",
      rc == 0 ? cmd.def.param[grn_scene_param_index(cmd.def.scene, "mu")] : -1.0,
      rc == 0 ? (unsigned long long)cmd.def.seed : 0ull, rc == 0 ? strlen(cmd.label) : 0,
      rc == 0 && cmd.private_);
  CHECK(name, rc == 0 && strcmp(cmd.def.scene->name, "pour") == 0 &&
                  cmd.def.param[grn_scene_param_index(cmd.def.scene, "mu")] == 0.25 &&
                  cmd.def.seed == UINT64_MAX && strlen(cmd.label) == 63 && cmd.private_);
  j = body("{\"scene\":\"silo\"}");
  const int rc2 = api_read_create(j, &cmd, &e);
  json_decref(j);
  snprintf(name, sizeof name, "create, scene only: rc %d, label '%s', private %d", rc2,
           rc2 == 0 ? cmd.label : "-", rc2 == 0 && cmd.private_);
  CHECK(name, rc2 == 0 && cmd.label[0] == '\0' && !cmd.private_);
}

static void check_scene_switch(void) {
  struct {
    const char *body;
    int status;
    const char *code, *field;
  } bad[] = {
      {"{\"scene\":\"pour\",\"label\":\"x\"}", 400, "unknown_field", "label"},
      {"{\"scene\":\"pour\",\"private\":true}", 400, "unknown_field", "private"},
      {"{\"params\":{}}", 400, "missing_field", "scene"},
      {"{\"scene\":\"pour\",\"params\":{\"mu\":2}}", 422, "out_of_range", "mu"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_t *j = body(bad[i].body);
    grn_world_def d;
    api_error e;
    const int rc = j ? api_read_scene(j, &d, &e) : 0;
    snprintf(name, sizeof name, "scene switch %s", bad[i].body);
    check_refusal(name, rc, &e, bad[i].status, bad[i].code, bad[i].field);
    json_decref(j);
  }
  /* restart-only parameters are set by a switch */
  json_t *j = body("{\"scene\":\"pour\",\"params\":{\"amount\":50},\"seed\":7}");
  grn_world_def d;
  api_error e;
  const int rc = api_read_scene(j, &d, &e);
  json_decref(j);
  snprintf(name, sizeof name, "scene switch with a restart-only parameter: rc %d (%s), seed %llu",
           rc, rc ? e.message : "", rc == 0 ? (unsigned long long)d.seed : 0ull);
  CHECK(name, rc == 0 && d.seed == 7);
}

static void check_patch(void) {
  struct {
    const char *body;
    int status;
    const char *code, *field;
  } bad[] = {
      {"{\"speed\":\"2\"}", 400, "wrong_type", "speed"},
      {"{\"speed\":null}", 400, "wrong_type", "speed"},
      {"{\"speed\":true}", 400, "wrong_type", "speed"},
      {"{\"label\":\"x\"}", 400, "read_only", "label"},
      {"{\"speed\":2,\"label\":\"x\"}", 400, "read_only", "label"},
      {"{\"speed\":2,\"paused\":true}", 400, "unknown_field", "paused"},
      {"{\"speed\":\"x\",\"label\":\"x\"}", 400, "wrong_type", "speed"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_t *j = body(bad[i].body);
    api_session_patch cmd;
    api_error e;
    const int rc = j ? api_read_session_patch(j, &cmd, &e) : 0;
    snprintf(name, sizeof name, "session patch %s", bad[i].body);
    check_refusal(name, rc, &e, bad[i].status, bad[i].code, bad[i].field);
    json_decref(j);
  }
  json_t *j = body("{\"speed\":2}");
  api_session_patch cmd;
  api_error e;
  int rc = api_read_session_patch(j, &cmd, &e);
  json_decref(j);
  snprintf(name, sizeof name, "patch {speed: 2}: rc %d, has_speed %d, speed %g", rc,
           rc == 0 && cmd.has_speed, rc == 0 ? cmd.speed : -1.0);
  CHECK(name, rc == 0 && cmd.has_speed && cmd.speed == 2.0);
  j = body("{}");
  rc = api_read_session_patch(j, &cmd, &e);
  json_decref(j);
  snprintf(name, sizeof name, "patch {}: rc %d, has_speed %d", rc, rc == 0 && cmd.has_speed);
  CHECK(name, rc == 0 && !cmd.has_speed);
}

static void check_params(void) {
  grn_world_def base;
  grn_world_def_default(&base, "pour", NULL);
  struct {
    const char *body;
    api_params_use use;
    int status;
    const char *code, *field;
  } bad[] = {
      {"{\"mu\":\"x\"}", API_PARAMS_LIVE, 400, "wrong_type", "mu"},
      {"{\"mu\":[1]}", API_PARAMS_LIVE, 400, "wrong_type", "mu"},
      {"{\"mu\":{}}", API_PARAMS_LIVE, 400, "wrong_type", "mu"},
      {"{\"nope\":1}", API_PARAMS_LIVE, 400, "unknown_parameter", "nope"},
      {"{\"\":1}", API_PARAMS_LIVE, 400, "unknown_parameter", ""},
      {"{\"mu\":1.6}", API_PARAMS_LIVE, 422, "out_of_range", "mu"},
      {"{\"amount\":50}", API_PARAMS_LIVE, 409, "needs_restart", "amount"},
      {"{\"amount\":50}", API_PARAMS_FORK, 409, "needs_restart", "amount"},
      {"{\"mu\":0.3,\"amount\":50}", API_PARAMS_LIVE, 409, "needs_restart", "amount"},
      /* the first bad key decides, in the body's order */
      {"{\"amount\":50,\"mu\":\"x\"}", API_PARAMS_LIVE, 409, "needs_restart", "amount"},
      {"{\"mu\":\"x\",\"amount\":50}", API_PARAMS_LIVE, 400, "wrong_type", "mu"},
      {"{\"mu\":0.3,\"mur\":\"x\"}", API_PARAMS_FORK, 400, "wrong_type", "mur"},
      {"{\"amount\":9999}", API_PARAMS_DEFINE, 422, "out_of_range", "amount"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_t *j = body(bad[i].body);
    api_params p;
    api_params_read(j, &p);
    grn_world_def d = base;
    api_error e;
    const int rc = api_params_apply(&p, &d, bad[i].use, &e);
    snprintf(name, sizeof name, "params %s (use %d)", bad[i].body, (int)bad[i].use);
    check_refusal(name, rc, &e, bad[i].status, bad[i].code, bad[i].field);
    json_decref(j);
  }
  /* more names than any scene has: refused, never overrun */
  char big[8192];
  size_t n = (size_t)snprintf(big, sizeof big, "{");
  for (int i = 0; i < 3 * API_MAX_PARAMS; i++) {
    n += (size_t)snprintf(big + n, sizeof big - n, "%s\"p%d\":%d", i ? "," : "", i, i);
  }
  snprintf(big + n, sizeof big - n, "}");
  json_t *j = body(big);
  api_params p;
  api_params_read(j, &p);
  grn_world_def d = base;
  api_error e;
  int rc = api_params_apply(&p, &d, API_PARAMS_LIVE, &e);
  snprintf(name, sizeof name, "%d parameters: read %d, refused with %s on %s", 3 * API_MAX_PARAMS,
           p.count, rc ? e.code : "-", rc ? e.field : "-");
  CHECK(name, p.count == API_MAX_PARAMS && rc != 0 && strcmp(e.code, "unknown_parameter") == 0 &&
                  strcmp(e.field, "p0") == 0);
  json_decref(j);
  /* every scene has fewer parameters than API_MAX_PARAMS (what makes the cut safe) */
  int most = 0;
  for (int s = 0; s < grn_scene_count(); s++) {
    most = grn_scene_at(s)->param_count > most ? grn_scene_at(s)->param_count : most;
  }
  CHECK_RANGE("the most parameters of a scene, below API_MAX_PARAMS", most, 1, API_MAX_PARAMS - 1);
  /* a good change: in order, integers kept as integers, the definition changed */
  j = body("{\"mu\":0.75,\"coh\":100}");
  api_params_read(j, &p);
  d = base;
  rc = api_params_apply(&p, &d, API_PARAMS_LIVE, &e);
  snprintf(name, sizeof name,
           "params {mu: 0.75, coh: 100}: rc %d (%s), count %d, %s %g int %d, %s %g int %d; def mu "
           "%g coh %g",
           rc, rc ? e.message : "", p.count, p.at[0].name, p.at[0].value, (int)p.at[0].integer,
           p.count > 1 ? p.at[1].name : "-", p.count > 1 ? p.at[1].value : -1.0,
           p.count > 1 && p.at[1].integer, d.param[p.at[0].index], d.param[p.at[1].index]);
  CHECK(name, rc == 0 && p.count == 2 && strcmp(p.at[0].name, "mu") == 0 && !p.at[0].integer &&
                  strcmp(p.at[1].name, "coh") == 0 && p.at[1].integer &&
                  d.param[p.at[0].index] == 0.75 && d.param[p.at[1].index] == 100.0);
  json_decref(j);
  /* none given */
  api_params_read(NULL, &p);
  d = base;
  rc = api_params_apply(&p, &d, API_PARAMS_FORK, &e);
  snprintf(name, sizeof name, "no params: rc %d count %d", rc, p.count);
  CHECK(name, rc == 0 && p.count == 0);
  /* each name is looked up once, and its place in the scene's list goes with it */
  j = body("{\"amount\":50,\"mu\":0.5}");
  api_params_read(j, &p);
  d = base;
  rc = api_params_apply(&p, &d, API_PARAMS_DEFINE, &e);
  CHECK("a new scene takes amount (restart-only in pour), each name's place noted",
        rc == 0 && p.at[0].index == grn_scene_param_index(base.scene, "amount") &&
            p.at[1].index == grn_scene_param_index(base.scene, "mu") &&
            base.scene->params[p.at[0].index].restart &&
            !base.scene->params[p.at[1].index].restart && d.param[p.at[0].index] == 50.0 &&
            d.param[p.at[1].index] == 0.5);
  json_decref(j);
}

static void check_from_run(void) {
  struct {
    const char *body;
    bool fork;
    int status;
    const char *code, *field;
  } bad[] = {
      {"{\"params\":{}}", false, 400, "unknown_field", "params"},
      {"{\"seed\":1}", true, 400, "unknown_field", "seed"},
      {"{\"label\":1}", false, 400, "wrong_type", "label"},
      {"{\"private\":0}", true, 400, "wrong_type", "private"},
      {"{\"params\":[]}", true, 400, "wrong_type", "params"},
      {"{\"params\":\"mu=1\"}", true, 400, "wrong_type", "params"},
      {"{\"params\":[],\"label\":1}", true, 400, "wrong_type", "label"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_t *j = body(bad[i].body);
    api_from_run cmd;
    api_error e;
    const int rc = j ? api_read_from_run(j, bad[i].fork, &cmd, &e) : 0;
    snprintf(name, sizeof name, "%s %s", bad[i].fork ? "fork" : "replay", bad[i].body);
    check_refusal(name, rc, &e, bad[i].status, bad[i].code, bad[i].field);
    json_decref(j);
  }
  json_t *j = body("{\"params\":{\"mu\":0.2},\"label\":\"f\",\"private\":true}");
  api_from_run cmd;
  api_error e;
  const int rc = api_read_from_run(j, true, &cmd, &e);
  snprintf(name, sizeof name, "fork, all fields: rc %d, label '%s', private %d, params %s", rc,
           rc == 0 ? cmd.label : "-", rc == 0 && cmd.private_,
           rc == 0 && json_is_object(cmd.params) ? "an object" : "none");
  CHECK(name, rc == 0 && strcmp(cmd.label, "f") == 0 && cmd.private_ && json_is_object(cmd.params));
  json_decref(j);
}

static void check_actions(void) {
  static const struct {
    const char *body;
    const char *code;
    const char *field;
  } bad[] = {
      {"{}", "missing_field", "type"},
      {"{\"type\":7}", "missing_field", "type"},
      {"{\"type\":\"fly\"}", "unknown_action", "type"},
      {"{\"type\":\"tool:off\"}", "unknown_action", "type"},
      {"{\"type\":\"spout\",\"x\":1}", "missing_field", "z"},
      {"{\"type\":\"spout\",\"x\":\"1\",\"z\":0}", "wrong_type", "x"},
      {"{\"type\":\"spout\",\"x\":1,\"z\":0,\"y\":2}", "unknown_field", "y"},
      {"{\"type\":\"pour\",\"on\":1}", "wrong_type", "on"},
      {"{\"type\":\"pour\"}", "missing_field", "on"},
      {"{\"type\":\"tool\",\"x\":0,\"y\":1,\"z\":0,\"vx\":1}", "missing_field", "vy"},
      {"{\"type\":\"tool\",\"x\":0,\"y\":1,\"z\":0,\"vy\":1,\"vz\":1}", "missing_field", "vx"},
      {"{\"type\":\"tilt\",\"rate\":3}", "missing_field", "angle"},
      {"{\"type\":\"step\"}", "missing_field", "n"},
      {"{\"type\":\"step\",\"n\":null}", "wrong_type", "n"},
      {"{\"type\":\"pause\",\"n\":3}", "unknown_field", "n"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_t *j = body(bad[i].body);
    api_action a;
    api_error e;
    snprintf(name, sizeof name, "action %s", bad[i].body);
    check_refusal(name, api_read_action(j, &a, &e), &e, 400, bad[i].code, bad[i].field);
    json_decref(j);
  }
  static const struct {
    const char *body;
    api_own_action own;
    int nargs;
    double last;
  } good[] = {
      {"{\"type\":\"spout\",\"z\":-2,\"x\":1.5}", API_ACT_ENGINE, 2, -2.0},
      {"{\"type\":\"pour\",\"on\":false}", API_ACT_ENGINE, 1, 0.0},
      {"{\"type\":\"tool\",\"x\":0,\"y\":1,\"z\":0}", API_ACT_ENGINE, 3, 0.0},
      {"{\"type\":\"tool\",\"x\":0,\"y\":1,\"z\":0,\"vx\":1,\"vy\":0,\"vz\":2}", API_ACT_ENGINE, 6,
       2.0},
      {"{\"type\":\"tool_off\"}", API_ACT_ENGINE, 0, 0.0},
      {"{\"type\":\"tilt\",\"angle\":30}", API_ACT_ENGINE, 1, 30.0},
      {"{\"type\":\"step\",\"n\":100}", API_ACT_STEP, 1, 100.0},
      {"{\"type\":\"finish\"}", API_ACT_FINISH, 0, 0.0},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    json_t *j = body(good[i].body);
    api_action a;
    api_error e;
    const int rc = api_read_action(j, &a, &e);
    json_t *back = rc == 0 ? api_action_json(&a) : NULL;
    snprintf(name, sizeof name, "action %s: own %d, %d arguments, the last %g, and back as %s",
             good[i].body, rc == 0 ? (int)a.own : -1, rc == 0 ? a.action.nargs : -1,
             rc == 0 && a.action.nargs ? a.action.args[a.action.nargs - 1] : 0.0,
             back ? "the same object" : "nothing");
    CHECK(name, rc == 0 && a.own == good[i].own && a.action.nargs == good[i].nargs &&
                    (a.action.nargs == 0 || a.action.args[a.action.nargs - 1] == good[i].last) &&
                    json_equal(back, j));
    json_decref(back);
    json_decref(j);
  }
}

/* Websocket client messages (schema/stream.md): the kind is known also when the message is
 * refused, so that ws.c can put authentication and control first. */
static void check_client_messages(void) {
  static const struct {
    const char *text;
    api_msg_kind kind;
    const char *code; /* NULL: accepted */
    const char *field;
  } cases[] = {
      {"this is not json", API_MSG_NONE, "bad_message", "type"},
      {"[1,2,3]", API_MSG_NONE, "bad_message", "type"},
      {"{\"type\":5}", API_MSG_NONE, "bad_message", "type"},
      {"{\"type\":\"a\",\"type\":\"b\"}", API_MSG_NONE, "bad_message", "type"},
      {"{\"type\":\"nope\"}", API_MSG_UNKNOWN, "unknown_type", "type"},
      {"{\"type\":\"auth\",\"token\":\"x\",\"extra\":1}", API_MSG_AUTH, "unknown_field", "extra"},
      {"{\"type\":\"auth\",\"token\":5}", API_MSG_AUTH, NULL, ""},
      {"{\"type\":\"auth\",\"token\":\"abc\"}", API_MSG_AUTH, NULL, ""},
      {"{\"type\":\"action\",\"action\":5}", API_MSG_ACTION, "bad_message", "action"},
      {"{\"type\":\"action\",\"action\":{},\"x\":1}", API_MSG_ACTION, "unknown_field", "x"},
      {"{\"type\":\"action\",\"action\":{\"type\":\"spout\",\"x\":\"left\",\"z\":0}}",
       API_MSG_ACTION, "wrong_type", "x"},
      {"{\"type\":\"action\",\"action\":{\"type\":\"spout\",\"x\":-1,\"z\":1}}", API_MSG_ACTION,
       NULL, ""},
      /* a rate: an integer 1..60 and nothing else, never rounded or clamped */
      {"{\"type\":\"rate\",\"fps\":1}", API_MSG_RATE, NULL, ""},
      {"{\"type\":\"rate\",\"fps\":4}", API_MSG_RATE, NULL, ""},
      {"{\"type\":\"rate\",\"fps\":60}", API_MSG_RATE, NULL, ""},
      {"{\"type\":\"rate\",\"fps\":0}", API_MSG_RATE, "bad_rate", "fps"},
      {"{\"type\":\"rate\",\"fps\":61}", API_MSG_RATE, "bad_rate", "fps"},
      {"{\"type\":\"rate\",\"fps\":-5}", API_MSG_RATE, "bad_rate", "fps"},
      {"{\"type\":\"rate\",\"fps\":2.5}", API_MSG_RATE, "bad_rate", "fps"},
      {"{\"type\":\"rate\",\"fps\":5.0}", API_MSG_RATE, "bad_rate", "fps"},
      {"{\"type\":\"rate\",\"fps\":1e1}", API_MSG_RATE, "bad_rate", "fps"},
      {"{\"type\":\"rate\",\"fps\":\"5\"}", API_MSG_RATE, "bad_rate", "fps"},
      {"{\"type\":\"rate\",\"fps\":null}", API_MSG_RATE, "bad_rate", "fps"},
      {"{\"type\":\"rate\",\"fps\":true}", API_MSG_RATE, "bad_rate", "fps"},
      {"{\"type\":\"rate\",\"fps\":[5]}", API_MSG_RATE, "bad_rate", "fps"},
      {"{\"type\":\"rate\",\"fps\":4294967301}", API_MSG_RATE, "bad_rate", "fps"},
      {"{\"type\":\"rate\"}", API_MSG_RATE, "bad_rate", "fps"},
      {"{\"type\":\"rate\",\"fps\":5,\"every\":2}", API_MSG_RATE, "unknown_field", "every"},
      {"{\"type\":\"rate\",\"fps\":5,\"fps\":6}", API_MSG_NONE, "bad_message", "type"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    api_client_message m;
    api_error e;
    memset(&e, 0, sizeof e);
    const int rc = api_read_client_message(cases[i].text, strlen(cases[i].text), &m, &e);
    const bool ok =
        m.kind == cases[i].kind && (cases[i].code ? rc != 0 && strcmp(e.code, cases[i].code) == 0 &&
                                                        strcmp(e.field, cases[i].field) == 0
                                                  : rc == 0);
    snprintf(name, sizeof name,
             "client message %s: got kind %d rc %d %s field '%s', want kind %d %s", cases[i].text,
             (int)m.kind, rc, rc ? e.code : "-", rc ? e.field : "", (int)cases[i].kind,
             cases[i].code ? cases[i].code : "accepted");
    CHECK(name, ok);
  }
  /* a token is kept only whole: a longer string matches no session's token */
  char text[256];
  api_client_message m;
  api_error e;
  snprintf(text, sizeof text, "{\"type\":\"auth\",\"token\":\"%0*d\"}", API_TOKEN_MAX, 0);
  const int rc64 = api_read_client_message(text, strlen(text), &m, &e);
  const bool kept = rc64 == 0 && m.has_token && strlen(m.token) == API_TOKEN_MAX;
  snprintf(text, sizeof text, "{\"type\":\"auth\",\"token\":\"%0*d\"}", API_TOKEN_MAX + 1, 0);
  const int rc65 = api_read_client_message(text, strlen(text), &m, &e);
  snprintf(name, sizeof name,
           "a %d-byte token is kept (%d), a %d-byte one is not (rc %d, has_token %d)",
           API_TOKEN_MAX, kept, API_TOKEN_MAX + 1, rc65, m.has_token);
  CHECK(name, kept && rc65 == 0 && !m.has_token);
  /* len bytes, not up to a NUL: what lies after the message is not read */
  static const char two[] = "{\"type\":\"auth\",\"token\":\"t\"}garbage";
  const int rc_len = api_read_client_message(two, sizeof two - 1 - 7, &m, &e);
  snprintf(name, sizeof name, "only len bytes are read: rc %d, token '%s'", rc_len, m.token);
  CHECK(name, rc_len == 0 && strcmp(m.token, "t") == 0);
  /* a rate's value is kept as given; a refused one leaves none */
  static const char rate[] = "{\"type\":\"rate\",\"fps\":7}";
  const int rc_rate = api_read_client_message(rate, sizeof rate - 1, &m, &e);
  snprintf(name, sizeof name, "rate 7 read: rc %d, fps %d", rc_rate, m.fps);
  CHECK(name, rc_rate == 0 && m.kind == API_MSG_RATE && m.fps == 7);
  static const char no_rate[] = "{\"type\":\"rate\",\"fps\":70}";
  const int rc_no = api_read_client_message(no_rate, sizeof no_rate - 1, &m, &e);
  snprintf(name, sizeof name, "rate 70 refused: rc %d, fps %d, message '%s'", rc_no, m.fps,
           e.message);
  CHECK(name, rc_no != 0 && m.fps == 0 && strstr(e.message, "1 to 60") != NULL);
}

/* The record's documents come from the store's typed runs alike for both backends: PostgreSQL's
 * whole numbers read back as reals, a lone daemon's runs name no node, the last stretch's
 * parameters are params_end, and only another node's open run says whether it is reachable. */
static void check_runs(void) {
  store_run runs[3];
  memset(runs, 0, sizeof runs);
  for (int r = 0; r < 3; r++) {
    for (int k = 0; k < STORE_RUN_FIELD_COUNT; k++) {
      runs[r].f[k].null = true;
    }
    runs[r].f[STORE_RUN_ID] = (store_value){.i = 7 + r};
  }
  char n1[] = "n1", n2[] = "n2", params[] = "{\"mu\":1,\"amount\":100.5}",
       segs[] = "[{\"params\":{\"mu\":0.5}},{\"params\":{\"mu\":0.7}}]", done[] = "finished";
  runs[0].f[STORE_RUN_NODE] = (store_value){.text = n1};
  runs[0].f[STORE_RUN_PARAMS] = (store_value){.text = params};
  runs[0].f[STORE_RUN_SEGMENTS] = (store_value){.text = segs};
  runs[1].f[STORE_RUN_NODE] = (store_value){.text = n2};
  runs[2].f[STORE_RUN_NODE] = (store_value){.text = n1};
  runs[2].f[STORE_RUN_END_REASON] = (store_value){.text = done};
  const store_run_page page = {runs, 3, 40, 3, 6};
  const char *const heard[] = {"n2"};
  const api_reach reach = {"n0", heard, 1};
  json_t *doc = api_runs_json(&page, &reach);
  const json_t *a = json_array_get(json_object_get(doc, "runs"), 0);
  check_dump("PostgreSQL's whole number is a real", json_incref(json_object_get(a, "params")),
             "{\"mu\":1.0,\"amount\":100.5}");
  check_dump("params_end: the last stretch's", json_incref(json_object_get(a, "params_end")),
             "{\"mu\":0.7}");
  check_dump("no results: an empty object", json_incref(json_object_get(a, "results")), "{}");
  CHECK("an open run of a node not heard from is unreachable",
        json_is_false(json_object_get(a, "reachable")));
  CHECK(
      "an open run of a node heard from is reachable",
      json_is_true(json_object_get(json_array_get(json_object_get(doc, "runs"), 1), "reachable")));
  CHECK("an ended run says nothing of reach",
        !json_object_get(json_array_get(json_object_get(doc, "runs"), 2), "reachable"));
  CHECK("the page's figures", json_integer_value(json_object_get(doc, "total")) == 40 &&
                                  json_integer_value(json_object_get(doc, "limit")) == 3 &&
                                  json_integer_value(json_object_get(doc, "offset")) == 6);
  json_decref(doc);
  runs[0].f[STORE_RUN_NODE] = (store_value){.null = true};
  const store_run_page lone = {runs, 1, 1, 1, 0};
  doc = api_runs_json(&lone, NULL);
  a = json_array_get(json_object_get(doc, "runs"), 0);
  CHECK("a lone daemon's run names no node and no reach",
        !json_object_get(a, "node") && !json_object_get(a, "reachable") &&
            json_integer_value(json_object_get(a, "id")) == 7);
  json_decref(doc);
  check_dump("the pages' configuration before the students' address is known",
             api_config_json(8081, NULL, 20000),
             "{\"ws_port\":8081,\"ws_path\":\"/ws/sessions/\",\"ws_class_path\":\"/ws/classes/\","
             "\"students\":null,\"class_groups_max\":200,\"max_grains\":20000}");
}

/* A session's quality words are true of the session: what each quality starts with at its own
 * amount, counted by the engine, where the catalogue's are at the defaults (a session at 200 %
 * offered "light: 750 grains" while 1500 fell). */
static void check_session_quality(void) {
  api_session_view v;
  memset(&v, 0, sizeof v);
  grn_error e;
  const bool made = grn_world_def_default(&v.def, "silo", &e) == GRN_OK &&
                    grn_world_def_set(&v.def, "amount", 200.0, &e) == GRN_OK &&
                    grn_world_def_set(&v.def, "quality", 0.0, &e) == GRN_OK;
  v.state = "running";
  json_t *j = made ? api_session_json(&v) : NULL;
  char *text = j ? api_dumps(json_object_get(j, "quality_particles")) : NULL;
  snprintf(name, sizeof name, "a silo at 200 %%: quality_particles %s, want [1500,3000,6000]",
           text ? text : "(none)");
  CHECK(name, text && strcmp(text, "[1500,3000,6000]") == 0);
  free(text);
  json_decref(j);
  json_t *cat = api_scenes_json();
  const json_t *silo = NULL, *sc;
  size_t k;
  json_array_foreach(json_object_get(cat, "scenes"), k, sc) {
    silo = strcmp(json_string_value(json_object_get(sc, "name")), "silo") == 0 ? sc : silo;
  }
  const json_t *quality = NULL, *p;
  json_array_foreach(json_object_get(silo, "params"), k, p) {
    quality = strcmp(json_string_value(json_object_get(p, "name")), "quality") == 0 ? p : quality;
  }
  text = quality ? api_dumps(json_object_get(quality, "particles")) : NULL;
  snprintf(name, sizeof name, "the catalogue's silo quality at its defaults: %s",
           text ? text : "(none)");
  CHECK(name, text && strcmp(text, "[750,1500,3000]") == 0);
  free(text);
  json_decref(cat);
  /* a scene with no quality parameter says nothing of one */
  memset(&v, 0, sizeof v);
  v.state = "running";
  j = grn_world_def_default(&v.def, "orbit", &e) == GRN_OK ? api_session_json(&v) : NULL;
  CHECK("an orbit has no quality_particles", j && !json_object_get(j, "quality_particles"));
  json_decref(j);
}

int main(void) {
  check_mapping();
  check_error_object();
  check_catalogue();
  check_session_quality();
  check_parse_object();
  check_create();
  check_scene_switch();
  check_patch();
  check_params();
  check_from_run();
  check_actions();
  check_client_messages();
  check_runs();
  CHECK_DONE();
}
