/* Golden digests: every scene run through a short script (actions, live parameter changes) must
 * end on the same bits as recorded (before the issue-15 restructure; at state version 8 for issue
 * 18's rebuild rule), for 1 and 2 threads and across save → restore. A restructure that changes
 * trajectories changes these numbers on purpose only.
 * Run with `--print` to show the digests of the current build in the table's form. */
#include "../support/check.h"
#include "grainlab/grainlab.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One change during a run: at step `at`, an action ("name[:args]") or a parameter ("name=value").
 */
typedef struct golden_event {
  int at;
  const char *what;
} golden_event;

typedef struct golden_case {
  const char *scene;
  const char *params; /* "name=value,..." on top of the scene's defaults */
  int grains;         /* 0: the scene's own count */
  grn_fill fill;
  int steps;
  golden_event events[6];
  uint64_t digest;  /* grn_world_digest at the end */
  uint64_t measure; /* hash of the last measurements (values, present bits, state) */
} golden_case;

/* Recorded at f248a15 (engine state version 3), before the restructure; the digests of the
 * scenes with fast grains (a silo's stream, slump, wet pour, drum) and the silo's measurements
 * recorded again at engine state version 8, whose pair list is made again by each grain's own
 * slack (issue 18); the slump's digest and measurements again for issue 19, whose column is built
 * for the packing it settles to (a shorter, taller column: other trajectories) and whose front is
 * its farthest resting grain's edge instead of the edge of that grain's 0.2 m cell. At state
 * version 9 (issue 30) the scenes that settle (slump, tilt, silo, drum, the packed bed) again: the
 * drag ends when their grains are at rest, grains in a corner share each wall's friction cap, the
 * silo's floor below lies deeper and its measurements add the mean flow and bulk density; their
 * experiments start after settling, which the engine now requires. The pour, the water and the
 * bodies keep their digests; the bodies' energy drift counts from their live change. The janssen
 * scene (issue 34) was recorded when it was added, at state version 10. At state version 11
 * (issue 33) a few grains past their slack are listed again without renumbering the rest, and the
 * list is made again when the grains have settled: the digests of the scenes where either
 * changes the order of grains or sums, and the draining silo's measurements again; the digest
 * hashes grains in storage order. */
static const golden_case cases[] = {
    {"pour",
     "quality=0,amount=20,rate=600",
     0,
     GRN_FILL_SCENE,
     720,
     {{240, "spout:0.4,-0.3"},
      {300, "mu=0.7"},
      {360, "tool:0.3,0.5,0,0,0,1"},
      {420, "tool:off"},
      {480, "spout_x=-0.5"},
      {600, "pour:off"}},
     0xdeac892cf0741fccull,
     0x0d35b5590b589c7bull},
    {"wet",
     "quality=0,amount=15,rate=900",
     0,
     GRN_FILL_SCENE,
     480,
     {{0, NULL}},
     0x4681824d0441b18dull,
     0x6e451d9dd88960b8ull},
    {"chains",
     "quality=0,amount=15,rate=900,mur=0.2",
     0,
     GRN_FILL_SCENE,
     480,
     {{0, NULL}},
     0x49b81579468f9048ull,
     0x09b2d9d0d741b3a0ull},
    {"slump",
     "quality=0,amount=20,aspect=1.5",
     0,
     GRN_FILL_SCENE,
     2400,
     {{1800, "pull_dam:2"}, {2100, "coh=20"}},
     0x22bbd2fc5b357796ull,
     0x10653f6eaa9b2026ull},
    {"tilt",
     "quality=0,amount=20",
     0,
     GRN_FILL_SCENE,
     1400,
     {{840, "tilt:30,15"}, {1000, "tilt_rate=4"}, {1100, "tilt:10"}},
     0x7446f2ba4ee74a46ull,
     0x5beeeff307e9081bull},
    {"silo",
     "quality=0,amount=25,hole=1.2",
     0,
     GRN_FILL_SCENE,
     1560,
     {{960, "open_hole"}, {1260, "plug_hole"}, {1320, "hole=1.0"}, {1360, "open_hole"}},
     0x8030956e69b93c4eull,
     0xaad570d1678338dbull},
    {"silo",
     "quality=0,amount=25",
     0,
     GRN_FILL_SCENE,
     400,
     {{200, "reset"}},
     0x73ad141cbf37274bull,
     0xfc7f7fe91b990e10ull},
    {"pour", "", 600, GRN_FILL_BED, 240, {{0, NULL}}, 0xd9ff3b021eb02e12ull, 0x2d0d02be3c0066a3ull},
    {"dambreak",
     "quality=0,width=0.2",
     0,
     GRN_FILL_SCENE,
     240,
     {{120, "visc=2"}},
     0x8c7b484c3b678332ull,
     0xf177682700ca8400ull},
    {"drop",
     "quality=0",
     0,
     GRN_FILL_SCENE,
     120,
     {{0, NULL}},
     0xa1cc7ae401336aadull,
     0xd18f2277646b9b70ull},
    {"dambreak",
     "",
     500,
     GRN_FILL_BED,
     60,
     {{0, NULL}},
     0x304017482245843dull,
     0x753fd838d68a505dull},
    {"orbit",
     "speed=0.8,eps=0.01",
     0,
     GRN_FILL_SCENE,
     600,
     {{300, "eps=0.05"}},
     0x5231eb4b34ac3bfdull,
     0xf5ba2374002fbf1dull},
    {"softening",
     "",
     0,
     GRN_FILL_SCENE,
     900,
     {{400, "vcap=2"}},
     0xcee8ee04611d9f5dull,
     0x9480de3baba450b0ull},
    {"cluster",
     "bodies=300,theta=0",
     0,
     GRN_FILL_SCENE,
     120,
     {{60, "eps=0.05"}},
     0x7bba81e692dce784ull,
     0x9049a77b672ed58cull},
    {"cluster",
     "bodies=2100,theta=0.6",
     0,
     GRN_FILL_SCENE,
     30,
     {{15, "theta=0.4"}},
     0x64a024e957debb0eull,
     0x0209c8feab2ee119ull},
    /* added with the scene (issue 15): its settle, its first turn and a live speed change */
    {"drum",
     "quality=0,amount=20",
     0,
     GRN_FILL_SCENE,
     1080,
     {{960, "rpm=8"}},
     0x709bf6249a093c34ull,
     0x650c14d7812320daull},
    /* added with the scene (issue 34): its fill, a live change of the wall's friction and of the
     * rate */
    {"janssen",
     "quality=0,amount=40",
     0,
     GRN_FILL_SCENE,
     960,
     {{480, "wall_mu=0.8"}, {720, "rate=120"}},
     0xd1a17cebdb68e5a9ull,
     0xbe64cf3256617c83ull},
};
enum { NCASES = (int)(sizeof cases / sizeof cases[0]) };

static int apply(grn_world *w, const char *what) {
  grn_error e;
  const char *eq = strchr(what, '=');
  if (eq) {
    char name[32];
    snprintf(name, sizeof name, "%.*s", (int)(eq - what), what);
    return grn_world_set_param(w, name, strtod(eq + 1, NULL), &e);
  }
  grn_action a;
  int rc = grn_action_parse(what, &a, &e);
  return rc == GRN_OK ? grn_world_act(w, &a, &e) : rc;
}

static int define(const golden_case *c, int threads, grn_world_def *d) {
  grn_error e;
  int rc = grn_world_def_default(d, c->scene, &e);
  char buf[128];
  snprintf(buf, sizeof buf, "%s", c->params);
  for (char *tok = strtok(buf, ","); tok && rc == GRN_OK; tok = strtok(NULL, ",")) {
    char *eq = strchr(tok, '=');
    *eq = '\0';
    rc = grn_world_def_set_text(d, tok, eq + 1, &e);
  }
  d->grains = c->grains;
  d->fill = c->fill;
  d->threads = threads;
  d->seed = 20261203u;
  if (rc != GRN_OK) {
    printf("FAIL %s: %s\n", c->scene, e.message);
  }
  return rc;
}

/* Step from `from` to `to`, applying the case's events on the way. */
static int run_span(const golden_case *c, grn_world *w, int from, int to) {
  int at = from;
  for (int k = 0; k < 6 && c->events[k].what; k++) {
    const golden_event *ev = &c->events[k];
    if (ev->at < from || ev->at >= to) {
      continue;
    }
    if (ev->at > at && grn_world_step(w, ev->at - at) != GRN_OK) {
      return -1;
    }
    at = ev->at;
    if (apply(w, ev->what) != GRN_OK) {
      printf("FAIL %s: event '%s' refused\n", c->scene, ev->what);
      return -1;
    }
  }
  return to > at ? grn_world_step(w, to - at) : GRN_OK;
}

/* The measurements' hash as recorded: every value in the order of the engine-wide list the
 * engine had then (issue 34 gave each scene its own list), 0 in the slot of one the scene does not
 * report, then the bit set of those it does. Keys added later than virial had no slot where a
 * scene lacks them. A world's measurements are found here by name, so the recorded hashes still
 * hold for trajectories and figures that did not change. */
static const char *const recorded_order[] = {"t",
                                             "angle",
                                             "top",
                                             "cx",
                                             "cz",
                                             "over_max",
                                             "flowing",
                                             "alive",
                                             "front",
                                             "flow",
                                             "mass_above",
                                             "fill",
                                             "beverloo",
                                             "height",
                                             "kinetic",
                                             "potential",
                                             "energy",
                                             "energy_drift",
                                             "angular_momentum",
                                             "virial",
                                             "froude",
                                             "mean_flow",
                                             "bulk_density"};
enum { RECORDED = (int)(sizeof recorded_order / sizeof recorded_order[0]), SLOTTED = 20 };

static uint64_t measure_hash(const grn_world *w) {
  grn_measurements m;
  grn_world_measurements(w, &m);
  const grn_scene_info *sc = grn_world_scene(w);
  uint64_t h = 1469598103934665603ull;
  uint32_t present = 0;
  int found = 0;
  for (int k = 0; k < RECORDED; k++) {
    const int i = grn_scene_measure_index(sc, recorded_order[k]);
    uint64_t bits = 0;
    if (k >= SLOTTED && i < 0) {
      continue; /* a key added after the recording, absent here: the recorded hash had no slot */
    }
    if (i >= 0) {
      memcpy(&bits, &m.value[i], sizeof bits);
      present |= 1u << k;
      found++;
    }
    h = (h ^ bits) * 1099511628211ull;
  }
  if (found != sc->measure_count) {
    /* a scene recorded after issue 34 (janssen): its own list, in its order */
    h = 1469598103934665603ull;
    for (int k = 0; k < sc->measure_count; k++) {
      uint64_t bits;
      memcpy(&bits, &m.value[k], sizeof bits);
      h = (h ^ bits) * 1099511628211ull;
    }
    present = (uint32_t)sc->measure_count;
  }
  h = (h ^ present) * 1099511628211ull;
  return (h ^ (uint64_t)m.state) * 1099511628211ull;
}

/* One run: straight through, or saved at half way and restored into a world with `threads2`. */
static int run_case(const golden_case *c, int threads, int threads2, uint64_t *digest,
                    uint64_t *meas) {
  grn_world_def d;
  grn_world *w = NULL;
  grn_error e;
  if (define(c, threads, &d) != GRN_OK || grn_world_create(&d, &w, &e) != GRN_OK) {
    return -1;
  }
  const int half = threads2 ? c->steps / 2 : c->steps;
  int rc = run_span(c, w, 0, half);
  if (rc == GRN_OK && threads2) {
    const size_t size = grn_world_save_size(w);
    void *buf = malloc(size);
    grn_world_def d2 = d;
    d2.threads = threads2;
    grn_world *w2 = NULL;
    rc = buf ? grn_world_save(w, buf, size, &e) : GRN_E_NOMEM;
    rc = rc == GRN_OK ? grn_world_restore(&d2, buf, size, &w2, &e) : rc;
    free(buf);
    grn_world_destroy(w);
    w = w2;
    rc = rc == GRN_OK ? run_span(c, w, half, c->steps) : rc;
  }
  if (rc == GRN_OK) {
    *digest = grn_world_digest(w);
    *meas = measure_hash(w);
  }
  grn_world_destroy(w);
  return rc;
}

int main(int argc, char **argv) {
  const bool print = argc > 1 && strcmp(argv[1], "--print") == 0;
  for (int i = 0; i < NCASES; i++) {
    const golden_case *c = &cases[i];
    uint64_t d1 = 0, m1 = 0, d2 = 0, m2 = 0, dr = 0, mr = 0;
    const int rc =
        run_case(c, 1, 0, &d1, &m1) | run_case(c, 2, 0, &d2, &m2) | run_case(c, 1, 2, &dr, &mr);
    char name[160];
    snprintf(name, sizeof name, "%s %s (%d steps): digest %016llx measurements %016llx", c->scene,
             c->params, c->steps, (unsigned long long)d1, (unsigned long long)m1);
    if (print) {
      printf("%s\n", name);
      continue;
    }
    CHECK(name, rc == GRN_OK);
    CHECK("  equals the recorded digest", d1 == c->digest);
    CHECK("  equals the recorded measurements", m1 == c->measure);
    CHECK("  2 threads: same digest and measurements", d2 == d1 && m2 == m1);
    CHECK("  saved at half way, restored on 2 threads: same", dr == d1 && mr == m1);
  }
  if (print) {
    return EXIT_SUCCESS;
  }
  CHECK_DONE();
}
