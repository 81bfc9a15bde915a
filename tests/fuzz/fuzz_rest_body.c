/* libFuzzer harness (issue 16): the REST bodies the daemon reads into typed commands
 * (server/api/api_json.c). The first byte picks the reader (its low 3 bits) and the scene a
 * parameter change or a fork applies to (the rest); the remaining bytes are the body:
 *   0 POST /api/sessions           api_read_create
 *   1 PATCH /api/sessions/{id}     api_read_session_patch
 *   2 PATCH .../params             api_params_read + api_params_apply (live)
 *   3 POST .../actions             api_read_action, then grn_action_check for the scene
 *   4 POST .../scene               api_read_scene
 *   5 POST /api/runs/{run}/replay  api_read_from_run
 *   6 POST /api/runs/{run}/fork    api_read_from_run + api_params_apply (fork)
 *   7 any body                     api_parse_object alone
 * Checks that every refusal has a 4xx error body that serializes, that every definition accepted
 * passes the engine's own validation (grn_world_def_validate), and that an action reads back bit
 * for bit from the text the store records of it. Built like fuzz_restore.c; seeds in
 * corpus/rest_body/ (make_corpus). */
#include "api_json.h"
#include "fuzz_check.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void valid(const grn_world_def *d) {
  grn_error ge;
  if (grn_world_def_validate(d, &ge) != GRN_OK) {
    abort(); /* the API took a definition the worker would refuse */
  }
}

static void action_round_trip(const api_action *a) {
  json_t *j = api_action_json(a);
  char *text = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
  json_t *again = text ? json_loads(text, 0, NULL) : NULL;
  api_action b;
  api_error e;
  if (!again || api_read_action(again, &b, &e) != 0 || b.info != a->info || b.own != a->own ||
      b.action.kind != a->action.kind || b.action.nargs != a->action.nargs ||
      memcmp(b.action.args, a->action.args, sizeof(double) * (size_t)a->action.nargs) != 0) {
    abort();
  }
  json_decref(again);
  free(text);
  json_decref(j);
}

/* a parameter change of a session of the scene: the definition it leaves is valid */
static int apply(const json_t *params, const grn_scene_info *scene, api_params_use use,
                 api_error *e) {
  grn_world_def d;
  grn_error ge;
  if (grn_world_def_default(&d, scene->name, &ge) != GRN_OK) {
    abort();
  }
  api_params p;
  api_params_read(params, &p);
  if (p.count < 0 || p.count > API_MAX_PARAMS) {
    abort();
  }
  const int rc = api_params_apply(&p, &d, use, e);
  if (rc == 0) {
    valid(&d);
  }
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  api_error e;
  json_t *body = fuzz_body(data, size, &e);
  if (!body) {
    return 0;
  }
  const int reader = data[0] & 7;
  const grn_scene_info *scene = grn_scene_at((data[0] >> 3) % grn_scene_count());
  int rc = 0;
  switch (reader) {
  case 0: {
    api_create c;
    rc = api_read_create(body, &c, &e);
    if (rc == 0) {
      valid(&c.def);
      if (strlen(c.label) > 63) {
        abort();
      }
    }
    break;
  }
  case 1: {
    api_session_patch p;
    rc = api_read_session_patch(body, &p, &e);
    if (rc == 0 && p.has_speed && !isfinite(p.speed)) {
      abort();
    }
    break;
  }
  case 2:
    rc = apply(body, scene, API_PARAMS_LIVE, &e);
    break;
  case 3: {
    api_action a;
    rc = api_read_action(body, &a, &e);
    if (rc == 0) {
      action_round_trip(&a);
      grn_error ge;
      if (a.own == API_ACT_ENGINE) {
        (void)grn_action_check(scene, &a.action, &ge);
      }
    }
    break;
  }
  case 4: {
    grn_world_def d;
    rc = api_read_scene(body, &d, &e);
    if (rc == 0) {
      valid(&d);
    }
    break;
  }
  case 5:
  case 6: {
    api_from_run r;
    rc = api_read_from_run(body, reader == 6, &r, &e);
    if (rc == 0 && reader == 6) {
      rc = apply(r.params, scene, API_PARAMS_FORK, &e);
    }
    if (rc == 0 && (strlen(r.label) > 63 || (reader == 5 && r.params))) {
      abort();
    }
    break;
  }
  default:
    break;
  }
  fuzz_body_done(body, rc, &e);
  return 0;
}
