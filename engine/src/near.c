/* The near list (grn_near): the pairs of the pair list that can touch before the next refresh,
 * which the fused and near steps walk instead of the whole list. */
#include "internal.h"

#include <math.h>
#include <string.h>

/* A listed pair apart by more than its reach plus both grains' allowances cannot touch, nor feel
 * a bridge, before one of the two has moved its allowance from where the refresh found it: until
 * then it would be found apart, with zero history and a zero row, at every step. Its row adds
 * nothing to the sums (adding +0 leaves a sum unchanged to the bit), so the fused step may leave
 * it out. Each grain's allowance is a distance, checked as the grain moves (finish_one), so the
 * list is refreshed when one grain has actually gone that far, not when one grain is briefly
 * fast. Allowances cover K steps (NEAR_STEPS, or fewer when the pair list is rebuilt sooner, as
 * in a flow whose fastest grains bring the rebuild on every few steps): the grains below the
 * 95th percentile of speed are slow and share one (their top speed·H·K), the others are fast and
 * get their own (a quarter over their speed, plus what gravity adds in K steps) — so one
 * rattler, or a stream of falling grains, neither widens every margin nor keeps all its pairs.
 * The slow allowance never goes below NEAR_MIN/2 (a bed at rest would otherwise refresh for
 * nothing), and the list is the whole pair list once that would reach past the skin. */
#define NEAR_STEPS 24
#define NEAR_MIN 0.002 /* m */
#define NEAR_FAST 0.05 /* at most this fraction of the grains is slow-marked fast */

bool grn__near_stale(const grn_world *w) {
  return !w->gran.near.valid || w->gran.near.gap != grn__reach_gap(w) || w->gran.near.over > 0;
}

static int grow_near(grn_world *w, int need) {
  void **const arrays[] = {(void **)&w->gran.near.b, (void **)&w->gran.near.p,
                           (void **)&w->gran.near.a, (void **)&w->gran.near.rref};
  const size_t each[] = {sizeof(int32_t), sizeof(int32_t), sizeof(int32_t), sizeof(int32_t)};
  return grn__regrow(w, arrays, each, 4, &w->gran.near.cap, need);
}

/* Whether listed pair p of an owner at pa is near: it touches (or holds a bridge), or lies within
 * both grains' reach and allowances (ra: the owner's radius, the reach gap and its allowance). */
static inline bool is_near(const grn_world *w, grn_vec3 pa, double ra, int p) {
  const int b = w->pairs.pb[p];
  const double dx = w->pos[b].x - pa.x, dy = w->pos[b].y - pa.y, dz = w->pos[b].z - pa.z;
  const double r = ra + w->rad[b] + (double)w->gran.near.nu[b];
  return (w->pairs.pfn[p] != 0.0f) | (dx * dx + dy * dy + dz * dz < r * r);
}

static inline double near_reach(const grn_world *w, int a) {
  return w->rad[a] + grn__reach_gap(w) + (double)w->gran.near.nu[a];
}

/* Near pairs of owner a: marks them in near[] (indexed by pair) and counts them. */
static inline int near_mark(const grn_world *w, int a, uint8_t *near) {
  const grn_vec3 pa = w->pos[a];
  const double ra = near_reach(w, a);
  int k = 0;
  for (int p = w->pairs.pstart[a]; p < w->pairs.pstart[a + 1]; p++) {
    near[p] = is_near(w, pa, ra, p);
    k += near[p];
  }
  return k;
}

/* The refresh's figures, once either way of packing has made the list. */
static int near_done(grn_world *w, int nm, int span, double margin, int nfast) {
  w->gran.near.m = nm;
  w->gran.near.span = span;
  w->gran.near.margin = margin;
  w->gran.near.fast = nfast;
  w->gran.near.over = 0;
  w->gran.near.refreshes++;
  w->gran.near.gap = grn__reach_gap(w);
  w->gran.near.valid = true;
  return GRN_OK;
}

/* One thread: each owner's near pairs marked and packed in the same pass (no marks kept between
 * two passes over the whole list); the list has room for every listed pair. The same list as the
 * two passes make. */
static int near_one_pass(grn_world *w, double margin, int nfast) {
  const int n = w->n;
  if (grow_near(w, w->pairs.m + 1) != GRN_OK) {
    return GRN_E_NOMEM;
  }
  int q = 0, span = 0;
  w->gran.near.start[0] = 0;
  for (int a = 0; a < n; a++) {
    const grn_vec3 pa = w->pos[a];
    const double ra = near_reach(w, a);
    for (int p = w->pairs.pstart[a]; p < w->pairs.pstart[a + 1]; p++) {
      /* written always, kept by advancing (the list has room for one more than every pair) */
      const int b = w->pairs.pb[p], d = b > a ? b - a : a - b;
      const bool keep = is_near(w, pa, ra, p);
      w->gran.near.b[q] = b;
      w->gran.near.p[q] = p;
      w->gran.near.a[q] = a;
      span = keep && d > span ? d : span;
      q += keep;
    }
    w->gran.near.start[a + 1] = q;
  }
  return near_done(w, q, span, margin, nfast);
}

int grn__near_refresh(grn_world *w) {
  w->gran.near.valid = false;
  w->gran.fused.on = false;
  const int n = w->n, nthreads = w->opt.threads;
  (void)nthreads;
  /* speeds by powers of two of v², to find the speed that all but NEAR_FAST of the grains keep
   * below without sorting */
  int hist[64] = {0}, alive = 0;
  for (int i = 0; i < n; i++) {
    const double v2 =
        w->vel[i].x * w->vel[i].x + w->vel[i].y * w->vel[i].y + w->vel[i].z * w->vel[i].z;
    int e = -40;
    if (v2 > 0.0) {
      frexp(v2, &e); /* v2 < 2^e */
    }
    e = e < -40 ? -40 : (e > 23 ? 23 : e);
    if (w->flags[i] & GRN_F_ALIVE) {
      hist[e + 40]++;
      alive++;
    }
  }
  int top = 63, above = 0;
  while (top > 0 && above + hist[top] <= (int)(NEAR_FAST * alive)) {
    above += hist[top--];
  }
  /* the next rebuild is likely as far off as the last was from the one before */
  int steps = NEAR_STEPS;
  if (w->pairs.rebuild_every > 0 && w->pairs.rebuild_every < NEAR_STEPS) {
    steps = (int)w->pairs.rebuild_every;
  }
  const double hk = GRN_H * steps;
  /* all but `above` grains have v² < 2^(top − 40) */
  const double vslow = sqrt(ldexp(1.0, top - 40));
  double margin = 2.0 * vslow * hk;
  margin = margin > NEAR_MIN ? margin : NEAR_MIN;
  const double vcut = margin / (2.0 * hk);
  const bool whole = !(margin < w->pairs.skin - grn__reach_gap(w));
  int nfast = 0;
  for (int i = 0; i < n; i++) {
    const double v2 =
        w->vel[i].x * w->vel[i].x + w->vel[i].y * w->vel[i].y + w->vel[i].z * w->vel[i].z;
    w->gran.near.ref[i] = w->pos[i];
    if (whole) {
      w->gran.near.nu[i] = INFINITY;
    } else if (v2 < vcut * vcut) {
      w->gran.near.nu[i] = (float)(0.5 * margin);
    } else {
      w->gran.near.nu[i] = (float)((1.25 * sqrt(v2) + GRN_G * hk) * hk);
      nfast++;
    }
  }
  if (nthreads == 1 && !whole) {
    return near_one_pass(w, margin, nfast);
  }
  if (grn__scratch(w, (size_t)w->pairs.m + 1) != GRN_OK) {
    return GRN_E_NOMEM;
  }
  uint8_t *near = w->pairs.scr.scratch;
#pragma omp parallel for schedule(static) num_threads(nthreads)
  for (int a = 0; a < n; a++) {
    w->gran.near.start[a + 1] =
        whole ? w->pairs.pstart[a + 1] - w->pairs.pstart[a] : near_mark(w, a, near);
  }
  w->gran.near.start[0] = 0;
  for (int a = 0; a < n; a++) {
    w->gran.near.start[a + 1] += w->gran.near.start[a];
  }
  const int nm = w->gran.near.start[n];
  if (grow_near(w, nm) != GRN_OK) {
    return GRN_E_NOMEM;
  }
  int span = 0;
#pragma omp parallel for schedule(static) num_threads(nthreads) reduction(max : span)
  for (int a = 0; a < n; a++) {
    int q = w->gran.near.start[a];
    const int qend = w->gran.near.start[a + 1];
    for (int p = w->pairs.pstart[a]; p < w->pairs.pstart[a + 1] && q < qend; p++) {
      /* written always, kept by advancing: no write goes past the owner's own entries */
      const int b = w->pairs.pb[p], d = b > a ? b - a : a - b;
      const bool keep = whole || near[p];
      w->gran.near.b[q] = b;
      w->gran.near.p[q] = p;
      w->gran.near.a[q] = a;
      span = keep && d > span ? d : span;
      q += keep;
    }
  }

  return near_done(w, nm, span, whole ? INFINITY : margin, nfast);
}

/* Reference lists of the near pairs, once the fused step is planned (or not): the two-pass near
 * step gathers through them; the fused step keeps its own for the grains at thread boundaries. */
void grn__near_refs(grn_world *w) {
  if (!w->gran.fused.on) {
    grn__refs_of(w->n, w->gran.near.m, w->gran.near.b, w->gran.near.rstart, w->gran.near.rref,
                 w->pairs.scr.newidx);
  }
}

void grn__near_free(grn_world *w) {
  grn_near *nr = &w->gran.near;
  const size_t cap = (size_t)w->cap, m = (size_t)nr->cap;
  grn__free(w, nr->nu, sizeof(float) * cap);
  grn__free(w, nr->ref, sizeof(grn_vec3) * cap);
  grn__free(w, nr->start, sizeof(int32_t) * (cap + 1));
  grn__free(w, nr->rstart, sizeof(int32_t) * (cap + 1));
  grn__free(w, nr->b, sizeof(int32_t) * m);
  grn__free(w, nr->p, sizeof(int32_t) * m);
  grn__free(w, nr->a, sizeof(int32_t) * m);
  grn__free(w, nr->rref, sizeof(int32_t) * m);
}
