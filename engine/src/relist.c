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
 * drifts from cell order, and a rebuild comes after RELIST_MAX re-listings or once a tenth of the
 * grains has been re-listed since the last (RELIST_SHARE). */
#define RELIST_MAX 16
#define RELIST_SHARE 10
#define RELIST_PAIRS 64 /* new pairs a re-listed grain may bring on average; more: a rebuild */

typedef struct newpair {
  int32_t a, b; /* owner, partner */
  int32_t at;   /* where it goes in the list before the merge */
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

static inline bool pair_before(newpair x, newpair y) {
  return x.a < y.a || (x.a == y.a && x.b < y.b);
}

/* Shell sort: few keys, and no memory of its own (the engine's comes from the caller). */
static void sort_new(newpair *k, int n) {
  static const int gaps[] = {701, 301, 132, 57, 23, 10, 4, 1};
  for (size_t g = 0; g < sizeof gaps / sizeof gaps[0]; g++) {
    const int h = gaps[g];
    for (int i = h; i < n; i++) {
      const newpair v = k[i];
      int j = i;
      for (; j >= h && pair_before(v, k[j - h]); j -= h) {
        k[j] = k[j - h];
      }
      k[j] = v;
    }
  }
}

/* The search: slow grains (the shared slack e0) binned by reference position, fast ones one by
 * one. */
typedef struct finder {
  const grn_world *w;
  double e0, gap, rmax;
  int32_t *fast;
  int nfast;
  newpair *out;
  int count, room;
} finder;

/* Pair {r, j} if their reference positions are within listing reach and it is not listed yet.
 * False when the room for new pairs has run out. */
static bool consider(finder *f, int r, int j) {
  const grn_world *w = f->w;
  if (j == r || (w->flags[r] & w->flags[j] & GRN_F_FIXED)) {
    return true;
  }
  const grn_vec3 a = w->pairs.ref[r], b = w->pairs.ref[j];
  const double dx = b.x - a.x, dy = b.y - a.y, dz = b.z - a.z,
               rr = (w->rad[r] + w->rad[j]) + ((f->gap + w->pairs.slack[r]) + w->pairs.slack[j]);
  if (!(dx * dx + dy * dy + dz * dz < rr * rr)) {
    return true;
  }
  const bool ro = grn__owns(w, r, j);
  const int o = ro ? r : j, q = ro ? j : r;
  if (listed_in(&w->pairs, o, q)) {
    return true;
  }
  if (f->count == f->room) {
    return false;
  }
  f->out[f->count++] = (newpair){o, q, 0};
  return true;
}

/* Every grain that grain r, re-listed, must now be listed with. */
static bool find_around(finder *f, int r) {
  const grn_world *w = f->w;
  const grn_grid *g = &w->pairs.scr.grid;
  const int32_t *cstart = w->pairs.scr.cstart, *slow = w->pairs.scr.perm;
  /* a slow partner's reference lies within this of r's; a micrometre for the rounding of cells */
  const double rs = w->rad[r] + f->rmax + f->gap + w->pairs.slack[r] + f->e0 + 1e-6;
  const double kc = ceil(rs / g->cs);
  const int k = kc < (double)(g->nx + g->ny + g->nz) ? (int)kc : g->nx + g->ny + g->nz;
  const int c = grn__cell_of(g, w->pairs.ref[r]);
  const int iz = c / (g->nx * g->ny), rest = c - iz * g->nx * g->ny, iy = rest / g->nx,
            ix = rest - iy * g->nx;
  const int jx0 = ix - k > 0 ? ix - k : 0, jx1 = ix + k < g->nx ? ix + k : g->nx - 1;
  for (int jz = iz - k > 0 ? iz - k : 0; jz <= iz + k && jz < g->nz; jz++) {
    for (int jy = iy - k > 0 ? iy - k : 0; jy <= iy + k && jy < g->ny; jy++) {
      const int row = g->nx * (jy + g->ny * jz);
      for (int s = cstart[row + jx0]; s < cstart[row + jx1 + 1]; s++) {
        if (!consider(f, r, slow[s])) {
          return false;
        }
      }
    }
  }
  for (int s = 0; s < f->nfast; s++) {
    if (!consider(f, r, f->fast[s])) {
      return false;
    }
  }
  return true;
}

/* The slow grains sorted by the cell of their reference position (scr.perm, from scr.cstart),
 * on the grid planned over those positions; the fast ones listed apart (fast). */
static int bin_slow(grn_world *w, double e0, int32_t *fast) {
  grn_relist *sc = &w->pairs.scr;
  const int n = w->n;
  const int ncell = sc->grid.nx * sc->grid.ny * sc->grid.nz;
  memset(sc->cstart, 0, sizeof(int32_t) * (size_t)(ncell + 1));
  int nf = 0;
  for (int i = 0; i < n; i++) {
    if (w->pairs.slack[i] > e0) {
      sc->cell[i] = -1;
      fast[nf++] = i;
    } else {
      sc->cell[i] = grn__cell_of(&sc->grid, w->pairs.ref[i]);
      sc->cstart[sc->cell[i] + 1]++;
    }
  }
  for (int c = 0; c < ncell; c++) {
    sc->cstart[c + 1] += sc->cstart[c];
  }
  for (int i = 0; i < n; i++) {
    if (sc->cell[i] >= 0) {
      sc->perm[sc->cstart[sc->cell[i]]++] = i;
    }
  }
  for (int c = ncell; c > 0; c--) {
    sc->cstart[c] = sc->cstart[c - 1];
  }
  sc->cstart[0] = 0;
  return nf;
}

/* Room in the pair arrays for `need` pairs, their contents kept (the reference lists are made
 * again after the merge). */
static int grow_keeping(grn_world *w, int need) {
  grn_pairs *p = &w->pairs;
  if (need <= p->mcap) {
    return GRN_OK;
  }
  const size_t old = (size_t)p->mcap, m = (size_t)p->m, want = (size_t)need + (size_t)need / 4 + 64;
  int32_t *pb = grn__alloc(w, sizeof(int32_t) * want),
          *rref = grn__alloc(w, sizeof(int32_t) * want);
  grn_hist *hist = grn__alloc(w, sizeof(grn_hist) * want);
  float *pfn = grn__alloc(w, sizeof(float) * want);
  if (!pb || !rref || !hist || !pfn) {
    grn__free(w, pb, sizeof(int32_t) * want);
    grn__free(w, rref, sizeof(int32_t) * want);
    grn__free(w, hist, sizeof(grn_hist) * want);
    grn__free(w, pfn, sizeof(float) * want);
    return GRN_E_NOMEM;
  }
  memcpy(pb, p->pb, sizeof(int32_t) * m);
  memcpy(hist, p->hist, sizeof(grn_hist) * m);
  memcpy(pfn, p->pfn, sizeof(float) * m);
  grn__free(w, p->pb, sizeof(int32_t) * old);
  grn__free(w, p->rref, sizeof(int32_t) * old);
  grn__free(w, p->hist, sizeof(grn_hist) * old);
  grn__free(w, p->pfn, sizeof(float) * old);
  p->pb = pb;
  p->rref = rref;
  p->hist = hist;
  p->pfn = pfn;
  p->mcap = (int)want;
  return GRN_OK;
}

/* The new pairs (sorted, each once) into their owners' rows at their partner's place, with no
 * history: moved from the back, so each old pair moves once. */
static void merge(grn_pairs *p, newpair *np, int k) {
  for (int t = 0; t < k; t++) {
    int q = p->pstart[np[t].a];
    while (q < p->pstart[np[t].a + 1] && p->pb[q] < np[t].b) {
      q++;
    }
    np[t].at = q;
  }
  int32_t end = p->m;
  for (int t = k - 1; t >= 0; t--) {
    const int32_t at = np[t].at, len = end - at;
    memmove(&p->pb[at + t + 1], &p->pb[at], sizeof(int32_t) * (size_t)len);
    memmove(&p->hist[at + t + 1], &p->hist[at], sizeof(grn_hist) * (size_t)len);
    memmove(&p->pfn[at + t + 1], &p->pfn[at], sizeof(float) * (size_t)len);
    p->pb[at + t] = np[t].b;
    memset(&p->hist[at + t], 0, sizeof(grn_hist));
    p->pfn[at + t] = 0.0f;
    end = at;
  }
  int t = 0;
  for (int a = 0; a <= p->nl; a++) {
    while (t < k && np[t].a < a) {
      t++;
    }
    p->pstart[a] += t;
  }
  p->m += k;
}

/* Whether one of the new pairs may touch before the near list's refresh: within reach and both
 * allowances of where the refresh found its grains (near.c). */
static bool any_near(const grn_world *w, const newpair *np, int k) {
  const grn_near *nl = &w->gran.near;
  const double gap = grn__reach_gap(w);
  for (int t = 0; t < k; t++) {
    const int a = np[t].a, b = np[t].b;
    const grn_vec3 x = nl->ref[a], y = nl->ref[b];
    const double dx = y.x - x.x, dy = y.y - x.y, dz = y.z - x.z,
                 r = (w->rad[a] + w->rad[b]) + ((gap + (double)nl->nu[a]) + (double)nl->nu[b]);
    if (dx * dx + dy * dy + dz * dz < r * r) {
      return true;
    }
  }
  return false;
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
  if (nr == 0 || (int64_t)(p->relisted + nr) * RELIST_SHARE > n) {
    return 1;
  }
  const int room = RELIST_PAIRS * nr;
  if (grn__scratch(w, sizeof(int32_t) * (size_t)(nr + n) + sizeof(newpair) * (size_t)room) !=
      GRN_OK) {
    return 1;
  }
  int32_t *re = w->pairs.scr.scratch, *fast = re + nr;
  newpair *np = (newpair *)(void *)(fast + n);
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
  finder f = {w, e0, gap, rmax, fast, bin_slow(w, e0, fast), np, 0, room};
  for (int s = 0; s < nr; s++) {
    if (!find_around(&f, re[s])) {
      return 1;
    }
  }
  sort_new(np, f.count);
  int k = 0;
  for (int t = 0; t < f.count; t++) {
    if (k == 0 || np[t].a != np[k - 1].a || np[t].b != np[k - 1].b) {
      np[k++] = np[t];
    }
  }
  if (grow_keeping(w, p->m + k) != GRN_OK) {
    return GRN_E_NOMEM;
  }
  merge(p, np, k);
  grn__rebuild_refs(w);
  if (w->gran.near.valid && !any_near(w, np, k)) {
    /* no new pair can touch before the near list's refresh: it stays, its pairs' places in the
     * list moved by the merge */
    grn_near *nl = &w->gran.near;
    int t = 0;
    for (int q = 0; q < nl->m; q++) {
      while (t < k && np[t].at <= nl->p[q]) {
        t++;
      }
      nl->p[q] += t;
    }
  } else {
    w->gran.near.valid = false;
    w->gran.fused.on = false;
  }
  p->table_valid = false;
  p->moved = false;
  p->since++;
  p->relisted += nr;
  p->relists++;
  /* the near list's horizon: the list's next update, which nearly always brings pairs that are
   * near (a refresh) */
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
