/* Scene validation against published laws and known behaviour of sand (issue 3): the angle of
 * repose and how it moves with friction and wetness, silo discharge against Beverloo's law and
 * jamming below three grain diameters, the avalanche of a tilted box, the runout of a collapsing
 * column, and the share of strong contacts in a pile. Grain counts are small (1500) to keep the
 * label within minutes; statistical results average several seeds. */
#include "../support/check.h"
#include "../support/measured.h"
#include "grainlab/grainlab.h"

#include <string.h>

/* A world of `scene` at quality 1 with extra KEY, VALUE text pairs. */
static grn_world *scene_world(const char *scene, uint64_t seed, int nkv, const char *const *kv) {
  grn_world_def d;
  grn_error e;
  if (grn_world_def_default(&d, scene, &e) != GRN_OK ||
      grn_world_def_set(&d, "quality", 1, &e) != GRN_OK) {
    printf("definition failed: %s\n", e.message);
    exit(1);
  }
  for (int k = 0; k + 1 < nkv; k += 2) {
    if (grn_world_def_set_text(&d, kv[k], kv[k + 1], &e) != GRN_OK) {
      printf("parameter failed: %s\n", e.message);
      exit(1);
    }
  }
  d.seed = seed;
  d.threads = 1;
  grn_world *w = NULL;
  if (grn_world_create(&d, &w, &e) != GRN_OK) {
    printf("create failed: %s\n", e.message);
    exit(1);
  }
  return w;
}

static void act(grn_world *w, const char *text) {
  grn_action a;
  grn_error e;
  if (grn_action_parse(text, &a, &e) != GRN_OK || grn_world_act(w, &a, &e) != GRN_OK) {
    printf("action %s failed: %s\n", text, e.message);
    exit(1);
  }
}

static grn_measurements sample(grn_world *w) {
  grn_world_step(w, 60);
  grn_measurements m;
  grn_world_measurements(w, &m);
  return m;
}

/* Run until the lattice has packed down (the scene leaves its settling state). */
static void settle(grn_world *w) {
  grn_measurements m;
  do {
    m = sample(w);
  } while (m.state == GRN_STATE_SETTLING);
}

/* ---- pour: angle of repose ------------------------------------------------------------------ */
static double repose(const char *scene, uint64_t seed, int nkv, const char *const *kv) {
  grn_world *w = scene_world(scene, seed, nkv, kv);
  grn_measurements m = sample(w);
  /* 1500 grains at 120/s take 12.5 s; then the pile comes to rest */
  for (int s = 0; s < 4 * 30 && !grn_world_asleep(w); s++) {
    m = sample(w);
  }
  grn_world_destroy(w);
  return measured_in(w, &m, "angle");
}

static double mean_repose(const char *scene, int nkv, const char *const *kv, const char *label) {
  double sum = 0.0;
  printf("  %-28s", label);
  for (uint64_t seed = 1; seed <= 3; seed++) {
    const double a = repose(scene, seed, nkv, kv);
    printf(" %6.2f°", a);
    sum += a;
  }
  printf("  mean %.2f°\n", sum / 3.0);
  return sum / 3.0;
}

static void pour_angles(void) {
  printf("angle of repose, 3 seeds of 1500 grains each:\n");
  const double base = mean_repose("pour", 0, NULL, "pour, defaults (mu 0.5, mur 0.1)");
  const char *mu[] = {"mu", "1.0"}, *mur[] = {"mur", "0.3"};
  const double high_mu = mean_repose("pour", 2, mu, "pour, mu 1.0");
  const double high_mur = mean_repose("pour", 2, mur, "pour, mur 0.3");
  const double wet = mean_repose("wet", 0, NULL, "wet, defaults (coh 150 N)");
  /* dry sand and glass beads stand at 25–35°; the issue asks 20–40° */
  CHECK_RANGE("angle of repose at default friction, °", base, 20.0, 40.0);
  CHECK_RANGE("angle rise from mu 0.5 to 1.0, °", high_mu - base, 0.5, 90.0);
  CHECK_RANGE("angle rise from mur 0.1 to 0.3, °", high_mur - base, 0.5, 90.0);
  CHECK_RANGE("wet sand stands steeper than dry by, °", wet - base, 5.0, 90.0);
}

/* ---- silo: Beverloo and jamming ------------------------------------------------------------- */
/* A silo of the scene's default 3000 grains, its hole set live once the grains have settled (as a
 * student sets it with the slider), then opened: the engine's mean flow of the steady discharge
 * (mean_flow) and Beverloo's prediction for the packing's bulk density, once the fill has fallen
 * below the hole's diameter and the mean is final. */
static void discharge(double hole, uint64_t seed, double *flow, double *law, double *rho_b) {
  const char *kv[] = {"quality", "2"};
  grn_world *w = scene_world("silo", seed, 2, kv);
  settle(w);
  grn_error e;
  if (grn_world_set_param(w, "hole", hole, &e) != GRN_OK) {
    printf("hole %g refused: %s\n", hole, e.message);
    exit(1);
  }
  act(w, "open_hole");
  grn_measurements m = sample(w);
  for (int s = 0; s < 4 * 60 && measured_in(w, &m, "fill") >= hole && m.state == GRN_STATE_FLOWING;
       s++) {
    m = sample(w);
  }
  *flow = measured_in(w, &m, "mean_flow");
  *law = measured_in(w, &m, "beverloo");
  *rho_b = measured_in(w, &m, "bulk_density");
  printf(
      "  hole %.1f m, seed %d: mean flow %.0f kg/s, Beverloo %.0f kg/s (bulk density %.0f kg/m³), "
      "%s at t = %.2f s\n",
      hole, (int)seed, *flow, *law, *rho_b, grn_state_name(m.state), grn_world_time(w));
  grn_world_destroy(w);
}

static void silo_flow(void) {
  /* 4.5, 5.5 and 6.5 grain diameters: no jams (below ~5 the flow arches often: silo_jam) */
  const double holes[3] = {0.9, 1.1, 1.3};
  double last = 0.0;
  printf("silo discharge, 3000 grains, hole set live, mean of 2 seeds:\n");
  for (int k = 0; k < 3; k++) {
    double sum = 0.0, law = 0.0, rho = 0.0;
    for (uint64_t seed = 1; seed <= 2; seed++) {
      double f, l, r;
      discharge(holes[k], seed, &f, &l, &r);
      sum += 0.5 * f;
      law = l;
      rho = r;
    }
    char name[128];
    /* Beverloo's law with C = 0.58, k = 1.5 fits experiments to ~±10 %; issue 30 asks ±15 % of
     * the mean flows a class measures */
    snprintf(name, sizeof name, "mean flow through a %.1f m hole, kg/s (Beverloo ±15 %%)",
             holes[k]);
    CHECK_RANGE(name, sum, 0.85 * law, 1.15 * law);
    snprintf(name, sizeof name, "discharge grows with the hole (%.1f m)", holes[k]);
    CHECK_RANGE(name, sum, last, INFINITY);
    /* a random packing of spheres fills 0.55 (loosest) to 0.74 (crystal) of space; these soft
     * grains pack under their weight near 0.68 */
    snprintf(name, sizeof name, "bulk density / grain density (%.1f m hole)", holes[k]);
    CHECK_RANGE(name, rho / 2650.0, 0.55, 0.74);
    last = sum;
  }
}

static void silo_jam(void) {
  /* 0.5 m = 2.5 grain diameters: arches span holes this small most of the time */
  int jams = 0;
  const char *kv[] = {"hole", "0.5"};
  for (uint64_t seed = 1; seed <= 5; seed++) {
    grn_world *w = scene_world("silo", seed, 2, kv);
    settle(w);
    act(w, "open_hole");
    grn_measurements m;
    for (int s = 0; s < 4 * 20; s++) {
      m = sample(w);
      if (m.state == GRN_STATE_JAMMED || m.state == GRN_STATE_DRAINED) {
        break;
      }
    }
    printf("  hole 0.5 m, seed %d: %s, %.0f kg above the plate\n", (int)seed,
           grn_state_name(m.state), measured_in(w, &m, "mass_above"));
    jams += m.state == GRN_STATE_JAMMED;
    grn_world_destroy(w);
  }
  CHECK_RANGE("seeds of 5 that jam at 2.5 grain diameters", jams, 3, 5);
  /* a wide hole drains the silo: the verdict comes once the flow stops with the hole's middle
   * clear, and what stays lies on the slopes from the rim to the wall (a dead zone at most a third
   * of the fill; issue 30 saw "drained" with a heap still over the hole) */
  const char *wide[] = {"hole", "1.3", "quality", "2"};
  grn_world *w = scene_world("silo", 1, 4, wide);
  settle(w);
  grn_measurements m = sample(w);
  const double full = measured_in(w, &m, "mass_above");
  act(w, "open_hole");
  for (int s = 0; s < 4 * 60 && m.state != GRN_STATE_DRAINED && m.state != GRN_STATE_JAMMED; s++) {
    m = sample(w);
  }
  printf("  hole 1.3 m: %s at t = %.2f s, %.0f of %.0f kg above the plate\n",
         grn_state_name(m.state), grn_world_time(w), measured_in(w, &m, "mass_above"), full);
  CHECK("a 1.3 m hole drains the silo", m.state == GRN_STATE_DRAINED);
  CHECK_RANGE("mass left on the slopes when drained, share of the fill",
              measured_in(w, &m, "mass_above") / full, 0.0, 0.34);
  grn_world_destroy(w);
}

/* ---- tilt: avalanche ------------------------------------------------------------------------ */
static void tilt_avalanche(void) {
  /* the classic protocol: tilt slowly until the surface first gives way, then hold the box
   * still and let the avalanche run out */
  grn_world *w = scene_world("tilt", 1, 0, NULL);
  settle(w);
  const double rate = 1.5, t0 = grn_world_time(w);
  act(w, "tilt:40,1.5");
  double hist[4] = {0};
  int n = 0;
  double before = NAN, after = NAN, held = NAN;
  grn_measurements m;
  for (int s = 0; s < 4 * 50; s++) {
    m = sample(w);
    const double flowing = measured_in(w, &m, "flowing");
    if (isnan(before)) {
      if (flowing > 0.015 && n >= 4) {
        /* 1.5 % of the grains sliding: the steepest surface of the last second stood before */
        before = fmax(fmax(hist[0], hist[1]), fmax(hist[2], hist[3]));
        held = fmin(40.0, rate * (grn_world_time(w) - t0));
        char hold[48];
        snprintf(hold, sizeof hold, "tilt:%.3f", held);
        act(w, hold);
      }
      hist[n++ % 4] = measured_in(w, &m, "angle");
    } else if (flowing < 0.005) {
      after = measured_in(w, &m, "angle");
      break;
    }
  }
  printf("tilt: box held at %.2f°; surface %.2f° before the first avalanche, %.2f° after "
         "(t = %.2f s)\n",
         held, before, after, grn_world_time(w));
  CHECK("an avalanche happened and ended", isfinite(before) && isfinite(after));
  CHECK_RANGE("surface angle drop in the first avalanche, °", before - after, 0.3, 45.0);
  grn_world_destroy(w);
}

/* ---- slump: runout -------------------------------------------------------------------------- */
/* Normalised runout (L∞ − L0)/L0 of a planar column of aspect a = H0/L0 (Lube, Huppert, Sparks &
 * Freundt 2005, Phys. Rev. E 72, 041301): 1.2·a for a ≤ 1.8, 1.9·a^(2/3) for a ≥ 2.8, joined by a
 * power law through both ends; the same definition as slumpRunout() in web_client/js/theory.js. */
static double slump_law(double a) {
  const double lo = 1.8, hi = 2.8;
  if (a <= lo) {
    return 1.2 * a;
  }
  if (a >= hi) {
    return 1.9 * pow(a, 2.0 / 3.0);
  }
  const double y0 = log(1.2 * lo), y1 = log(1.9 * pow(hi, 2.0 / 3.0));
  return exp(y0 + (log(a) - log(lo)) / (log(hi) - log(lo)) * (y1 - y0));
}

/* One collapse at quality 2 (3000 grains, the scene's default): the runout (L∞ − L0)/L0 with L0
 * the front before the pull, as the client plots it (theory.js); the column's aspect H0/L0 it
 * settled to in *aspect_got. */
static double collapse(const char *aspect, uint64_t seed, double *aspect_got) {
  const char *kv[] = {"aspect", aspect, "quality", "2"};
  grn_world *w = scene_world("slump", seed, 4, kv);
  settle(w);
  grn_measurements m = sample(w);
  const double front0 = measured_in(w, &m, "front"), top0 = measured_in(w, &m, "top");
  *aspect_got = top0 / front0;
  act(w, "pull_dam");
  double at8 = NAN;
  for (int s = 1; s <= 40; s++) {
    m = sample(w);
    if (s == 32) {
      at8 = measured_in(w, &m, "front");
    }
  }
  const double runout = measured_in(w, &m, "front") / front0 - 1.0;
  printf("  aspect %s seed %d: column %.2f m long, %.2f m tall (aspect %.2f); front %.2f m; "
         "runout %.3f\n",
         aspect, (int)seed, front0, top0, *aspect_got, measured_in(w, &m, "front"), runout);
  char name[96];
  snprintf(name, sizeof name, "front still from 8 s to 10 s after the pull (aspect %s), m", aspect);
  /* the front is the farthest resting grain's edge: it may creep, but by far less than a grain */
  CHECK_NEAR(name, measured_in(w, &m, "front"), at8, 0.02);
  grn_world_destroy(w);
  return runout;
}

static void slump_runout(void) {
  const char *aspects[] = {"0.5", "1", "1.5", "2", "3", "4"};
  printf("slump runouts (L∞ − L0)/L0, 3000 grains, mean of 2 seeds, against Lube et al. 2005:\n");
  for (size_t k = 0; k < sizeof aspects / sizeof aspects[0]; k++) {
    const double a = atof(aspects[k]), law = slump_law(a);
    double got[2], sum = 0.0;
    for (int s = 0; s < 2; s++) {
      sum += collapse(aspects[k], (uint64_t)s + 1, &got[s]);
    }
    const double runout = 0.5 * sum;
    printf("  aspect %s: runout %.3f, law %.3f, ratio %.3f\n", aspects[k], runout, law,
           runout / law);
    char name[96];
    /* the column settles under its own weight; the scene builds it for the asked aspect */
    snprintf(name, sizeof name, "settled column's aspect H0/L0 (asked %s), ±10 %%", aspects[k]);
    CHECK_RANGE(name, 0.5 * (got[0] + got[1]), 0.9 * a, 1.1 * a);
    /* ±25 %: the tolerance. The law fits experiments with ~1 mm grains in wide channels;
     * here a deposit is a few 0.2 m grains thick and its front moves by a grain between seeds
     * (5–15 % of the runout), and the law's prefactors differ by as much between experiments
     * (Lube 2005; Lajeunesse 2005) */
    snprintf(name, sizeof name, "runout (L∞ − L0)/L0 at aspect %s, law ±25 %%", aspects[k]);
    CHECK_RANGE(name, runout, 0.75 * law, 1.25 * law);
  }
}

/* ---- chains: strong contacts ---------------------------------------------------------------- */
static void strong_fraction(void) {
  grn_world *w = scene_world("chains", 1, 0, NULL);
  for (int s = 0; s < 4 * 30 && !grn_world_asleep(w); s++) {
    sample(w);
  }
  const int n = grn_world_contacts(w, NULL, 0);
  grn_contact *c = malloc(sizeof *c * (size_t)n);
  grn_world_contacts(w, c, n);
  double mean = 0.0;
  for (int k = 0; k < n; k++) {
    mean += c[k].fn;
  }
  mean /= n;
  int strong = 0;
  for (int k = 0; k < n; k++) {
    strong += c[k].fn > mean;
  }
  /* the exponential tail of contact forces puts about a third above the mean (Radjai 1996) */
  printf("chains: %d contacts, %d above the mean force\n", n, strong);
  CHECK_RANGE("fraction of contacts stronger than the mean", (double)strong / n, 0.25, 0.45);
  grn_measurements m;
  grn_world_measurements(w, &m);
  const int chains =
      grn_world_chains(w, measured_in(w, &m, "cx"), measured_in(w, &m, "cz"), 0.0, 1.0, NULL, 0);
  CHECK_RANGE("force chains behind the cut", chains, 10, n);
  /* the fitted line behind the angle, and the height map it came from */
  const double slope = (m.line[3] - m.line[1]) / (m.line[2] - m.line[0]);
  CHECK_NEAR("the fitted line's slope gives the angle, °", -atan(slope) * 180.0 / 3.141592653589793,
             measured_in(w, &m, "angle"), 1e-9);
  grn_height_map hm;
  grn_world_height_map(w, &hm);
  double top = 0.0;
  for (int k = 0; k < hm.nx * hm.nz; k++) {
    top = fmax(top, hm.top[k]);
  }
  CHECK_NEAR("highest cell of the height map = pile top, m", top, measured_in(w, &m, "top"), 1e-12);
  free(c);
  grn_world_destroy(w);
}

int main(int argc, char **argv) {
  /* each part can run alone: test_scenes pour|silo|jam|tilt|slump|chains */
  const char *only = argc > 1 ? argv[1] : "";
  if (!*only || strcmp(only, "pour") == 0) {
    pour_angles();
  }
  if (!*only || strcmp(only, "silo") == 0) {
    silo_flow();
  }
  if (!*only || strcmp(only, "jam") == 0) {
    silo_jam();
  }
  if (!*only || strcmp(only, "tilt") == 0) {
    tilt_avalanche();
  }
  if (!*only || strcmp(only, "slump") == 0) {
    slump_runout();
  }
  if (!*only || strcmp(only, "chains") == 0) {
    strong_fraction();
  }
  CHECK_DONE();
}
