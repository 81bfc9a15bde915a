/* Scene "pour" (spec §3): grains fall from a spout onto a 12·sc m square table and build a cone;
 * the spout rides 0.6 m above the pile (at least 0.9 m). Also the packed bed of the benchmark. */
#include "params.h"

/* The pour's state (also the packed bed's, which has nothing to pour). */
typedef struct pour_state {
  bool pouring;
  int poured; /* grains inserted so far */
  double pour_acc;
  double spout_x, spout_y, spout_z;
} pour_state;

static pour_state *ps(const grn_world *w) {
  return w->ss;
}

/* Its parameters after the granular ones, and its measurements (those of a pile). */
enum { SPOUT_X = GRANULAR_PARAM_COUNT, SPOUT_Z, RATE, POUR_PARAMS };
enum { ANGLE = 1 };

#define LAYER_STEPS 20    /* a layer leaves the spout every 1/12 s ... */
#define POUR_SPEED 3.0    /* ... at 3 m/s, so layers start 0.25 m apart: more than a diameter */
#define SITE_SPACING 0.24 /* hexagonal sites in a layer, just over the largest diameter */

static double scale_of(const grn_world *w) {
  return cbrt((double)w->n_target / 3000.0);
}

static int pour_setup(grn_world *w) {
  const double sc = scale_of(w), half = 6.0 * sc;
  w->geom.floor_y = 0.0;
  w->geom.fx0 = w->geom.fz0 = -half;
  w->geom.fx1 = w->geom.fz1 = half;
  w->geom.kill_y = -1.0; /* grains that fall off the table are gone */
  ps(w)->spout_x = w->param[SPOUT_X];
  ps(w)->spout_z = w->param[SPOUT_Z];
  ps(w)->spout_y = 0.9;
  ps(w)->pouring = true;
  ps(w)->poured = 0;
  ps(w)->pour_acc = 0.0;
  w->settle.drag = 0.0;
  int rc = grn__reserve_grains(w, w->n_target);
  if (rc == GRN_OK) {
    rc = grn__hmap_init(w, -half, -half, grn__hmap_cells(2.0 * half), grn__hmap_cells(2.0 * half));
  }
  return rc;
}

/* Site k of a hexagonal pattern, ring by ring outward (ring q holds 6q sites). */
static void hex_site(int k, double *x, double *z) {
  if (k == 0) {
    *x = *z = 0.0;
    return;
  }
  int q = 1;
  while (k > 3 * q * (q + 1)) {
    q++;
  }
  const int idx = k - 1 - 3 * q * (q - 1), side = idx / q, step = idx % q;
  /* corners of ring q in axial coordinates, walking each side */
  static const int cq[6][2] = {{1, 0}, {0, 1}, {-1, 1}, {-1, 0}, {0, -1}, {1, -1}};
  const int a0 = cq[side][0] * q, b0 = cq[side][1] * q;
  const int a1 = cq[(side + 2) % 6][0], b1 = cq[(side + 2) % 6][1];
  const int a = a0 + a1 * step, b = b0 + b1 * step;
  *x = SITE_SPACING * (a + 0.5 * b);
  *z = SITE_SPACING * (b * 0.8660254037844386);
}

static void pour_layer(grn_world *w) {
  const int left = w->n_target - ps(w)->poured;
  ps(w)->pour_acc += w->param[RATE] * LAYER_STEPS * GRN_H;
  /* compared before the cast: a long-blocked spout's share can exceed an int */
  const double share = floor(ps(w)->pour_acc);
  const int want = share < left ? (int)share : left;
  if (want <= 0) {
    return;
  }
  /* grains near the spout, to keep new ones from overlapping them */
  const double sx = ps(w)->spout_x, sy = ps(w)->spout_y, sz = ps(w)->spout_z;
  const double reach = SITE_SPACING * (1.0 + sqrt((double)want / 3.0)) + 0.5;
  int near[256];
  int nn = 0;
  for (int i = 0; i < w->n && nn < 256; i++) {
    if ((w->flags[i] & GRN_F_ALIVE) && fabs(w->pos[i].y - sy) < 0.5 &&
        fabs(w->pos[i].x - sx) < reach && fabs(w->pos[i].z - sz) < reach) {
      near[nn++] = i;
    }
  }
  const double turn = 2.0 * GRN_PI * grn__rng_uniform(w->rng);
  const double ct = cos(turn), st = sin(turn);
  const int sites = want + 6;
  const int first = w->n;
  int placed = 0;
  for (int k = 0; k < sites && placed < want; k++) {
    double hx, hz;
    hex_site(k, &hx, &hz);
    const double jx = 0.01 * (2.0 * grn__rng_uniform(w->rng) - 1.0);
    const double jz = 0.01 * (2.0 * grn__rng_uniform(w->rng) - 1.0);
    const double x = sx + ct * hx - st * hz + jx, z = sz + st * hx + ct * hz + jz;
    const double r = grn__random_radius(w);
    const grn_vec3 v = {0.05 * (2.0 * grn__rng_uniform(w->rng) - 1.0), -POUR_SPEED,
                        0.05 * (2.0 * grn__rng_uniform(w->rng) - 1.0)};
    bool clear = true;
    for (int q = 0; q < nn && clear; q++) {
      const int j = near[q];
      const double dx = w->pos[j].x - x, dy = w->pos[j].y - sy, dz = w->pos[j].z - z;
      const double rr = r + w->rad[j] + 0.005;
      clear = dx * dx + dy * dy + dz * dz >= rr * rr;
    }
    for (int j = first; j < w->n && clear; j++) {
      const double dx = w->pos[j].x - x, dz = w->pos[j].z - z, rr = r + w->rad[j] + 0.005;
      clear = dx * dx + dz * dz >= rr * rr;
    }
    if (!clear) {
      continue;
    }
    if (grn__add_grain(w, x, sy, z, r, v) != GRN_OK) {
      return; /* out of memory: stop pouring this layer, try again at the next */
    }
    ps(w)->poured++;
    ps(w)->pour_acc -= 1.0;
    placed++;
  }
}

static void pour_script(grn_world *w) {
  if (ps(w)->pouring && w->steps % LAYER_STEPS == 0) {
    pour_layer(w);
    if (ps(w)->poured >= w->n_target) {
      ps(w)->pouring = false;
    }
  }
}

static void pour_measure(grn_world *w) {
  grn__pile_angle(w);
  if (ps(w)->pouring) {
    const double h = grn__top_at(w, ps(w)->spout_x, ps(w)->spout_z) - w->geom.floor_y;
    ps(w)->spout_y = w->geom.floor_y + (h + 0.6 > 0.9 ? h + 0.6 : 0.9);
  }
  grn__common_measures(w);
  w->meas.state = w->sleep.on              ? GRN_STATE_ASLEEP
                  : ps(w)->pouring         ? GRN_STATE_FILLING
                  : w->t < w->settle.until ? GRN_STATE_SETTLING
                                           : GRN_STATE_RUNNING;
}

static int pour_act(grn_world *w, const grn_action *a, grn_error *err) {
  switch (a->kind) {
  case GRN_A_SPOUT:
    ps(w)->spout_x = w->param[SPOUT_X] = a->args[0];
    ps(w)->spout_z = w->param[SPOUT_Z] = a->args[1];
    return GRN_OK;
  case GRN_A_POUR:
    if (w->fill != GRN_FILL_SCENE) {
      return grn__fail(err, GRN_E_UNSUPPORTED, "pour", "a packed bed has no spout");
    }
    if (a->args[0] != 0.0 && ps(w)->poured >= w->n_target) {
      return grn__fail(err, GRN_E_INVALID, "pour", "all %d grains are poured already", w->n_target);
    }
    ps(w)->pouring = a->args[0] != 0.0;
    return GRN_OK;
  default:
    return grn__fail(err, GRN_E_UNSUPPORTED, grn_action_name(a->kind),
                     "scene 'pour' has no action '%s'", grn_action_name(a->kind));
  }
}

static bool pour_busy(const grn_world *w) {
  return ps(w)->pouring;
}

static void pour_param_set(grn_world *w, int index, double value) {
  if (index == SPOUT_X) {
    ps(w)->spout_x = value;
  } else if (index == SPOUT_Z) {
    ps(w)->spout_z = value;
  }
}

/* Restore (issue 16): poured counts up to n_target; pour_acc only grows by a layer's share and
 * drops by one per grain placed out of its whole part, so it stays >= 0 (a blocked spout lets it
 * grow: GRN_STATE_COUNT is years of that); the spout lies over the table. */
static bool pour_state_ok(const grn_world *w) {
  const pour_state *p = ps(w);
  return grn__bool_ok(&p->pouring) && p->poured >= 0 && p->poured <= w->n_target &&
         p->pour_acc >= 0.0 && p->pour_acc <= GRN_STATE_COUNT &&
         grn__within(p->spout_x, GRN_STATE_SIZE) && grn__within(p->spout_y, GRN_STATE_SIZE) &&
         grn__within(p->spout_z, GRN_STATE_SIZE);
}

#define POUR_OWN_PARAMS                                                                            \
  [SPOUT_X] = {"spout_x", "m", -5.0, 5.0, 0.0, false, false, "spout position across the table"},   \
  [SPOUT_Z] = {"spout_z", "m", -5.0, 5.0, 0.0, false, false, "spout position along the table"},    \
  [RATE] = {"rate", "grains/s", 12.0, 2400.0, 120.0, false, false, "pour rate from the spout"}
static const grn_param_info pour_params[POUR_PARAMS] = {GRANULAR_PARAMS(0.0), POUR_OWN_PARAMS};
/* wet sand: the same pour with liquid bridges (the reference's wet-sand slider default) */
static const grn_param_info wet_params[POUR_PARAMS] = {GRANULAR_PARAMS(150.0), POUR_OWN_PARAMS};
static const grn_measure_info pile[] = {M_T,  [ANGLE] = M_ANGLE, M_TOP,     M_CX,
                                        M_CZ, M_OVER_MAX,        M_FLOWING, M_ALIVE};
static const char *const pour_actions[] = {"spout", "pour", "tool", "tool_off", "reset"};
static const grn_plot_info angle_plots[] = {PLOT("Angle of repose, deg", S(ANGLE))};

static int pour_bed(grn_world *w);

/* pour, wet and chains are one script with three catalogue entries */
#define POUR_HOOKS                                                                                 \
  .state_size = sizeof(pour_state), .setup = pour_setup, .script = pour_script,                    \
  .measure = pour_measure, .act = pour_act, .calm = 0.02, .bed = pour_bed, .busy = pour_busy,      \
  .param_set = pour_param_set, .state_ok = pour_state_ok

const grn_scene grn__scene_pour = {
    .info = {"pour", GRN_MODEL_GRANULAR,
             "grains fall from a spout onto a table and build a cone; the spout rides 0.6 m above "
             "the pile",
             LEN(pour_params), pour_params, LEN(pour_actions), pour_actions, LEN(pile), pile,
             PLOTS(angle_plots)},
    POUR_HOOKS};

const grn_scene grn__scene_wet = {
    .info = {"wet", GRN_MODEL_GRANULAR,
             "the pour with wet sand: liquid bridges hold grains together and the cone stands "
             "steeper",
             LEN(wet_params), wet_params, LEN(pour_actions), pour_actions, LEN(pile), pile,
             PLOTS(angle_plots)},
    POUR_HOOKS};

const grn_scene grn__scene_chains = {
    .info = {"chains", GRN_MODEL_GRANULAR,
             "a poured pile showing its force chains: the strongest contacts behind a vertical cut",
             LEN(pour_params), pour_params, LEN(pour_actions), pour_actions, LEN(pile), pile,
             PLOTS(angle_plots), .chains = true},
    POUR_HOOKS};

/* Packed bed: a square box of side 4·sc packed from the lattice, the benchmark's workload (also
 * the tilt scene's bed, which turns gravity over it). Returns the box's half side in *half. */
int grn__setup_bed(grn_world *w, double *half_out) {
  const double sc = scale_of(w), half = 2.0 * sc;
  w->geom.floor_y = 0.0;
  w->geom.fx0 = w->geom.fz0 = -half;
  w->geom.fx1 = w->geom.fz1 = half;
  w->geom.box = true;
  w->geom.xmin = w->geom.zmin = -half;
  w->geom.xmax = w->geom.zmax = half;
  w->geom.kill_y = -1.0;
  *half_out = half;
  int rc =
      grn__hmap_init(w, -half, -half, grn__hmap_cells(2.0 * half), grn__hmap_cells(2.0 * half));
  if (rc == GRN_OK) {
    rc = grn__fill_lattice(w, w->n_target, -half, half, -half, half, 0.12);
  }
  return rc;
}

static int pour_bed(grn_world *w) {
  ps(w)->pouring = false;
  ps(w)->poured = w->n_target;
  double half;
  return grn__setup_bed(w, &half);
}
