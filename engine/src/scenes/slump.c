/* Scene "slump" (spec §3): a column of grains behind a dam in a channel; pulling the dam up lets
 * the column collapse. Measured: runout front, height, slope angle of the deposit. */
#include "params.h"

/* The slump's state: the channel's half-width and column length, and the dam being pulled. */
typedef struct slump_state {
  double ch_wz, ch_l0, dam_top, dam_speed;
  bool dam_pulling;
} slump_state;

static slump_state *st(const grn_world *w) {
  return w->ss;
}

#define PULL_SPEED 1.5 /* m/s: the dam leaves the column in well under its free-fall time */

static int slump_setup(grn_world *w) {
  const double sc = cbrt((double)w->n_target / 3000.0), aspect = w->param[GRN_P_ASPECT];
  const double wz = 0.6 * sc;
  /* column length from its volume: N·LAT_V = L0 · 2·wz · aspect·L0 */
  double l0 = sqrt((double)w->n_target * GRN_LAT_A * GRN_LAT_A * GRN_LAT_G / (2.0 * wz * aspect));
  l0 = l0 < 2.0 * GRN_LAT_A ? 2.0 * GRN_LAT_A : l0;
  /* runout grows about linearly with the aspect ratio (≈ 1–2 × a·L0): room for 3 × a·L0 */
  const double x1 = l0 * (2.0 + 3.0 * aspect);
  st(w)->ch_wz = wz;
  st(w)->ch_l0 = l0;
  grn_geom *g = &w->geom;
  g->floor_y = 0.0;
  g->fx0 = -l0;
  g->fx1 = x1;
  g->fz0 = -wz;
  g->fz1 = wz;
  g->box = true;
  g->xmin = -l0;
  g->xmax = INFINITY; /* the channel ends in a drop: grains run off its end */
  g->zmin = -wz;
  g->zmax = wz;
  g->mu_wall = w->param[GRN_P_MU];
  g->kill_y = -1.0;
  g->dam = true;
  g->dam_x = 0.0;
  g->dam_edge = -1.0; /* closed: it holds every grain */
  st(w)->dam_pulling = false;
  st(w)->dam_speed = PULL_SPEED;
  int rc = grn__hmap_init(w, -l0, -wz, grn__hmap_cells(l0 + x1), grn__hmap_cells(2.0 * wz));
  if (rc == GRN_OK) {
    rc = grn__fill_lattice(w, w->n_target, -l0, 0.0, -wz, wz, 0.12);
  }
  if (rc != GRN_OK) {
    return rc;
  }
  /* the dam reaches 0.5 m over the column's top */
  double top = 0.0;
  for (int i = 0; i < w->n; i++) {
    top = w->pos[i].y > top ? w->pos[i].y : top;
  }
  st(w)->dam_top = top + 0.5;
  return GRN_OK;
}

static void slump_script(grn_world *w) {
  if (st(w)->dam_pulling) {
    w->geom.dam_edge += st(w)->dam_speed * GRN_H;
    if (w->geom.dam_edge > st(w)->dam_top) {
      w->geom.dam = false;
      st(w)->dam_pulling = false;
    }
  }
}

static void slump_measure(grn_world *w) {
  grn__channel_profile(w, st(w)->ch_wz);
  grn__common_measures(w);
  w->meas.state = grn__plain_state(w);
}

static int slump_act(grn_world *w, const grn_action *a, grn_error *err) {
  if (a->kind != GRN_A_PULL_DAM) {
    return grn__fail(err, GRN_E_UNSUPPORTED, grn_action_name(a->kind),
                     "scene 'slump' has no action '%s'", grn_action_name(a->kind));
  }
  if (!w->geom.dam) {
    return grn__fail(err, GRN_E_INVALID, "pull_dam", "the dam is already gone");
  }
  st(w)->dam_pulling = true;
  st(w)->dam_speed = a->nargs == 1 ? a->args[0] : PULL_SPEED;
  if (w->geom.dam_edge < 0.0) {
    w->geom.dam_edge = 0.0;
  }
  return GRN_OK;
}

static bool slump_busy(const grn_world *w) {
  return st(w)->dam_pulling;
}

/* Restore (issue 16): the channel's lengths and the dam's top and speed are finite scene sizes. */
static bool slump_state_ok(const grn_world *w) {
  const slump_state *s = st(w);
  return grn__bool_ok(&s->dam_pulling) && s->ch_wz > 0.0 && s->ch_wz <= GRN_STATE_SIZE &&
         s->ch_l0 > 0.0 && s->ch_l0 <= GRN_STATE_SIZE && grn__within(s->dam_top, GRN_STATE_SIZE) &&
         grn__within(s->dam_speed, GRN_STATE_SIZE);
}

static const grn_param_id slump_params[] = {GRN_P_MU,     GRN_P_MUR,     GRN_P_COH,
                                            GRN_P_AMOUNT, GRN_P_QUALITY, GRN_P_ASPECT};
static const grn_param_info slump_info[] = {P_MU, P_MUR, P_COH(0.0), P_AMOUNT, P_QUALITY, P_ASPECT};
SAME_LEN(slump_params, slump_info);
static const char *const slump_actions[] = {"pull_dam", "tool", "tool_off", "reset"};
static const grn_plot_info slump_plots[] = {
    PLOT("Angle, deg · runout front, m", S(GRN_M_ANGLE), RIGHT(GRN_M_FRONT))};

const grn_scene grn__scene_slump = {
    .info = {"slump", GRN_MODEL_GRANULAR,
             "a column of grains behind a dam in a channel; pull the dam and the column collapses",
             LEN(slump_params), slump_params, slump_info, LEN(slump_actions), slump_actions,
             MEASURES(COMMON M(GRN_M_ANGLE) M(GRN_M_TOP) M(GRN_M_FRONT)), PLOTS(slump_plots)},
    .state_size = sizeof(slump_state),
    .setup = slump_setup,
    .script = slump_script,
    .measure = slump_measure,
    .act = slump_act,
    .calm = 0.08,
    .busy = slump_busy,
    .state_ok = slump_state_ok};
