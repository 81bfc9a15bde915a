/* The Janssen scene (issue 34): the scale under a tube of grains reads less than the poured mass,
 * and saturates as Janssen's law says, M_app = M_sat·(1 − exp(−M/M_sat)) with
 * M_sat = ρ_b·π·R²·R/(2·K·μ_w) (Janssen 1895; Sperl 2006, Granular Matter 8).
 *
 * Each run fills the default tube (2.2 m, 11 grain diameters across) with its default 3000 grains
 * at 60 per second and lets them come to rest: 1.6 saturation masses (measured), where the law's
 * reading is half the poured mass, well off the line of a scale that carried it all. K is fitted
 * here by least squares over every reading of the fill (the engine fits its own from a thinned log;
 * both are compared). Tolerances:
 *  - every reading from a third of M_sat on lies within 10 % of the fitted law: the scale's mean
 *    over 0.25 s still carries the feed's impacts (60 grains/s landing at about 3 m/s, 2 % of the
 *    reading), and near the top the wall's friction is not yet fully mobilised;
 *  - K lies between Rankine's active coefficient (1 − sin φ)/(1 + sin φ) at the steepest angle
 *    these grains stand at, φ = 31.8° (the drum's dynamic angle, README: K_a = 0.31), and 1 (no
 *    more sideways than downwards stress in a filled tube); Jaky's 1 − sin φ at their angle of
 *    repose (28.8°: 0.52) is printed beside it;
 *  - the law says M_sat ∝ 1/μ_w at the same K: from wall friction 0.3 to 0.8 the saturation mass
 *    falls 2.7-fold; within ±30 %, since K itself shifts with how far the wall's friction is
 *    mobilised. */
#include "../support/check.h"
#include "../support/measured.h"
#include "grainlab/grainlab.h"

#include <stdlib.h>
#include <string.h>

enum { MOST = 1200 };

typedef struct fill_run {
  int n;
  double m[MOST], a[MOST]; /* poured and apparent mass of every reading, kg */
  double rho_b, radius, wall_mu, engine_k, engine_law, last_m, last_a;
} fill_run;

static double law(double m, double ms) {
  return ms * -expm1(-m / ms);
}

static double squares(const fill_run *r, double ms) {
  double f = 0.0;
  for (int k = 0; k < r->n; k++) {
    const double e = r->a[k] - law(r->m[k], ms);
    f += e * e;
  }
  return f;
}

/* M_sat by least squares: a scan over log M_sat in steps of 0.1 %, then the best of them. */
static double fit(const fill_run *r) {
  double best = NAN, least = INFINITY;
  for (double lm = log(0.05 * r->last_m); lm < log(100.0 * r->last_m); lm += 0.001) {
    const double f = squares(r, exp(lm));
    if (f < least) {
      least = f;
      best = exp(lm);
    }
  }
  return best;
}

static int fill(double wall_mu, fill_run *r) {
  grn_world_def d;
  grn_error e;
  grn_world *w = NULL;
  memset(r, 0, sizeof *r);
  int rc = grn_world_def_default(&d, "janssen", &e);
  d.seed = 11;
  rc = rc == GRN_OK ? grn_world_def_set(&d, "wall_mu", wall_mu, &e) : rc;
  rc = rc == GRN_OK ? grn_world_def_set(&d, "rate", 60.0, &e) : rc;
  rc = rc == GRN_OK ? grn_world_create(&d, &w, &e) : rc;
  if (rc != GRN_OK) {
    printf("FAIL janssen, wall friction %g: %s\n", wall_mu, e.message);
    return rc;
  }
  r->wall_mu = wall_mu;
  r->radius = 0.5 * d.param[grn_scene_param_index(d.scene, "diameter")];
  /* 3000 grains at 60 per second: 50 s, then 10 s to come to rest */
  for (int s = 0; s < 60 * 4; s++) {
    grn_world_step(w, GRN_SAMPLE_STEPS);
    grn_measurements m;
    grn_world_measurements(w, &m);
    const double poured = measured_in(w, &m, "poured_mass"),
                 apparent = measured_in(w, &m, "apparent_mass");
    if (poured > 0.0 && isfinite(apparent) && r->n < MOST) {
      r->m[r->n] = poured;
      r->a[r->n] = apparent;
      r->n++;
    }
    r->rho_b = measured_in(w, &m, "bulk_density");
    r->engine_k = measured_in(w, &m, "janssen_k");
    r->engine_law = measured_in(w, &m, "janssen_mass");
    r->last_m = poured;
    r->last_a = apparent;
  }
  grn_world_destroy(w);
  return GRN_OK;
}

int main(void) {
  static fill_run mid, low, high;
  if (fill(0.5, &mid) != GRN_OK || fill(0.3, &low) != GRN_OK || fill(0.8, &high) != GRN_OK) {
    CHECK("three fills", false);
    CHECK_DONE();
  }
  const double ms = fit(&mid), pi = 3.14159265358979323846;
  const double k = mid.rho_b * pi * pow(mid.radius, 3.0) / (2.0 * mid.wall_mu * ms);
  const double phi = 31.8 * pi / 180.0, repose = 28.8 * pi / 180.0;
  printf("janssen, wall friction 0.5: %d readings, poured %.0f kg, on the scale %.0f kg; bulk "
         "density %.0f kg/m^3; fitted M_sat %.0f kg, K = %.3f (Jaky 1 - sin 28.8 deg = %.3f; the "
         "engine's fit K = %.3f)\n",
         mid.n, mid.last_m, mid.last_a, mid.rho_b, ms, k, 1.0 - sin(repose), mid.engine_k);
  CHECK_RANGE("the fill's bulk density, kg/m^3 (random packings: 0.55..0.74 of 2650)", mid.rho_b,
              0.55 * 2650.0, 0.74 * 2650.0);
  CHECK_RANGE("the walls carry the rest: the scale reads under 60 % of the poured mass",
              mid.last_a / mid.last_m, 0.0, 0.6);
  CHECK_RANGE("the fill reaches past 1.5 saturation masses", mid.last_m / ms, 1.5, 10.0);
  double worst = 0.0;
  int counted = 0;
  for (int i = 0; i < mid.n; i++) {
    if (mid.m[i] >= ms / 3.0) {
      worst = fmax(worst, fabs(mid.a[i] / law(mid.m[i], ms) - 1.0));
      counted++;
    }
  }
  printf("largest deviation from the fitted law over %d readings past M_sat/3: %.1f %%\n", counted,
         100.0 * worst);
  CHECK_RANGE("every reading past M_sat/3 within 10 % of Janssen's law", worst, 0.0, 0.10);
  CHECK_RANGE("K between Rankine's active coefficient at 31.8 deg and 1", k,
              (1.0 - sin(phi)) / (1.0 + sin(phi)), 1.0);
  CHECK_NEAR("the engine's own fit of K (its log is thinned) agrees within 5 %", mid.engine_k / k,
             1.0, 0.05);
  CHECK_NEAR("and so does its law curve at the end, relative", mid.engine_law / law(mid.last_m, ms),
             1.0, 0.05);
  const double ms_low = fit(&low), ms_high = fit(&high);
  printf("saturation mass: wall friction 0.3 %.0f kg, 0.8 %.0f kg (the law at one K: ratio %.2f)\n",
         ms_low, ms_high, 0.8 / 0.3);
  CHECK_RANGE("M_sat falls as 1/wall friction: 0.3 over 0.8, ±30 % of 2.67", ms_low / ms_high,
              0.7 * 0.8 / 0.3, 1.3 * 0.8 / 0.3);
  CHECK_DONE();
}
