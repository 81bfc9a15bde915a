/* Scene "drum": a horizontal drum (axis along z), half filled with grains and turning at `rpm`:
 * the classic measurement of the dynamic angle of repose (GDR MiDi 2004, §5 "rotating drums";
 * Mellmann 2001). The flowing surface's angle is fitted to the free surface in the cross-section;
 * the Froude number Fr = w²R/g places the run among Mellmann's regimes (rolling about
 * 1e-4..1e-2, cascading to 0.1, cataracting to 1, centrifuging beyond). */
#include "params.h"

/* Its parameter after the granular ones, and its measurements. */
enum { RPM = GRANULAR_PARAM_COUNT, DRUM_PARAMS };
enum { ANGLE = 1, FROUDE = 5 };

#define DRUM_MU                                                                                    \
  1.0 /* drum wall: rough (grains glued on, as in experiments), so the bed does not slip */
#define CAP_MU 0.3   /* end caps: smooth plates (glass), which raise the angle least */
#define FIT_SPAN 0.5 /* the surface is fitted over |x| < FIT_SPAN·R, away from the curved ends */

/* Radius and length from the grain count: half the drum holds the grains at the bulk density
 * RHO_B, with the length equal to the radius (at 3000 grains R = 2.4 m, 24 grain diameters). */
static double radius_of(const grn_world *w) {
  const double bulk = GRN_PI / 6.0 * GRN_D0 * GRN_D0 * GRN_D0 * GRN_RHO / GRN_RHO_B;
  return cbrt(2.0 * w->n_target * bulk / GRN_PI);
}

static double length_of(double radius) {
  return radius > 4.0 * GRN_LAT_A ? radius : 4.0 * GRN_LAT_A;
}

static double omega_of(const grn_world *w) {
  return w->param[RPM] * 2.0 * GRN_PI / 60.0;
}

/* The lattice from the bottom up, clipped to the circle: places up to n_target grains (or only
 * counts the sites when `place` is false) and returns how many, -1 when out of memory. */
static int lattice(grn_world *w, double rd, double len, bool place, double *top) {
  const int nx = (int)floor(2.0 * rd / GRN_LAT_A), nz = (int)floor(len / GRN_LAT_A + 1e-9);
  const double lim = rd - 0.5 * GRN_D0 * (1.0 + GRN_SPREAD) - 0.01;
  int placed = 0;
  for (int layer = 0; placed < w->n_target; layer++) {
    const double sh = (layer & 1) ? 0.5 * GRN_LAT_A : 0.0;
    const double y = rd - lim + 0.01 + layer * GRN_LAT_G, dy = y - rd;
    if (dy > lim) {
      break; /* the drum is full */
    }
    const int mx = (layer & 1) ? nx - 1 : nx, mz = (layer & 1) ? nz - 1 : nz;
    for (int b = 0; b < mz && placed < w->n_target; b++) {
      for (int a = 0; a < mx && placed < w->n_target; a++) {
        const double x = -rd + (a + 0.5) * GRN_LAT_A + sh;
        const double z = -0.5 * len + (b + 0.5) * GRN_LAT_A + sh;
        if (x * x + dy * dy > lim * lim) {
          continue;
        }
        const grn_vec3 v0 = {0.0, 0.0, 0.0};
        if (place && grn__add_grain(w, x, y, z, grn__random_radius(w), v0) != GRN_OK) {
          return -1;
        }
        placed++;
        *top = y - (rd - lim);
      }
    }
  }
  return placed;
}

static int drum_setup(grn_world *w) {
  /* a small drum loses much of its lattice to the curved edge: widen it until the lattice holds
   * every grain (at 750 grains and more it does at once) */
  double rd = radius_of(w), top = 0.0;
  while (lattice(w, rd, length_of(rd), false, &top) < w->n_target) {
    rd *= 1.05;
  }
  const double len = length_of(rd);
  grn_geom *g = &w->geom;
  g->floor_y = -INFINITY; /* the drum is the floor */
  g->box = true;          /* its end caps: walls across z only */
  g->xmin = -INFINITY;
  g->xmax = INFINITY;
  g->zmin = -0.5 * len;
  g->zmax = 0.5 * len;
  g->mu_wall = CAP_MU;
  g->drum_r = rd;
  g->drum_y = rd;
  g->drum_w = 0.0; /* turns once the lattice has packed */
  g->drum_mu = DRUM_MU;
  g->kill_y = -1.0;
  int rc = grn__hmap_init(w, -rd, -0.5 * len, grn__hmap_cells(2.0 * rd), grn__hmap_cells(len));
  if (rc != GRN_OK || (rc = grn__reserve_grains(w, w->n_target)) != GRN_OK) {
    return rc;
  }
  if (lattice(w, rd, len, true, &top) < 0) {
    return GRN_E_NOMEM;
  }
  w->settle.drag = grn__settle_time(top);
  return GRN_OK;
}

/* The drum starts turning when the grains have settled; a live rpm change takes effect at once. */
static void drum_script(grn_world *w) {
  w->geom.drum_w = w->t < w->settle.until ? 0.0 : omega_of(w);
}

static bool drum_busy(const grn_world *w) {
  return w->param[RPM] > 0.0;
}

/* Whether grain i touches another grain: a grain in flight above the surface does not count. */
static bool touching(const grn_world *w, int i) {
  if (i >= w->pairs.nl) {
    return false;
  }
  for (int p = w->pairs.pstart[i]; p < w->pairs.pstart[i + 1]; p++) {
    if (w->pairs.pfn[p] > 0.0f) {
      return true;
    }
  }
  for (int q = w->pairs.rstart[i]; q < w->pairs.rstart[i + 1]; q++) {
    if (w->pairs.pfn[w->pairs.rref[q]] > 0.0f) {
      return true;
    }
  }
  return false;
}

/* The free surface in the cross-section: in each 0.2 m cell of x and z the top (y + r) of the
 * grains that touch others (grains in flight do not), averaged along z without the cells at the
 * end caps (their friction holds the surface up); a least-squares line through the columns with
 * |x| < FIT_SPAN·R gives angle = atan|slope|. */
static void drum_measure(grn_world *w) {
  grn__pair_refs(w); /* touching() reads the reference lists */
  const double rd = w->geom.drum_r, bottom = w->geom.drum_y - rd, cs = GRN_CELL_MAP;
  const int cells = w->maps.hnx * w->maps.hnz;
  for (int c = 0; c < cells; c++) {
    w->maps.hmap[c] = bottom;
  }
  for (int i = 0; i < w->n; i++) {
    if (!(w->flags[i] & GRN_F_ALIVE) || !touching(w, i)) {
      continue;
    }
    const double fa = floor((w->pos[i].x - w->maps.hx0) / cs),
                 fb = floor((w->pos[i].z - w->maps.hz0) / cs);
    if (fa < 0 || fb < 0 || fa >= w->maps.hnx || fb >= w->maps.hnz) {
      continue;
    }
    const int c = (int)fa + w->maps.hnx * (int)fb;
    const double h = w->pos[i].y + w->rad[i];
    w->maps.hmap[c] = h > w->maps.hmap[c] ? h : w->maps.hmap[c];
  }
  const int b0 = w->maps.hnz >= 4 ? 1 : 0, b1 = w->maps.hnz >= 4 ? w->maps.hnz - 1 : w->maps.hnz;
  double sx = 0.0, sy = 0.0, sxx = 0.0, sxy = 0.0, x0 = NAN, x1 = NAN;
  int k = 0;
  for (int a = 0; a < w->maps.hnx; a++) {
    const double x = w->maps.hx0 + (a + 0.5) * cs;
    if (fabs(x) > FIT_SPAN * rd) {
      continue;
    }
    double sum = 0.0;
    int c = 0;
    for (int b = b0; b < b1; b++) {
      const double h = w->maps.hmap[a + w->maps.hnx * b];
      if (h > bottom) {
        sum += h;
        c++;
      }
    }
    if (c == 0) {
      continue;
    }
    const double y = sum / c;
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
    x0 = k == 0 ? x : x0;
    x1 = x;
    k++;
  }
  const double den = k * sxx - sx * sx;
  if (k >= 3 && den > 0.0) {
    const double slope = (k * sxy - sx * sy) / den, icpt = (sy - slope * sx) / k;
    grn__put(w, GRN_SM_ANGLE, atan(fabs(slope)) * 180.0 / GRN_PI);
    w->meas.line[0] = x0;
    w->meas.line[1] = icpt + slope * x0;
    w->meas.line[2] = x1;
    w->meas.line[3] = icpt + slope * x1;
  } else {
    grn__put(w, GRN_SM_ANGLE, NAN);
  }
  const double om = omega_of(w);
  w->meas.value[FROUDE] = om * om * rd / GRN_G;
  grn__common_measures(w);
  w->meas.state = grn__plain_state(w);
}

static const grn_param_info drum_params[DRUM_PARAMS] = {
    GRANULAR_PARAMS(0.0),
    [RPM] = {"rpm", "rev/min", 0.5, 20.0, 3.0, false, false,
             "drum rotation speed (3: Fr = 0.02 at 3000 grains; centrifuging near 19)"}};
static const grn_measure_info drum_measures[] = {
    M_T,       [ANGLE] = M_ANGLE, M_OVER_MAX,
    M_FLOWING, M_ALIVE,           [FROUDE] = {"froude", "", "Froude number w^2 R/g", false, false}};
static const char *const drum_actions[] = {"tool", "tool_off", "reset"};
static const grn_plot_info drum_plots[] = {PLOT("Dynamic angle of repose, deg", S(ANGLE))};

const grn_scene grn__scene_drum = {
    .info = {"drum", GRN_MODEL_GRANULAR,
             "a horizontal drum, half filled, turning: its flowing surface stands at the dynamic "
             "angle of repose",
             LEN(drum_params), drum_params, LEN(drum_actions), drum_actions, LEN(drum_measures),
             drum_measures, PLOTS(drum_plots)},
    .setup = drum_setup,
    .script = drum_script,
    .measure = drum_measure,
    .calm = 0.02,
    .busy = drum_busy};
