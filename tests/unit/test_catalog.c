/* The scene catalogue, parameter validation, strict number parsing and action parsing: every bad
 * input gets its own error code and field, and a failed call changes nothing. */
#include "../support/check.h"
#include "internal.h"

#include <string.h>

static void catalogue(void) {
  CHECK("pour is in the catalogue", grn_scene_find("pour") != NULL);
  CHECK("an unknown scene is not", grn_scene_find("sandcastle") == NULL);
  CHECK("index past the end is NULL", grn_scene_at(grn_scene_count()) == NULL);
  for (int s = 0; s < grn_scene_count(); s++) {
    const grn_scene_info *sc = grn_scene_at(s);
    CHECK("a scene's lists fit a definition and a sample",
          sc->param_count <= GRN_PARAM_MAX && sc->measure_count <= GRN_MEASURE_MAX &&
              sc->measure_count > 0);
    for (int i = 0; i < sc->param_count; i++) {
      const grn_param_info *p = &sc->params[i];
      CHECK("a parameter has a name, a unit and a description",
            p->name && *p->name && strlen(p->name) < 32 && p->unit && p->description);
      CHECK("default lies inside its range", p->def >= p->min && p->def <= p->max);
      CHECK("parameter is found by name (its id is its place)",
            grn_scene_param_index(sc, p->name) == i);
    }
    CHECK("every scene's first measurement is the time",
          strcmp(sc->measures[GRN_MEASURE_T].name, "t") == 0 &&
              strcmp(sc->measures[GRN_MEASURE_T].unit, "s") == 0);
    for (int k = 0; k < sc->measure_count; k++) {
      const grn_measure_info *m = &sc->measures[k];
      char name[128];
      snprintf(name, sizeof name, "%s: measurement %d has a name, a unit and a label", sc->name, k);
      CHECK(name, m->name && *m->name && strlen(m->name) < 32 && m->unit && m->label && *m->label);
      CHECK("measurement is found by name (its id is its place)",
            grn_scene_measure_index(sc, m->name) == k);
      /* the catalogue lists each name once for every client: it must mean one thing */
      for (int t = 0; t < grn_scene_count(); t++) {
        const grn_scene_info *other = grn_scene_at(t);
        const int j = grn_scene_measure_index(other, m->name);
        snprintf(name, sizeof name, "'%s' is the same figure in %s and %s", m->name, sc->name,
                 other->name);
        CHECK(name, j < 0 || (strcmp(other->measures[j].unit, m->unit) == 0 &&
                              strcmp(other->measures[j].label, m->label) == 0 &&
                              other->measures[j].window == m->window));
      }
    }
    if (sc->chains) {
      CHECK("a scene with force chains measures the pile's centre they are cut through",
            grn_scene_measure_index(sc, "cx") > 0 && grn_scene_measure_index(sc, "cz") > 0);
    }
    CHECK("nothing outside a scene's lists is found",
          grn_scene_param_index(sc, "no_such") < 0 && grn_scene_measure_index(sc, "no_such") < 0 &&
              grn_scene_param_index(sc, NULL) < 0 && grn_scene_measure_index(NULL, "t") < 0);
  }
  /* status table: distinct names, every message present */
  CHECK("status name", strcmp(grn_status_name(GRN_E_RANGE), "GRN_E_RANGE") == 0);
  CHECK("status message", strcmp(grn_status_message(GRN_OK), "ok") == 0);
  CHECK("unknown status", strcmp(grn_status_name(-999), "GRN_E_UNKNOWN") == 0);
}

static void definitions(void) {
  grn_world_def d, before;
  grn_error e;
  CHECK("unknown scene is refused",
        grn_world_def_default(&d, "sandcastle", &e) == GRN_E_UNKNOWN_SCENE &&
            strcmp(e.field, "scene") == 0);
  CHECK("pour defaults", grn_world_def_default(&d, "pour", &e) == GRN_OK);
  CHECK("default grains = 3000 (quality 2, 100 %)", grn_world_def_grains(&d) == 3000);
  before = d;
  CHECK("unknown parameter", grn_world_def_set(&d, "viscosity", 1.0, &e) == GRN_E_UNKNOWN_PARAM &&
                                 strcmp(e.field, "viscosity") == 0);
  CHECK("mu above its range", grn_world_def_set(&d, "mu", 1.6, &e) == GRN_E_RANGE &&
                                  strcmp(e.field, "mu") == 0 && strstr(e.message, "mu"));
  CHECK("mu below its range", grn_world_def_set(&d, "mu", -0.01, &e) == GRN_E_RANGE);
  CHECK("NaN is not a number", grn_world_def_set(&d, "mu", NAN, &e) == GRN_E_NOT_NUMBER);
  CHECK("quality must be whole", grn_world_def_set(&d, "quality", 1.5, &e) == GRN_E_RANGE);
  const char *bad[] = {"", "abc", "0x10", " 1", "1 ", "1e400", "nan", "inf", "1,5", "--1"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    char name[64];
    snprintf(name, sizeof name, "'%s' is refused as a number", bad[k]);
    CHECK(name, grn_world_def_set_text(&d, "mu", bad[k], &e) == GRN_E_NOT_NUMBER);
  }
  CHECK("failed calls left the definition unchanged", memcmp(&d, &before, sizeof d) == 0);
  const int mu = grn_scene_param_index(d.scene, "mu");
  CHECK("in-range text value",
        grn_world_def_set_text(&d, "mu", "0.75", &e) == GRN_OK && d.param[mu] == 0.75);
  before = d;
  CHECK("a parameter by its place", grn_world_def_set_at(&d, mu, 0.25, &e) == GRN_OK &&
                                        d.param[mu] == 0.25 &&
                                        grn_world_def_set_at(&d, mu, 0.75, &e) == GRN_OK);
  CHECK("no parameter before the first",
        grn_world_def_set_at(&d, -1, 0.5, &e) == GRN_E_UNKNOWN_PARAM);
  CHECK("no parameter past the last",
        grn_world_def_set_at(&d, d.scene->param_count, 0.5, &e) == GRN_E_UNKNOWN_PARAM &&
            grn_world_def_set_at(&d, GRN_PARAM_MAX, 0.5, &e) == GRN_E_UNKNOWN_PARAM);
  CHECK("by place, out of range",
        grn_world_def_set_at(&d, mu, 1.6, &e) == GRN_E_RANGE && strcmp(e.field, "mu") == 0);
  CHECK("... and the definition is as it was", memcmp(&d, &before, sizeof d) == 0);
  CHECK("boundary value is in range", grn_world_def_set(&d, "mu", 1.5, &e) == GRN_OK);
  grn_world_def_set(&d, "quality", 0, &e);
  grn_world_def_set(&d, "amount", 10, &e);
  CHECK("N = round(750 · 10 %) = 75", grn_world_def_grains(&d) == 75);
  d.threads = 0;
  CHECK("threads 0 is refused",
        grn_world_def_validate(&d, &e) == GRN_E_RANGE && strcmp(e.field, "threads") == 0);
  d.threads = 1;
  d.grains = GRN_MAX_GRAINS + 1;
  CHECK("too many grains is refused", grn_world_def_validate(&d, &e) == GRN_E_RANGE);
}

/* A refusal over the particle count names what sets it: the parameter must be the scene's own
 * and really move the count, or the definition's grains when it gives them. */
static void count_params(void) {
  for (int i = 0; i < grn_scene_count(); i++) {
    const grn_scene_info *sc = grn_scene_at(i);
    grn_world_def d;
    grn_error e;
    grn_world_def_default(&d, sc->name, &e);
    const char *name = grn_world_def_count_param(&d);
    const int k = name ? grn_scene_param_index(sc, name) : -1;
    if (!name) { /* then no parameter moves it */
      const int n = grn_world_def_grains(&d);
      bool fixed = true;
      for (int p = 0; p < sc->param_count; p++) {
        grn_world_def m = d;
        grn_world_def_set_at(&m, p, sc->params[p].min, &e);
        fixed = fixed && grn_world_def_grains(&m) == n;
        grn_world_def_set_at(&m, p, sc->params[p].max, &e);
        fixed = fixed && grn_world_def_grains(&m) == n;
      }
      printf("     %s: a fixed count of %d\n", sc->name, n);
      CHECK("a scene without a count parameter has a fixed count", fixed);
      continue;
    }
    const int before = grn_world_def_grains(&d);
    grn_world_def_set_at(&d, k, sc->params[k].min, &e);
    const int low = grn_world_def_grains(&d);
    printf("     %s: '%s' sets the count (%d at its default, %d at its minimum)\n", sc->name, name,
           before, low);
    CHECK("the count parameter is the scene's and sets the count", k >= 0 && low < before);
    d.grains = 500;
    CHECK("with grains given, grains is what sets it",
          strcmp(grn_world_def_count_param(&d), "grains") == 0);
  }
}

static void actions(void) {
  const grn_scene_info *pour = grn_scene_find("pour");
  grn_action a;
  grn_error e;
  CHECK("spout:1.5,-2", grn_action_parse("spout:1.5,-2", &a, &e) == GRN_OK &&
                            a.kind == GRN_A_SPOUT && a.nargs == 2 && a.args[1] == -2.0 &&
                            grn_action_check(pour, &a, &e) == GRN_OK);
  CHECK("pour:off", grn_action_parse("pour:off", &a, &e) == GRN_OK && a.args[0] == 0.0);
  CHECK("pour:on", grn_action_parse("pour:on", &a, &e) == GRN_OK && a.args[0] == 1.0);
  CHECK("tool_off", grn_action_parse("tool_off", &a, &e) == GRN_OK && a.kind == GRN_A_TOOL_OFF &&
                        grn_action_check(pour, &a, &e) == GRN_OK);
  CHECK("tool:off of stored runs still reads",
        grn_action_parse("tool:off", &a, &e) == GRN_OK && a.kind == GRN_A_TOOL_OFF);
  grn_action_parse("tool:0,1,0,0", &a, &e);
  CHECK("a tool velocity comes whole or not at all",
        grn_action_check(pour, &a, &e) == GRN_E_INVALID && strstr(e.message, "vx") != NULL);
  grn_action_parse("tilt:10,0.01", &a, &e);
  CHECK("tilt rate below its range",
        grn_action_check(grn_scene_find("tilt"), &a, &e) == GRN_E_RANGE &&
            strcmp(e.field, "rate") == 0);
  a = (grn_action){GRN_A_POUR, 1, {0.5}};
  CHECK("pour's switch is 0 or 1", grn_action_check(pour, &a, &e) == GRN_E_RANGE);
  CHECK("tool with velocity", grn_action_parse("tool:0,1,0,0,0,2", &a, &e) == GRN_OK &&
                                  a.nargs == 6 && grn_action_check(pour, &a, &e) == GRN_OK);
  CHECK("reset",
        grn_action_parse("reset", &a, &e) == GRN_OK && grn_action_check(pour, &a, &e) == GRN_OK);
  CHECK("unknown action",
        grn_action_parse("fly", &a, &e) == GRN_E_UNKNOWN_ACTION && strcmp(e.field, "fly") == 0);
  CHECK("non-numeric argument", grn_action_parse("spout:a,b", &a, &e) == GRN_E_NOT_NUMBER);
  CHECK("empty argument list", grn_action_parse("spout:", &a, &e) == GRN_E_INVALID);
  CHECK("empty argument", grn_action_parse("spout:1,,2", &a, &e) == GRN_E_NOT_NUMBER);
  CHECK("pour:maybe", grn_action_parse("pour:maybe", &a, &e) == GRN_E_INVALID);
  grn_action_parse("spout:1", &a, &e);
  CHECK("spout needs two arguments", grn_action_check(pour, &a, &e) == GRN_E_INVALID);
  grn_action_parse("spout:9,0", &a, &e);
  CHECK("spout outside the table range", grn_action_check(pour, &a, &e) == GRN_E_RANGE);
  grn_action_parse("tilt:10", &a, &e);
  CHECK("pour has no tilt", grn_action_check(pour, &a, &e) == GRN_E_UNSUPPORTED);
  grn_action_parse("tool:0,1,0,0,0,99", &a, &e);
  CHECK("tool faster than VMAX", grn_action_check(pour, &a, &e) == GRN_E_RANGE);
}

/* One catalogue: every action's name parses back to its kind, every text form round-trips, and
 * every scene's action list names catalogue entries. */
static void action_catalogue(void) {
  for (int k = 0; k < GRN_ACTION_COUNT; k++) {
    const grn_action_info *info = grn_action_info_of((grn_action_kind)k);
    char name[96];
    snprintf(name, sizeof name, "catalogue entry %d '%s' is found by its name", k,
             info ? info->name : "?");
    CHECK(name, info && info->kind == (grn_action_kind)k && grn_action_find(info->name) == info);
    grn_action a = {(grn_action_kind)k, 0, {0}};
    for (int i = 0; info && i < info->arg_count; i++) {
      a.args[a.nargs++] = info->args[i].boolean ? 1.0 : (info->args[i].min + info->args[i].max) / 3;
    }
    char text[256];
    grn_action back;
    grn_error e;
    const int len = grn_action_format(&a, text, sizeof text);
    snprintf(name, sizeof name, "'%.60s' parses back to the same action", text);
    CHECK(name, len > 0 && grn_action_parse(text, &back, &e) == GRN_OK && back.kind == a.kind &&
                    back.nargs == a.nargs && memcmp(back.args, a.args, sizeof a.args) == 0);
  }
  char small[4];
  const grn_action spout = {GRN_A_SPOUT, 2, {1, 2}};
  CHECK("format into a short buffer",
        grn_action_format(&spout, small, sizeof small) == GRN_E_BUFFER);
  for (int s = 0; s < grn_scene_count(); s++) {
    const grn_scene_info *sc = grn_scene_at(s);
    for (int i = 0; i < sc->action_count; i++) {
      char name[96];
      snprintf(name, sizeof name, "scene '%s' action '%s' is in the catalogue", sc->name,
               sc->actions[i]);
      CHECK(name, grn_action_find(sc->actions[i]) != NULL);
    }
  }
  for (int s = 0; s < grn_scene_count(); s++) {
    const grn_scene_info *sc = grn_scene_at(s);
    bool ok = sc->plot_count > 0;
    for (int p = 0; p < sc->plot_count; p++) {
      ok = ok && sc->plots[p].series_count > 0 && *sc->plots[p].title;
      for (int i = 0; i < sc->plots[p].series_count; i++) {
        const int m = sc->plots[p].series[i].measure;
        ok = ok && m > GRN_MEASURE_T && m < sc->measure_count;
      }
    }
    char name[96];
    snprintf(name, sizeof name, "scene '%s' plots only what it measures", sc->name);
    CHECK(name, ok);
  }
  const grn_model_info *g = grn_model_info_of(GRN_MODEL_GRANULAR),
                       *f = grn_model_info_of(GRN_MODEL_FLUID),
                       *b = grn_model_info_of(GRN_MODEL_GRAVITY);
  CHECK("every model says what its particles are and whether it settles",
        g && f && b && strcmp(g->particles, "grains") == 0 && g->settles &&
            strcmp(f->particles, "water particles") == 0 && !f->settles &&
            strcmp(b->particles, "bodies") == 0 && !b->settles && g->si && f->si && !b->si &&
            strcmp(b->name, grn_model_name(GRN_MODEL_GRAVITY)) == 0);
  CHECK("no model past the last", grn_model_info_of((grn_model)3) == NULL);
}

static void live_changes(void) {
  grn_world_def d;
  grn_error e;
  grn_world_def_default(&d, "pour", &e);
  d.grains = 200;
  grn_world *w;
  CHECK("create", grn_world_create(&d, &w, &e) == GRN_OK);
  grn_world_step(w, 240);
  const uint64_t before = grn_world_digest(w);
  const int k = grn_scene_param_index(d.scene, "mu");
  const double mu = w->param[k];
  CHECK("live mu out of range", grn_world_set_param(w, "mu", 3.0, &e) == GRN_E_RANGE);
  CHECK("live amount needs a restart",
        grn_world_set_param(w, "amount", 50, &e) == GRN_E_UNSUPPORTED);
  grn_action a;
  grn_action_parse("tilt:5", &a, &e);
  CHECK("unsupported action on a live world", grn_world_act(w, &a, &e) == GRN_E_UNSUPPORTED);
  CHECK("failed changes left the world as it was",
        grn_world_digest(w) == before && w->param[k] == mu);
  CHECK("live: no parameter past the last",
        grn_world_set_param_at(w, d.scene->param_count, 0.5, &e) == GRN_E_UNKNOWN_PARAM &&
            grn_world_set_param_at(w, -1, 0.5, &e) == GRN_E_UNKNOWN_PARAM && w->param[k] == mu);
  CHECK("live mu in range", grn_world_set_param(w, "mu", 0.8, &e) == GRN_OK && w->param[k] == 0.8);
  CHECK("live mu by its place",
        grn_world_set_param_at(w, k, 0.6, &e) == GRN_OK && w->param[k] == 0.6);
  grn_world_destroy(w);
}

int main(void) {
  catalogue();
  definitions();
  count_params();
  actions();
  action_catalogue();
  live_changes();
  CHECK_DONE();
}
