/* Scene "tilt" (spec §3): a box partly filled with grains, tilted about its bottom axis. The box
 * stays axis-aligned and gravity turns instead, gradually; the surface angle is measured
 * relative to the horizontal. */
#include "../internal.h"

static void set_gravity(grn_world *w) {
  /* the +x end goes down as phi grows: in box coordinates gravity leans toward +x */
  w->gravity = (grn_vec3){GRN_G * sin(w->phi), -GRN_G * cos(w->phi), 0.0};
}

static int tilt_setup(grn_world *w) {
  const double sc = cbrt((double)w->n_target / 3000.0);
  const double lx = 3.0 * sc, wz = 1.0 * sc;
  w->box_lx = lx;
  w->ch_wz = wz;
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
  g->mu_wall = w->param[GRN_P_MU];
  g->kill_y = -1.0;
  w->phi = w->phi_target = 0.0;
  w->phi_rate = w->param[GRN_P_TILT_RATE] * GRN_PI / 180.0;
  set_gravity(w);
  int rc = grn__hmap_init(w, -lx, -wz, grn__hmap_cells(2.0 * lx), grn__hmap_cells(2.0 * wz));
  if (rc == GRN_OK) {
    rc = grn__fill_lattice(w, w->n_target, -lx, lx, -wz, wz, 0.12);
  }
  return rc;
}

static void tilt_script(grn_world *w) {
  if (w->phi != w->phi_target) {
    const double step = w->phi_rate * GRN_H, d = w->phi_target - w->phi;
    w->phi = fabs(d) <= step ? w->phi_target : w->phi + (d > 0.0 ? step : -step);
    set_gravity(w);
  }
}

static void tilt_measure(grn_world *w) {
  grn__tray_profile(w);
  grn__common_measures(w);
  w->meas.state = grn__plain_state(w);
}

static int tilt_act(grn_world *w, const grn_action *a, grn_error *err) {
  if (a->kind != GRN_A_TILT) {
    return grn__fail(err, GRN_E_UNSUPPORTED, grn_action_name(a->kind),
                     "scene 'tilt' has no action '%s'", grn_action_name(a->kind));
  }
  w->phi_target = a->args[0] * GRN_PI / 180.0;
  w->phi_rate = (a->nargs == 2 ? a->args[1] : w->param[GRN_P_TILT_RATE]) * GRN_PI / 180.0;
  return GRN_OK;
}

const grn_scene_impl grn__scene_tilt = {.setup = tilt_setup,
                                        .script = tilt_script,
                                        .measure = tilt_measure,
                                        .act = tilt_act,
                                        .calm = 0.08};
