/* libFuzzer harness (issue 17): class mode's REST bodies (server/api/api_class.c). The first byte
 * picks the reader (its low 2 bits); the rest is the body:
 *   0 POST /api/classes            api_read_class_create (then each scene's start definition)
 *   1 POST /api/join               api_read_join
 *   2 PATCH /api/classes/{id}      api_read_class_patch
 *   3 POST /api/classes/{id}/push  api_read_class_push
 * Checks that every refusal is a 4xx whose body serializes, and that a class accepted has only
 * valid start definitions within its budget, names within their bounds, and an end time ahead.
 * Seeds in corpus/class_body/. */
#include "api_class.h"
#include "fuzz_check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* a fixed clock, two days before the seeds' end time (2027-01-15T08:00:00Z): the same input
 * always reads the same */
static const double now = 1.8e9 - 2 * 86400.0;

static void class_ok(const api_class_create *c) {
  if (c->nscenes < 1 || c->nscenes > grn_scene_count() || c->max_groups < 1 ||
      c->max_groups > API_CLASS_GROUPS_MAX || c->grain_budget < 1 || c->grain_budget > 20000 ||
      c->ends_at <= now || !c->name[0] || strlen(c->name) >= sizeof c->name) {
    abort();
  }
  for (int i = 0; i < c->nscenes; i++) {
    grn_world_def d;
    api_error e;
    grn_error ge;
    if (api_class_definition(c->defaults, c->scenes[i], &d, &e) != 0 ||
        grn_world_def_validate(&d, &ge) != GRN_OK || grn_world_def_grains(&d) > c->grain_budget) {
      abort(); /* a group of this class could not start */
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  api_error e;
  json_t *body = fuzz_body(data, size, &e);
  if (!body) {
    return 0;
  }
  int rc = 0;
  switch (data[0] & 3) {
  case 0: {
    api_class_create c;
    rc = api_read_class_create(body, now, 20000, &c, &e);
    if (rc == 0) {
      class_ok(&c);
      json_decref(c.defaults);
    }
    break;
  }
  case 1: {
    api_join j;
    rc = api_read_join(body, &j, &e);
    if (rc == 0 && (!j.group[0] || strlen(j.code) > 7)) {
      abort();
    }
    break;
  }
  case 2: {
    api_class_patch p;
    rc = api_read_class_patch(body, &p, &e);
    break;
  }
  default: {
    api_class_push p;
    rc = api_read_class_push(body, &p, &e);
    if (rc == 0 && !p.is_action && p.params.count < 1) {
      abort();
    }
    break;
  }
  }
  fuzz_body_done(body, rc, &e);
  return 0;
}
