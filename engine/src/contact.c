/* The contact law's constants (spec §1): the damping of the springs, with the normal dashpot
 * calibrated to the restitution the spec fixes under the engine's own integrator. The law itself
 * is pair_force (contact.h), the AVX2 kernel its four-wide twin (contact_avx2.c). */
#include "internal.h"

/* Restitution of a head-on collision of two mean grains under the engine's own integrator
 * (semi-implicit Euler at H, normal force clipped at zero), for a normal dashpot cn, when the
 * contact begins at fraction `phase` of a step. The contact law is linear, so speed drops out. */
static double collision_restitution(double cn, double phase) {
  const double meff = 0.5 * GRN_M0;
  double d = -phase * GRN_H, v = 1.0; /* overlap and closing speed of the relative coordinate */
  for (int s = 0; s < 10000; s++) {
    double f = d > 0.0 ? GRN_KN * d + cn * v : 0.0;
    f = f > 0.0 ? f : 0.0;
    v -= f / meff * GRN_H;
    d += v * GRN_H;
    if (d < 0.0 && v < 0.0) {
      return -v;
    }
  }
  return 0.0;
}

/* The textbook CN = 2·ln(1/e)/hypot(π, ln(1/e))·sqrt(KN·M0/2) gives e = 0.3 only for a dashpot
 * that may pull and a contact resolved by many steps. Here the normal force never pulls (which
 * lifts e) and a collision lasts ≈ 8 steps of H (so e depends on where in a step it begins:
 * 0.25..0.35). Restitution is the physical property the spec fixes, so CN is solved (bisection,
 * deterministic) for a mean e = 0.3 over entry phases with the law as integrated: ≈ 1.29 ×
 * textbook. */
#define CN_PHASES 64
static double calibrated_cn(void) {
  const double le = log(1.0 / 0.3);
  const double textbook = 2.0 * (le / hypot(GRN_PI, le)) * sqrt(GRN_KN * GRN_M0 / 2.0);
  double lo = 0.5 * textbook, hi = 4.0 * textbook;
  for (int it = 0; it < 50; it++) {
    const double mid = 0.5 * (lo + hi);
    double e = 0.0;
    for (int k = 0; k < CN_PHASES; k++) {
      e += collision_restitution(mid, (k + 0.5) / CN_PHASES);
    }
    if (e / CN_PHASES > 0.3) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return 0.5 * (lo + hi);
}

void grn__consts_init(grn_consts *k) {
  k->cn = calibrated_cn();
  k->ct = 0.2 * sqrt(GRN_KT * GRN_M0 / 2.0);
  k->kr = GRN_KT * (GRN_D0 / 4.0) * (GRN_D0 / 4.0);
  k->cr = 0.2 * sqrt(k->kr * 0.4 * GRN_M0 * (GRN_D0 / 2.0) * (GRN_D0 / 2.0));
  k->krf = 4.0 * k->kr;
  k->crf = 2.0 * k->cr;
}
