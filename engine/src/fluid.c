/* SPH water (spec §4, references 002 and 004): Müller–Charypar–Gross kernels, p = k(ρ − ρ0),
 * symmetrised pressure and viscosity, a density pass strictly before the force pass, penalty walls
 * and semi-implicit Euler, on the granular engine's particle store, pair list and gather layout. */
#include "model.h"

#include <string.h>

#define RHO0 1000.0       /* water, kg/m³ */
#define MACH 0.1          /* flow speed over sound speed: density varies by about MACH² = 1 % */
#define CFL 0.4           /* sound crosses at most 0.4 kernel radii per sub-step */
#define SETTLE_DRAG 0.995 /* velocity kept per sub-step while the water settles */
#define BED_SPACING 0.025 /* m: the benchmark's water block */

/* Kernel radius, mass, stiffness, wall springs and sub-steps from the spacing s and the height
 * water can fall (sph_s and sph_fall, set by the scene first):
 *  - h = 2 s gives about 33 neighbours on the starting lattice;
 *  - the mass makes a particle inside the starting cubic lattice exactly ρ0;
 *  - k = c² with c = v / MACH, v the free-fall speed (weakly compressible water);
 *  - walls stiff enough that the deepest layer sinks at most s/4 under the column's weight and a
 *    particle arriving at v stops within s/2; damped at half the critical rate;
 *  - the sub-step is the least of CFL·h/c, the viscous limit h²/(8ν) and a tenth of the wall's
 *    period, so the whole step is fixed by the scene's parameters (and reproducible). */
static void sph_derive(grn_world *w) {
  const double s = w->sph.s, h = 2.0 * s, fall = w->sph.fall;
  w->sph.h = h;
  w->pairs.skin = 0.25 * h;
  w->pairs.cell_rmin = 0.0;
  double sum = 0.0;
  const double h2 = h * h;
  for (int a = -2; a <= 2; a++) {
    for (int b = -2; b <= 2; b++) {
      for (int c = -2; c <= 2; c++) {
        const double r2 = (a * a + b * b + c * c) * s * s;
        if (r2 < h2) {
          sum += (h2 - r2) * (h2 - r2) * (h2 - r2);
        }
      }
    }
  }
  w->sph.m = RHO0 / (315.0 / (64.0 * GRN_PI * pow(h, 9.0)) * sum);
  const double v = sqrt(2.0 * GRN_G * fall), c = v / MACH;
  w->sph.k = c * c;
  const double k_load = 4.0 * GRN_G * fall / (s * s), k_hit = (v / (0.5 * s)) * (v / (0.5 * s));
  w->sph.wall_k = k_load > k_hit ? k_load : k_hit;
  const double omega = sqrt(w->sph.wall_k);
  w->sph.wall_c = omega;
  const double nu = grn__param(w, GRN_SP_VISC) / RHO0;
  double dt = CFL * h / c;
  if (nu > 0.0 && 0.125 * h * h / nu < dt) {
    dt = 0.125 * h * h / nu;
  }
  if (0.2 / omega < dt) {
    dt = 0.2 / omega;
  }
  const int sub = (int)ceil(GRN_H / dt - 1e-9);
  w->sph.substeps = sub < 1 ? 1 : sub;
}

/* A water particle: radius h/2, so the pair list (reach r_a + r_b + skin) holds every pair
 * closer than h; the drawn sphere is that radius too. */
int grn__sph_add(grn_world *w, double x, double y, double z) {
  const grn_vec3 v0 = {0.0, 0.0, 0.0};
  const int rc = grn__add_grain(w, x, y, z, 0.5 * w->sph.h, v0);
  if (rc == GRN_OK) {
    w->inv_m[w->n - 1] = 1.0 / w->sph.m;
  }
  return rc;
}

/* Room for the per-particle arrays and one table row per listed pair. */
static int sph_arrays(grn_world *w) {
  if (w->n > w->sph.cap) {
    const int nc = w->n + w->n / 4 + 16;
    grn_vec3 *acc = grn__alloc(w, sizeof(grn_vec3) * (size_t)nc);
    double *rho = grn__alloc(w, sizeof(double) * (size_t)nc);
    double *prs = grn__alloc(w, sizeof(double) * (size_t)nc);
    if (!acc || !rho || !prs) {
      grn__free(w, acc, sizeof(grn_vec3) * (size_t)nc);
      grn__free(w, rho, sizeof(double) * (size_t)nc);
      grn__free(w, prs, sizeof(double) * (size_t)nc);
      return GRN_E_NOMEM;
    }
    grn__free(w, w->sph.acc, sizeof(grn_vec3) * (size_t)w->sph.cap);
    grn__free(w, w->sph.rho, sizeof(double) * (size_t)w->sph.cap);
    grn__free(w, w->sph.prs, sizeof(double) * (size_t)w->sph.cap);
    w->sph.acc = acc;
    w->sph.rho = rho;
    w->sph.prs = prs;
    w->sph.cap = nc;
  }
  const int rows = w->pairs.m; /* 3 per listed pair */
  if (rows > w->sph.tcap) {
    const int nc = rows + rows / 4 + 64;
    double *t = grn__alloc(w, 3 * sizeof(double) * (size_t)nc);
    if (!t) {
      return GRN_E_NOMEM;
    }
    grn__free(w, w->sph.tab, 3 * sizeof(double) * (size_t)w->sph.tcap);
    w->sph.tab = t;
    w->sph.tcap = nc;
  }
  return GRN_OK;
}

/* Density pass: poly6 of every listed pair into the table, then each particle gathers its own
 * rows (owned, then referenced, in pair order) so the sum never depends on the thread count.
 * Local restrict pointers: table stores cannot alias the particle arrays, so the compiler keeps
 * them in registers (the loops ran at 20 cycles a pair through w->). */
static void density_pass(grn_world *w) {
  const int nl = w->pairs.nl, n = w->n, nthreads = w->opt.threads;
  const double h2 = w->sph.h * w->sph.h;
  const double coef = w->sph.m * 315.0 / (64.0 * GRN_PI * pow(w->sph.h, 9.0));
  const double k = w->sph.k;
  const grn_vec3 *restrict pos = w->pos;
  const int32_t *restrict pstart = w->pairs.pstart, *restrict pb = w->pairs.pb,
                          *restrict rstart = w->pairs.rstart, *restrict rref = w->pairs.rref;
  double *restrict tab = w->sph.tab, *restrict rho = w->sph.rho, *restrict prs = w->sph.prs;
  (void)nthreads;
#pragma omp parallel for schedule(static) num_threads(nthreads)
  for (int a = 0; a < nl; a++) {
    const grn_vec3 pa = pos[a];
    for (int p = pstart[a]; p < pstart[a + 1]; p++) {
      const grn_vec3 q = pos[pb[p]];
      const double dx = pa.x - q.x, dy = pa.y - q.y, dz = pa.z - q.z;
      /* fmax, not a branch: half the listed pairs lie beyond h, a coin toss for the predictor */
      const double x = fmax(h2 - (dx * dx + dy * dy + dz * dz), 0.0);
      tab[3 * (size_t)p] = x * x * x;
    }
  }
#pragma omp parallel for schedule(static) num_threads(nthreads)
  for (int i = 0; i < n; i++) {
    double sum = h2 * h2 * h2; /* the particle's own share */
    if (i < nl) {
      for (int p = pstart[i]; p < pstart[i + 1]; p++) {
        sum += tab[3 * (size_t)p];
      }
      for (int q = rstart[i]; q < rstart[i + 1]; q++) {
        sum += tab[3 * (size_t)rref[q]];
      }
    }
    rho[i] = coef * sum;
    /* p = k(ρ − ρ0), cut at zero: the summed density of a particle at the free surface or a wall
     * lacks the neighbours it would have inside, and with the stiff k of weakly compressible
     * water its negative pressure would pull the surface inward at 10⁴ m/s² */
    const double p = k * (rho[i] - RHO0);
    prs[i] = p > 0.0 ? p : 0.0;
  }
}

/* Penalty walls (reference 004): a spring on the part of the particle's radius s/2 that has
 * crossed a wall, damped, never pulling. */
static inline double wall(double pen, double vn, double k, double c) {
  if (pen <= 0.0) {
    return 0.0;
  }
  const double f = k * pen - c * vn;
  return f > 0.0 ? f : 0.0;
}

/* Force pass, after the density pass has finished for every particle: the pair's acceleration on
 * its owner a, m·[(pa/ρa² + pb/ρb²)·|∇W_spiky| (xa − xb)/r + μ/(ρa ρb)·∇²W_visc (vb − va)]; the
 * partner gets its negative, so the pair's momentum balances to the bit. The pressure term is
 * Monaghan's symmetric form: reference 002's m(pa + pb)/(2 ρa ρb) is symmetric too but, where the
 * neighbours' kernel gradients cancel, it is only half the pressure gradient — water at rest then
 * needs twice the hydrostatic pressure to carry its weight (measured: 2.1 ρ0·g per metre). */
static void force_pass(grn_world *w) {
  const int nl = w->pairs.nl, n = w->n, nthreads = w->opt.threads;
  const double h = w->sph.h, m = w->sph.m, mu = grn__param(w, GRN_SP_VISC);
  const double kern = 45.0 / (GRN_PI * pow(h, 6.0)); /* spiky gradient and viscosity Laplacian */
  (void)nthreads;
  const grn_vec3 *restrict pos = w->pos, *restrict vel = w->vel;
  const int32_t *restrict pstart = w->pairs.pstart, *restrict pb = w->pairs.pb;
  const double *restrict rho = w->sph.rho, *restrict prs = w->sph.prs;
  double *restrict tab = w->sph.tab;
#pragma omp parallel for schedule(static) num_threads(nthreads)
  for (int a = 0; a < nl; a++) {
    const grn_vec3 pa = pos[a], va = vel[a];
    const double ra = rho[a], qa = prs[a];
    for (int p = pstart[a]; p < pstart[a + 1]; p++) {
      const int b = pb[p];
      const double dx = pa.x - pos[b].x, dy = pa.y - pos[b].y, dz = pa.z - pos[b].z;
      /* branch-free as in the density pass: beyond h, x = 0 zeroes both terms; the floor on r
       * only matters for particles closer than 1e-12 m, which then push along that tiny gap */
      const double r = sqrt(dx * dx + dy * dy + dz * dz), x = fmax(h - r, 0.0), rb = rho[b];
      double *t = &tab[3 * (size_t)p];
      const double fp = m * (qa / (ra * ra) + prs[b] / (rb * rb)) * kern * x * x / fmax(r, 1e-12);
      const double fv = mu * m / (ra * rb) * kern * x;
      t[0] = fp * dx + fv * (vel[b].x - va.x);
      t[1] = fp * dy + fv * (vel[b].y - va.y);
      t[2] = fp * dz + fv * (vel[b].z - va.z);
    }
  }
  const grn_geom *g = &w->geom;
  const double rp = 0.5 * w->sph.s, kw = w->sph.wall_k, cw = w->sph.wall_c;
#pragma omp parallel for schedule(static) num_threads(nthreads)
  for (int i = 0; i < n; i++) {
    grn_vec3 acc = w->gravity;
    if (i < nl) {
      for (int p = w->pairs.pstart[i]; p < w->pairs.pstart[i + 1]; p++) {
        const double *t = &tab[3 * (size_t)p];
        acc.x += t[0];
        acc.y += t[1];
        acc.z += t[2];
      }
      for (int q = w->pairs.rstart[i]; q < w->pairs.rstart[i + 1]; q++) {
        const double *t = &tab[3 * (size_t)w->pairs.rref[q]];
        acc.x -= t[0];
        acc.y -= t[1];
        acc.z -= t[2];
      }
    }
    const grn_vec3 p = w->pos[i], v = w->vel[i];
    if (isfinite(g->floor_y)) {
      acc.y += wall(rp - (p.y - g->floor_y), v.y, kw, cw);
    }
    if (g->box) {
      acc.x += wall(rp - (p.x - g->xmin), v.x, kw, cw);
      acc.x -= wall(rp - (g->xmax - p.x), -v.x, kw, cw);
      acc.z += wall(rp - (p.z - g->zmin), v.z, kw, cw);
      acc.z -= wall(rp - (g->zmax - p.z), -v.z, kw, cw);
    }
    w->sph.acc[i] = acc;
  }
}

/* Semi-implicit Euler (symplectic): v += a·dt, then x += v·dt. A particle whose state is no
 * longer finite is removed, as grains are. */
static void integrate(grn_world *w, double dt, bool settling) {
  const int n = w->n, nthreads = w->opt.threads;
  double vmax2 = 0.0;
  (void)nthreads;
#pragma omp parallel for schedule(static) num_threads(nthreads) reduction(max : vmax2)
  for (int i = 0; i < n; i++) {
    grn_vec3 v = w->vel[i];
    v.x += w->sph.acc[i].x * dt;
    v.y += w->sph.acc[i].y * dt;
    v.z += w->sph.acc[i].z * dt;
    if (settling) {
      v.x *= SETTLE_DRAG;
      v.y *= SETTLE_DRAG;
      v.z *= SETTLE_DRAG;
    }
    w->vel[i] = v;
    w->pos[i].x += v.x * dt;
    w->pos[i].y += v.y * dt;
    w->pos[i].z += v.z * dt;
    const double v2 = v.x * v.x + v.y * v.y + v.z * v.z;
    vmax2 = v2 > vmax2 ? v2 : vmax2;
  }
  for (int i = 0; i < n; i++) {
    const grn_vec3 p = w->pos[i], v = w->vel[i];
    if ((w->flags[i] & GRN_F_ALIVE) && !isfinite(p.x + p.y + p.z + v.x + v.y + v.z)) {
      grn__kill(w, i);
    }
  }
  w->fig.vmax = isfinite(vmax2) ? sqrt(vmax2) : 0.0;
  w->pairs.disp += w->fig.vmax * dt;
}

/* A pair list fit for the current positions, room for them, and their densities: the start of
 * every sub-step, and of a measurement taken before the first step. */
static int density_now(grn_world *w) {
  if (grn__must_rebuild(w)) {
    const int rc = grn__rebuild(w);
    if (rc != GRN_OK) {
      return rc;
    }
  }
  grn__pair_refs(w);
  const int rc = sph_arrays(w);
  if (rc != GRN_OK) {
    return rc;
  }
  density_pass(w);
  return GRN_OK;
}

static int refresh_density(grn_world *w) {
  if (w->sph.valid) {
    return GRN_OK;
  }
  const int rc = density_now(w);
  w->sph.valid = rc == GRN_OK;
  return rc;
}

static int sph_step(grn_world *w) {
  const double dt = GRN_H / w->sph.substeps;
  const bool settling = w->t < w->settle.drag;
  for (int k = 0; k < w->sph.substeps; k++) {
    const int rc = density_now(w);
    if (rc != GRN_OK) {
      return rc;
    }
    force_pass(w);
    integrate(w, dt, settling);
  }
  w->sph.valid = false; /* rho belongs to the positions before the last drift */
  return GRN_OK;
}

void grn__sph_energy(const grn_world *w, double *kinetic, double *potential) {
  double k = 0.0, u = 0.0;
  const double y0 = isfinite(w->geom.floor_y) ? w->geom.floor_y : 0.0;
  for (int i = 0; i < w->n; i++) {
    if (w->flags[i] & GRN_F_ALIVE) {
      const grn_vec3 v = w->vel[i];
      const double m = 1.0 / w->inv_m[i];
      k += 0.5 * m * (v.x * v.x + v.y * v.y + v.z * v.z);
      u += m * GRN_G * (w->pos[i].y - y0);
    }
  }
  *kinetic = k;
  *potential = u;
}

/* Water measurements: energies; the front (furthest x reached by water that is not spray:
 * particles at half the rest density or more), the height at the left wall and the top. */
void grn__sph_measure(grn_world *w) {
  if (refresh_density(w) != GRN_OK) {
    return; /* out of memory: the last sample stands */
  }
  double k, u;
  grn__sph_energy(w, &k, &u);
  const double rp = 0.5 * w->sph.s, wall_band = w->geom.xmin + 2.0 * w->sph.s;
  const double y0 = w->geom.floor_y;
  double front = -INFINITY, height = y0, top = y0;
  for (int i = 0; i < w->n; i++) {
    if (!(w->flags[i] & GRN_F_ALIVE) || w->sph.rho[i] < 0.5 * RHO0) {
      continue;
    }
    const grn_vec3 p = w->pos[i];
    front = p.x + rp > front ? p.x + rp : front;
    top = p.y + rp > top ? p.y + rp : top;
    if (p.x < wall_band && p.y + rp > height) {
      height = p.y + rp;
    }
  }
  if (w->geom.box && front > w->geom.xmax) {
    front = w->geom.xmax; /* a particle pressed into the far wall is at the wall */
  }
  grn__put(w, GRN_SM_T, w->t);
  grn__put(w, GRN_SM_ALIVE, w->fig.alive);
  grn__put(w, GRN_SM_KINETIC, k);
  grn__put(w, GRN_SM_POTENTIAL, u);
  grn__put(w, GRN_SM_ENERGY, k + u);
  grn__put(w, GRN_SM_FRONT, isfinite(front) ? front - w->geom.xmin : NAN);
  grn__put(w, GRN_SM_HEIGHT, height - w->geom.floor_y);
  grn__put(w, GRN_SM_TOP, top - w->geom.floor_y);
  w->meas.state = w->t < w->settle.drag ? GRN_STATE_SETTLING : GRN_STATE_RUNNING;
}

/* ---- the benchmark's block of water at rest ------------------------------------------------- */
static void bed_dims(int n, int *nxz, int *ny) {
  int a = (int)lround(cbrt(n / 2.0));
  a = a < 2 ? 2 : a;
  *nxz = a;
  *ny = (n + a * a - 1) / (a * a);
}

/* The height the bed's water can fall: its depth. */
double grn__sph_bed_depth(int n) {
  int nxz, ny;
  bed_dims(n, &nxz, &ny);
  return ny * BED_SPACING;
}

double grn__sph_bed_spacing(void) {
  return BED_SPACING;
}

/* n particles on a cubic lattice filling a square tank twice as deep as wide, last layer
 * partial; drag settles it for 1 s plus 2 s per metre of depth. */
int grn__sph_bed(grn_world *w) {
  const int n = w->n_target;
  int nxz, ny;
  bed_dims(n, &nxz, &ny);
  const double s = w->sph.s;
  grn_geom *g = &w->geom;
  g->floor_y = 0.0;
  g->box = true;
  g->xmin = g->zmin = 0.0;
  g->xmax = g->zmax = nxz * s;
  g->fx0 = g->fz0 = 0.0;
  g->fx1 = g->fz1 = nxz * s;
  if (grn__reserve_grains(w, n) != GRN_OK) {
    return GRN_E_NOMEM;
  }
  for (int q = 0; q < n; q++) {
    const int layer = q / (nxz * nxz), r = q % (nxz * nxz), row = r / nxz;
    if (grn__sph_add(w, (r % nxz + 0.5) * s, (layer + 0.5) * s, (row + 0.5) * s) != GRN_OK) {
      return GRN_E_NOMEM;
    }
  }
  w->settle.drag = 1.0 + 2.0 * ny * s;
  return GRN_OK;
}

static void sph_free(grn_world *w) {
  grn__free(w, w->sph.acc, sizeof(grn_vec3) * (size_t)w->sph.cap);
  grn__free(w, w->sph.rho, sizeof(double) * (size_t)w->sph.cap);
  grn__free(w, w->sph.prs, sizeof(double) * (size_t)w->sph.cap);
  grn__free(w, w->sph.tab, 3 * sizeof(double) * (size_t)w->sph.tcap);
  w->sph.acc = NULL;
  w->sph.rho = w->sph.prs = w->sph.tab = NULL;
  w->sph.cap = w->sph.tcap = 0;
}

static void sph_changed(grn_world *w) {
  w->sph.valid = false; /* densities of the old parameters */
}

static void sph_stats(const grn_world *w, grn_world_stats *out) {
  out->substeps = w->sph.substeps;
  out->tree = false;
  out->forces = "pairs";
}

/* 7 µs per particle on a slow machine: density and force sums over ~30 neighbours, and CFL
 * sub-steps (the daemon's pacing figure). */
static double sph_cost(const grn_world_def *def, int n) {
  (void)def;
  return 70.0 * n;
}

const grn_model_ops grn__model_fluid = {.kind = GRN_MODEL_FLUID,
                                        .info = {"fluid", "water particles", false, true},
                                        .pairs = true,
                                        .derive = sph_derive,
                                        .step = sph_step,
                                        .measure = grn__sph_measure,
                                        .changed = sph_changed,
                                        .stats = sph_stats,
                                        .free = sph_free,
                                        .cost = sph_cost};
