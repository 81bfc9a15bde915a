/* Measurements of spec §3: the height map of resting grains and the pile angle fitted to its
 * radial profile (reference 000, "山を測る"). */
#include "internal.h"

#include <string.h>

int grn__hmap_cells(double extent) {
  return (int)ceil(extent / GRN_CELL_MAP - 1e-9);
}

int grn__hmap_init(grn_world *w, double x0, double z0, int nx, int nz) {
  grn__free(w, w->maps.hmap, sizeof(double) * (size_t)w->maps.hnx * (size_t)w->maps.hnz);
  w->maps.hnx = w->maps.hnz = 0;
  w->maps.hmap = grn__alloc(w, sizeof(double) * (size_t)nx * (size_t)nz);
  if (!w->maps.hmap && (size_t)nx * (size_t)nz > 0) { /* water and bodies have no height map */
    return GRN_E_NOMEM;
  }
  w->maps.hnx = nx;
  w->maps.hnz = nz;
  w->maps.hx0 = x0;
  w->maps.hz0 = z0;
  return GRN_OK;
}

/* Top (y + r) of the grains resting in each 0.2 m cell: falling grains (> 1 m/s) do not count. */
void grn__surface(grn_world *w, double y0, double only_above) {
  const int cells = w->maps.hnx * w->maps.hnz;
  for (int c = 0; c < cells; c++) {
    w->maps.hmap[c] = y0;
  }
  for (int i = 0; i < w->n; i++) {
    if (!(w->flags[i] & GRN_F_ALIVE)) {
      continue;
    }
    const grn_vec3 p = w->pos[i], v = w->vel[i];
    if (p.y < only_above || v.x * v.x + v.y * v.y + v.z * v.z > 1.0) {
      continue;
    }
    const double fa = floor((p.x - w->maps.hx0) / GRN_CELL_MAP),
                 fb = floor((p.z - w->maps.hz0) / GRN_CELL_MAP);
    if (fa < 0 || fb < 0 || fa >= w->maps.hnx || fb >= w->maps.hnz) {
      continue;
    }
    const int c = (int)fa + w->maps.hnx * (int)fb;
    const double h = p.y + w->rad[i];
    w->maps.hmap[c] = h > w->maps.hmap[c] ? h : w->maps.hmap[c];
  }
}

double grn__top_at(const grn_world *w, double x, double z) {
  const double fa = floor((x - w->maps.hx0) / GRN_CELL_MAP),
               fb = floor((z - w->maps.hz0) / GRN_CELL_MAP);
  if (fa < 0 || fb < 0 || fa >= w->maps.hnx || fb >= w->maps.hnz) {
    return w->geom.floor_y;
  }
  return w->maps.hmap[(int)fa + w->maps.hnx * (int)fb];
}

/* Least-squares line through bins k0..k1 whose mean height lies in [lo, hi]; stops at the first
 * bin below lo. Returns the slope, NaN with fewer than 3 bins. */
static double fit_bins(grn_world *w, int k0, int k1, double lo, double hi, double pos0,
                       double step) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0, xa = NAN, xb = NAN;
  int c = 0;
  for (int q = 0; q < 4; q++) {
    w->meas.line[q] = NAN;
  }
  for (int k = k0; k < k1; k++) {
    if (!w->maps.binn[k]) {
      continue;
    }
    const double v = w->maps.bin[k] / w->maps.binn[k], x = pos0 + (k + 0.5) * step;
    if (v < lo) {
      break;
    }
    if (v > hi) {
      continue;
    }
    xa = c == 0 ? x : xa;
    xb = x;
    sx += x;
    sy += v;
    sxx += x * x;
    sxy += x * v;
    c++;
  }
  if (c < 3) {
    return NAN;
  }
  const double slope = (c * sxy - sx * sy) / (c * sxx - sx * sx), y0 = (sy - slope * sx) / c;
  w->meas.line[0] = xa;
  w->meas.line[1] = y0 + slope * xa;
  w->meas.line[2] = xb;
  w->meas.line[3] = y0 + slope * xb;
  return slope;
}

/* Pile angle: highest cell hm (none below 0.5 m); centre = height-weighted centre of the cells
 * above 0.8·hm; mean height in one-cell rings around it; peak = highest of the first 6 rings; the
 * line is fitted to rings between 25 % and 80 % of the peak, which leaves out the rounded top and
 * the grains scattered at the foot. */
void grn__pile_angle(grn_world *w) {
  const double y0 = w->geom.floor_y, cs = GRN_CELL_MAP;
  grn__surface(w, y0, -INFINITY);
  double hm = 0.0;
  const int cells = w->maps.hnx * w->maps.hnz;
  for (int c = 0; c < cells; c++) {
    hm = w->maps.hmap[c] - y0 > hm ? w->maps.hmap[c] - y0 : hm;
  }
  grn__put(w, GRN_SM_TOP, hm);
  grn__put(w, GRN_SM_ANGLE, NAN);
  grn__put(w, GRN_SM_CX, NAN);
  grn__put(w, GRN_SM_CZ, NAN);
  for (int q = 0; q < 4; q++) {
    w->meas.line[q] = NAN;
  }
  if (hm < 0.5) {
    return;
  }
  double sw = 0, cx = 0, cz = 0;
  for (int b = 0; b < w->maps.hnz; b++) {
    for (int a = 0; a < w->maps.hnx; a++) {
      const double h = w->maps.hmap[a + w->maps.hnx * b] - y0;
      if (h > 0.8 * hm) {
        sw += h;
        cx += h * (w->maps.hx0 + (a + 0.5) * cs);
        cz += h * (w->maps.hz0 + (b + 0.5) * cs);
      }
    }
  }
  cx /= sw;
  cz /= sw;
  grn__put(w, GRN_SM_CX, cx);
  grn__put(w, GRN_SM_CZ, cz);
  memset(w->maps.bin, 0, sizeof w->maps.bin);
  memset(w->maps.binn, 0, sizeof w->maps.binn);
  for (int b = 0; b < w->maps.hnz; b++) {
    for (int a = 0; a < w->maps.hnx; a++) {
      const double r = hypot(w->maps.hx0 + (a + 0.5) * cs - cx, w->maps.hz0 + (b + 0.5) * cs - cz);
      const int k = (int)(r / cs);
      if (k < GRN_NBIN) {
        w->maps.bin[k] += w->maps.hmap[a + w->maps.hnx * b] - y0;
        w->maps.binn[k]++;
      }
    }
  }
  double peak = 0.0;
  for (int k = 0; k < 6; k++) {
    if (w->maps.binn[k] && w->maps.bin[k] / w->maps.binn[k] > peak) {
      peak = w->maps.bin[k] / w->maps.binn[k];
    }
  }
  const double slope = fit_bins(w, 0, GRN_NBIN, 0.25 * peak, 0.8 * peak, 0.0, cs);
  grn__put(w, GRN_SM_ANGLE, isnan(slope) ? NAN : -atan(slope) * 180.0 / GRN_PI);
}

/* Heights averaged across a channel or box (|z| ≤ half_w) into one bin per cell along x. */
static double profile_bins(grn_world *w, double half_w) {
  const double y0 = w->geom.floor_y, cs = GRN_CELL_MAP;
  memset(w->maps.bin, 0, sizeof w->maps.bin);
  memset(w->maps.binn, 0, sizeof w->maps.binn);
  double hm = 0.0;
  for (int b = 0; b < w->maps.hnz; b++) {
    const double z = w->maps.hz0 + (b + 0.5) * cs;
    if (fabs(z) > half_w) {
      continue;
    }
    for (int a = 0; a < w->maps.hnx && a < GRN_NBIN; a++) {
      const double v = w->maps.hmap[a + w->maps.hnx * b] - y0;
      w->maps.bin[a] += v;
      w->maps.binn[a]++;
      hm = v > hm ? v : hm;
    }
  }
  return hm;
}

/* The farthest edge (x + r) of the resting grains whose centres lie in the height map's column
 * of cells k: where, inside that 0.2 m cell, the deposit ends. */
static double cell_front(const grn_world *w, int k) {
  double front = w->maps.hx0 + k * GRN_CELL_MAP;
  for (int i = 0; i < w->n; i++) {
    const grn_vec3 p = w->pos[i], v = w->vel[i];
    if (!(w->flags[i] & GRN_F_ALIVE) || v.x * v.x + v.y * v.y + v.z * v.z > 1.0 ||
        floor((p.x - w->maps.hx0) / GRN_CELL_MAP) != k) {
      continue;
    }
    front = p.x + w->rad[i] > front ? p.x + w->rad[i] : front;
  }
  return front;
}

/* Slump (spec §3): front = farthest x where the mean height across the channel exceeds 0.1 m,
 * reported from the channel's back wall; slope fitted from the peak outward between 20 % and
 * 80 % of the peak. Within that last cell the front is its farthest grain's edge: the cell's own
 * edge put the column's length L0 up to a cell (0.2 m, 12 % of a tall column's L0) too far, and
 * the runout (L∞ − L0)/L0 too short by as much (issue 19). */
void grn__channel_profile(grn_world *w, double half_width) {
  const double cs = GRN_CELL_MAP;
  grn__surface(w, w->geom.floor_y, -INFINITY);
  profile_bins(w, half_width);
  double peak = 0.0;
  int kp = 0, kf = -1;
  for (int k = 0; k < w->maps.hnx && k < GRN_NBIN; k++) {
    if (!w->maps.binn[k]) {
      continue;
    }
    const double v = w->maps.bin[k] / w->maps.binn[k];
    if (v > peak) {
      peak = v;
      kp = k;
    }
    if (v > 0.1) {
      kf = k;
    }
  }
  grn__put(w, GRN_SM_TOP, peak);
  /* the map starts at the back wall */
  grn__put(w, GRN_SM_FRONT, kf < 0 ? 0.0 : cell_front(w, kf) - w->maps.hx0);
  const int end = w->maps.hnx < GRN_NBIN ? w->maps.hnx : GRN_NBIN;
  const double slope = fit_bins(w, kp, end, 0.2 * peak, 0.8 * peak, w->maps.hx0, cs);
  grn__put(w, GRN_SM_ANGLE, isnan(slope) ? NAN : -atan(slope) * 180.0 / GRN_PI);
}

/* Tilt (spec §3): fit over the middle 70 % of the box (half-length lx, half-width wz), in box
 * coordinates; the surface angle relative to the horizontal is the box tilt phi minus the fitted
 * slope's angle. */
void grn__tray_profile(grn_world *w, double lx, double wz, double phi) {
  const double cs = GRN_CELL_MAP;
  grn__surface(w, w->geom.floor_y, -INFINITY);
  grn__put(w, GRN_SM_TOP, profile_bins(w, wz));
  int k0 = (int)ceil((-lx + 0.15 * 2.0 * lx - w->maps.hx0) / cs);
  int k1 = (int)floor((lx - 0.15 * 2.0 * lx - w->maps.hx0) / cs);
  k0 = k0 < 0 ? 0 : k0;
  k1 = k1 > GRN_NBIN ? GRN_NBIN : k1;
  const double slope = fit_bins(w, k0, k1, -1.0, 1e9, w->maps.hx0, cs);
  grn__put(w, GRN_SM_ANGLE, isnan(slope) ? NAN : (phi - atan(slope)) * 180.0 / GRN_PI);
}

void grn__common_measures(grn_world *w) {
  grn__put(w, GRN_SM_T, w->t);
  grn__put(w, GRN_SM_OVER_MAX, w->fig.over_max);
  grn__put(w, GRN_SM_FLOWING, w->fig.flowing);
  grn__put(w, GRN_SM_ALIVE, w->fig.alive);
}

grn_state grn__plain_state(const grn_world *w) {
  return w->sleep.on              ? GRN_STATE_ASLEEP
         : w->t < w->settle.until ? GRN_STATE_SETTLING
                                  : GRN_STATE_RUNNING;
}
