/* Scene "silo" (spec §3): a cylinder whose floor plate has a central hole, plugged until the user
 * opens it; grains drain onto a floor below. Measured: mass above the plate, the discharge over
 * the last 2 s, the fill height, the Beverloo prediction, and whether the flow jammed or ended. */
#include "params.h"

#define LOG 9 /* mass samples 0.25 s apart: 2 s of history */

/* The silo's state: when the hole was opened (−1: never), the verdict, and the mass above the
 * plate every 0.25 s. */
typedef struct silo_state {
  double opened;
  bool jam, done;
  double above_log[LOG];
  int log_n;
} silo_state;

static silo_state *st(const grn_world *w) {
  return w->ss;
}

/* Beverloo: W = C·ρb·√g·(D − k·d)^(5/2) with C = 0.58, k = 1.5 (spec §3). */
static double beverloo(double hole) {
  const double x = hole - 1.5 * GRN_D0;
  return x > 0.0 ? 0.58 * GRN_RHO_B * sqrt(GRN_G) * pow(x, 2.5) : 0.0;
}

static int silo_setup(grn_world *w) {
  const double n = (double)w->n_target, hole = w->param[GRN_P_HOLE];
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
  g->mu_wall = w->param[GRN_P_MU];
  /* the floor below lies deep enough that the heap there never reaches the hole */
  g->floor_y = -2.5 * sc - hole;
  g->fx0 = g->fz0 = -6.0 * sc;
  g->fx1 = g->fz1 = 6.0 * sc;
  g->kill_y = g->floor_y - 1.0;
  st(w)->opened = -1.0;
  st(w)->jam = st(w)->done = false;
  st(w)->log_n = 0;
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
  w->settle = grn__settle_time(top);
  return GRN_OK;
}

static void silo_measure(grn_world *w) {
  double *m = w->meas.value;
  double mass = 0.0;
  for (int i = 0; i < w->n; i++) {
    if ((w->flags[i] & GRN_F_ALIVE) && w->pos[i].y > w->geom.plate_y - 0.1) {
      mass += 1.0 / w->inv_m[i];
    }
  }
  m[GRN_M_MASS_ABOVE] = mass;
  /* flow: the drop of that mass over the last 2 s (less right after opening) */
  st(w)->above_log[st(w)->log_n % LOG] = mass;
  st(w)->log_n++;
  const double old =
      st(w)->log_n >= LOG ? st(w)->above_log[st(w)->log_n % LOG] : st(w)->above_log[0];
  const double span = ((st(w)->log_n < LOG ? st(w)->log_n : LOG) - 1) * 0.25;
  const bool open = !w->geom.plugged && st(w)->opened >= 0.0;
  m[GRN_M_FLOW] = open && span > 0.0 ? fmax(0.0, old - mass) / span : 0.0;
  /* fill: mean surface height above the plate inside 0.8·R */
  grn__surface(w, w->geom.plate_y, w->geom.plate_y);
  const double r08 = 0.8 * w->geom.silo_r, cs = GRN_CELL_MAP;
  double sum = 0.0;
  int c = 0;
  for (int b = 0; b < w->hnz; b++) {
    for (int a = 0; a < w->hnx; a++) {
      const double x = w->hx0 + (a + 0.5) * cs, z = w->hz0 + (b + 0.5) * cs;
      if (x * x + z * z < r08 * r08) {
        sum += w->hmap[a + w->hnx * b] - w->geom.plate_y;
        c++;
      }
    }
  }
  m[GRN_M_FILL] = c ? sum / c : 0.0;
  m[GRN_M_BEVERLOO] = beverloo(w->param[GRN_P_HOLE]);
  /* at least 3 s after opening, once the flow has (nearly) stopped: grains standing higher than
   * the slope from the hole's rim to the wall arched over the hole; lower, the silo drained */
  if (open && !st(w)->jam && !st(w)->done && w->t > st(w)->opened + 3.0 && m[GRN_M_FLOW] < 5.0 &&
      w->flowing < 0.02) {
    if (m[GRN_M_FILL] > 0.8 * (w->geom.silo_r - w->geom.hole_r)) {
      st(w)->jam = true;
    } else {
      st(w)->done = true;
    }
  }
  grn__common_measures(w);
  w->meas.state = st(w)->jam         ? GRN_STATE_JAMMED
                  : st(w)->done      ? GRN_STATE_DRAINED
                  : open             ? GRN_STATE_FLOWING
                  : w->sleeping      ? GRN_STATE_ASLEEP
                  : w->t < w->settle ? GRN_STATE_SETTLING
                                     : GRN_STATE_RUNNING;
}

static int silo_act(grn_world *w, const grn_action *a, grn_error *err) {
  switch (a->kind) {
  case GRN_A_OPEN_HOLE:
    if (!w->geom.plugged) {
      return grn__fail(err, GRN_E_INVALID, "open_hole", "the hole is open already");
    }
    w->geom.plugged = false;
    st(w)->opened = w->t;
    st(w)->jam = st(w)->done = false;
    st(w)->log_n = 0;
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

/* Restore (issue 16): log_n indexes the log modulo LOG and counts up by one per sample, so it must
 * be >= 0 and leave room to count (GRN_STATE_COUNT); the log and the opening time are finite. */
static bool silo_state_ok(const grn_world *w) {
  const silo_state *s = st(w);
  for (int k = 0; k < LOG; k++) {
    if (!grn__within(s->above_log[k], 1e30)) {
      return false;
    }
  }
  return grn__bool_ok(&s->jam) && grn__bool_ok(&s->done) && s->log_n >= 0 &&
         s->log_n <= GRN_STATE_COUNT && grn__within(s->opened, 1e15);
}

static const grn_param_id silo_params[] = {GRN_P_MU,     GRN_P_MUR,     GRN_P_COH,
                                           GRN_P_AMOUNT, GRN_P_QUALITY, GRN_P_HOLE};
static const grn_param_info silo_info[] = {P_MU, P_MUR, P_COH(0.0), P_AMOUNT, P_QUALITY, P_HOLE};
SAME_LEN(silo_params, silo_info);
static const char *const silo_actions[] = {"open_hole", "plug_hole", "tool", "tool_off", "reset"};
static const grn_plot_info silo_plots[] = {
    PLOT("Flow, kg/s (dashed: Beverloo)", S(GRN_M_FLOW), REF(GRN_M_BEVERLOO))};

const grn_scene grn__scene_silo = {
    .info = {"silo", GRN_MODEL_GRANULAR,
             "a cylinder with a plugged hole in its floor plate; open it and the grains drain",
             LEN(silo_params), silo_params, silo_info, LEN(silo_actions), silo_actions,
             MEASURES(COMMON M(GRN_M_FLOW) M(GRN_M_MASS_ABOVE) M(GRN_M_FILL) M(GRN_M_BEVERLOO)),
             PLOTS(silo_plots)},
    .state_size = sizeof(silo_state),
    .setup = silo_setup,
    .measure = silo_measure,
    .act = silo_act,
    .calm = 0.02,
    .state_ok = silo_state_ok};
