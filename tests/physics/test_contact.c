/* Single- and two-grain experiments against textbook mechanics: restitution, static sinking,
 * the floor's rolling limit on a slope, sliding to rolling, a resting grain's spin, a small
 * grain sliding along a wall, and one rolling or sliding down a rough wall. Tolerances are stated
 * where the numbers come from. */
#include "../support/check.h"
#include "../support/lab.h"

static double vlen(grn_vec3 v) {
  return sqrt(v.x * v.x + v.y * v.y + v.z * v.z);
}

/* Two mean grains meet head-on with no gravity and rebound with the normal restitution 0.3 of
 * spec §1. A collision lasts ≈ 8 steps, so its e depends on where in a step contact begins; CN
 * is solved for a mean of 0.3 over entry phases. Mean over 8 phases: 0.30 ± 0.02; each one:
 * within ± 0.07. The law is linear, so two approach speeds must agree. */
static double collide(double v0, double phase) {
  grn_world *w = lab_new(1);
  const double r = 0.5 * GRN_D0, gap = 2.0 * v0 * GRN_H * (3.0 + phase);
  const int a = lab_add(w, -r - 0.5 * gap, 0.0, 0.0, r, v0, 0.0, 0.0);
  const int b = lab_add(w, r + 0.5 * gap, 0.0, 0.0, r, -v0, 0.0, 0.0);
  const uint32_t ia = w->id[a], ib = w->id[b];
  grn_world_step(w, 240);
  const double rel = w->vel[lab_find(w, ib)].x - w->vel[lab_find(w, ia)].x;
  grn_world_destroy(w);
  return rel / (2.0 * v0);
}

static void restitution(void) {
  const double speeds[2] = {1.0, 0.25};
  for (int s = 0; s < 2; s++) {
    double sum = 0.0, lo = 1.0, hi = 0.0;
    for (int k = 0; k < 8; k++) {
      const double e = collide(speeds[s], (k + 0.5) / 8.0);
      sum += e;
      lo = e < lo ? e : lo;
      hi = e > hi ? e : hi;
    }
    char name[96];
    snprintf(name, sizeof name, "mean restitution, head-on at %.1f m/s", 2.0 * speeds[s]);
    CHECK_NEAR(name, sum / 8.0, 0.30, 0.02);
    snprintf(name, sizeof name, "lowest restitution at %.1f m/s", 2.0 * speeds[s]);
    CHECK_NEAR(name, lo, 0.30, 0.07);
    snprintf(name, sizeof name, "highest restitution at %.1f m/s", 2.0 * speeds[s]);
    CHECK_NEAR(name, hi, 0.30, 0.07);
  }
}

/* A mean grain resting on the floor sinks by its weight over KN (≈ 2.7 mm). ± 5 %. */
static void sink(void) {
  grn_world *w = lab_new(1);
  lab_floor(w, 0.0);
  w->gravity = (grn_vec3){0.0, -GRN_G, 0.0};
  const double r = 0.5 * GRN_D0;
  const int a = lab_add(w, 0.0, r, 0.0, r, 0.0, 0.0, 0.0);
  const uint32_t id = w->id[a];
  grn_world_step(w, 5 * 240);
  const int i = lab_find(w, id);
  const double depth = r - w->pos[i].y, want = GRN_M0 * GRN_G / GRN_KN;
  CHECK_NEAR("sinking of a resting grain, m", depth, want, 0.05 * want);
  grn_world_destroy(w);
}

/* Gravity tilted by θ about z: a sphere on the floor rolls when its weight's torque about the
 * contact, m·g·sinθ·r, beats the rolling limit MUR_FLOOR·r·N = MUR_FLOOR·r·m·g·cosθ, i.e. when
 * tan θ > MUR_FLOOR (sliding needs tan θ > MU_FLOOR = 1, far above). Gravity turns gradually
 * over 2 s, as the tilt scene does: a sudden tilt rings the lightly damped rolling spring past
 * its limit, which is a different experiment. */
static double roll_distance(double tan_theta) {
  grn_world *w = lab_new(1);
  lab_floor(w, 0.0);
  w->gravity = (grn_vec3){0.0, -GRN_G, 0.0};
  const double r = 0.5 * GRN_D0;
  const int a = lab_add(w, 0.0, r - GRN_M0 * GRN_G / GRN_KN, 0.0, r, 0.0, 0.0, 0.0);
  const uint32_t id = w->id[a];
  grn_world_step(w, 240);
  const double x0 = w->pos[lab_find(w, id)].x, th = atan(tan_theta);
  for (int s = 1; s <= 4 * 240; s++) {
    const double ths = s < 480 ? th * s / 480.0 : th;
    w->gravity = (grn_vec3){GRN_G * sin(ths), -GRN_G * cos(ths), 0.0};
    grn_world_step(w, 1);
  }
  const double x = w->pos[lab_find(w, id)].x;
  grn_world_destroy(w);
  return fabs(x - x0);
}

static void rolling_limit(void) {
  const double below = roll_distance(0.9 * GRN_MUR_FLOOR),
               above = roll_distance(1.1 * GRN_MUR_FLOOR);
  /* held: only the springs' give: rolling θ ≤ MUR·r·N/(4·KR) ≈ 0.027 rad, r·θ ≈ 3 mm, plus the
   * tangential spring's m·g·sinθ/KT ≈ 3 mm */
  CHECK_RANGE("tan θ = 0.9·MUR_FLOOR: grain stays put, m", below, 0.0, 0.01);
  /* rolls: (g sinθ − MUR·g cosθ)·5/7 ≈ 0.18 m/s² over 4 s ≈ 1.4 m */
  CHECK_RANGE("tan θ = 1.1·MUR_FLOOR: grain rolls away, m", above, 0.3, 100.0);
}

/* A grain thrown along the floor without spin slides with deceleration MU_FLOOR·g while the
 * friction torque spins it up (solid sphere, I = 2/5 m r²). Without rolling resistance, pure
 * rolling starts at v0·5/7; the floor's rolling resistance MUR_FLOOR·r·N also brakes the spin-up,
 * so rolling starts at v0·(1 − μ/(μ + 5/2·(μ − μr))) = 0.636·v0, and then brings it to rest. */
static void slide_to_roll(double mur_floor) {
  grn_world *w = lab_new(1);
  lab_floor(w, 0.0);
  w->geom.mur_floor = mur_floor;
  w->gravity = (grn_vec3){0.0, -GRN_G, 0.0};
  const double r = 0.5 * GRN_D0, v0 = 3.0, mu = GRN_MU_FLOOR;
  const int a = lab_add(w, 0.0, r - GRN_M0 * GRN_G / GRN_KN, 0.0, r, 0.0, 0.0, 0.0);
  const uint32_t id = w->id[a];
  grn_world_step(w, 240); /* settle onto the floor first */
  int i = lab_find(w, id);
  w->vel[i].x = v0;
  /* sliding lasts ≈ 0.11 s: measure over steps 5..15, clear of the floor spring's start-up */
  grn_world_step(w, 5);
  i = lab_find(w, id);
  const double va = w->vel[i].x;
  grn_world_step(w, 10);
  i = lab_find(w, id);
  const double vb = w->vel[i].x;
  char name[96];
  snprintf(name, sizeof name, "sliding deceleration (μr = %.1f), m/s²", mur_floor);
  CHECK_NEAR(name, (va - vb) / (10 * GRN_H), mu * GRN_G, 0.05 * mu * GRN_G);
  double v_roll = NAN;
  for (int s = 0; s < 240 && isnan(v_roll); s++) {
    grn_world_step(w, 1);
    i = lab_find(w, id);
    const double slip = w->vel[i].x + r * w->spin[i].z;
    if (fabs(slip) < 0.01 * v0) {
      v_roll = w->vel[i].x;
    }
  }
  /* ± 0.02·v0: the slip is caught within one step of 0.04 m/s of speed change */
  snprintf(name, sizeof name, "speed when rolling starts / v0 (μr = %.1f)", mur_floor);
  CHECK_NEAR(name, v_roll / v0, 1.0 - mu / (mu + 2.5 * (mu - mur_floor)), 0.02);
  if (mur_floor > 0.0) {
    grn_world_step(w, 6 * 240);
    i = lab_find(w, id);
    CHECK_RANGE("speed after 6 s of rolling resistance, m/s", vlen(w->vel[i]), 0.0, 1e-3);
    CHECK_RANGE("spin after 6 s, rad/s", vlen(w->spin[i]), 0.0, 1e-2);
  }
  grn_world_destroy(w);
}

/* A grain held on a single contact (on top of a fixed grain, 2 mm off-centre, kept by rolling
 * resistance) must not spin up about the contact normal: the rolling angle is kept in the
 * tangent plane (LIGGGHTS' epsd models do not and reach 12.6 rad/s after 18 s). */
static void resting_spin(void) {
  grn_world *w = lab_new(1);
  w->gravity = (grn_vec3){0.0, -GRN_G, 0.0};
  w->param[w->bind.param[GRN_SP_MUR]] = 0.5;
  const double r = 0.5 * GRN_D0;
  const int base = lab_add(w, 0.0, 0.0, 0.0, r, 0.0, 0.0, 0.0);
  w->flags[base] |= GRN_F_FIXED;
  const int top = lab_add(w, 0.002, 2.0 * r - 0.002, 0.001, r, 0.0, 0.0, 0.0);
  const uint32_t id = w->id[top];
  grn_world_step(w, 18 * 240);
  const int i = lab_find(w, id);
  CHECK_RANGE("resting grain's spin after 18 s, rad/s", vlen(w->spin[i]), 0.0, 1e-3);
  CHECK_RANGE("resting grain's drift, m", fabs(w->pos[i].x - 0.002) + fabs(w->pos[i].z - 0.001),
              0.0, 0.005);
  grn_world_destroy(w);
}

/* A small grain (≈ 6.8 kg: CW·H/(2/7·m) ≈ 2.6 > 2) pressed against a wall by gravity and sliding
 * along it: the wall's viscous friction must not flip the slip direction every step. The slip
 * decays to rolling along the wall without changing sign more than once. */
static void wall_no_jitter(void) {
  grn_world *w = lab_new(1);
  w->geom.box = true;
  w->geom.xmin = 0.0;
  w->geom.xmax = 1e9;
  w->geom.zmin = -1e9;
  w->geom.zmax = 1e9;
  w->gravity = (grn_vec3){-GRN_G, 0.0, 0.0};
  const double r = 0.5 * GRN_D0 * (1.0 - GRN_SPREAD);
  const int a = lab_add(w, r, 0.0, 0.0, r, 0.0, 0.0, 1.0);
  const uint32_t id = w->id[a];
  int flips = 0;
  double last = 0.0, peak_late = 0.0;
  for (int s = 0; s < 480; s++) {
    grn_world_step(w, 1);
    const int i = lab_find(w, id);
    /* contact point at −r·x̂: slip along z = vz + (ω × (−r x̂))_z = vz + r·ωy */
    const double slip = w->vel[i].z + r * w->spin[i].y;
    if (s > 0 && ((slip > 1e-9 && last < -1e-9) || (slip < -1e-9 && last > 1e-9))) {
      flips++;
    }
    if (s >= 240) {
      peak_late = fabs(slip) > peak_late ? fabs(slip) : peak_late;
    }
    last = slip;
  }
  CHECK_RANGE("sign changes of the wall slip in 2 s", flips, 0, 1);
  CHECK_RANGE("wall slip after 1 s, m/s", peak_late, 0.0, 1e-3);
  grn_world_destroy(w);
}

/* A grain against a rough silo wall (silo_rough, issue 34), pressed on it by a gravity turned
 * towards it (g_n) with a part g_t along it, downwards. Textbook: a sphere on a rough incline rolls
 * without slipping at a = 5/7·g_t while the friction it needs, 2/7·m·g_t, is within μ·m·g_n;
 * beyond that it slides, and Coulomb's kinetic friction leaves a = g_t − μ·g_n. After 0.25 s of
 * settling into the contact (the spring's load, a few mm), the acceleration over the next 0.5 s
 * (below GRN_VMAX, 30 m/s, all the way) is within 2 % of the law, and the contact point's slip
 * below 5 mm/s (the spring rings at about 0.5 mm/s) or, sliding, metres per second. */
static void rough_wall(double g_t, bool rolls) {
  grn_world *w = lab_new(1);
  const double mu = 0.5, g_n = GRN_G, r = 0.5 * GRN_D0;
  w->geom.silo_r = 1.0;
  w->geom.silo_rough = true;
  w->geom.mu_wall = mu;
  w->gravity = (grn_vec3){g_n, -g_t, 0.0};
  const int a = lab_add(w, 1.0 - r, 50.0, 0.0, r, 0.0, 0.0, 0.0); /* 0.75 s: ≤ 8 m down */
  const uint32_t id = w->id[a];
  grn_world_step(w, 60);
  int i = lab_find(w, id);
  const double v0 = w->vel[i].y;
  grn_world_step(w, 120);
  i = lab_find(w, id);
  const double acc = -(w->vel[i].y - v0) / 0.5;
  /* contact point at +r·x̂: its velocity along y is vy + (ω × r x̂)_y = vy + r·ωz */
  const double slip = w->vel[i].y + r * w->spin[i].z;
  const double want = rolls ? 5.0 / 7.0 * g_t : g_t - mu * g_n;
  char name[160];
  snprintf(name, sizeof name,
           "rough wall, g_t %.2f (friction needed %.2f of mu*g_n): %s at %.3f "
           "m/s^2, slip %.2g m/s",
           g_t, 2.0 / 7.0 * g_t / (mu * g_n), rolls ? "rolls" : "slides", acc, slip);
  CHECK_NEAR(name, acc / want, 1.0, 0.02);
  if (rolls) {
    CHECK_RANGE("  the contact point does not slip, m/s", fabs(slip), 0.0, 5e-3);
  } else {
    CHECK_RANGE("  the contact point slips down, m/s", -slip, 0.5, 1e9);
  }
  CHECK("  the wall's spring is the grain's history", (w->flags[i] & GRN_F_WALL) != 0);
  grn_world_destroy(w);
}

int main(void) {
  restitution();
  sink();
  rolling_limit();
  slide_to_roll(0.0);
  slide_to_roll(GRN_MUR_FLOOR);
  resting_spin();
  wall_no_jitter();
  rough_wall(0.8 * 3.5 * 0.5 * GRN_G, true);  /* needs 80 % of μ·g_n */
  rough_wall(1.5 * 3.5 * 0.5 * GRN_G, false); /* would need 150 % */
  CHECK_DONE();
}
