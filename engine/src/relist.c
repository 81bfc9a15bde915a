/* Re-listing (issue 33): when grains that moved their slack alone end the pair list's validity,
 * only those grains are listed again, and the pairs they now need are merged into their owners'
 * rows; the whole list is made again (renumbered by cell) only every so often. */
#include "internal.h"
#include "model.h"

/* A flowing silo's list runs out every ~9 steps, each time at the foot of its jet, where one to
 * twenty grains land; a rebuild finds all 19 000 pairs again and carries their history (~1.1 ms
 * for 3000 grains), where these grains' own pairs are a few dozen. Re-listing them keeps the
 * list's invariant: a pair is listed if its grains' reference positions are within both radii,
 * the reach gap and both slacks of each other, and each grain stays within its slack of its
 * reference, so no unlisted pair can touch. Pairs the re-listed grains have left stay listed (a
 * superset only costs the near list's refresh a test); grains are not renumbered, so storage
 * drifts from cell order, and a rebuild comes after RELIST_MAX re-listings, once half the grains
 * have been re-listed since the last (RELIST_SHARE), when a tenth would be at once (RELIST_ONCE: a
 * lattice falling), and when the grains have settled (world.c), since a bed at rest keeps its
 * order. Rebuilding every 16 re-listings or at a tenth instead: 247 rebuilds and 431 re-listings
 * in the flowing silo bench instead of 82 and 662, 141.8 against 138.6 ns a grain-step. */
#define RELIST_MAX 64
#define RELIST_SHARE 2
#define RELIST_ONCE 10
/* new pairs a re-listed grain may bring on average (a flowing silo's bring 1.7), and a few more for
 * small re-listings of fast grains; more: a rebuild. Bounds the re-listing's scratch, which a
 * rebuild's then holds (a 100 000-grain bed's stays ~10 MB). */
#define RELIST_PAIRS 16
#define RELIST_PAIRS_MIN 1024

typedef struct newpair {
  int32_t a, b; /* owner, partner */
  int32_t at;   /* where it goes in a list before the merge */
  int32_t p;    /* its place in the pair list after the merge */
} newpair;

/* Whether owner a lists partner b (rows are in partner order). */
static bool listed_in(const grn_pairs *p, int a, int b) {
  for (int q = p->pstart[a]; q < p->pstart[a + 1] && p->pb[q] <= b; q++) {
    if (p->pb[q] == b) {
      return true;
    }
  }
  return false;
}

/* The search: slow grains (the shared slack e0) binned by reference position; fast ones sorted
 * along the axis they spread most on, with the largest of their slacks. */
typedef struct finder {
  const grn_world *w;
  double e0, gap, rmax, efast;
  /* reference positions, radii and slacks: the slow grains in cell order, 4 spare, then the fast
   * ones in axis order from fast0, 4 spare; their indices in scr.perm, the fast ones' from nslow */
  double *x, *y, *z, *r, *e;
  grn_keyed *fast;
  int nfast, axis, nslow, fast0;
  /* stamp[j] == r: the grain r being searched around owns a listed pair with j (its row, marked
   * once per grain instead of scanned for each candidate) */
  int32_t *stamp;
  newpair *out;
  int count, room;
} finder;

/* Pair {r, j} if their reference positions are within listing reach and it is not listed yet;
 * j's reference position, radius and slack are read from the planes at `at` (copies: the same
 * values, in the order the search reads them, not wherever j lies). False when the room for new
 * pairs has run out. */
static bool consider(finder *f, int r, int j, int at) {
  const grn_world *w = f->w;
  if (j == r || (w->flags[r] & w->flags[j] & GRN_F_FIXED)) {
    return true;
  }
  const grn_vec3 a = w->pairs.ref[r];
  const double dx = f->x[at] - a.x, dy = f->y[at] - a.y, dz = f->z[at] - a.z,
               rr = (w->rad[r] + f->r[at]) + ((f->gap + w->pairs.slack[r]) + f->e[at]);
  if (!(dx * dx + dy * dy + dz * dz < rr * rr)) {
    return true;
  }
  const bool ro = grn__owns(w, r, j);
  const int o = ro ? r : j, q = ro ? j : r;
  if (ro ? f->stamp[j] == r : listed_in(&w->pairs, o, q)) {
    return true;
  }
  if (f->count == f->room) {
    return false;
  }
  f->out[f->count++] = (newpair){o, q, 0, 0};
  return true;
}

static inline double along(grn_vec3 v, int axis) {
  return axis == 0 ? v.x : (axis == 1 ? v.y : v.z);
}

/* Grain r against the grains s0 .. s1 − 1 of the planes from `off`, whose indices are idx[s]. */
static bool scan_lanes(finder *f, int r, int off, const int32_t *idx, int s0, int s1) {
  for (int s = s0; s < s1; s++) {
    if (!consider(f, r, idx[s], off + s)) {
      return false;
    }
  }
  return true;
}

#if defined(__x86_64__) && defined(GRN_SIMD)
#include <immintrin.h>

/* The same, four candidates at a time through the planes: a lane within the listing reach (and a
 * hair more, for the two ways of rounding) goes to consider(), which decides. */
__attribute__((target("avx2"))) static bool scan_lanes_avx2(finder *f, int r, int off,
                                                            const int32_t *idx, int s0, int s1) {
  const grn_world *w = f->w;
  const double *x = f->x + off, *y = f->y + off, *z = f->z + off, *ra = f->r + off,
               *ea = f->e + off;
  const __m256d xr = _mm256_set1_pd(w->pairs.ref[r].x), yr = _mm256_set1_pd(w->pairs.ref[r].y),
                zr = _mm256_set1_pd(w->pairs.ref[r].z), rr = _mm256_set1_pd(w->rad[r]),
                ge = _mm256_set1_pd(f->gap + w->pairs.slack[r]), hair = _mm256_set1_pd(1.0 + 1e-9);
  for (int s = s0; s < s1; s += 4) {
    const __m256d dx = _mm256_sub_pd(_mm256_loadu_pd(x + s), xr),
                  dy = _mm256_sub_pd(_mm256_loadu_pd(y + s), yr),
                  dz = _mm256_sub_pd(_mm256_loadu_pd(z + s), zr);
    const __m256d d2 = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy)),
                                     _mm256_mul_pd(dz, dz));
    const __m256d reach = _mm256_add_pd(_mm256_add_pd(rr, _mm256_loadu_pd(ra + s)),
                                        _mm256_add_pd(ge, _mm256_loadu_pd(ea + s)));
    unsigned bits = (unsigned)_mm256_movemask_pd(
        _mm256_cmp_pd(d2, _mm256_mul_pd(_mm256_mul_pd(reach, reach), hair), _CMP_LT_OQ));
    bits &= s1 - s >= 4 ? 15u : (1u << (s1 - s)) - 1u;
    for (; bits; bits &= bits - 1u) {
      if (!consider(f, r, idx[s + __builtin_ctz(bits)], off + s + __builtin_ctz(bits))) {
        return false;
      }
    }
  }
  return true;
}
#endif

static inline bool scan_run(finder *f, int r, int off, const int32_t *idx, int s0, int s1) {
#if defined(__x86_64__) && defined(GRN_SIMD)
  if (f->w->opt.simd) {
    return scan_lanes_avx2(f, r, off, idx, s0, s1);
  }
#endif
  return scan_lanes(f, r, off, idx, s0, s1);
}

/* Every grain that grain r, re-listed, must now be listed with: the slow ones over the cells
 * within reach of its reference position (rows cut by distance, as the rebuild's wide scan), the
 * fast ones within reach along their axis. */
static bool find_around(finder *f, int r) {
  const grn_world *w = f->w;
  const grn_grid *g = &w->pairs.scr.grid;
  const int32_t *cstart = w->pairs.scr.cstart;
  const grn_vec3 at = w->pairs.ref[r];
  /* a slow partner's reference lies within this of r's; a micrometre for the rounding of cells */
  const double base = w->rad[r] + f->rmax + f->gap + w->pairs.slack[r] + 1e-6;
  const double rs = base + f->e0;
  for (int p = w->pairs.pstart[r]; p < w->pairs.pstart[r + 1]; p++) {
    f->stamp[w->pairs.pb[p]] = r;
  }
  const double kc = ceil(rs / g->cs);
  const int k = kc < (double)(g->nx + g->ny + g->nz) ? (int)kc : g->nx + g->ny + g->nz;
  const int c = grn__cell_of(g, at);
  const int iz = c / (g->nx * g->ny), rest = c - iz * g->nx * g->ny, iy = rest / g->nx,
            ix = rest - iy * g->nx;
  const int kx0 = ix - k > 0 ? ix - k : 0, kx1 = ix + k < g->nx ? ix + k : g->nx - 1;
  for (int jz = iz - k > 0 ? iz - k : 0; jz <= iz + k && jz < g->nz; jz++) {
    const double dz = grn__slab_gap(at.z, g->oz, g->cs, iz, jz);
    for (int jy = iy - k > 0 ? iy - k : 0; jy <= iy + k && jy < g->ny; jy++) {
      const double dy = grn__slab_gap(at.y, g->oy, g->cs, iy, jy);
      int jx0 = kx0, jx1 = kx1;
      if (!grn__row_cells(g, at.x, ix, rs, dy * dy + dz * dz, &jx0, &jx1)) {
        continue;
      }
      const int row = g->nx * (jy + g->ny * jz), s0 = cstart[row + jx0], s1 = cstart[row + jx1 + 1];
      if (!scan_run(f, r, 0, w->pairs.scr.perm, s0, s1)) {
        return false;
      }
    }
  }
  const double c0 = along(at, f->axis), rf = base + f->efast;
  int lo = 0, hi = f->nfast;
  while (lo < hi) { /* the first fast grain within rf below r along the axis */
    const int mid = lo + (hi - lo) / 2;
    if (f->fast[mid].c <= c0 - rf) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  int end = lo;
  while (end < f->nfast && f->fast[end].c < c0 + rf) {
    end++;
  }
  return scan_run(f, r, f->fast0, w->pairs.scr.perm + f->nslow, lo, end);
}

/* The slow grains sorted by the cell of their reference position (scr.perm, from scr.cstart),
 * on the grid planned over those positions; the fast ones sorted along the axis their reference
 * positions spread most on. */
static void bin(grn_world *w, finder *f) {
  grn_relist *sc = &w->pairs.scr;
  const int n = w->n;
  const int ncell = sc->grid.nx * sc->grid.ny * sc->grid.nz;
  memset(sc->cstart, 0, sizeof(int32_t) * (size_t)(ncell + 1));
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  int nf = 0;
  for (int i = 0; i < n; i++) {
    if (w->pairs.slack[i] > f->e0) {
      sc->cell[i] = -1;
      f->fast[nf++].q = i;
      f->efast = w->pairs.slack[i] > f->efast ? w->pairs.slack[i] : f->efast;
      for (int a = 0; a < 3; a++) {
        const double x = along(w->pairs.ref[i], a);
        lo[a] = x < lo[a] ? x : lo[a];
        hi[a] = x > hi[a] ? x : hi[a];
      }
    } else {
      sc->cell[i] = grn__cell_of(&sc->grid, w->pairs.ref[i]);
      sc->cstart[sc->cell[i] + 1]++;
    }
  }
  for (int c = 0; c < ncell; c++) {
    sc->cstart[c + 1] += sc->cstart[c];
  }
  int ns = 0;
  for (int i = 0; i < n; i++) {
    if (sc->cell[i] >= 0) {
      sc->perm[sc->cstart[sc->cell[i]]++] = i;
      ns++;
    }
  }
  for (int s = 0; s < ns; s++) {
    const int q = sc->perm[s];
    f->x[s] = w->pairs.ref[q].x;
    f->y[s] = w->pairs.ref[q].y;
    f->z[s] = w->pairs.ref[q].z;
    f->r[s] = w->rad[q];
    f->e[s] = w->pairs.slack[q];
  }
  for (int s = ns; s < ns + 4; s++) { /* read by a row's last group, never within reach */
    f->x[s] = f->y[s] = f->z[s] = INFINITY;
    f->r[s] = f->e[s] = 0.0;
  }
  for (int c = ncell; c > 0; c--) {
    sc->cstart[c] = sc->cstart[c - 1];
  }
  sc->cstart[0] = 0;
  f->axis = hi[1] - lo[1] > hi[0] - lo[0] ? (hi[2] - lo[2] > hi[1] - lo[1] ? 2 : 1)
                                          : (hi[2] - lo[2] > hi[0] - lo[0] ? 2 : 0);
  for (int s = 0; s < nf; s++) {
    f->fast[s].c = along(w->pairs.ref[f->fast[s].q], f->axis);
  }
  grn__sort_keyed(f->fast, nf);
  f->nfast = nf;
  f->nslow = ns;
  f->fast0 = ns + 4;
  for (int s = 0; s < nf; s++) {
    const int q = f->fast[s].q, at = f->fast0 + s;
    sc->perm[ns + s] = q;
    f->x[at] = w->pairs.ref[q].x;
    f->y[at] = w->pairs.ref[q].y;
    f->z[at] = w->pairs.ref[q].z;
    f->r[at] = w->rad[q];
    f->e[at] = w->pairs.slack[q];
  }
  for (int s = f->fast0 + nf; s < f->fast0 + nf + 4; s++) {
    f->x[s] = f->y[s] = f->z[s] = INFINITY;
    f->r[s] = f->e[s] = 0.0;
  }
}

/* The new pairs found, sorted by owner and partner, each once (a pair of two re-listed grains is
 * found by both); returns how many. keys has room for count. */
static int sort_unique(const grn_world *w, newpair *np, int count, grn_keyed *keys) {
  const int64_t n = w->n;
  for (int t = 0; t < count; t++) { /* owner·n + partner < 2^53: exact as a double */
    keys[t] = (grn_keyed){(double)(np[t].a * n + np[t].b), t};
  }
  grn__sort_keyed(keys, count);
  int k = 0;
  for (int t = 0; t < count; t++) {
    if (k == 0 || keys[t].c != keys[k - 1].c) {
      keys[k++] = keys[t];
    }
  }
  for (int t = 0; t < k; t++) {
    const int64_t c = (int64_t)keys[t].c;
    np[t] = (newpair){(int32_t)(c / n), (int32_t)(c % n), 0, 0};
  }
  return k;
}

/* Gaps opened in an array of m elements of `elem` bytes, one before each np[t].at (ascending):
 * the elements behind each move once, from the back; entry t's slot is then at + t. */
static void open_gaps(void *arr, size_t elem, int m, const newpair *np, int k) {
  char *base = arr;
  int32_t end = m;
  for (int t = k - 1; t >= 0; t--) {
    const int32_t at = np[t].at;
    memmove(base + elem * (size_t)(at + t + 1), base + elem * (size_t)at,
            elem * (size_t)(end - at));
    end = at;
  }
}

/* Row starts of a CSR after entries for the owners np[t].a (ascending) were inserted. */
static void shift_starts(int32_t *start, int rows, const newpair *np, int k) {
  int t = 0;
  for (int a = 0; a <= rows; a++) {
    while (t < k && np[t].a < a) {
      t++;
    }
    start[a] += t;
  }
}

/* The new pairs (sorted, each once) into their owners' rows at their partner's place, with no
 * history. GRN_E_NOMEM, the list unchanged, when its arrays cannot grow. */
static int merge(grn_world *w, newpair *np, int k) {
  grn_pairs *p = &w->pairs;
  void **const arrays[] = {(void **)&p->pb, (void **)&p->rref, (void **)&p->hist, (void **)&p->pfn};
  const size_t each[] = {sizeof(int32_t), sizeof(int32_t), sizeof(grn_hist), sizeof(float)};
  if (grn__regrow_keep(w, arrays, each, 4, &p->mcap, p->m, p->m + k) != GRN_OK) {
    return GRN_E_NOMEM;
  }
  for (int t = 0; t < k; t++) {
    int q = p->pstart[np[t].a];
    while (q < p->pstart[np[t].a + 1] && p->pb[q] < np[t].b) {
      q++;
    }
    np[t].at = q;
    np[t].p = q + t;
  }
  open_gaps(p->pb, sizeof(int32_t), p->m, np, k);
  open_gaps(p->hist, sizeof(grn_hist), p->m, np, k);
  open_gaps(p->pfn, sizeof(float), p->m, np, k);
  for (int t = 0; t < k; t++) {
    p->pb[np[t].p] = np[t].b;
    memset(&p->hist[np[t].p], 0, sizeof(grn_hist));
    p->pfn[np[t].p] = 0.0f;
  }
  shift_starts(p->pstart, p->nl, np, k);
  p->m += k;
  return GRN_OK;
}

/* Whether a new pair may touch before the near list's refresh: within reach and both allowances
 * of where the refresh found its grains (near.c). */
static bool may_touch(const grn_world *w, int a, int b) {
  const grn_near *nl = &w->gran.near;
  const grn_vec3 x = nl->ref[a], y = nl->ref[b];
  const double dx = y.x - x.x, dy = y.y - x.y, dz = y.z - x.z,
               r = (w->rad[a] + w->rad[b]) +
                   ((grn__reach_gap(w) + (double)nl->nu[a]) + (double)nl->nu[b]);
  return dx * dx + dy * dy + dz * dz < r * r;
}

/* The near list mended instead of made again: its pairs' places in the pair list moved by the
 * merge, and the new pairs that may touch before its refresh into their owners' rows in pair
 * order; the fused step planned again. np is reused. */
static int mend_near(grn_world *w, newpair *np, int k) {
  grn_near *nl = &w->gran.near;
  int t = 0;
  for (int q = 0; q < nl->m; q++) {
    while (t < k && np[t].at <= nl->p[q]) {
      t++;
    }
    nl->p[q] += t;
  }
  int kn = 0;
  for (t = 0; t < k; t++) {
    if (may_touch(w, np[t].a, np[t].b)) {
      np[kn++] = np[t];
    }
  }
  if (kn == 0) {
    return GRN_OK; /* the plan stands: no row moved */
  }
  void **const arrays[] = {(void **)&nl->b, (void **)&nl->p, (void **)&nl->a, (void **)&nl->rref};
  const size_t each[] = {sizeof(int32_t), sizeof(int32_t), sizeof(int32_t), sizeof(int32_t)};
  if (grn__regrow_keep(w, arrays, each, 4, &nl->cap, nl->m, nl->m + kn) != GRN_OK) {
    return GRN_E_NOMEM;
  }
  for (t = 0; t < kn; t++) {
    int q = nl->start[np[t].a];
    while (q < nl->start[np[t].a + 1] && nl->p[q] < np[t].p) {
      q++;
    }
    np[t].at = q;
  }
  open_gaps(nl->b, sizeof(int32_t), nl->m, np, kn);
  open_gaps(nl->p, sizeof(int32_t), nl->m, np, kn);
  open_gaps(nl->a, sizeof(int32_t), nl->m, np, kn);
  for (t = 0; t < kn; t++) {
    const int q = np[t].at + t, d = np[t].a - np[t].b;
    nl->b[q] = np[t].b;
    nl->p[q] = np[t].p;
    nl->a[q] = np[t].a;
    nl->span = d > nl->span ? d : (-d > nl->span ? -d : nl->span);
  }
  shift_starts(nl->start, w->n, np, kn);
  nl->m += kn;
  (void)grn__plan_fused(w);
  grn__near_refs(w);
  return GRN_OK;
}

/* Re-list the grains past half their slack (those past all of it brought this; the others would
 * bring the next). GRN_OK when done, 1 when a rebuild must do it instead. */
static int relist(grn_world *w) {
  grn_pairs *p = &w->pairs;
  const int n = w->n;
  const double gap = grn__reach_gap(w), e0 = 0.5 * (p->skin - gap);
  int nr = 0;
  for (int i = 0; i < n; i++) {
    const grn_vec3 d = {w->pos[i].x - p->ref[i].x, w->pos[i].y - p->ref[i].y,
                        w->pos[i].z - p->ref[i].z};
    const double half = 0.5 * p->slack[i];
    nr += d.x * d.x + d.y * d.y + d.z * d.z >= half * half;
  }
  if (nr == 0 || (int64_t)nr * RELIST_ONCE > n || ((int64_t)p->relisted + nr) * RELIST_SHARE > n) {
    return 1;
  }
  const int room = RELIST_PAIRS * nr + RELIST_PAIRS_MIN;
  const size_t plane = (size_t)n + 8;
  if (grn__scratch(w, 5 * sizeof(double) * plane + sizeof(grn_keyed) * (size_t)(n + room) +
                          sizeof(newpair) * (size_t)room + sizeof(int32_t) * (size_t)(nr + n)) !=
      GRN_OK) {
    return 1;
  }
  double *planes = w->pairs.scr.scratch;
  grn_keyed *fast = (grn_keyed *)(void *)(planes + 5 * plane), *keys = fast + n;
  newpair *np = (newpair *)(void *)(keys + room);
  int32_t *re = (int32_t *)(void *)(np + room), *stamp = re + nr;
  memset(stamp, 0xff, sizeof(int32_t) * (size_t)n); /* -1: no grain's */
  nr = 0;
  for (int i = 0; i < n; i++) {
    const grn_vec3 d = {w->pos[i].x - p->ref[i].x, w->pos[i].y - p->ref[i].y,
                        w->pos[i].z - p->ref[i].z};
    const double half = 0.5 * p->slack[i];
    if (d.x * d.x + d.y * d.y + d.z * d.z >= half * half) {
      re[nr++] = i;
      p->ref[i] = w->pos[i];
      p->slack[i] = grn__own_slack(w->vel[i], e0);
    }
  }
  /* cells as the rebuild's, over the reference positions as they are now */
  const double rmax = grn__plan_grid(w, p->ref);
  const int ncell = p->scr.grid.nx * p->scr.grid.ny * p->scr.grid.nz;
  if (ncell + 1 > p->scr.ncell_cap && grn__grow(w, (void **)&p->scr.cstart, sizeof(int32_t),
                                                &p->scr.ncell_cap, ncell + 1) != GRN_OK) {
    return 1;
  }
  finder f = {.w = w,
              .e0 = e0,
              .gap = gap,
              .rmax = rmax,
              .x = planes,
              .y = planes + plane,
              .z = planes + 2 * plane,
              .r = planes + 3 * plane,
              .e = planes + 4 * plane,
              .fast = fast,
              .stamp = stamp,
              .out = np,
              .room = room};
  bin(w, &f);
  for (int s = 0; s < nr; s++) {
    if (!find_around(&f, re[s])) {
      return 1;
    }
  }
  const int k = sort_unique(w, np, f.count, keys);
  if (merge(w, np, k) != GRN_OK) {
    return 1; /* the rebuild lists every grain again (or finds there is no room either) */
  }
  p->refs_stale = true;
  if (!w->gran.near.valid || mend_near(w, np, k) != GRN_OK) {
    w->gran.near.valid = false;
    w->gran.fused.on = false;
  }
  p->table_valid = false;
  p->moved = false;
  p->since++;
  p->relisted += nr;
  p->relists++;
  /* the near list's horizon is the list's next update, as after a rebuild: allowances for the
   * steps until then keep it short (a flowing silo's 4.6 near pairs a grain; with the rebuilds'
   * horizon it is the whole list, 6.3, for the same time) */
  p->rebuild_every = w->steps - p->rebuild_step;
  p->rebuild_step = w->steps;
  return GRN_OK;
}

int grn__update_pairs(grn_world *w) {
  const grn_pairs *p = &w->pairs;
  if (w->model->near && w->model->own_slack && p->moved && !p->dirty && p->nl == w->n && p->m > 0 &&
      p->since < RELIST_MAX) {
    const int rc = relist(w);
    if (rc <= 0) {
      return rc;
    }
  }
  return grn__rebuild(w);
}
