/* Softened N-body gravity (spec §4, reference 003) in units with G = 1: kick-drift-kick leapfrog
 * with an optional speed cap, forces by direct summation or by a Barnes–Hut octree. Every body's
 * force is summed in a fixed order by one thread, so results never depend on the thread count. */
#include "model.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define DIRECT_MAX 2048 /* crossover: 187 steps/s direct at 2000 bodies, 192 tree at 2100 */
#define LEAF 32         /* bodies a leaf may hold */
#define KEY_BITS 21     /* per axis: 63-bit Morton keys */

typedef struct grn_bh_node {
  double cx, cy, cz, m; /* centre of mass and mass */
  double crit2;         /* opened when the squared distance to the centre of mass is below this */
  int next;             /* the node after this one's subtree (depth-first order) */
  int first, count;     /* leaves: their bodies in key order */
} grn_bh_node;

typedef struct grn_bh_key {
  uint64_t key;
  int32_t idx;
} grn_bh_key;

static void nbody_derive(grn_world *w) {
  w->nbody.theta = grn__param(w, GRN_SP_THETA); /* 0 for scenes without a tree */
}

/* Room for the per-body arrays and the direct sum's 4 planes of n. */
static int nbody_arrays(grn_world *w) {
  if (w->n > w->nbody.cap) {
    const int nc = w->n + w->n / 4 + 16;
    grn_vec3 *acc = grn__alloc(w, sizeof(grn_vec3) * (size_t)nc);
    double *mass = grn__alloc(w, sizeof(double) * (size_t)nc);
    double *phi = grn__alloc(w, sizeof(double) * (size_t)nc);
    double *soa = grn__alloc(w, 4 * sizeof(double) * (size_t)nc);
    if (!acc || !mass || !phi || !soa) {
      grn__free(w, acc, sizeof(grn_vec3) * (size_t)nc);
      grn__free(w, mass, sizeof(double) * (size_t)nc);
      grn__free(w, phi, sizeof(double) * (size_t)nc);
      grn__free(w, soa, 4 * sizeof(double) * (size_t)nc);
      return GRN_E_NOMEM;
    }
    grn__free(w, w->nbody.acc, sizeof(grn_vec3) * (size_t)w->nbody.cap);
    grn__free(w, w->nbody.mass, sizeof(double) * (size_t)w->nbody.cap);
    grn__free(w, w->nbody.phi, sizeof(double) * (size_t)w->nbody.cap);
    grn__free(w, w->nbody.soa, 4 * sizeof(double) * (size_t)w->nbody.cap);
    w->nbody.acc = acc;
    w->nbody.mass = mass;
    w->nbody.phi = phi;
    w->nbody.soa = soa;
    w->nbody.cap = nc;
  }
  return GRN_OK;
}

static void nbody_free(grn_world *w) {
  grn__free(w, w->nbody.acc, sizeof(grn_vec3) * (size_t)w->nbody.cap);
  grn__free(w, w->nbody.mass, sizeof(double) * (size_t)w->nbody.cap);
  grn__free(w, w->nbody.phi, sizeof(double) * (size_t)w->nbody.cap);
  grn__free(w, w->nbody.soa, 4 * sizeof(double) * (size_t)w->nbody.cap);
  w->nbody.acc = NULL;
  w->nbody.mass = w->nbody.phi = w->nbody.soa = NULL;
  w->nbody.cap = 0;
  grn__free(w, w->nbody.nodes, sizeof(grn_bh_node) * (size_t)w->nbody.nodecap);
  grn__free(w, w->nbody.keys, sizeof(grn_bh_key) * (size_t)w->nbody.keycap);
  grn__free(w, w->nbody.lists, sizeof(double) * w->nbody.listcap);
  w->nbody.lists = NULL;
  w->nbody.listcap = 0;
  w->nbody.nodes = NULL;
  w->nbody.keys = NULL;
  w->nbody.nodecap = w->nbody.keycap = w->nbody.nnode = 0;
  w->nbody.tree_valid = false;
}

int grn__nbody_add(grn_world *w, double m, double x, double y, double z, grn_vec3 v) {
  /* drawn size only: about a third of the mean spacing of n bodies in a unit sphere, 0.1 at most */
  const double r = fmin(0.1, 0.4 * cbrt(1.0 / (w->n_target > 1 ? w->n_target : 1)));
  const int rc = grn__add_grain(w, x, y, z, r, v);
  if (rc == GRN_OK) {
    w->inv_m[w->n - 1] = 1.0 / m;
  }
  return rc;
}

static bool use_tree(const grn_world *w) {
  return w->nbody.theta > 0.0 && w->fig.alive > DIRECT_MAX;
}

/* ---- Barnes–Hut tree ---------------------------------------------------------------------------
 */
static uint64_t spread3(uint64_t v) { /* 21 bits to every third of 63 */
  v &= 0x1fffffull;
  v = (v | v << 32) & 0x1f00000000ffffull;
  v = (v | v << 16) & 0x1f0000ff0000ffull;
  v = (v | v << 8) & 0x100f00f00f00f00full;
  v = (v | v << 4) & 0x10c30c30c30c30c3ull;
  v = (v | v << 2) & 0x1249249249249249ull;
  return v;
}

static int key_cmp(const void *a, const void *b) {
  const grn_bh_key *p = a, *q = b;
  if (p->key != q->key) {
    return p->key < q->key ? -1 : 1;
  }
  return (p->idx > q->idx) - (p->idx < q->idx);
}

typedef struct build_ctx {
  grn_world *w;
  int nkey;
  bool nomem;
} build_ctx;

/* Node over keys[lo, hi) in the cube of centre c and half side half, depth-first. */
static int build(build_ctx *b, int lo, int hi, int depth, const double c[3], double half) {
  grn_world *w = b->w;
  if (w->nbody.nnode >= w->nbody.nodecap &&
      grn__grow(w, (void **)&w->nbody.nodes, sizeof(grn_bh_node), &w->nbody.nodecap,
                w->nbody.nnode + 1) != GRN_OK) {
    b->nomem = true;
    return -1;
  }
  const int k = w->nbody.nnode++;
  double m = 0.0, sx = 0.0, sy = 0.0, sz = 0.0;
  if (hi - lo <= LEAF || depth == KEY_BITS) {
    for (int q = lo; q < hi; q++) {
      const int i = w->nbody.keys[q].idx;
      const double mi = w->nbody.mass[i];
      m += mi;
      sx += mi * w->pos[i].x;
      sy += mi * w->pos[i].y;
      sz += mi * w->pos[i].z;
    }
    w->nbody.nodes[k].first = lo;
    w->nbody.nodes[k].count = hi - lo;
  } else {
    const int shift = 3 * (KEY_BITS - 1 - depth);
    int q = lo;
    for (int oct = 0; oct < 8; oct++) {
      const int start = q;
      while (q < hi && (int)((w->nbody.keys[q].key >> shift) & 7u) == oct) {
        q++;
      }
      if (q == start) {
        continue;
      }
      const double h2 = 0.5 * half;
      const double cc[3] = {c[0] + ((oct & 1) ? h2 : -h2), c[1] + ((oct & 2) ? h2 : -h2),
                            c[2] + ((oct & 4) ? h2 : -h2)};
      const int child = build(b, start, q, depth + 1, cc, h2);
      if (child < 0) {
        return -1;
      }
      const grn_bh_node *ch = &w->nbody.nodes[child];
      m += ch->m;
      sx += ch->m * ch->cx;
      sy += ch->m * ch->cy;
      sz += ch->m * ch->cz;
    }
    w->nbody.nodes[k].first = 0;
    w->nbody.nodes[k].count = -1; /* internal */
  }
  grn_bh_node *nd = &w->nbody.nodes[k];
  nd->m = m;
  nd->cx = m > 0.0 ? sx / m : c[0];
  nd->cy = m > 0.0 ? sy / m : c[1];
  nd->cz = m > 0.0 ? sz / m : c[2];
  /* Barnes' rule with the offset of the centre of mass: open unless d > s/θ + δ, which keeps the
   * error bounded when the mass sits in a corner of a big cell */
  const double dx = nd->cx - c[0], dy = nd->cy - c[1], dz = nd->cz - c[2];
  const double crit = 2.0 * half / w->nbody.theta + sqrt(dx * dx + dy * dy + dz * dz);
  nd->crit2 = crit * crit;
  nd->next = w->nbody.nnode;
  return k;
}

static int build_tree(grn_world *w) {
  if (w->n > w->nbody.keycap) {
    grn__free(w, w->nbody.keys, sizeof(grn_bh_key) * (size_t)w->nbody.keycap);
    w->nbody.keycap = 0;
    w->nbody.keys = grn__alloc(w, sizeof(grn_bh_key) * (size_t)w->n);
    if (!w->nbody.keys) {
      return GRN_E_NOMEM;
    }
    w->nbody.keycap = w->n;
  }
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int i = 0; i < w->n; i++) {
    if (w->flags[i] & GRN_F_ALIVE) {
      const double p[3] = {w->pos[i].x, w->pos[i].y, w->pos[i].z};
      for (int a = 0; a < 3; a++) {
        lo[a] = p[a] < lo[a] ? p[a] : lo[a];
        hi[a] = p[a] > hi[a] ? p[a] : hi[a];
      }
    }
  }
  double half = 0.0, c[3];
  for (int a = 0; a < 3; a++) {
    c[a] = 0.5 * (lo[a] + hi[a]);
    half = 0.5 * (hi[a] - lo[a]) > half ? 0.5 * (hi[a] - lo[a]) : half;
  }
  half = half * (1.0 + 1e-9) + 1e-12;
  const double scale = (double)(1u << KEY_BITS) / (2.0 * half);
  int nk = 0;
  for (int i = 0; i < w->n; i++) {
    if (w->flags[i] & GRN_F_ALIVE) {
      uint64_t q[3];
      const double p[3] = {w->pos[i].x, w->pos[i].y, w->pos[i].z};
      for (int a = 0; a < 3; a++) {
        const double f = floor((p[a] - (c[a] - half)) * scale);
        q[a] = f < 0.0                              ? 0u
               : f > (double)((1u << KEY_BITS) - 1) ? (1u << KEY_BITS) - 1
                                                    : (uint64_t)f;
      }
      w->nbody.keys[nk].key = spread3(q[0]) | spread3(q[1]) << 1 | spread3(q[2]) << 2;
      w->nbody.keys[nk].idx = i;
      nk++;
    }
  }
  qsort(w->nbody.keys, (size_t)nk, sizeof(grn_bh_key), key_cmp);
  w->nbody.nnode = 0;
  build_ctx b = {w, nk, false};
  build(&b, 0, nk, 0, c, half);
  if (b.nomem) {
    return GRN_E_NOMEM;
  }
  w->nbody.tree_valid = true;
  return GRN_OK;
}

/* Direct sum from the structure-of-arrays copy (x, y, z, m planes of n). The canonical order is
 * four lanes: body j adds to lane (j mod 4) in index order and the lanes combine as
 * (l0 + l1) + (l2 + l3). The AVX2 kernel and the scalar reference below follow exactly that order
 * with the same IEEE operations, so they give the same bits on any machine and thread count.
 * The body itself and a body on the same point without softening (r² = 0) select a zero mass
 * instead of branching; a removed body has mass 0 in the planes. */
typedef struct direct_in {
  const double *x, *y, *z, *m;
  int n;
  double px, py, pz, e2;
} direct_in;

static inline void lane_add(const direct_in *d, int j, double *l) {
  const double dx = d->x[j] - d->px, dy = d->y[j] - d->py, dz = d->z[j] - d->pz;
  const double r2 = dx * dx + dy * dy + dz * dz + d->e2;
  const bool apart = r2 > 0.0;
  const double ir = 1.0 / sqrt(apart ? r2 : 1.0), ms = apart ? d->m[j] : 0.0, f = ms * ir * ir * ir;
  l[0] += f * dx;
  l[4] += f * dy;
  l[8] += f * dz;
  l[12] -= ms * ir;
}

/* Lanes (component-major: x lanes 0–3, y 4–7, z 8–11, potential 12–15) into the result. */
static grn_vec3 lanes_combine(const double *l, double *phi) {
  *phi = (l[12] + l[13]) + (l[14] + l[15]);
  return (grn_vec3){(l[0] + l[1]) + (l[2] + l[3]), (l[4] + l[5]) + (l[6] + l[7]),
                    (l[8] + l[9]) + (l[10] + l[11])};
}

static grn_vec3 direct_scalar(const direct_in *d, double *phi) {
  double l[16] = {0};
  for (int j = 0; j < d->n; j++) {
    lane_add(d, j, l + (j & 3));
  }
  return lanes_combine(l, phi);
}

#if defined(__x86_64__) && defined(GRN_SIMD)
#include <immintrin.h>

__attribute__((target("avx2"))) static grn_vec3 direct_avx2(const direct_in *d, double *phi) {
  const __m256d px = _mm256_set1_pd(d->px), py = _mm256_set1_pd(d->py), pz = _mm256_set1_pd(d->pz),
                e2 = _mm256_set1_pd(d->e2), one = _mm256_set1_pd(1.0), zero = _mm256_setzero_pd();
  __m256d ax = zero, ay = zero, az = zero, ph = zero;
  int j = 0;
  for (; j + 4 <= d->n; j += 4) {
    const __m256d dx = _mm256_sub_pd(_mm256_loadu_pd(d->x + j), px),
                  dy = _mm256_sub_pd(_mm256_loadu_pd(d->y + j), py),
                  dz = _mm256_sub_pd(_mm256_loadu_pd(d->z + j), pz);
    const __m256d r2 =
        _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy)),
                                    _mm256_mul_pd(dz, dz)),
                      e2);
    const __m256d apart = _mm256_cmp_pd(r2, zero, _CMP_GT_OQ);
    const __m256d ir = _mm256_div_pd(one, _mm256_sqrt_pd(_mm256_blendv_pd(one, r2, apart)));
    const __m256d ms = _mm256_and_pd(_mm256_loadu_pd(d->m + j), apart);
    const __m256d f = _mm256_mul_pd(_mm256_mul_pd(_mm256_mul_pd(ms, ir), ir), ir);
    ax = _mm256_add_pd(ax, _mm256_mul_pd(f, dx));
    ay = _mm256_add_pd(ay, _mm256_mul_pd(f, dy));
    az = _mm256_add_pd(az, _mm256_mul_pd(f, dz));
    ph = _mm256_sub_pd(ph, _mm256_mul_pd(ms, ir));
  }
  double l[16];
  _mm256_storeu_pd(l, ax);
  _mm256_storeu_pd(l + 4, ay);
  _mm256_storeu_pd(l + 8, az);
  _mm256_storeu_pd(l + 12, ph);
  for (; j < d->n; j++) {
    lane_add(d, j, l + (j & 3));
  }
  return lanes_combine(l, phi);
}
#endif

/* Acceleration and potential at (px, py, pz) from the list (x, y, z, m) of n entries. */
static grn_vec3 list_sum(const grn_world *w, const direct_in *d, double *phi) {
#if defined(__x86_64__) && defined(GRN_SIMD)
  if (w->opt.simd) {
    return direct_avx2(d, phi);
  }
#else
  (void)w;
#endif
  return direct_scalar(d, phi);
}

static grn_vec3 direct(const grn_world *w, const double *soa, int i) {
  const int n = w->n;
  const direct_in d = {soa,
                       soa + n,
                       soa + 2 * (size_t)n,
                       soa + 3 * (size_t)n,
                       n,
                       soa[i],
                       soa[n + i],
                       soa[2 * (size_t)n + i],
                       grn__param(w, GRN_SP_EPS) * grn__param(w, GRN_SP_EPS)};
  double phi; /* includes the body's own −m/ε: the measurement sums pairs instead */
  return list_sum(w, &d, &phi);
}

/* Barnes' grouped walk (1990): one walk per leaf, opening a cell unless its centre of mass is
 * further from the leaf's bounding box than s/θ + δ, collects an interaction list (accepted
 * cells as point masses, the bodies of opened leaves) that every body of the leaf then sums with
 * the four-lane kernel. The criterion is the per-body one taken at the body nearest the cell, so
 * it is never looser; the body's own entry gets mass 0 while it is summed. Acceleration into acc,
 * potential into prs. */
static void group_forces(grn_world *w, const grn_bh_node *leaf, double *buf, int cap) {
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int q = leaf->first; q < leaf->first + leaf->count; q++) {
    const grn_vec3 p = w->pos[w->nbody.keys[q].idx];
    const double c[3] = {p.x, p.y, p.z};
    for (int a = 0; a < 3; a++) {
      lo[a] = c[a] < lo[a] ? c[a] : lo[a];
      hi[a] = c[a] > hi[a] ? c[a] : hi[a];
    }
  }
  double *x = buf, *y = buf + cap, *z = buf + 2 * (size_t)cap, *m = buf + 3 * (size_t)cap;
  int len = 0, self = -1;
  for (int k = 0; k < w->nbody.nnode;) {
    const grn_bh_node *nd = &w->nbody.nodes[k];
    const double c[3] = {nd->cx, nd->cy, nd->cz};
    double d2 = 0.0;
    for (int a = 0; a < 3; a++) {
      const double out = c[a] < lo[a] ? lo[a] - c[a] : c[a] > hi[a] ? c[a] - hi[a] : 0.0;
      d2 += out * out;
    }
    if (d2 > nd->crit2) {
      x[len] = nd->cx, y[len] = nd->cy, z[len] = nd->cz, m[len] = nd->m;
      len++;
      k = nd->next;
    } else if (nd->count >= 0) {
      if (nd == leaf) {
        self = len;
      }
      for (int q = nd->first; q < nd->first + nd->count; q++) {
        const int j = w->nbody.keys[q].idx;
        x[len] = w->pos[j].x, y[len] = w->pos[j].y, z[len] = w->pos[j].z, m[len] = w->nbody.mass[j];
        len++;
      }
      k = nd->next;
    } else {
      k++;
    }
  }
  const double e2 = grn__param(w, GRN_SP_EPS) * grn__param(w, GRN_SP_EPS);
  for (int q = 0; q < leaf->count; q++) {
    const int i = w->nbody.keys[leaf->first + q].idx;
    const double keep = m[self + q];
    m[self + q] = 0.0;
    const direct_in d = {x, y, z, m, len, w->pos[i].x, w->pos[i].y, w->pos[i].z, e2};
    w->nbody.acc[i] = list_sum(w, &d, &w->nbody.phi[i]);
    m[self + q] = keep;
  }
}

/* Accelerations at the current positions. */
int grn__nbody_forces(grn_world *w) {
  int rc = nbody_arrays(w);
  if (rc != GRN_OK) {
    return rc;
  }
  for (int i = 0; i < w->n; i++) {
    w->nbody.mass[i] = 1.0 / w->inv_m[i];
  }
  const int n = w->n, nthreads = w->opt.threads;
  (void)nthreads;
  w->nbody.tree_valid = false;
  if (use_tree(w)) {
    rc = build_tree(w);
    if (rc != GRN_OK) {
      return rc;
    }
    /* one interaction list per thread, as long as every body and cell together */
    const int cap = w->n + w->nbody.nnode;
    const size_t need = 4 * (size_t)cap * (size_t)nthreads;
    if (need > w->nbody.listcap) {
      grn__free(w, w->nbody.lists, sizeof(double) * w->nbody.listcap);
      w->nbody.listcap = 0;
      w->nbody.lists = grn__alloc(w, sizeof(double) * need);
      if (!w->nbody.lists) {
        return GRN_E_NOMEM;
      }
      w->nbody.listcap = need;
    }
    const int nnode = w->nbody.nnode;
#pragma omp parallel for schedule(dynamic, 8) num_threads(nthreads)
    for (int k = 0; k < nnode; k++) {
      if (w->nbody.nodes[k].count > 0) {
        group_forces(w, &w->nbody.nodes[k],
                     w->nbody.lists + 4 * (size_t)cap * (size_t)omp_get_thread_num(), cap);
      }
    }
  } else {
    double *soa = w->nbody.soa; /* 4 planes of n */
    for (int i = 0; i < n; i++) {
      const bool alive = (w->flags[i] & GRN_F_ALIVE) != 0;
      soa[i] = w->pos[i].x;
      soa[n + i] = w->pos[i].y;
      soa[2 * (size_t)n + i] = w->pos[i].z;
      soa[3 * (size_t)n + i] = alive ? w->nbody.mass[i] : 0.0;
    }
#pragma omp parallel for schedule(dynamic, 64) num_threads(nthreads)
    for (int i = 0; i < n; i++) {
      if (w->flags[i] & GRN_F_ALIVE) {
        w->nbody.acc[i] = direct(w, soa, i);
      }
    }
  }
  w->nbody.acc_valid = true;
  return GRN_OK;
}

static void kick(grn_world *w, double dt) {
  const double cap = grn__param(w, GRN_SP_VCAP);
  for (int i = 0; i < w->n; i++) {
    grn_vec3 v = w->vel[i];
    v.x += w->nbody.acc[i].x * dt;
    v.y += w->nbody.acc[i].y * dt;
    v.z += w->nbody.acc[i].z * dt;
    const double sp = sqrt(v.x * v.x + v.y * v.y + v.z * v.z);
    if (cap > 0.0 && sp > cap) { /* reference 003: keep the direction, shorten to the cap */
      v.x *= cap / sp;
      v.y *= cap / sp;
      v.z *= cap / sp;
    }
    w->vel[i] = v;
  }
}

/* Kick-drift-kick leapfrog: half kick with the forces of the current positions, drift, forces at
 * the new positions, half kick. The forces carry over to the next step's first kick. */
static int nbody_step(grn_world *w) {
  int rc = w->nbody.acc_valid ? GRN_OK : grn__nbody_forces(w);
  if (rc != GRN_OK) {
    return rc;
  }
  kick(w, 0.5 * GRN_H);
  for (int i = 0; i < w->n; i++) {
    w->pos[i].x += w->vel[i].x * GRN_H;
    w->pos[i].y += w->vel[i].y * GRN_H;
    w->pos[i].z += w->vel[i].z * GRN_H;
  }
  w->nbody.acc_valid = false;
  rc = grn__nbody_forces(w);
  if (rc != GRN_OK) {
    return rc;
  }
  kick(w, 0.5 * GRN_H);
  double vmax2 = 0.0;
  for (int i = 0; i < w->n; i++) {
    const grn_vec3 p = w->pos[i], v = w->vel[i];
    if (!(w->flags[i] & GRN_F_ALIVE)) {
      continue;
    }
    if (!isfinite(p.x + p.y + p.z + v.x + v.y + v.z)) {
      grn__kill(w, i);
      w->nbody.acc_valid = false; /* the others felt it */
      continue;
    }
    const double v2 = v.x * v.x + v.y * v.y + v.z * v.z;
    vmax2 = v2 > vmax2 ? v2 : vmax2;
  }
  w->fig.vmax = sqrt(vmax2);
  return GRN_OK;
}

/* Energies, angular momentum and the virial ratio; the potential with the same softening (and,
 * above DIRECT_MAX bodies, the same tree) as the forces. */
void grn__nbody_measure(grn_world *w) {
  if (!w->nbody.acc_valid && grn__nbody_forces(w) != GRN_OK) {
    return; /* out of memory: the last sample stands */
  }
  const double e2 = grn__param(w, GRN_SP_EPS) * grn__param(w, GRN_SP_EPS);
  double kin = 0.0, pot = 0.0, lx = 0.0, ly = 0.0, lz = 0.0;
  for (int i = 0; i < w->n; i++) {
    if (!(w->flags[i] & GRN_F_ALIVE)) {
      continue;
    }
    const grn_vec3 p = w->pos[i], v = w->vel[i];
    const double m = w->nbody.mass[i];
    kin += 0.5 * m * (v.x * v.x + v.y * v.y + v.z * v.z);
    lx += m * (p.y * v.z - p.z * v.y);
    ly += m * (p.z * v.x - p.x * v.z);
    lz += m * (p.x * v.y - p.y * v.x);
    if (w->nbody.tree_valid) {
      pot += 0.5 * m * w->nbody.phi[i]; /* the potential of the tree walk at these positions */
    } else {
      for (int j = i + 1; j < w->n; j++) {
        if (w->flags[j] & GRN_F_ALIVE) {
          const double dx = w->pos[j].x - p.x, dy = w->pos[j].y - p.y, dz = w->pos[j].z - p.z;
          const double r2 = dx * dx + dy * dy + dz * dz + e2;
          pot -= r2 > 0.0 ? m * w->nbody.mass[j] / sqrt(r2) : 0.0;
        }
      }
    }
  }
  const double e = kin + pot;
  if (w->steps == 0 || !isfinite(w->nbody.e0)) {
    w->nbody.e0 = e;
  }
  grn__put(w, GRN_SM_T, w->t);
  grn__put(w, GRN_SM_ALIVE, w->fig.alive);
  grn__put(w, GRN_SM_KINETIC, kin);
  grn__put(w, GRN_SM_POTENTIAL, pot);
  grn__put(w, GRN_SM_ENERGY, e);
  grn__put(w, GRN_SM_ENERGY_DRIFT,
           w->nbody.e0 != 0.0 ? (e - w->nbody.e0) / fabs(w->nbody.e0) : NAN);
  grn__put(w, GRN_SM_ANGULAR_MOMENTUM, sqrt(lx * lx + ly * ly + lz * lz));
  grn__put(w, GRN_SM_VIRIAL, pot < 0.0 ? 2.0 * kin / -pot : NAN);
  w->meas.state = GRN_STATE_RUNNING;
}

/* Plummer sphere of n bodies of mass 1/n (Aarseth, Hénon & Wielen 1974) in Hénon units: G = M = 1,
 * E = −1/4, virial radius 1; radii beyond 10 scale radii are drawn again, and the centre of mass
 * is put at rest at the origin. */
int grn__plummer(grn_world *w, int n) {
  if (grn__reserve_grains(w, n) != GRN_OK) {
    return GRN_E_NOMEM;
  }
  const double rs = 3.0 * GRN_PI / 16.0, vs = sqrt(1.0 / rs), m = 1.0 / n;
  const int first = w->n;
  grn_vec3 cp = {0.0, 0.0, 0.0}, cv = {0.0, 0.0, 0.0};
  for (int k = 0; k < n; k++) {
    double r;
    do {
      const double x = grn__rng_uniform(w->rng);
      r = x > 0.0 ? 1.0 / sqrt(pow(x, -2.0 / 3.0) - 1.0) : INFINITY;
    } while (!(r < 10.0));
    double q, g;
    do {
      q = grn__rng_uniform(w->rng);
      g = 0.1 * grn__rng_uniform(w->rng);
    } while (g > q * q * pow(1.0 - q * q, 3.5));
    const double speed = q * sqrt(2.0) * pow(1.0 + r * r, -0.25);
    double dir[2][3];
    for (int d = 0; d < 2; d++) {
      const double ct = 1.0 - 2.0 * grn__rng_uniform(w->rng), st = sqrt(1.0 - ct * ct);
      const double ph = 2.0 * GRN_PI * grn__rng_uniform(w->rng);
      dir[d][0] = st * cos(ph);
      dir[d][1] = ct;
      dir[d][2] = st * sin(ph);
    }
    const grn_vec3 v = {speed * vs * dir[1][0], speed * vs * dir[1][1], speed * vs * dir[1][2]};
    if (grn__nbody_add(w, m, r * rs * dir[0][0], r * rs * dir[0][1], r * rs * dir[0][2], v) !=
        GRN_OK) {
      return GRN_E_NOMEM;
    }
    const int i = w->n - 1;
    cp.x += w->pos[i].x / n;
    cp.y += w->pos[i].y / n;
    cp.z += w->pos[i].z / n;
    cv.x += v.x / n;
    cv.y += v.y / n;
    cv.z += v.z / n;
  }
  for (int i = first; i < w->n; i++) {
    w->pos[i].x -= cp.x;
    w->pos[i].y -= cp.y;
    w->pos[i].z -= cp.z;
    w->vel[i].x -= cv.x;
    w->vel[i].y -= cv.y;
    w->vel[i].z -= cv.z;
  }
  return GRN_OK;
}

static void nbody_changed(grn_world *w) {
  w->nbody.acc_valid = false; /* forces of the old softening or opening angle */
  /* the drift counts from the first sample under the new settings: a new softening moves the
   * potential energy at once, which is no error of the integration (issue 30: no figure mixes
   * two settings) */
  w->nbody.e0 = NAN;
}

static void nbody_stats(const grn_world *w, grn_world_stats *out) {
  out->substeps = 1;
  out->tree = w->nbody.tree_valid;
  out->forces = out->tree ? "tree" : "direct";
}

/* On a slow machine: 1.5 ns per pair when every pair is summed (theta 0, or the direct sum up to
 * DIRECT_MAX bodies), 7 µs per body through the Barnes–Hut tree (the daemon's pacing figures). */
static double nbody_cost(const grn_world_def *def, int count) {
  const double n = (double)count;
  return n <= DIRECT_MAX || grn__def_param(def, GRN_SP_THETA) == 0.0 ? 0.015 * n * n : 70.0 * n;
}

const grn_model_ops grn__model_gravity = {.kind = GRN_MODEL_GRAVITY,
                                          .info = {"gravity", "bodies", false, false},
                                          .pairs = false,
                                          .derive = nbody_derive,
                                          .step = nbody_step,
                                          .measure = grn__nbody_measure,
                                          .changed = nbody_changed,
                                          .stats = nbody_stats,
                                          .free = nbody_free,
                                          .state_offset = offsetof(grn_world, nbody.e0),
                                          .state_size = sizeof(double),
                                          .cost = nbody_cost};
