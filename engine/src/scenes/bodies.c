/* N-body scenes (reference 003), units with G = 1: `orbit` (two bodies), `softening` (a near
 * head-on pass that repeats, softening and speed cap live) and `cluster` (a Plummer sphere). */
#include "../model.h"
#include "params.h"

static const char *const reset_only[] = {"reset"};
/* Every N-body scene measures the same */
enum { KINETIC = 2, POTENTIAL, ENERGY, ENERGY_DRIFT, ANGULAR_MOMENTUM, VIRIAL, GRAVITY_MEASURES };
static const grn_measure_info gravity_measures[GRAVITY_MEASURES] = {
    M_T,      M_ALIVE,        [KINETIC] = M_KINETIC, M_POTENTIAL,
    M_ENERGY, M_ENERGY_DRIFT, M_ANGULAR_MOMENTUM,    M_VIRIAL};
/* N-body: kinetic and potential trade while their sum stays flat; the relative drift of that sum
 * from t = 0, on its own axis, shows how well it is conserved */
static const grn_plot_info gravity_plots[] = {
    PLOT("Energy (G = 1 units): kinetic, potential, total · drift of the total", S(KINETIC),
         S(POTENTIAL), REF(ENERGY), RIGHT(ENERGY_DRIFT)),
    PLOT("Virial ratio 2K/|W| · angular momentum", S(VIRIAL), RIGHT(ANGULAR_MOMENTUM))};

static int two_bodies(const grn_world_def *def) {
  return def->grains > 0 ? -1 : 2;
}

/* ---- orbit ---------------------------------------------------------------------------------- */
/* Two unit masses 2 apart in the x–y plane. The circular speed balances the softened pull:
 * v²/r = m·d/(d² + ε²)^(3/2) with r = d/2, so the orbit is a circle for any ε (period 4π at
 * ε = 0); `speed` scales it into an ellipse. */
enum { ORBIT_EPS, ORBIT_SPEED, ORBIT_PARAMS };

static int orbit_setup(grn_world *w) {
  const double d = 2.0, e = w->param[ORBIT_EPS];
  const double vc = sqrt(0.5 * d * d / pow(d * d + e * e, 1.5));
  const double v = w->param[ORBIT_SPEED] * vc;
  w->geom.floor_y = -INFINITY;
  if (grn__nbody_add(w, 1.0, -0.5 * d, 0.0, 0.0, (grn_vec3){0.0, -v, 0.0}) != GRN_OK ||
      grn__nbody_add(w, 1.0, 0.5 * d, 0.0, 0.0, (grn_vec3){0.0, v, 0.0}) != GRN_OK) {
    return GRN_E_NOMEM;
  }
  return GRN_OK;
}

static const grn_param_info orbit_params[ORBIT_PARAMS] = {
    [ORBIT_EPS] = P_EPS(0.0),
    [ORBIT_SPEED] = {"speed", "", 0.2, 1.3, 1.0, false, true,
                     "initial speed over the circular speed (1: circle)"}};

const grn_scene grn__scene_orbit = {
    .info = {"orbit", GRN_MODEL_GRAVITY,
             "two equal bodies on a circular orbit (speed 1) or an ellipse; units with G = 1",
             LEN(orbit_params), orbit_params, LEN(reset_only), reset_only, LEN(gravity_measures),
             gravity_measures, PLOTS(gravity_plots)},
    .setup = orbit_setup,
    .count = two_bodies};

/* ---- softening ------------------------------------------------------------------------------ */
/* Two unit masses 6 apart closing at 1.2 with an impact parameter of 0.1: without softening they
 * swing round each other sharply, with it they pass through. Once they are 8 apart again, or 15 s
 * after it began (a pair the speed cap has bound never separates), the pass starts over and
 * energy_drift is measured from that new start. */
typedef struct softening_state {
  double pass_t0; /* when the current pass began */
} softening_state;

static softening_state *st(const grn_world *w) {
  return w->ss;
}

static void place_pair(grn_world *w) {
  const grn_vec3 pa = {-3.0, -0.05, 0.0}, pb = {3.0, 0.05, 0.0};
  w->pos[0] = pa;
  w->pos[1] = pb;
  w->vel[0] = (grn_vec3){0.6, 0.0, 0.0};
  w->vel[1] = (grn_vec3){-0.6, 0.0, 0.0};
  w->nbody.acc_valid = false;
  w->nbody.e0 = NAN;
  st(w)->pass_t0 = w->t;
}

static int softening_setup(grn_world *w) {
  w->geom.floor_y = -INFINITY;
  const grn_vec3 v0 = {0.0, 0.0, 0.0};
  for (int k = 0; k < 2; k++) { /* placed by place_pair */
    if (grn__nbody_add(w, 1.0, 0.0, 0.0, 0.0, v0) != GRN_OK) {
      return GRN_E_NOMEM;
    }
  }
  place_pair(w);
  return GRN_OK;
}

static void softening_script(grn_world *w) {
  if (w->fig.alive < 2) {
    return;
  }
  const double dx = w->pos[1].x - w->pos[0].x, dy = w->pos[1].y - w->pos[0].y,
               dz = w->pos[1].z - w->pos[0].z;
  const double recede = dx * (w->vel[1].x - w->vel[0].x) + dy * (w->vel[1].y - w->vel[0].y) +
                        dz * (w->vel[1].z - w->vel[0].z);
  if ((dx * dx + dy * dy + dz * dz > 64.0 && recede > 0.0) || w->t - st(w)->pass_t0 >= 15.0) {
    place_pair(w);
  }
}

/* Restore (issue 16): the pass began at a finite time. */
static bool softening_state_ok(const grn_world *w) {
  return grn__within(st(w)->pass_t0, 1e15);
}

static const grn_param_info softening_params[] = {P_EPS(0.2), P_VCAP(3.0)};

const grn_scene grn__scene_softening = {
    .info = {"softening", GRN_MODEL_GRAVITY,
             "two bodies pass each other nearly head-on; the softening length decides how hard "
             "they swing, the speed cap keeps the step bounded",
             LEN(softening_params), softening_params, LEN(reset_only), reset_only,
             LEN(gravity_measures), gravity_measures, PLOTS(gravity_plots)},
    .state_size = sizeof(softening_state),
    .setup = softening_setup,
    .script = softening_script,
    .state_ok = softening_state_ok,
    .count = two_bodies};

/* ---- cluster -------------------------------------------------------------------------------- */
enum { CLUSTER_BODIES, CLUSTER_PARAMS = 4 };

static int cluster_count(const grn_world_def *def) {
  return def->grains > 0 ? def->grains : (int)def->param[CLUSTER_BODIES];
}

static int cluster_setup(grn_world *w) {
  w->geom.floor_y = -INFINITY;
  return grn__plummer(w, w->n_target);
}

static const grn_param_info cluster_params[CLUSTER_PARAMS] = {
    [CLUSTER_BODIES] = {"bodies", "", 16.0, 200000.0, 2000.0, true, true,
                        "bodies in the Plummer sphere (total mass 1)"},
    P_EPS(0.02),
    P_THETA,
    P_VCAP(0.0)};

const grn_scene grn__scene_cluster = {
    .info = {"cluster", GRN_MODEL_GRAVITY,
             "a Plummer sphere of many bodies in virial equilibrium (total mass 1, energy -1/4)",
             LEN(cluster_params), cluster_params, LEN(reset_only), reset_only,
             LEN(gravity_measures), gravity_measures, PLOTS(gravity_plots)},
    .setup = cluster_setup,
    .bed = cluster_setup,
    .count = cluster_count,
    .count_param = "bodies"};
