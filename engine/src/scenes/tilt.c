/* Scene "tilt" (spec §3): a box partly filled with grains, tilted about its bottom axis. The box
 * stays axis-aligned and gravity turns instead, gradually; the surface angle is measured
 * relative to the horizontal. */
#include "params.h"

/* Its parameter after the granular ones, and the measurement it plots. */
enum { TILT_RATE = GRANULAR_PARAM_COUNT, TILT_PARAMS };
enum { ANGLE = 1 };

/* The tilt's state: the box's half-length and half-width; the tilt now, its target and speed
 * (rad, rad/s). */
typedef struct tilt_state {
  double box_lx, ch_wz, phi, phi_target, phi_rate;
} tilt_state;

static tilt_state *st(const grn_world *w) {
  return w->ss;
}

static void set_gravity(grn_world *w) {
  /* the +x end goes down as phi grows: in box coordinates gravity leans toward +x */
  w->gravity = (grn_vec3){GRN_G * sin(st(w)->phi), -GRN_G * cos(st(w)->phi), 0.0};
}

/* Level, and turning at the tilt_rate parameter when told to tilt. */
static void start_level(grn_world *w) {
  st(w)->phi = st(w)->phi_target = 0.0;
  st(w)->phi_rate = w->param[TILT_RATE] * GRN_PI / 180.0;
  set_gravity(w);
}

static int tilt_setup(grn_world *w) {
  const double sc = cbrt((double)w->n_target / 3000.0);
  const double lx = 3.0 * sc, wz = 1.0 * sc;
  st(w)->box_lx = lx;
  st(w)->ch_wz = wz;
  grn_geom *g = &w->geom;
  g->floor_y = 0.0;
  g->fx0 = -lx;
  g->fx1 = lx;
  g->fz0 = -wz;
  g->fz1 = wz;
  g->box = true;
  g->xmin = -lx;
  g->xmax = lx;
  g->zmin = -wz;
  g->zmax = wz;
  g->mu_wall = grn__param(w, GRN_SP_MU);
  g->kill_y = -1.0;
  start_level(w);
  int rc = grn__hmap_init(w, -lx, -wz, grn__hmap_cells(2.0 * lx), grn__hmap_cells(2.0 * wz));
  if (rc == GRN_OK) {
    rc = grn__fill_lattice(w, w->n_target, -lx, lx, -wz, wz, 0.12);
  }
  return rc;
}

/* The benchmark's packed bed (pour.c), to be tilted: the avalanching bed of bench/ (its script,
 * which turns gravity, runs on the bed too). */
static int tilt_bed(grn_world *w) {
  double half = 0.0;
  const int rc = grn__setup_bed(w, &half);
  st(w)->box_lx = st(w)->ch_wz = half;
  start_level(w);
  return rc;
}

static void tilt_script(grn_world *w) {
  if (st(w)->phi != st(w)->phi_target) {
    const double step = st(w)->phi_rate * GRN_H, d = st(w)->phi_target - st(w)->phi;
    st(w)->phi = fabs(d) <= step ? st(w)->phi_target : st(w)->phi + (d > 0.0 ? step : -step);
    set_gravity(w);
  }
}

static void tilt_measure(grn_world *w) {
  grn__tray_profile(w, st(w)->box_lx, st(w)->ch_wz, st(w)->phi);
  grn__common_measures(w);
  w->meas.state = grn__plain_state(w);
}

static int tilt_act(grn_world *w, const grn_action *a, grn_error *err) {
  if (a->kind != GRN_A_TILT) {
    return grn__fail(err, GRN_E_UNSUPPORTED, grn_action_name(a->kind),
                     "scene 'tilt' has no action '%s'", grn_action_name(a->kind));
  }
  st(w)->phi_target = a->args[0] * GRN_PI / 180.0;
  st(w)->phi_rate = (a->nargs == 2 ? a->args[1] : w->param[TILT_RATE]) * GRN_PI / 180.0;
  return GRN_OK;
}

/* A new tilt_rate turns the box at that speed from now on, a turn under way included. */
static void tilt_param_set(grn_world *w, int index, double value) {
  walls_follow_mu(w, index, value);
  if (index == TILT_RATE) {
    st(w)->phi_rate = value * GRN_PI / 180.0;
  }
}

static bool tilt_busy(const grn_world *w) {
  return st(w)->phi != st(w)->phi_target;
}

/* Restore (issue 16): box_lx and ch_wz are cast to int in the profile's bins (measure.c), so they
 * must be finite scene sizes; the tilt within a turn, its rate not negative (it would turn away
 * from its target for ever). */
static bool tilt_state_ok(const grn_world *w) {
  const tilt_state *s = st(w);
  return s->box_lx > 0.0 && s->box_lx <= GRN_STATE_SIZE && s->ch_wz > 0.0 &&
         s->ch_wz <= GRN_STATE_SIZE && grn__within(s->phi, 2.0 * GRN_PI) &&
         grn__within(s->phi_target, 2.0 * GRN_PI) && s->phi_rate >= 0.0 && s->phi_rate <= 1e3;
}

static void tilt_geometry(const grn_world *w, grn_geometry *out) {
  out->tilt = st(w)->phi;
}

static const grn_param_info tilt_params[TILT_PARAMS] = {
    GRANULAR_PARAMS(0.0),
    [TILT_RATE] = {
        "tilt_rate", "deg/s", 0.1, 20.0, 2.0, false, false,
        "tilt: turning speed, also of a turn under way (a tilt action may give its own)"}};
static const grn_measure_info tilt_measures[] = {M_T,        [ANGLE] = M_ANGLE, M_TOP,
                                                 M_OVER_MAX, M_FLOWING,         M_ALIVE};
static const char *const tilt_actions[] = {"tilt", "tool", "tool_off", "reset"};
static const grn_plot_info angle_plots[] = {PLOT("Angle of repose, deg", S(ANGLE))};

const grn_scene grn__scene_tilt = {
    .info = {"tilt", GRN_MODEL_GRANULAR,
             "a box partly filled with grains, tilted about its bottom axis until the surface "
             "avalanches",
             LEN(tilt_params), tilt_params, LEN(tilt_actions), tilt_actions, LEN(tilt_measures),
             tilt_measures, PLOTS(angle_plots)},
    .state_size = sizeof(tilt_state),
    .setup = tilt_setup,
    .bed = tilt_bed,
    .script = tilt_script,
    .bed_script = true,
    .measure = tilt_measure,
    .act = tilt_act,
    .calm = 0.08,
    .busy = tilt_busy,
    .param_set = tilt_param_set,
    .state_ok = tilt_state_ok,
    .geometry = tilt_geometry};
