/* Scene "silo" (spec §3): a cylinder whose floor plate has a central hole, plugged until the user
 * opens it; grains drain onto a floor below. Measured: mass above the plate, the discharge over
 * the last 2 s and the mean of its steady part, the fill height, the packing's bulk density and
 * Beverloo's prediction from it, and whether the flow jammed or ended. */
#include "params.h"

/* Its parameter after the granular ones, and its measurements after the common four. */
enum { HOLE = GRANULAR_PARAM_COUNT, SILO_PARAMS };
enum { FLOW = 4, MASS_ABOVE, FILL, BEVERLOO, MEAN_FLOW, BULK_DENSITY, SILO_MEASURES };

#define LOG 9 /* mass samples 0.25 s apart: 2 s of history */
/* The steady flow that Beverloo's law describes: from one full 2 s window after the hole opened
 * (or anything changed) while the fill stands at least a hole's diameter above the plate. Lower,
 * the flow tails off (at 1.1 m, from ~2000 to under 100 kg/s as the fill falls from 0.8 m to
 * 0.45 m over 10 s), and a mean over the whole drain depends on when it is taken. */
#define STEADY_AFTER 2.0

/* The silo's state: when the hole was opened or anything last changed while it was open (−1:
 * plugged), the verdict, the mass above the plate every 0.25 s since then, the sum and count of
 * the steady flow's samples since then, whether the hole was ever opened, and the bulk density
 * measured before that. */
typedef struct silo_state {
  double opened;
  bool jam, done;
  double above_log[LOG];
  int log_n;
  double steady_sum;
  int steady_n;
  bool ever_opened;
  double rho_b;
} silo_state;

static silo_state *st(const grn_world *w) {
  return w->ss;
}

/* Beverloo: W = C·ρb·√g·(D − k·d)^(5/2) with C = 0.58, k = 1.5 (spec §3), ρb the bulk density
 * of this silo's packing. The spec's 0.6·RHO assumes a loose packing; these soft grains pack
 * under their weight to ~0.68·RHO (measured at 3000 grains), and with 0.6 every steady flow read
 * 10-25 % above the law. */
static double beverloo(double hole, double rho_b) {
  const double x = hole - 1.5 * GRN_D0;
  return x > 0.0 ? 0.58 * rho_b * sqrt(GRN_G) * pow(x, 2.5) : 0.0;
}

/* A new window for the flow's figures: at opening, and at any change while open. */
static void restart_window(grn_world *w) {
  st(w)->opened = w->t;
  st(w)->log_n = 0;
  st(w)->steady_sum = 0.0;
  st(w)->steady_n = 0;
  st(w)->jam = st(w)->done = false;
}

static int silo_setup(grn_world *w) {
  const double n = (double)w->n_target, hole = w->param[HOLE];
  const double sc = cbrt(n / 3000.0);
  /* radius ∝ N^(1/6), so the fill stays about one diameter high, and never under 2.5 holes
   * across: a narrower silo's flow depends on its fill height (Janssen) */
  double rs = 1.65 * pow(n / 3000.0, 1.0 / 6.0);
  rs = rs > 1.25 * hole ? rs : 1.25 * hole;
  grn_geom *g = &w->geom;
  g->plate = true;
  g->plate_y = 0.0;
  g->hole_r = 0.5 * hole;
  g->plugged = true;
  g->silo_r = rs;
  g->mu_wall = grn__param(w, GRN_SP_MU);
  /* the floor below lies deep enough that the heap there never reaches the hole, whatever size
   * it is given while the silo runs (at most 0.8·rs, silo_live_check) */
  g->floor_y = -2.5 * sc - 0.8 * rs;
  g->fx0 = g->fz0 = -6.0 * sc;
  g->fx1 = g->fz1 = 6.0 * sc;
  g->kill_y = g->floor_y - 1.0;
  st(w)->opened = -1.0;
  int rc = grn__hmap_init(w, -rs, -rs, grn__hmap_cells(2.0 * rs), grn__hmap_cells(2.0 * rs));
  if (rc != GRN_OK || (rc = grn__reserve_grains(w, w->n_target)) != GRN_OK) {
    return rc;
  }
  /* lattice clipped to the cylinder, layer by layer */
  const int side = (int)floor(2.0 * rs / GRN_LAT_A);
  const double lim = rs - 0.5 * GRN_D0 * (1.0 + GRN_SPREAD) - 0.01;
  double top = 0.0;
  for (int layer = 0, placed = 0; placed < w->n_target; layer++) {
    const double sh = (layer & 1) ? 0.5 * GRN_LAT_A : 0.0, y = 0.12 + layer * GRN_LAT_G;
    int in_layer = 0;
    for (int b = 0; b < side && placed < w->n_target; b++) {
      for (int a = 0; a < side && placed < w->n_target; a++) {
        const double x = -rs + (a + 0.5) * GRN_LAT_A + sh, z = -rs + (b + 0.5) * GRN_LAT_A + sh;
        if (x * x + z * z > lim * lim) {
          continue;
        }
        const grn_vec3 v0 = {0.0, 0.0, 0.0};
        if ((rc = grn__add_grain(w, x, y, z, grn__random_radius(w), v0)) != GRN_OK) {
          return rc;
        }
        placed++;
        in_layer++;
        top = y;
      }
    }
    if (in_layer == 0) {
      return GRN_E_INVALID; /* a silo too narrow for one grain: cannot happen in range */
    }
  }
  w->settle.drag = grn__settle_time(top);
  return GRN_OK;
}

/* The mass of the grains above the plate, and whether any stands over the middle of the hole
 * (only an arch across it can hold one there). */
static double mass_above(const grn_world *w, bool *over_hole) {
  double mass = 0.0;
  const double mid = 0.5 * w->geom.hole_r;
  *over_hole = false;
  for (int i = 0; i < w->n; i++) {
    if ((w->flags[i] & GRN_F_ALIVE) && w->pos[i].y > w->geom.plate_y - 0.1) {
      mass += 1.0 / w->inv_m[i];
      const grn_vec3 p = w->pos[i];
      *over_hole = *over_hole || (p.y > w->geom.plate_y && p.x * p.x + p.z * p.z < mid * mid);
    }
  }
  return mass;
}

/* The fill: the mean surface height above the plate inside 0.8·R (the height map made anew). */
static double fill_of(grn_world *w) {
  grn__surface(w, w->geom.plate_y, w->geom.plate_y);
  const double r08 = 0.8 * w->geom.silo_r, cs = GRN_CELL_MAP;
  double sum = 0.0;
  int c = 0;
  for (int b = 0; b < w->maps.hnz; b++) {
    for (int a = 0; a < w->maps.hnx; a++) {
      const double x = w->maps.hx0 + (a + 0.5) * cs, z = w->maps.hz0 + (b + 0.5) * cs;
      if (x * x + z * z < r08 * r08) {
        sum += w->maps.hmap[a + w->maps.hnx * b] - w->geom.plate_y;
        c++;
      }
    }
  }
  return c ? sum / c : 0.0;
}

/* The bulk density: the mass over the cylinder's volume up to the fill, of the settled packing
 * (the lattice still falls while it settles), until the hole first opens (a drained surface has a
 * crater); taken at the opening itself too, where no sample came between the grains' rest and it.
 */
static void take_density(grn_world *w, double mass, double fill) {
  if (!st(w)->ever_opened && w->t >= w->settle.until && fill > 0.0) {
    st(w)->rho_b = mass / (GRN_PI * w->geom.silo_r * w->geom.silo_r * fill);
  }
}

static void silo_measure(grn_world *w) {
  double *m = w->meas.value;
  bool over_hole;
  const double mass = mass_above(w, &over_hole);
  m[MASS_ABOVE] = mass;
  /* flow: the drop of that mass over the last 2 s (less right after opening) */
  st(w)->above_log[st(w)->log_n % LOG] = mass;
  st(w)->log_n++;
  const double old =
      st(w)->log_n >= LOG ? st(w)->above_log[st(w)->log_n % LOG] : st(w)->above_log[0];
  const double span = ((st(w)->log_n < LOG ? st(w)->log_n : LOG) - 1) * 0.25;
  const bool open = !w->geom.plugged && st(w)->opened >= 0.0;
  m[FLOW] = open && span > 0.0 ? fmax(0.0, old - mass) / span : 0.0;
  m[FILL] = fill_of(w);
  take_density(w, mass, m[FILL]);
  m[BULK_DENSITY] = st(w)->rho_b > 0.0 ? st(w)->rho_b : NAN;
  m[BEVERLOO] = st(w)->rho_b > 0.0 ? beverloo(w->param[HOLE], st(w)->rho_b) : NAN;
  if (open && w->t >= st(w)->opened + STEADY_AFTER - 0.5 * GRN_H && m[FILL] >= w->param[HOLE]) {
    st(w)->steady_sum += m[FLOW];
    st(w)->steady_n++;
  }
  m[MEAN_FLOW] = st(w)->steady_n > 0 ? st(w)->steady_sum / st(w)->steady_n : NAN;
  /* At least 3 s after the hole opened or anything changed, once the flow has (nearly) stopped:
   * grains still over the hole's middle rest on an arch across it (jammed); with none there, the
   * silo has drained but for the slopes from the rim to its wall. (Judged by the fill height, a
   * jam formed low in the silo read as drained.) Judged again at every sample: a jam the tool
   * breaks flows again. */
  st(w)->jam = st(w)->done = false;
  if (open && w->t > st(w)->opened + 3.0 && m[FLOW] < 5.0 && w->fig.flowing < 0.02) {
    st(w)->jam = over_hole;
    st(w)->done = !over_hole;
  }
  grn__common_measures(w);
  w->meas.state = st(w)->jam               ? GRN_STATE_JAMMED
                  : st(w)->done            ? GRN_STATE_DRAINED
                  : open                   ? GRN_STATE_FLOWING
                  : w->sleep.on            ? GRN_STATE_ASLEEP
                  : w->t < w->settle.until ? GRN_STATE_SETTLING
                                           : GRN_STATE_RUNNING;
}

static int silo_act(grn_world *w, const grn_action *a, grn_error *err) {
  switch (a->kind) {
  case GRN_A_OPEN_HOLE:
    if (!w->geom.plugged) {
      return grn__fail(err, GRN_E_INVALID, "open_hole", "the hole is open already");
    }
    if (!st(w)->ever_opened) {
      bool over_hole;
      const double mass = mass_above(w, &over_hole);
      take_density(w, mass, fill_of(w));
    }
    w->geom.plugged = false;
    st(w)->ever_opened = true;
    restart_window(w);
    return GRN_OK;
  case GRN_A_PLUG_HOLE:
    if (w->geom.plugged) {
      return grn__fail(err, GRN_E_INVALID, "plug_hole", "the hole is plugged already");
    }
    w->geom.plugged = true;
    st(w)->opened = -1.0;
    return GRN_OK;
  default:
    return grn__fail(err, GRN_E_UNSUPPORTED, grn_action_name(a->kind),
                     "scene 'silo' has no action '%s'", grn_action_name(a->kind));
  }
}

/* A live hole must leave the cylinder 2.5 holes across, as the scene built it (spec §3: a
 * narrower silo's flow depends on its fill height); a wider one needs a wider silo, built by a
 * restart with that hole. */
static int silo_live_check(const grn_world *w, int index, double value, grn_error *err) {
  const double most = 0.8 * w->geom.silo_r;
  if (index == HOLE && value > most) {
    return grn__fail(err, GRN_E_RANGE, "hole",
                     "parameter 'hole' = %g m is too wide for this silo (%.2f m across): at most "
                     "%.2f m while it runs; restart the scene with hole %g to build a wider silo",
                     value, 2.0 * w->geom.silo_r, floor(most * 100.0) / 100.0, value);
  }
  return GRN_OK;
}

/* The hole takes its new size at the next step: grains over the plate it now covers stay on the
 * plate, those already below its top fall on. While it is open, any change (the hole, the
 * friction, wetness) starts the flow's window and verdict again, so no figure mixes two
 * settings. */
static void silo_param_set(grn_world *w, int index, double value) {
  walls_follow_mu(w, index, value);
  if (index == HOLE) {
    w->geom.hole_r = 0.5 * value;
  }
  if (!w->geom.plugged) {
    restart_window(w);
  }
}

/* Restore (issue 16): log_n indexes the log modulo LOG and counts up by one per sample, so it must
 * be >= 0 and leave room to count (GRN_STATE_COUNT); the log and the opening time are finite. */
static bool silo_state_ok(const grn_world *w) {
  const silo_state *s = st(w);
  for (int k = 0; k < LOG; k++) {
    if (!grn__within(s->above_log[k], 1e30)) {
      return false;
    }
  }
  return grn__bool_ok(&s->jam) && grn__bool_ok(&s->done) && grn__bool_ok(&s->ever_opened) &&
         s->log_n >= 0 && s->log_n <= GRN_STATE_COUNT && s->steady_n >= 0 &&
         s->steady_n <= GRN_STATE_COUNT && grn__within(s->steady_sum, 1e30) &&
         grn__within(s->rho_b, 1e30) && grn__within(s->opened, 1e15);
}

static const grn_param_info silo_params[SILO_PARAMS] = {
    GRANULAR_PARAMS(0.0), [HOLE] = {"hole", "m", 0.3, 1.6, 0.9, false, false,
                                    "silo hole diameter (4.5 grain diameters by default)"}};
static const grn_measure_info silo_measures[SILO_MEASURES] = {
    M_T,
    M_OVER_MAX,
    M_FLOWING,
    M_ALIVE,
    [FLOW] = {"flow", "kg/s", "discharge rate", true, false},
    [MASS_ABOVE] = {"mass_above", "kg", "mass above the plate", false, false},
    [FILL] = {"fill", "m", "fill height", false, false},
    [BEVERLOO] = {"beverloo", "kg/s", "Beverloo prediction", false, false},
    [MEAN_FLOW] = {"mean_flow", "kg/s", "mean discharge rate", true, false},
    [BULK_DENSITY] = {"bulk_density", "kg/m^3", "bulk density", false, false}};
static const char *const silo_actions[] = {"open_hole", "plug_hole", "tool", "tool_off", "reset"};
static const grn_plot_info silo_plots[] = {
    PLOT("Flow, kg/s (dashed: Beverloo)", S(FLOW), S(MEAN_FLOW), REF(BEVERLOO))};

const grn_scene grn__scene_silo = {
    .info = {"silo", GRN_MODEL_GRANULAR,
             "a cylinder with a plugged hole in its floor plate; open it and the grains drain",
             LEN(silo_params), silo_params, LEN(silo_actions), silo_actions, LEN(silo_measures),
             silo_measures, PLOTS(silo_plots)},
    .state_size = sizeof(silo_state),
    .setup = silo_setup,
    .measure = silo_measure,
    .act = silo_act,
    .calm = 0.02,
    .live_check = silo_live_check,
    .param_set = silo_param_set,
    .state_ok = silo_state_ok};
