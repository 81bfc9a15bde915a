/* Pair list (spec §2, reference 001/002): grains renumbered by cell and size, each candidate pair
 * listed once under its larger grain in CSR form, contact history carried across rebuilds. */
#include "internal.h"
#include "model.h"

#include <string.h>

/* Extra reach of a pair beyond touching: wet grains keep a bridge up to GAP_WET apart. */
double grn__reach_gap(const grn_world *w) {
  return grn__param(w, GRN_SP_COH) > 0.0 ? GRN_GAP_WET : 0.0;
}

/* The rebuild's scratch, at least `bytes` (contents dropped); the near refresh borrows it too. */
int grn__scratch(grn_world *w, size_t bytes) {
  if (w->pairs.scr.scratch_bytes >= bytes) {
    return GRN_OK;
  }
  size_t nb = bytes + bytes / 2;
  void *p = grn__alloc(w, nb);
  if (!p) {
    return GRN_E_NOMEM;
  }
  grn__free(w, w->pairs.scr.scratch, w->pairs.scr.scratch_bytes);
  w->pairs.scr.scratch = p;
  w->pairs.scr.scratch_bytes = nb;
  return GRN_OK;
}

/* Grid over the alive grains at `at` (their positions, or the re-listing's reference positions).
 * Cells are at least one full reach wide so the 27-cell stencil finds every candidate; grains
 * outside are clamped to edge cells, which keeps neighbours adjacent. The cell count is capped so a
 * stray fast grain cannot make the grid huge (cells then grow). Returns the largest radius. */
double grn__plan_grid(grn_world *w, const grn_vec3 *at) {
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  double rmax = w->pairs.cell_rmin;
  for (int i = 0; i < w->n; i++) {
    if (!(w->flags[i] & GRN_F_ALIVE)) {
      continue;
    }
    const double p[3] = {at[i].x, at[i].y, at[i].z};
    for (int a = 0; a < 3; a++) {
      lo[a] = p[a] < lo[a] ? p[a] : lo[a];
      hi[a] = p[a] > hi[a] ? p[a] : hi[a];
    }
    rmax = w->rad[i] > rmax ? w->rad[i] : rmax;
  }
  if (!(lo[0] <= hi[0])) {
    lo[0] = lo[1] = lo[2] = 0.0;
    hi[0] = hi[1] = hi[2] = 0.0;
  }
  double cs = 2.0 * rmax + w->pairs.skin + grn__reach_gap(w);
  const double limit = (double)(w->n > 32 ? 2 * w->n : 64);
  for (;;) {
    double c = 1.0;
    for (int a = 0; a < 3; a++) {
      c *= floor((hi[a] - lo[a]) / cs) + 1.0;
    }
    if (c <= limit) {
      break;
    }
    cs *= 1.25;
  }
  w->pairs.scr.grid.cs = cs;
  w->pairs.scr.grid.ox = lo[0];
  w->pairs.scr.grid.oy = lo[1];
  w->pairs.scr.grid.oz = lo[2];
  w->pairs.scr.grid.nx = (int)floor((hi[0] - lo[0]) / cs) + 1;
  w->pairs.scr.grid.ny = (int)floor((hi[1] - lo[1]) / cs) + 1;
  w->pairs.scr.grid.nz = (int)floor((hi[2] - lo[2]) / cs) + 1;
  return rmax;
}

/* Old touching contact kept through a rebuild. */
typedef struct kept {
  grn_hist h;
  int32_t partner; /* new index of the partner */
  float fn;
} kept;

/* Gather an array into the new order through buf (n elements of `elem` bytes), copy it back. */
static void permute(void *arr, size_t elem, const int32_t *perm, int n, void *buf) {
  char *dst = buf;
  const char *src = arr;
  for (int q = 0; q < n; q++) {
    memcpy(dst + (size_t)q * elem, src + (size_t)perm[q] * elem, elem);
  }
  memcpy(arr, buf, elem * (size_t)n);
}

/* Fast grains up to this many are sorted along an axis and find each other there; beyond it,
 * each scans whole cells out to the largest slack (scan_cube), whose cost grows with them only as
 * the cells they reach. */
#define FAST_SORTED 512

/* Positions, radii, slacks and ids of the renumbered grains as planes, with 4 spare lanes at the
 * end, so the scan tests four candidates at a time; with the slow grains' slack e0, the largest
 * radius and slack, the reach gap and how far a cell's bounds may be off by rounding (cells are cut
 * by distance with that much to spare); and, while they are few, the fast grains sorted along the
 * axis they spread most on, with each one's place among them. */
typedef struct planes {
  double *x, *y, *z, *r, *e, *id; /* id: exact as a double, for owns() four at a time */
  double e0, rmax, emax, gap, tol;
  grn_keyed *fk;
  int32_t *frank, nfast;
} planes;

/* Whether grains i and j pair: not both fixed, and within reach of each other once both have
 * used up their slack, ri + rj + gap + ei + ej. Each pair is tested by one grain only (the
 * earlier of two slow grains, the fast one, the earlier of two fast ones); the AVX2 scan makes the
 * same IEEE operations in the same order (no FMA), so both find the same pairs. */
static inline bool listed(const grn_world *w, const planes *pl, int i, int j, bool fi) {
  if (fi && (w->flags[j] & GRN_F_FIXED)) {
    return false;
  }
  const double ddx = pl->x[j] - pl->x[i], ddy = pl->y[j] - pl->y[i], ddz = pl->z[j] - pl->z[i],
               rr = (pl->r[i] + pl->r[j]) + ((pl->gap + pl->e[i]) + pl->e[j]);
  return ddx * ddx + ddy * ddy + ddz * ddz < rr * rr;
}

/* Emits pair {i, j}, its owner first: written while there is room, always counted. */
static inline int emit(const grn_world *w, int32_t *out, int count, int room, int i, int j) {
  if (count < room) {
    const bool oi = grn__owns(w, i, j);
    out[2 * count] = oi ? i : j;
    out[2 * count + 1] = oi ? j : i;
  }
  return count + 1;
}

/* A slow grain's pairs with the slow grains of a run (the fast ones test their own pairs). */
static int scan_run(const grn_world *w, const planes *pl, int i, bool fi, int j0, int j1,
                    int32_t *out, int count, int room) {
  for (int j = j0; j < j1; j++) {
    if (pl->e[j] <= pl->e0 && listed(w, pl, i, j, fi)) {
      count = emit(w, out, count, room, i, j);
    }
  }
  return count;
}

#if defined(__x86_64__) && defined(GRN_SIMD)
#include <immintrin.h>

/* The set bits of a 4-bit mask as four 32-bit lanes, all ones or zero. */
static const int32_t lane_masks[16][4] = {
    {0, 0, 0, 0},   {-1, 0, 0, 0},   {0, -1, 0, 0},   {-1, -1, 0, 0},
    {0, 0, -1, 0},  {-1, 0, -1, 0},  {0, -1, -1, 0},  {-1, -1, -1, 0},
    {0, 0, 0, -1},  {-1, 0, 0, -1},  {0, -1, 0, -1},  {-1, -1, 0, -1},
    {0, 0, -1, -1}, {-1, 0, -1, -1}, {0, -1, -1, -1}, {-1, -1, -1, -1}};

/* Four candidates at a time: lanes out of reach are dropped at once. A grain tests the slow
 * candidates (scan_run); with `wide` (scan_cube) every candidate but itself and the fast ones
 * before it. */
__attribute__((target("avx2"))) static int scan_run_avx2(const grn_world *w, const planes *pl,
                                                         int i, int j0, int j1, bool wide,
                                                         int32_t *out, int count, int room) {
  const __m256d xi = _mm256_set1_pd(pl->x[i]), yi = _mm256_set1_pd(pl->y[i]),
                zi = _mm256_set1_pd(pl->z[i]), ri = _mm256_set1_pd(pl->r[i]),
                gei = _mm256_set1_pd(pl->gap + pl->e[i]), e0 = _mm256_set1_pd(pl->e0),
                idi = _mm256_set1_pd(pl->id[i]);
  const __m128i is = _mm_set1_epi32(i);
  for (int j = j0; j < j1; j += 4) {
    const __m256d dx = _mm256_sub_pd(_mm256_loadu_pd(pl->x + j), xi),
                  dy = _mm256_sub_pd(_mm256_loadu_pd(pl->y + j), yi),
                  dz = _mm256_sub_pd(_mm256_loadu_pd(pl->z + j), zi);
    const __m256d d2 = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy)),
                                     _mm256_mul_pd(dz, dz));
    const __m256d ej = _mm256_loadu_pd(pl->e + j);
    const __m256d rj = _mm256_loadu_pd(pl->r + j);
    const __m256d rr = _mm256_add_pd(_mm256_add_pd(ri, rj), _mm256_add_pd(gei, ej));
    int valid = j1 - j >= 4 ? 15 : (1 << (j1 - j)) - 1;
    int slow = _mm256_movemask_pd(_mm256_cmp_pd(ej, e0, _CMP_LE_OQ));
    if (wide) {
      const int d = i - j; /* lanes after i, and i's own lane */
      slow |= d < 0 ? 15 : (d >= 3 ? 0 : (15 << (d + 1)) & 15);
      valid &= d >= 0 && d < 4 ? ~(1 << d) : 15;
    }
    int bits =
        _mm256_movemask_pd(_mm256_cmp_pd(d2, _mm256_mul_pd(rr, rr), _CMP_LT_OQ)) & slow & valid;
    if (count + 4 <= room) {
      /* (owner, partner) for each kept lane, packed, without a branch per lane: i owns lane k
       * as owns() says, larger radius first, then larger id */
      const __m256d own =
          _mm256_or_pd(_mm256_cmp_pd(ri, rj, _CMP_GT_OQ),
                       _mm256_and_pd(_mm256_cmp_pd(ri, rj, _CMP_EQ_OQ),
                                     _mm256_cmp_pd(idi, _mm256_loadu_pd(pl->id + j), _CMP_GT_OQ)));
      const __m128i lanes = _mm_loadu_si128((const __m128i *)grn__packed_lanes[bits]);
      const __m128i mine = _mm_castps_si128(_mm_permutevar_ps(
          _mm_castsi128_ps(_mm_loadu_si128((const __m128i *)lane_masks[_mm256_movemask_pd(own)])),
          lanes));
      const __m128i js = _mm_add_epi32(lanes, _mm_set1_epi32(j));
      const __m128i a = _mm_blendv_epi8(js, is, mine), b = _mm_blendv_epi8(is, js, mine);
      _mm_storeu_si128((__m128i *)&out[2 * count], _mm_unpacklo_epi32(a, b));
      _mm_storeu_si128((__m128i *)&out[2 * count + 4], _mm_unpackhi_epi32(a, b));
      count += __builtin_popcount((unsigned)bits);
      continue;
    }
    while (bits) {
      count = emit(w, out, count, room, i, j + __builtin_ctz((unsigned)bits));
      bits &= bits - 1;
    }
  }
  return count;
}
#endif

/* Candidates j0 .. j1 − 1 of grain i that are slow (a slow i: after it, a fast i: any). */
static inline int scan_slow(const grn_world *w, const planes *pl, int i, bool fi, int j0, int j1,
                            int32_t *out, int count, int room) {
#if defined(__x86_64__) && defined(GRN_SIMD)
  if (w->opt.simd && !fi) {
    return scan_run_avx2(w, pl, i, j0, j1, false, out, count, room);
  }
#endif
  return scan_run(w, pl, i, fi, j0, j1, out, count, room);
}

/* A fast grain's pairs when fast grains are many: every grain within its reach (its slack and the
 * largest other's beyond the largest radius), whole cells around it, but a fast grain earlier in
 * cell order, which tests the pair itself. */
static int scan_cube(const grn_world *w, const planes *pl, int i, int ix, int iy, int iz, bool fi,
                     int32_t *out, int room) {
  const grn_grid *g = &w->pairs.scr.grid;
  const double reach = pl->r[i] + pl->rmax + pl->gap + pl->e[i] + pl->emax;
  const double kc = ceil(reach / g->cs);
  const int k = kc < (double)(g->nx + g->ny + g->nz) ? (int)kc : g->nx + g->ny + g->nz;
  const int jx0 = ix - k > 0 ? ix - k : 0, jx1 = ix + k < g->nx ? ix + k : g->nx - 1;
  int count = 0;
  for (int jz = iz - k > 0 ? iz - k : 0; jz <= iz + k && jz < g->nz; jz++) {
    for (int jy = iy - k > 0 ? iy - k : 0; jy <= iy + k && jy < g->ny; jy++) {
      const int row = g->nx * (jy + g->ny * jz);
      const int j0 = w->pairs.scr.cstart[row + jx0], j1 = w->pairs.scr.cstart[row + jx1 + 1];
#if defined(__x86_64__) && defined(GRN_SIMD)
      if (w->opt.simd && !fi) {
        count = scan_run_avx2(w, pl, i, j0, j1, true, out, count, room);
        continue;
      }
#endif
      for (int j = j0; j < j1; j++) {
        if (j != i && (pl->e[j] <= pl->e0 || j > i) && listed(w, pl, i, j, fi)) {
          count = emit(w, out, count, room, i, j);
        }
      }
    }
  }
  return count;
}

/* A fast grain's pairs. With the slow grains: those within its reach and their own slack (e0),
 * row by row over the cells that reach touches. With the fast grains: those after it along the
 * axis the fast grains spread most on, where they lie sorted, within its reach and the largest
 * slack. Each reach is as wide as the test of its pairs needs: the slack of a stream's fastest
 * grain no longer widens every fast grain's search among the slow ones. */
static int scan_wide(const grn_world *w, const planes *pl, int i, int ix, int iy, int iz, bool fi,
                     int32_t *out, int room) {
  const grn_grid *g = &w->pairs.scr.grid;
  const double base = pl->r[i] + pl->rmax + pl->gap + pl->e[i] + pl->tol;
  const double rs = base + pl->e0;
  const double kc = ceil(rs / g->cs);
  const int k = kc < (double)(g->nx + g->ny + g->nz) ? (int)kc : g->nx + g->ny + g->nz;
  const double x = pl->x[i], y = pl->y[i], z = pl->z[i];
  const int kx0 = ix - k > 0 ? ix - k : 0, kx1 = ix + k < g->nx ? ix + k : g->nx - 1;
  int count = 0;
  for (int jz = iz - k > 0 ? iz - k : 0; jz <= iz + k && jz < g->nz; jz++) {
    const double dz = grn__slab_gap(z, g->oz, g->cs, iz, jz);
    for (int jy = iy - k > 0 ? iy - k : 0; jy <= iy + k && jy < g->ny; jy++) {
      const double dy = grn__slab_gap(y, g->oy, g->cs, iy, jy);
      int jx0 = kx0, jx1 = kx1;
      if (!grn__row_cells(g, x, ix, rs, dy * dy + dz * dz, &jx0, &jx1)) {
        continue;
      }
      const int row = g->nx * (jy + g->ny * jz);
      count = scan_slow(w, pl, i, fi, w->pairs.scr.cstart[row + jx0],
                        w->pairs.scr.cstart[row + jx1 + 1], out, count, room);
    }
  }
  /* each pair once, by the one of the two earlier along the axis, tested as the earlier in cell
   * order would test it */
  const double rf = base + pl->emax, at = pl->fk[pl->frank[i]].c;
  for (int f = pl->frank[i] + 1; f < pl->nfast && pl->fk[f].c - at < rf; f++) {
    const int j = pl->fk[f].q;
    const bool ij = j > i;
    if (listed(w, pl, ij ? i : j, ij ? j : i, (w->flags[ij ? i : j] & GRN_F_FIXED) != 0)) {
      count = emit(w, out, count, room, i, j);
    }
  }
  return count;
}

/* The pairs of grain i with the grains after it in cell order among the 27 cells around it: the
 * rest of its own cell and the next one in x, the row above in y, and the three rows of the layer
 * above in z (contiguous runs in cell order). Cells neighbour each other symmetrically, so every
 * pair is found exactly once, by its grain earlier in cell order. All counted; the first `room`
 * are written to out, two entries each. */
static int scan_pairs(const grn_world *w, const planes *pl, int i, int32_t *out, int room) {
  const grn_grid *g = &w->pairs.scr.grid;
  const int c = w->pairs.scr.cell[i];
  const int iz = c / (g->nx * g->ny), rest = c - iz * g->nx * g->ny, iy = rest / g->nx,
            ix = rest - iy * g->nx;
  const bool fi = (w->flags[i] & GRN_F_FIXED) != 0;
  if (pl->e[i] > pl->e0) {
    return pl->fk ? scan_wide(w, pl, i, ix, iy, iz, fi, out, room)
                  : scan_cube(w, pl, i, ix, iy, iz, fi, out, room);
  }
  const int jx0 = ix > 0 ? ix - 1 : 0, jx1 = ix + 1 < g->nx ? ix + 1 : g->nx - 1;
  int32_t runs[5][2], nr = 0;
  runs[nr][0] = i + 1;
  runs[nr++][1] = w->pairs.scr.cstart[c - ix + jx1 + 1];
  if (iy + 1 < g->ny) {
    const int row = g->nx * (iy + 1 + g->ny * iz);
    runs[nr][0] = w->pairs.scr.cstart[row + jx0];
    runs[nr++][1] = w->pairs.scr.cstart[row + jx1 + 1];
  }
  if (iz + 1 < g->nz) {
    for (int jy = iy > 0 ? iy - 1 : 0; jy <= iy + 1 && jy < g->ny; jy++) {
      const int row = g->nx * (jy + g->ny * (iz + 1));
      runs[nr][0] = w->pairs.scr.cstart[row + jx0];
      runs[nr++][1] = w->pairs.scr.cstart[row + jx1 + 1];
    }
  }
  int count = 0;
  for (int r = 0; r < nr; r++) {
    count = scan_slow(w, pl, i, fi, runs[r][0], runs[r][1], out, count, room);
  }
  return count;
}

int grn__grow_pairs(grn_world *w, int need) {
  /* old contents are not needed: the kept history lives in scratch during a rebuild */
  void **const arrays[] = {(void **)&w->pairs.pb, (void **)&w->pairs.rref, (void **)&w->pairs.hist,
                           (void **)&w->pairs.pfn};
  const size_t each[] = {sizeof(int32_t), sizeof(int32_t), sizeof(grn_hist), sizeof(float)};
  return grn__regrow(w, arrays, each, 4, &w->pairs.mcap, need);
}

void grn__refs_of(int n, int m, const int32_t *pb, int32_t *rstart, int32_t *rref, int32_t *fill) {
  memset(rstart, 0, sizeof(int32_t) * (size_t)(n + 1));
  for (int p = 0; p < m; p++) {
    rstart[pb[p] + 1]++;
  }
  for (int i = 0; i < n; i++) {
    rstart[i + 1] += rstart[i];
  }
  memcpy(fill, rstart, sizeof(int32_t) * (size_t)n);
  for (int p = 0; p < m; p++) {
    rref[fill[pb[p]]++] = p;
  }
}

/* Reference lists (reference 001): for each grain, the pairs where it is the smaller partner, in
 * pair order, so its gather reads them in a fixed order. Derived from pb alone. */
void grn__rebuild_refs(grn_world *w) {
  grn__refs_of(w->pairs.nl, w->pairs.m, w->pairs.pb, w->pairs.rstart, w->pairs.rref,
               w->pairs.scr.newidx);
  w->pairs.refs_stale = false;
}

void grn__pair_refs(grn_world *w) {
  if (w->pairs.refs_stale) {
    grn__rebuild_refs(w);
  }
}

#ifdef GRN_VALIDATE
#include <stdio.h>
#include <stdlib.h>

/* GRAINLAB_VALIDATE builds: the layout the force pass relies on, checked after every rebuild;
 * a violation is our bug, so it stops the process with the first thing found. */
static void validate(const grn_world *w) {
  const char *bad = NULL;
  for (int i = 0; i < w->n && !bad; i++) {
    if (i > 0 && w->pairs.scr.cell[i] < w->pairs.scr.cell[i - 1]) {
      bad = "grains out of cell order";
    }
    for (int p = w->pairs.pstart[i]; p < w->pairs.pstart[i + 1] && !bad; p++) {
      const int b = w->pairs.pb[p];
      if (b < 0 || b >= w->n || b == i || !grn__owns(w, i, b)) {
        bad = "a pair under the wrong owner";
      } else if (w->pairs.pfn[p] < 0.0f && grn__reach_gap(w) == 0.0) {
        bad = "a liquid bridge in dry sand";
      }
    }
    for (int q = w->pairs.rstart[i]; q < w->pairs.rstart[i + 1] && !bad; q++) {
      if (w->pairs.pb[w->pairs.rref[q]] != i ||
          (q > w->pairs.rstart[i] && w->pairs.rref[q] <= w->pairs.rref[q - 1])) {
        bad = "a reference list out of order";
      }
    }
  }
  if (!bad && (w->pairs.rstart[w->n] != w->pairs.m || w->pairs.pstart[w->n] != w->pairs.m)) {
    bad = "pair counts disagree";
  }
  if (bad) {
    fprintf(stderr, "grainlab engine invariant broken after rebuild %llu: %s\n",
            (unsigned long long)w->pairs.rebuilds, bad);
    abort();
  }
}
#endif

/* Steps a fast grain's slack covers at its speed (see set_slacks). 16 took a flowing silo from
 * 545 rebuilds to 358 and 165 to 157 ns per grain-step, but a 100 000-grain bed settling from its
 * lattice, nearly every grain fast, listed so many more pairs that its memory grew from 112 to
 * 189 MB (bench/README). */
#define REBUILD_STEPS 8

/* A grain's slack at its listing, for a model with slacks of their own: the shared e0, or, fast
 * enough to use half of that in REBUILD_STEPS steps, what it covers in REBUILD_STEPS steps falling
 * freely on top (set_slacks). */
double grn__own_slack(grn_vec3 v, double e0) {
  const double T = REBUILD_STEPS * GRN_H, speed = sqrt(v.x * v.x + v.y * v.y + v.z * v.z);
  return speed * T > 0.5 * e0 ? e0 + speed * T + 0.5 * GRN_G * T * T : e0;
}

/* Out of memory in a rebuild: the grains are valid and renumbered, but there is no pair list;
 * contact history is lost and the next step tries again. */
static int no_list(grn_world *w, int nn) {
  memset(w->pairs.pstart, 0, sizeof(int32_t) * (size_t)(nn + 1));
  memset(w->pairs.rstart, 0, sizeof(int32_t) * (size_t)(nn + 1));
  w->pairs.m = 0;
  w->pairs.nl = nn;
  w->pairs.refs_stale = false;
  w->pairs.dirty = true;
  return GRN_E_NOMEM;
}

/* Step 1: the alive grains sorted by cell (counting sort), then by size (largest first) and id
 * within a cell, as perm (new -> old) and newidx (old -> new, −1: removed). Returns how many are
 * kept, or −1 out of memory. */
static int sort_by_cell(grn_world *w) {
  grn_relist *r = &w->pairs.scr;
  const int n_old = w->n;
  (void)grn__plan_grid(w, w->pos);
  const int ncell = r->grid.nx * r->grid.ny * r->grid.nz;
  if (ncell + 1 > r->ncell_cap &&
      grn__grow(w, (void **)&r->cstart, sizeof(int32_t), &r->ncell_cap, ncell + 1) != GRN_OK) {
    return -1;
  }
  memset(r->cstart, 0, sizeof(int32_t) * (size_t)(ncell + 1));
  for (int i = 0; i < n_old; i++) {
    if (w->flags[i] & GRN_F_ALIVE) {
      r->cell[i] = grn__cell_of(&r->grid, w->pos[i]);
      r->cstart[r->cell[i] + 1]++;
    } else {
      r->cell[i] = -1;
    }
  }
  for (int c = 0; c < ncell; c++) {
    r->cstart[c + 1] += r->cstart[c];
  }
  const int nn = r->cstart[ncell];
  for (int i = 0; i < n_old; i++) {
    if (r->cell[i] >= 0) {
      r->perm[r->cstart[r->cell[i]]++] = i;
    }
  }
  for (int c = ncell; c > 0; c--) {
    r->cstart[c] = r->cstart[c - 1];
  }
  r->cstart[0] = 0;
  for (int c = 0; c < ncell; c++) {
    for (int a = r->cstart[c] + 1; a < r->cstart[c + 1]; a++) {
      const int v = r->perm[a];
      int b = a - 1;
      while (b >= r->cstart[c] && grn__owns(w, v, r->perm[b])) {
        r->perm[b + 1] = r->perm[b];
        b--;
      }
      r->perm[b + 1] = v;
    }
  }
  for (int i = 0; i < n_old; i++) {
    r->newidx[i] = -1;
  }
  for (int q = 0; q < nn; q++) {
    r->newidx[r->perm[q]] = q;
  }
  return nn;
}

/* Where a rebuild's pieces lie: in the scratch, the touching history kept by old owner (kp, from
 * tstart), the permutation buffer and the fast grains; the scan's planes and segments (room for
 * the last rebuild's pairs per grain and a quarter more) in the old pairs' history, which nothing
 * reads once keep_history has copied what it keeps and carry_history has not yet written the
 * new, or in the scratch too when that is too small (the first list, or a sparse one). Sharing
 * the dead history keeps a 100 000-grain bed's scratch ~10 MB smaller (bench/README). */
typedef struct layout {
  kept *kp;
  int32_t *tstart; /* n_old + 1 */
  void *pbuf;
  int32_t *seg;   /* the scan's segments */
  double *pd;     /* 6 planes of `plane` doubles */
  grn_keyed *fk;  /* up to FAST_SORTED: the fast grains, sorted along an axis */
  int32_t *frank; /* nn: each grain's place in fk */
  size_t plane;
  double per_grain;
  bool in_hist; /* planes and segments lie in pairs.hist */
} layout;

static inline size_t align32(size_t b) {
  return (b + 31u) & ~(size_t)31u;
}

/* Step 2: the pieces laid out for nn grains; GRN_E_NOMEM when the scratch cannot be had. */
static int lay_out(grn_world *w, int nn, layout *L) {
  const grn_pairs *p = &w->pairs;
  int k = 0;
  for (int q = 0; q < (p->nl > 0 ? p->pstart[p->nl] : 0); q++) {
    k += p->pfn[q] > 0.0f;
  }
  const size_t kept_bytes = sizeof(kept) * ((size_t)k + 1); /* one more, written and not kept */
  const size_t tstart_bytes = sizeof(int32_t) * (size_t)(w->n + 1);
  L->per_grain = p->nl > 0 ? 1.25 * (double)p->m / (double)p->nl + 1.0 : 0.0;
  const size_t seg_bytes = 2 * sizeof(int32_t) *
                           ((size_t)(L->per_grain * (double)nn) + 64 * (size_t)w->opt.threads + 64);
  /* the widest array renumber() gathers is the boundary history, GRN_HF doubles a grain */
  const size_t perm_bytes = GRN_HF * sizeof(double) * (size_t)(nn > 0 ? nn : 1);
  L->plane = (size_t)nn + 4;
  const size_t planes_bytes = 6 * sizeof(double) * L->plane;
  L->in_hist = p->nl > 0 && planes_bytes + seg_bytes <= sizeof(grn_hist) * (size_t)p->mcap;
  const size_t perm_at = align32(kept_bytes + tstart_bytes); /* aligned for doubles */
  const size_t planes_at =
      perm_at + align32(L->in_hist || perm_bytes > seg_bytes ? perm_bytes : seg_bytes);
  const size_t fast_at = planes_at + (L->in_hist ? 0 : planes_bytes);
  const size_t nfk = (size_t)(nn < FAST_SORTED ? nn : FAST_SORTED) + 1;
  if (grn__scratch(w, fast_at + sizeof(grn_keyed) * nfk + sizeof(int32_t) * ((size_t)nn + 1)) !=
      GRN_OK) {
    return GRN_E_NOMEM;
  }
  char *base = w->pairs.scr.scratch;
  L->kp = (kept *)base;
  L->tstart = (int32_t *)(base + kept_bytes);
  L->pbuf = base + perm_at;
  if (L->in_hist) {
    L->pd = (double *)(void *)p->hist;
    L->seg = (int32_t *)(void *)(L->pd + 6 * L->plane);
  } else {
    L->pd = (double *)(void *)(base + planes_at);
    L->seg = L->pbuf;
  }
  L->fk = (grn_keyed *)(void *)(base + fast_at);
  L->frank = (int32_t *)(void *)(L->fk + nfk);
  return GRN_OK;
}

/* Step 3: the history of the touching pairs whose grains both stay, grouped by old owner. */
static void keep_history(const grn_world *w, const layout *L) {
  const grn_pairs *p = &w->pairs;
  const int n_old = w->n, nl = p->nl; /* grains added since the last rebuild have no pairs yet */
  const int32_t *newidx = p->scr.newidx;
  int q = 0;
  for (int a = 0; a < n_old; a++) {
    L->tstart[a] = q;
    if (a >= nl) {
      continue;
    }
    const int alive = newidx[a] >= 0;
    for (int k = p->pstart[a]; k < p->pstart[a + 1]; k++) {
      /* written always, kept by advancing: a flow's mix of touching and apart pairs would
       * mispredict a branch, and the compiler makes one of a float test joined by && (pfn is
       * never NaN: as an integer a positive float is positive, 0, −0 and −1 are not) */
      const int nb = newidx[p->pb[k]];
      int32_t fb;
      memcpy(&fb, &p->pfn[k], sizeof fb);
      L->kp[q].h = p->hist[k];
      L->kp[q].partner = nb;
      L->kp[q].fn = p->pfn[k];
      q += (fb > 0) & (nb >= 0) & alive;
    }
  }
  L->tstart[n_old] = q;
  memset(&L->kp[q], 0, sizeof(kept)); /* the spare one, which carry_history may read */
}

/* Step 4: the grains renumbered in the new order (perm[] stays: the old owner of new grain q is
 * perm[q], for the history). */
static void renumber(grn_world *w, int nn, void *pbuf) {
  const int32_t *perm = w->pairs.scr.perm;
  permute(w->pos, sizeof(grn_vec3), perm, nn, pbuf);
  permute(w->vel, sizeof(grn_vec3), perm, nn, pbuf);
  permute(w->spin, sizeof(grn_vec3), perm, nn, pbuf);
  permute(w->rad, sizeof(double), perm, nn, pbuf);
  permute(w->inv_m, sizeof(double), perm, nn, pbuf);
  permute(w->inv_i, sizeof(double), perm, nn, pbuf);
  permute(w->hf, GRN_HF * sizeof(double), perm, nn, pbuf);
  permute(w->id, sizeof(uint32_t), perm, nn, pbuf);
  permute(w->flags, sizeof(uint8_t), perm, nn, pbuf);
  w->n = nn;
}

static inline bool before(grn_keyed p, grn_keyed q) {
  return p.c < q.c || (p.c == q.c && p.q < q.q);
}

/* Shell sort (Ciura's gaps, and two more for a re-listing's new pairs): no memory of its own
 * (libc's qsort may call malloc, which the engine never does: its memory comes from the caller),
 * for a few thousand keys at most. */
void grn__sort_keyed(grn_keyed *k, int n) {
  static const int gaps[] = {1750, 701, 301, 132, 57, 23, 10, 4, 1};
  for (size_t g = 0; g < sizeof gaps / sizeof gaps[0]; g++) {
    const int h = gaps[g];
    for (int i = h; i < n; i++) {
      const grn_keyed v = k[i];
      int j = i;
      for (; j >= h && before(v, k[j - h]); j -= h) {
        k[j] = k[j - h];
      }
      k[j] = v;
    }
  }
}

/* Step 5: each grain's slack, how far it may move before the list is made again, and the planes
 * the scan reads. Slow grains share half the skin beyond the reach gap (a pair of them is listed
 * out to ri + rj + SKIN); where the model allows it (own_slack), a grain fast enough to use that
 * up in REBUILD_STEPS/2 steps gets what it would cover in REBUILD_STEPS steps on top, falling
 * freely, so that a few fast grains (a stream through a silo's hole) widen their own reach
 * instead of bringing a rebuild every few steps. */
static planes set_slacks(grn_world *w, const layout *L) {
  const int nn = w->n;
  double *pd = L->pd;
  const size_t plane = L->plane;
  const double gap = grn__reach_gap(w);
  planes pl = {pd,
               pd + plane,
               pd + 2 * plane,
               pd + 3 * plane,
               pd + 4 * plane,
               pd + 5 * plane,
               0.5 * (w->pairs.skin - gap),
               0.0,
               0.0,
               gap,
               0.0,
               L->fk,
               L->frank,
               0};
  pl.emax = pl.e0;
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  const bool speedy = w->model->own_slack;
  for (int q = 0; q < nn; q++) {
    w->pairs.scr.cell[q] = grn__cell_of(&w->pairs.scr.grid, w->pos[q]);
    pl.x[q] = w->pos[q].x;
    pl.y[q] = w->pos[q].y;
    pl.z[q] = w->pos[q].z;
    pl.r[q] = w->rad[q];
    pl.id[q] = (double)w->id[q];
    pl.e[q] = speedy ? grn__own_slack(w->vel[q], pl.e0) : pl.e0;
    pl.rmax = pl.r[q] > pl.rmax ? pl.r[q] : pl.rmax;
    pl.emax = pl.e[q] > pl.emax ? pl.e[q] : pl.emax;
    w->pairs.ref[q] = w->pos[q];
    w->pairs.slack[q] = pl.e[q];
    if (pl.e[q] > pl.e0 && pl.nfast < FAST_SORTED) {
      const double c[3] = {pl.x[q], pl.y[q], pl.z[q]};
      for (int a = 0; a < 3; a++) {
        lo[a] = c[a] < lo[a] ? c[a] : lo[a];
        hi[a] = c[a] > hi[a] ? c[a] : hi[a];
      }
      pl.fk[pl.nfast++].q = q;
    } else if (pl.e[q] > pl.e0) {
      pl.nfast = FAST_SORTED + 1; /* too many: scan_cube */
    }
  }
  if (pl.nfast > FAST_SORTED) {
    pl.fk = NULL;
  } else {
    const int axis = hi[1] - lo[1] > hi[0] - lo[0] ? (hi[2] - lo[2] > hi[1] - lo[1] ? 2 : 1)
                                                   : (hi[2] - lo[2] > hi[0] - lo[0] ? 2 : 0);
    const double *along = axis == 0 ? pl.x : (axis == 1 ? pl.y : pl.z);
    for (int f = 0; f < pl.nfast; f++) {
      pl.fk[f].c = along[pl.fk[f].q];
    }
    grn__sort_keyed(pl.fk, pl.nfast);
    for (int f = 0; f < pl.nfast; f++) {
      pl.frank[pl.fk[f].q] = f;
    }
  }
  /* a micrometre, or more where coordinates are so large that their rounding is larger */
  const grn_grid *g = &w->pairs.scr.grid;
  pl.tol = 1e-6 + 1e-12 * (fabs(g->ox) + fabs(g->oy) + fabs(g->oz) +
                           g->cs * (double)(g->nx + g->ny + g->nz));
  for (int q = nn; q < nn + 4; q++) {
    /* read by the last group, never listed */
    pl.x[q] = pl.y[q] = pl.z[q] = pl.r[q] = pl.e[q] = pl.id[q] = 0.0;
  }
  return pl;
}

/* The pairs the scan found: thread t's are (owner, partner) at seg[2·segoff[t]], total[t] of them;
 * seg is the permutation buffer or, when a segment ran out, `big`. */
typedef struct found {
  int64_t segoff[257], total[256];
  int32_t *seg, *big;
  size_t big_bytes;
  bool in_hist; /* seg lies in pairs.hist, which growing the list drops */
} found;

/* Step 6: the pairs, each found once by its grain earlier in cell order, as (owner, partner). Each
 * thread writes its chunk's pairs into its own segment of scratch (the permutation buffer, free
 * now, sized for all the segments), from the last rebuild's pairs per grain; should one run out,
 * every pair was still counted, and the scan is made again into a buffer of the size found.
 * GRN_E_NOMEM when that buffer cannot be had. */
static int find_pairs(grn_world *w, const planes *pl, const layout *L, found *f) {
  const int nn = w->n, nthreads = w->opt.threads;
  f->seg = L->seg;
  f->in_hist = L->in_hist;
  f->big = NULL;
  f->big_bytes = 0;
  f->segoff[0] = 0;
  for (int t = 0; t < nthreads; t++) {
    const int64_t len = (int64_t)nn * (t + 1) / nthreads - (int64_t)nn * t / nthreads;
    f->segoff[t + 1] = f->segoff[t] + (int64_t)(L->per_grain * (double)len) + 64;
  }
  for (int pass = 0; pass < 2; pass++) {
    bool full = false;
#pragma omp parallel for schedule(static, 1) num_threads(nthreads) reduction(|| : full)
    for (int t = 0; t < nthreads; t++) {
      const int lo = (int)((int64_t)nn * t / nthreads),
                hi = (int)((int64_t)nn * (t + 1) / nthreads);
      const int64_t cap = f->segoff[t + 1] - f->segoff[t];
      int32_t *out = f->seg + 2 * f->segoff[t];
      int64_t used = 0;
      for (int i = lo; i < hi; i++) {
        const int room = used < cap ? (int)(cap - used) : 0;
        used += scan_pairs(w, pl, i, out + 2 * (used < cap ? used : 0), room);
      }
      f->total[t] = used;
      full = full || used > cap;
    }
    if (!full) {
      return GRN_OK;
    }
    /* a segment ran out: one buffer of the size found, and the scan again */
    f->segoff[0] = 0;
    for (int t = 0; t < nthreads; t++) {
      f->segoff[t + 1] = f->segoff[t] + f->total[t];
    }
    f->big_bytes =
        2 * sizeof(int32_t) * (size_t)(f->segoff[nthreads] > 0 ? f->segoff[nthreads] : 1);
    f->big = grn__alloc(w, f->big_bytes);
    if (!f->big) {
      return GRN_E_NOMEM;
    }
    f->seg = f->big;
    f->in_hist = false;
  }
  return GRN_OK;
}

/* Step 7: the pairs found, in CSR under their owners (pstart, pb, in the order found). Returns
 * how many, or −1 out of memory. */
static int list_pairs(grn_world *w, found *f) {
  grn_pairs *p = &w->pairs;
  const int nn = w->n, nthreads = w->opt.threads;
  memset(p->pstart, 0, sizeof(int32_t) * (size_t)(nn + 1));
  for (int t = 0; t < nthreads; t++) {
    for (int64_t k = f->segoff[t]; k < f->segoff[t] + f->total[t]; k++) {
      p->pstart[f->seg[2 * k] + 1]++;
    }
  }
  for (int i = 0; i < nn; i++) {
    p->pstart[i + 1] += p->pstart[i];
  }
  const int m = p->pstart[nn];
  if (m > p->mcap && f->in_hist) {
    /* the list grows, and the segments in its history with it: moved out first */
    f->big_bytes =
        2 * sizeof(int32_t) * (size_t)(f->segoff[nthreads] > 0 ? f->segoff[nthreads] : 1);
    f->big = grn__alloc(w, f->big_bytes);
    if (!f->big) {
      return -1;
    }
    memcpy(f->big, f->seg, 2 * sizeof(int32_t) * (size_t)f->segoff[nthreads]);
    f->seg = f->big;
    f->in_hist = false;
  }
  if (grn__grow_pairs(w, m) != GRN_OK) {
    return -1;
  }
  int32_t *cursor = p->scr.newidx; /* old -> new is no longer needed */
  memcpy(cursor, p->pstart, sizeof(int32_t) * (size_t)nn);
  for (int t = 0; t < nthreads; t++) {
    for (int64_t k = f->segoff[t]; k < f->segoff[t] + f->total[t]; k++) {
      p->pb[cursor[f->seg[2 * k]]++] = f->seg[2 * k + 1];
    }
  }
  return m;
}

/* Step 8: each owner's partners in cell order (the order a scan of the 27 cells around the owner
 * would meet them), then the kept history moved onto them. */
static void carry_history(grn_world *w, const layout *L) {
  grn_pairs *pp = &w->pairs;
  const int nn = w->n, nthreads = w->opt.threads;
  kept *kp = L->kp;
  const int32_t *tstart = L->tstart;
  static const kept none = {{{0.0f}, {0.0f}}, 0, 0.0f};
#pragma omp parallel for schedule(static, 1) num_threads(nthreads)
  for (int t = 0; t < nthreads; t++) {
    const int lo = (int)((int64_t)nn * t / nthreads), hi = (int)((int64_t)nn * (t + 1) / nthreads);
    for (int i = lo; i < hi; i++) {
      int32_t *pbi = pp->pb + pp->pstart[i];
      const int cnt = pp->pstart[i + 1] - pp->pstart[i];
      for (int x = 1; x < cnt; x++) {
        const int32_t v = pbi[x];
        int y = x - 1;
        while (y >= 0 && pbi[y] > v) {
          pbi[y + 1] = pbi[y];
          y--;
        }
        pbi[y + 1] = v;
      }
    }
    for (int i = lo; i < hi; i++) {
      const int base = pp->pstart[i], cnt = pp->pstart[i + 1] - base;
      const int old = pp->scr.perm[i], t0 = tstart[old], t1 = tstart[old + 1];
      /* the old owner's kept pairs by new partner index (renumbering leaves them nearly in order;
       * no other grain's range is touched), then merged with the sorted partners */
      for (int x = t0 + 1; x < t1; x++) {
        const kept v = kp[x];
        int y = x - 1;
        while (y >= t0 && kp[y].partner > v.partner) {
          kp[y + 1] = kp[y];
          y--;
        }
        kp[y + 1] = v;
      }
      int q = t0;
      for (int p = base; p < base + cnt; p++) {
        const int j = pp->pb[p];
        while (q < t1 && kp[q].partner < j) {
          q++; /* a kept pair whose partner is no longer listed */
        }
        /* whether pair p kept its history is anyone's guess in a flow: chosen without a branch
         * (kp[t1] exists: the next owner's first, or the spare one after the last) */
        const int hit = (q < t1) & (kp[q].partner == j);
        const kept *from = hit ? &kp[q] : &none;
        pp->hist[p] = from->h;
        pp->pfn[p] = from->fn;
        q += hit;
      }
    }
  }
}

int grn__rebuild(grn_world *w) {
  if (w->model->near) {
    grn__fused_let_go(w); /* planned again with the near list */
  }
  const int nn = sort_by_cell(w);
  layout L;
  if (nn < 0 || lay_out(w, nn, &L) != GRN_OK) {
    return GRN_E_NOMEM;
  }
  keep_history(w, &L);
  renumber(w, nn, L.pbuf);
  const planes pl = set_slacks(w, &L);
  found f;
  if (find_pairs(w, &pl, &L, &f) != GRN_OK) {
    return no_list(w, nn);
  }
  const int m = list_pairs(w, &f);
  grn__free(w, f.big, f.big_bytes);
  if (m < 0) {
    return no_list(w, nn);
  }
  carry_history(w, &L);

  grn_pairs *p = &w->pairs;
  p->m = m;
  p->nl = nn;
  p->refs_stale = true;
#ifdef GRN_VALIDATE
  grn__pair_refs(w);
  validate(w);
#endif
  p->table_valid = false;
  p->disp = 0.0;
  p->dirty = false;
  p->moved = false;
  p->since = 0;
  p->relisted = 0;
  p->rebuilds++;
  p->rebuild_every = w->steps - p->rebuild_step;
  p->rebuild_step = w->steps;
  if (w->model->near) {
    w->gran.near.valid = false;
    w->gran.fused.on = false;
  }
  return GRN_OK;
}

void grn__pairs_free(grn_world *w) {
  grn_pairs *p = &w->pairs;
  const size_t cap = (size_t)w->cap, mcap = (size_t)p->mcap;
  grn__free(w, p->ref, sizeof(grn_vec3) * cap);
  grn__free(w, p->slack, sizeof(double) * cap);
  grn__free(w, p->pstart, sizeof(int32_t) * (cap + 1));
  grn__free(w, p->rstart, sizeof(int32_t) * (cap + 1));
  grn__free(w, p->pb, sizeof(int32_t) * mcap);
  grn__free(w, p->rref, sizeof(int32_t) * mcap);
  grn__free(w, p->hist, sizeof(grn_hist) * mcap);
  grn__free(w, p->pfn, sizeof(float) * mcap);
  grn__free(w, p->table, sizeof(grn_force_row) * (size_t)p->tcap);
  grn__free(w, p->scr.cell, sizeof(int32_t) * cap);
  grn__free(w, p->scr.perm, sizeof(int32_t) * cap);
  grn__free(w, p->scr.newidx, sizeof(int32_t) * cap);
  grn__free(w, p->scr.cstart, sizeof(int32_t) * (size_t)p->scr.ncell_cap);
  grn__free(w, p->scr.scratch, p->scr.scratch_bytes);
}
