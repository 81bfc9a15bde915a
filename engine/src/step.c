/* One step of the granular model (spec §2): pair forces into rows of the contact-force table,
 * each grain's rows summed in pair order, then floor, wall and tool forces and integration. */
#include "internal.h"

#include <string.h>

static inline grn_vec3 v3(double x, double y, double z) {
  grn_vec3 r = {x, y, z};
  return r;
}
static inline grn_vec3 sub(grn_vec3 a, grn_vec3 b) {
  return v3(a.x - b.x, a.y - b.y, a.z - b.z);
}
static inline grn_vec3 add(grn_vec3 a, grn_vec3 b) {
  return v3(a.x + b.x, a.y + b.y, a.z + b.z);
}
static inline grn_vec3 scale(grn_vec3 a, double s) {
  return v3(a.x * s, a.y * s, a.z * s);
}
static inline double dot(grn_vec3 a, grn_vec3 b) {
  return a.x * b.x + a.y * b.y + a.z * b.z;
}
static inline grn_vec3 cross(grn_vec3 a, grn_vec3 b) {
  return v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}

static inline void row_zero(grn_force_row *row) {
  memset(row, 0, sizeof *row);
}

static inline void row_store(float dst[3], grn_vec3 v) {
  dst[0] = (float)v.x;
  dst[1] = (float)v.y;
  dst[2] = (float)v.z;
}

/* Scale a force (or moment) down to a Coulomb-type limit; returns whether it was limited. */
static inline bool cap_to(grn_vec3 *f, double lim) {
  const double f2 = dot(*f, *f);
  if (f2 > lim * lim) {
    *f = scale(*f, lim / sqrt(f2));
    return true;
  }
  return false;
}

#include "contact.h"

/* Contact law of one pair, from named parts in a fixed order: geometry, normal spring-dashpot,
 * tangential spring with Coulomb cap, rolling resistance, cohesion. Writes the table row and the
 * pair's state in pfn: > 0 touching (the normal force; history valid), < 0 apart but held by a
 * liquid bridge (row valid, no history), 0 inactive (row not read). Returns the overlap. */
static inline double pair_force(const pair_ctx *c, int a, int p, grn_force_row *row) {
  const int b = c->pb[p], hq = hist_of(c, p);
  grn_hist *h = &c->hist[hq];
  /* geometry */
  const grn_vec3 d = sub(c->pos[b], c->pos[a]);
  const double ra = c->rad[a], rb = c->rad[b], sum = ra + rb, reach = sum + c->gap;
  const double d2 = dot(d, d);
  if (d2 >= reach * reach) {
    if (c->pfn[hq] != 0.0f) {
      /* the pair just parted: clear its history, and zero its row so that inactive rows in the
       * full table are always zero and the gather adds every row without a branch */
      c->pfn[hq] = 0.0f;
      memset(h, 0, sizeof *h);
      row_zero(row);
    } else if (c->ring) {
      row_zero(row); /* buffer slots are reused over a step: zero every time */
    }
    return -1.0;
  }
  const double dist = sqrt(d2);
  /* coincident centres have no normal; the tiny offset leaves n = 0 and no force, not a NaN */
  const grn_vec3 n = scale(d, 1.0 / (dist + 1e-300));
  const double over = sum - dist;
  if (over <= 0.0) {
    /* apart: only a liquid bridge acts, falling linearly from coh at contact to 0 at GAP_WET */
    if (c->pfn[hq] > 0.0f) {
      memset(h, 0, sizeof *h);
    }
    c->pfn[hq] = -1.0f;
    row_zero(row);
    if (c->gap > 0.0) {
      row_store(row->f, scale(n, -c->coh * (1.0 + over / c->gap)));
    } else {
      c->pfn[hq] = 0.0f; /* dry: within rounding of touching but not touching, no bridge */
    }
    return over;
  }
  /* normal: N = KN·δ − CN·vn, never pulling */
  const grn_vec3 va = c->vel[a], vb = c->vel[b], wa = c->spin[a], wb = c->spin[b];
  const grn_vec3 rv = sub(vb, va);
  const double vn = dot(rv, n);
  double fn = GRN_KN * over - c->cn * vn;
  fn = fn > 0.0 ? fn : 0.0;
  /* a touching pair keeps a tiny positive record so its history survives the separating step */
  c->pfn[hq] = fn > 1e-6 ? (float)fn : 1e-6f;

  /* tangential spring, rotated into the current tangent plane, Coulomb-capped */
  const grn_vec3 s = add(scale(wa, ra), scale(wb, rb));
  const grn_vec3 vt = sub(sub(rv, scale(n, vn)), cross(s, n));
  grn_vec3 u = v3(h->u[0], h->u[1], h->u[2]);
  u = add(sub(u, scale(n, dot(u, n))), scale(vt, GRN_H));
  grn_vec3 ft = scale(u, -GRN_KT);
  const double lim = c->mu * fn;
  if (cap_to(&ft, lim)) {
    u = scale(ft, -1.0 / GRN_KT);
  } else {
    ft = sub(ft, scale(vt, c->ct));
    /* the dashpot may not lift the total past mu·N: friction never exceeds Coulomb's bound */
    cap_to(&ft, lim);
  }
  h->u[0] = (float)u.x;
  h->u[1] = (float)u.y;
  h->u[2] = (float)u.z;

  /* force on b: (N − coh)·n + Ft; tangential force turns both grains */
  const grn_vec3 f = add(scale(n, fn - c->coh), ft);
  const grn_vec3 cr = cross(n, ft);
  grn_vec3 ta = scale(cr, -ra), tb = scale(cr, -rb);

  /* rolling resistance: spring-dashpot on the relative rolling angle, limited by mur·R*·N */
  if (c->mur > 0.0) {
    grn_vec3 wr = sub(wa, wb);
    wr = sub(wr, scale(n, dot(wr, n)));
    grn_vec3 th = v3(h->th[0], h->th[1], h->th[2]);
    th = add(sub(th, scale(n, dot(th, n))), scale(wr, GRN_H));
    grn_vec3 mom = scale(th, -c->kr);
    const double mlim = c->mur * (ra * rb / sum) * fn;
    if (cap_to(&mom, mlim)) {
      th = scale(mom, -1.0 / c->kr);
    } else {
      mom = sub(mom, scale(wr, c->cr));
      cap_to(&mom, mlim);
    }
    h->th[0] = (float)th.x;
    h->th[1] = (float)th.y;
    h->th[2] = (float)th.z;
    ta = add(ta, mom);
    tb = sub(tb, mom);
  }
  row_store(row->f, f);
  row_store(row->ta, ta);
  row_store(row->tb, tb);
  return over;
}

/* Listed pairs a thread collects for the AVX2 kernel: (owner, pair, row slot) triples. */
#define TOUCH_BATCH 256
typedef struct batch {
  int32_t item[3 * TOUCH_BATCH];
  int n;
} batch;

typedef struct pass_sums {
  double omax, vm2, vm2_slow; /* vm2_slow: over grains not marked fast in the near list */
  int touching, moving, count, killed;
} pass_sums;

static inline void law_one(const pair_ctx *c, const int32_t *it, pass_sums *sum) {
  const double over = pair_force(c, it[0], it[1], &c->table[it[2]]);
  if (over > 0.0) {
    sum->touching++;
    sum->omax = over > sum->omax ? over : sum->omax;
  }
}

/* The kernel takes the pairs four at a time and hands the doubtful ones (parting, a liquid
 * bridge, within rounding of first touch) back to the scalar law; each pair's result depends on
 * its own inputs only, so which code computes it, and when, does not matter. */
static void batch_flush(const pair_ctx *c, batch *bt, pass_sums *sum) {
  const int full = bt->n & ~3;
  int32_t slow[TOUCH_BATCH];
  int nslow = 0;
  if (full > 0) {
    const double o = grn__contacts_avx2(c, bt->item, full, &sum->touching, slow, &nslow);
    sum->omax = o > sum->omax ? o : sum->omax;
  }
  for (int k = 0; k < nslow; k++) {
    law_one(c, &bt->item[3 * slow[k]], sum);
  }
  for (int k = full; k < bt->n; k++) {
    law_one(c, &bt->item[3 * k], sum);
  }
  bt->n = 0;
}

/* Forces of the near pairs q0 .. q1 − 1 (the fused step's block, rows at base + q): the kernel
 * takes them in place, four at a time. */
static void range_forces(const pair_ctx *c, const int32_t *restrict owner, int32_t q0, int32_t q1,
                         int32_t base, bool simd, pass_sums *sum) {
  int32_t slow[TOUCH_BATCH];
  int32_t q = q0;
  while (simd && q1 - q >= 4) {
    const int k = q1 - q < TOUCH_BATCH ? (q1 - q) & ~3 : TOUCH_BATCH;
    int nslow = 0;
    const double o = grn__contacts_range_avx2(c, owner, q, base, k, &sum->touching, slow, &nslow);
    sum->omax = o > sum->omax ? o : sum->omax;
    for (int j = 0; j < nslow; j++) {
      const int32_t it[3] = {owner[q + slow[j]], q + slow[j], base + q + slow[j]};
      law_one(c, it, sum);
    }
    q += k;
  }
  for (; q < q1; q++) {
    const int32_t it[3] = {owner[q], q, base + q};
    law_one(c, it, sum);
  }
}

/* Forces of every pair owned by grain a: with SIMD they are queued for the kernel. */
static inline void owner_forces(const pair_ctx *c, const int32_t *restrict pstart, int a,
                                const slots *s, batch *bt, bool simd, pass_sums *sum) {
  const int p1 = pstart[a + 1];
  for (int p = pstart[a]; p < p1; p++) {
    if (!simd) {
      const int32_t it[3] = {a, p, slot_of(s, p)};
      law_one(c, it, sum);
      continue;
    }
    int32_t *it = &bt->item[3 * bt->n];
    it[0] = a;
    it[1] = p;
    it[2] = slot_of(s, p);
    if (++bt->n == TOUCH_BATCH) {
      batch_flush(c, bt, sum);
    }
  }
}

static pair_ctx pair_ctx_of(const grn_world *w, grn_force_row *rows, bool ring) {
  const pair_ctx c = {w->pos,
                      w->vel,
                      w->spin,
                      w->rad,
                      ring ? w->nb : w->pb,
                      ring ? w->np : NULL,
                      w->hist,
                      w->pfn,
                      rows,
                      w->param[GRN_P_MU],
                      w->param[GRN_P_MUR],
                      w->param[GRN_P_COH],
                      grn__reach_gap(w),
                      w->k.cn,
                      w->k.ct,
                      w->k.kr,
                      w->k.cr,
                      ring};
  return c;
}

/* The force pass over a table of rows: the reference over the whole list and a full table (also
 * what tests inspect), or (near) over the near list, row q of the table for near pair q. Inactive
 * rows of the full table must read as zero: after a rebuild, a fused or a near step it is
 * cleared once; near rows of apart pairs are zeroed every time. */
static int forces_pass(grn_world *w, bool near) {
  const int rows = near ? w->nm : w->m;
  if (w->tcap < rows) {
    grn__free(w, w->table, sizeof(grn_force_row) * (size_t)w->tcap);
    w->tcap = 0;
    const int want = w->m + w->m / 4 + 64;
    w->table = grn__alloc(w, sizeof(grn_force_row) * (size_t)want);
    if (!w->table) {
      return GRN_E_NOMEM;
    }
    w->tcap = want;
    w->table_valid = false;
  }
  if (near) {
    w->table_valid = false;
  } else if (!w->table_valid && w->m > 0) {
    memset(w->table, 0, sizeof(grn_force_row) * (size_t)w->m);
    w->table_valid = true;
  }
  const pair_ctx c = pair_ctx_of(w, w->table, near);
  const int32_t *restrict pstart = near ? w->nstart : w->pstart;
  const int n = w->n, nthreads = w->threads;
  const bool simd = w->simd;
  const slots s = {0, INT32_MAX, 0, {0, 0}, {0, 0}, {0, 0}};
  double omax = 0.0;
  int touching = 0;
  (void)nthreads;
  /* Pairs whose grains were removed never reach here: a removal marks the list dirty and the
   * next step rebuilds before computing forces. */
#pragma omp parallel num_threads(nthreads) reduction(max : omax) reduction(+ : touching)
  {
    const pair_ctx lc = c; /* thread-local copy: its address never escapes, so no aliasing */
    batch bt;
    bt.n = 0;
    pass_sums sum = {0};
#pragma omp for schedule(static)
    for (int a = 0; a < n; a++) {
      owner_forces(&lc, pstart, a, &s, &bt, simd, &sum);
    }
    batch_flush(&lc, &bt, &sum);
    omax = sum.omax > omax ? sum.omax : omax;
    touching += sum.touching;
  }
  w->over_max = omax;
  w->contacts = touching;
  return GRN_OK;
}

int grn__forces(grn_world *w) {
  return forces_pass(w, false);
}

/* Per-grain pass view, copied into each thread so that stores cannot alias the pointers. */
typedef struct grain_ctx {
  grn_vec3 *restrict pos, *restrict vel, *restrict spin;
  const double *restrict rad, *restrict inv_m, *restrict inv_i;
  double *restrict hf;
  uint8_t *restrict flags;
  const int32_t *restrict pstart, *restrict rstart, *restrict rref;
  const uint8_t *restrict fast; /* the near list's fast grains, or NULL */
  grn_geom geom;
  grn_consts k;
} grain_ctx;

/* Frictional wall contact (no spring): n points from the wall to the grain. Friction is viscous
 * (CW·|vt|) when slow, Coulomb (mu·N) when fast, and never more than what stops the contact point
 * within this step (its effective mass is 2/7·m): CW·H/(2/7·m) > 2 for grains under ≈ 8.75 kg,
 * and an uncapped viscous branch would flip the slip every step and grow. */
static void wall_contact(const grain_ctx *w, int i, grn_vec3 n, double over, double mu,
                         grn_vec3 wall_v, grn_vec3 *f, grn_vec3 *t) {
  const double r = w->rad[i];
  const grn_vec3 vc = sub(sub(w->vel[i], wall_v), scale(cross(w->spin[i], n), r));
  const double vn = dot(vc, n);
  const double fn = GRN_KN * over - w->k.cn * vn;
  if (fn <= 0.0) {
    return;
  }
  grn_vec3 ff = scale(n, fn);
  const grn_vec3 vt = sub(vc, scale(n, vn));
  const double ts = sqrt(dot(vt, vt));
  if (ts > 1e-9 && mu > 0.0) {
    double ft = GRN_CW * ts;
    const double lim = mu * fn, stop = (2.0 / 7.0) * ts / (w->inv_m[i] * GRN_H);
    ft = ft < lim ? ft : lim;
    ft = ft < stop ? ft : stop;
    const grn_vec3 fv = scale(vt, -ft / ts);
    ff = add(ff, fv);
    *t = sub(*t, scale(cross(n, fv), r));
  }
  *f = add(*f, ff);
}

/* Flat floor or plate at height `ground`: per-grain tangential and rolling springs like a grain
 * contact, with MU_FLOOR and MUR_FLOOR, rolling stiffness 4·KR and damping 2·CR. */
static bool floor_contact(const grain_ctx *w, int i, double ground, grn_vec3 *f, grn_vec3 *t) {
  const double r = w->rad[i];
  const grn_vec3 p = w->pos[i], v = w->vel[i], sp = w->spin[i];
  const double over = ground + r - p.y;
  if (over <= 0.0) {
    return false;
  }
  double fn = GRN_KN * over - w->k.cn * v.y;
  fn = fn > 0.0 ? fn : 0.0;
  double *hf = &w->hf[4 * (size_t)i];
  const grn_vec3 vc = v3(v.x + r * sp.z, 0.0, v.z - r * sp.x);
  grn_vec3 u = v3(hf[0] + vc.x * GRN_H, 0.0, hf[1] + vc.z * GRN_H);
  grn_vec3 ft = scale(u, -GRN_KT);
  const double lim = w->geom.mu_floor * fn;
  if (cap_to(&ft, lim)) {
    u = scale(ft, -1.0 / GRN_KT);
  } else {
    ft = sub(ft, scale(vc, w->k.ct));
    cap_to(&ft, lim);
  }
  hf[0] = u.x;
  hf[1] = u.z;
  *f = add(*f, v3(ft.x, fn, ft.z));
  t->x -= r * ft.z;
  t->z += r * ft.x;
  grn_vec3 th = v3(hf[2] + sp.x * GRN_H, 0.0, hf[3] + sp.z * GRN_H);
  grn_vec3 mom = scale(th, -w->k.krf);
  const double ml = w->geom.mur_floor * r * fn;
  if (cap_to(&mom, ml)) {
    th = scale(mom, -1.0 / w->k.krf);
  } else {
    mom = sub(mom, scale(v3(sp.x, 0.0, sp.z), w->k.crf));
    cap_to(&mom, ml);
  }
  hf[2] = th.x;
  hf[3] = th.z;
  t->x += mom.x;
  t->z += mom.z;
  return true;
}

/* The wall of a drum turning at drum_w about the z axis through (0, drum_y): a grain beyond
 * drum_r − r meets it where the radius through its centre crosses it. Like the floor, a rough
 * wall (grains glued on, as in experiments) with springs that give static friction, so the bed
 * turns with the drum instead of slipping: tangential spring u and rolling angle theta in the
 * wall's tangent basis (t1 = z × e along the turn, t2 = z), kept in the grain's floor history,
 * MU = drum_mu, rolling stiffness 4·KR, damping 2·CR, limit MUR_FLOOR·r·N. The contact point
 * moves with the wall at w × (R·e); the wall spins at w about z. */
static bool drum_contact(const grain_ctx *w, int i, grn_vec3 *f, grn_vec3 *t) {
  const grn_geom *g = &w->geom;
  const double r = w->rad[i];
  const grn_vec3 p = w->pos[i], v = w->vel[i], sp = w->spin[i];
  const double dx = p.x, dy = p.y - g->drum_y, lim = g->drum_r - r;
  const double rho2 = dx * dx + dy * dy;
  if (!(rho2 > lim * lim)) {
    return false;
  }
  const double rho = sqrt(rho2), over = rho - lim;
  const grn_vec3 e = v3(dx / rho, dy / rho, 0.0), t1 = v3(-e.y, e.x, 0.0);
  const grn_vec3 wall_v = scale(t1, g->drum_w * g->drum_r);
  /* the grain's contact point relative to the wall */
  const grn_vec3 vc = sub(add(v, scale(cross(sp, e), r)), wall_v);
  const double vn = -dot(vc, e); /* along n = −e, from the wall to the grain */
  double fn = GRN_KN * over - w->k.cn * vn;
  fn = fn > 0.0 ? fn : 0.0;
  double *hf = &w->hf[4 * (size_t)i];
  const double v1 = dot(vc, t1), v2 = vc.z;
  grn_vec3 u = v3(hf[0] + v1 * GRN_H, hf[1] + v2 * GRN_H, 0.0); /* (t1, t2) components */
  grn_vec3 ft = scale(u, -GRN_KT);
  const double flim = g->drum_mu * fn;
  if (cap_to(&ft, flim)) {
    u = scale(ft, -1.0 / GRN_KT);
  } else {
    ft = sub(ft, scale(v3(v1, v2, 0.0), w->k.ct));
    cap_to(&ft, flim);
  }
  hf[0] = u.x;
  hf[1] = u.y;
  const grn_vec3 fw = add(scale(t1, ft.x), v3(0.0, 0.0, ft.y));
  *f = add(*f, add(scale(e, -fn), fw));
  *t = add(*t, scale(cross(e, fw), r));
  /* rolling: the grain's spin relative to the wall's, in the tangent plane */
  const grn_vec3 wr = sub(sp, v3(0.0, 0.0, g->drum_w));
  const double w1 = dot(wr, t1), w2 = wr.z;
  grn_vec3 th = v3(hf[2] + w1 * GRN_H, hf[3] + w2 * GRN_H, 0.0);
  grn_vec3 mom = scale(th, -w->k.krf);
  const double ml = g->mur_floor * r * fn;
  if (cap_to(&mom, ml)) {
    th = scale(mom, -1.0 / w->k.krf);
  } else {
    mom = sub(mom, scale(v3(w1, w2, 0.0), w->k.crf));
    cap_to(&mom, ml);
  }
  hf[2] = th.x;
  hf[3] = th.y;
  *t = add(*t, add(scale(t1, mom.x), v3(0.0, 0.0, mom.y)));
  return true;
}

static void boundaries(const grain_ctx *w, int i, grn_vec3 *f, grn_vec3 *t) {
  const grn_geom *g = &w->geom;
  const grn_vec3 p = w->pos[i];
  const double r = w->rad[i];
  const grn_vec3 still = v3(0.0, 0.0, 0.0);
  double ground = g->floor_y;
  bool flat = p.x >= g->fx0 && p.x <= g->fx1 && p.z >= g->fz0 && p.z <= g->fz1;
  if (g->plate && p.y > g->plate_y - 0.5 * r) {
    const double rho2 = p.x * p.x + p.z * p.z;
    if (g->plugged || rho2 >= g->hole_r * g->hole_r) {
      ground = g->plate_y;
      flat = true;
    } else {
      /* centre over the hole: the grain meets the hole's rim, a ring */
      flat = false;
      const double rho = sqrt(rho2) + 1e-12, e = g->hole_r - rho, dy = p.y - g->plate_y;
      const double dd = e * e + dy * dy;
      if (dd < r * r) {
        const double dist = sqrt(dd) + 1e-12;
        wall_contact(w, i, v3(-p.x / rho * e / dist, dy / dist, -p.z / rho * e / dist), r - dist,
                     g->mu_wall, still, f, t);
      }
    }
  }
  /* the floor's springs hold the grain on the floor, or on the drum's wall (a drum has no floor) */
  if ((flat && floor_contact(w, i, ground, f, t)) ||
      (g->drum_r > 0.0 && drum_contact(w, i, f, t))) {
    w->flags[i] |= GRN_F_FLOOR;
  } else if (w->flags[i] & GRN_F_FLOOR) {
    w->flags[i] &= (uint8_t)~GRN_F_FLOOR;
    memset(&w->hf[4 * (size_t)i], 0, 4 * sizeof(double));
  }
  if (g->box) {
    if (p.x - r < g->xmin) {
      wall_contact(w, i, v3(1, 0, 0), g->xmin - p.x + r, g->mu_wall, still, f, t);
    }
    if (p.x + r > g->xmax) {
      wall_contact(w, i, v3(-1, 0, 0), p.x + r - g->xmax, g->mu_wall, still, f, t);
    }
    if (p.z - r < g->zmin) {
      wall_contact(w, i, v3(0, 0, 1), g->zmin - p.z + r, g->mu_wall, still, f, t);
    }
    if (p.z + r > g->zmax) {
      wall_contact(w, i, v3(0, 0, -1), p.z + r - g->zmax, g->mu_wall, still, f, t);
    }
  }
  /* the dam holds only grains above its (lifted) lower edge */
  if (g->dam && p.x + r > g->dam_x && p.y > g->dam_edge) {
    wall_contact(w, i, v3(-1, 0, 0), p.x + r - g->dam_x, g->mu_wall, still, f, t);
  }
  if (g->silo_r > 0.0 && p.y > g->plate_y - r) {
    const double rho2 = p.x * p.x + p.z * p.z, lim = g->silo_r - r;
    if (rho2 > lim * lim) {
      const double rho = sqrt(rho2);
      wall_contact(w, i, v3(-p.x / rho, 0, -p.z / rho), rho - lim, g->mu_wall, still, f, t);
    }
  }
  if (g->tool) {
    const grn_vec3 d = sub(p, g->tool_p);
    const double rr = g->tool_r + r, d2 = dot(d, d);
    if (d2 < rr * rr && d2 > 1e-12) {
      const double dl = sqrt(d2);
      wall_contact(w, i, scale(d, 1.0 / dl), rr - dl, 0.3, g->tool_v, f, t);
    }
  }
}

/* Whether boundaries() would leave grain i alone: no plate, dam, silo, drum or tool, no
 * floor history to clear, above the floor and inside the box walls, by the very tests it makes.
 * Most grains of a bed are, and the call costs more than these comparisons. */
static inline bool clear_of_walls(const grain_ctx *w, int i) {
  const grn_geom *g = &w->geom;
  if (g->plate || g->dam || g->silo_r > 0.0 || g->drum_r > 0.0 || g->tool ||
      (w->flags[i] & GRN_F_FLOOR)) {
    return false;
  }
  const grn_vec3 p = w->pos[i];
  const double r = w->rad[i];
  if (!(g->floor_y + r - p.y <= 0.0)) {
    return false; /* floor_contact would look at it (if it is over the floor) */
  }
  return !g->box ||
         !(p.x - r < g->xmin || p.x + r > g->xmax || p.z - r < g->zmin || p.z + r > g->zmax);
}

/* A row's share for the smaller partner b: the force and b's torque. */
static inline void add_partner_row(const grn_force_row *row, grn_vec3 *f, grn_vec3 *t) {
  f->x += row->f[0];
  f->y += row->f[1];
  f->z += row->f[2];
  t->x += row->tb[0];
  t->y += row->tb[1];
  t->z += row->tb[2];
}

/* Every grain sums its rows in pair order: the pairs where it is the smaller partner under an
 * earlier owner, its own pairs, then those under later owners (the reference list is in pair
 * order, so it splits at the grain's own range). Whoever computes a grain and whenever, its sum is
 * the same to the bit; the fused step relies on this order to add each row the moment it is made.
 */
__attribute__((always_inline)) static inline void sum_rows(const grain_ctx *c,
                                                           const grn_force_row *restrict rows,
                                                           const slots *s, int i, double ft[6]) {
  grn_vec3 f = v3(0, 0, 0), t = v3(0, 0, 0);
  const int p0 = c->pstart[i], p1 = c->pstart[i + 1], q1 = c->rstart[i + 1];
  int q = c->rstart[i];
  for (; q < q1 && c->rref[q] < p0; q++) {
    add_partner_row(&rows[slot_of(s, c->rref[q])], &f, &t);
  }
  for (int p = p0; p < p1; p++) {
    const grn_force_row *row = &rows[slot_of(s, p)];
    f.x -= row->f[0];
    f.y -= row->f[1];
    f.z -= row->f[2];
    t.x += row->ta[0];
    t.y += row->ta[1];
    t.z += row->ta[2];
  }
  for (; q < q1; q++) {
    add_partner_row(&rows[slot_of(s, c->rref[q])], &f, &t);
  }
  ft[0] = f.x;
  ft[1] = f.y;
  ft[2] = f.z;
  ft[3] = t.x;
  ft[4] = t.y;
  ft[5] = t.z;
}

/* Boundaries and integration of grain i, given the sum of its rows. */
__attribute__((always_inline)) static inline void
finish_one(const grain_ctx *c, int i, const double ft[6], const grn_world *w, pass_sums *sum) {
  if ((c->flags[i] & (GRN_F_ALIVE | GRN_F_FIXED)) != GRN_F_ALIVE) {
    return;
  }
  const double h = GRN_H, drag = w->t < w->settle ? 0.97 : 1.0;
  const grn_vec3 g = w->gravity;
  grn_vec3 f = v3(ft[0], ft[1], ft[2]), t = v3(ft[3], ft[4], ft[5]);
  if (!clear_of_walls(c, i)) {
    boundaries(c, i, &f, &t);
  }

  /* semi-implicit Euler: new velocity from force, then position from the new velocity */
  const double im = c->inv_m[i], ii = c->inv_i[i], vmax2 = GRN_VMAX * GRN_VMAX;
  grn_vec3 v = c->vel[i];
  v.x = (v.x + (f.x * im + g.x) * h) * drag;
  v.y = (v.y + (f.y * im + g.y) * h) * drag;
  v.z = (v.z + (f.z * im + g.z) * h) * drag;
  double v2 = dot(v, v);
  const grn_vec3 sp = add(c->spin[i], scale(t, ii * h));
  if (!(v2 < vmax2)) {
    if (!isfinite(v2)) {
      /* a NaN (or infinite) velocity is removed, never propagated to its neighbours */
      c->flags[i] = 0;
      sum->killed++;
      return;
    }
    v = scale(v, GRN_VMAX / sqrt(v2));
    v2 = vmax2;
  }
  if (!isfinite(sp.x + sp.y + sp.z)) {
    c->flags[i] = 0;
    sum->killed++;
    return;
  }
  c->vel[i] = v;
  c->spin[i] = sp;
  c->pos[i] = add(c->pos[i], scale(v, h));
  sum->vm2 = v2 > sum->vm2 ? v2 : sum->vm2;
  if (!c->fast || !c->fast[i]) {
    sum->vm2_slow = v2 > sum->vm2_slow ? v2 : sum->vm2_slow;
  }
  sum->moving += v2 > GRN_VFLOW * GRN_VFLOW;
  sum->count++;
  if (c->pos[i].y < w->geom.kill_y) {
    c->flags[i] = 0; /* removed for good: every flag goes */
    sum->killed++;
  }
}

/* The reference pass reads the whole list; the fused step its near pairs. */
static grain_ctx grain_ctx_of(const grn_world *w, bool near) {
  const grain_ctx c = {w->pos,
                       w->vel,
                       w->spin,
                       w->rad,
                       w->inv_m,
                       w->inv_i,
                       w->hf,
                       w->flags,
                       near ? w->nstart : w->pstart,
                       near ? w->nrstart : w->rstart,
                       near ? w->nrref : w->rref,
                       near ? w->nfast : NULL,
                       w->geom,
                       w->k};
  return c;
}

static void finish_pass(grn_world *w, const pass_sums *sum) {
  w->flowing = sum->count > 0 ? (double)sum->moving / sum->count : 0.0;
  w->vmax = sqrt(sum->vm2);
  w->disp += w->vmax * GRN_H;
  w->ndisp += sqrt(sum->vm2_slow) * GRN_H;
  if (sum->killed > 0) {
    w->dirty = true;
  }
  w->alive -= sum->killed;
}

/* The grain pass over the table of forces_pass. */
static void gather_pass(grn_world *w, bool near) {
  const int n = w->n, nthreads = w->threads;
  const grain_ctx shared = grain_ctx_of(w, near);
  const slots s = {0, INT32_MAX, 0, {0, 0}, {0, 0}, {0, 0}};
  double vm2 = 0.0, vm2_slow = 0.0;
  int moving = 0, count = 0, killed = 0;
  (void)nthreads;
#pragma omp parallel num_threads(nthreads) reduction(max : vm2, vm2_slow)                      \
    reduction(+ : moving, count, killed)
  {
    const grain_ctx c = shared;
    pass_sums sum = {0};
#pragma omp for schedule(static)
    for (int i = 0; i < n; i++) {
      double ft[6];
      sum_rows(&c, w->table, &s, i, ft);
      finish_one(&c, i, ft, w, &sum);
    }
    vm2 = sum.vm2 > vm2 ? sum.vm2 : vm2;
    vm2_slow = sum.vm2_slow > vm2_slow ? sum.vm2_slow : vm2_slow;
    moving += sum.moving;
    count += sum.count;
    killed += sum.killed;
  }
  const pass_sums total = {0.0, vm2, vm2_slow, 0, moving, count, killed};
  finish_pass(w, &total);
}

void grn__gather_integrate(grn_world *w) {
  gather_pass(w, false);
}

/* Both passes over the near list: for worlds whose thread chunks are too short for the fused
 * step's bands (a few thousand grains on two threads). Same bits as the reference. */
int grn__step_near(grn_world *w) {
  const int rc = forces_pass(w, true);
  if (rc == GRN_OK) {
    gather_pass(w, true);
  }
  return rc;
}

/* ---- fused step ----------------------------------------------------------------------------
 * Forces and sums in one sweep over the near list, so that no table of rows is kept. Grains are
 * in cell order, so every pair (a, b) has |a − b| ≤ S (the span, measured at each refresh). The
 * sweep makes the rows of a block of owners, then adds each row, in pair order, to the running
 * sums of both its grains: that is the order in which every grain sums its rows (sum_rows), so the
 * sums are the gather's to the bit, while a row is used once, in cache, the moment it is made.
 * Grain g is complete once the owners up to g + S are done (no later owner has g as a partner):
 * it is then integrated and its running sum cleared for the next step. Threads take contiguous
 * chunks; a grain within S of a chunk boundary has rows from two threads, so it is integrated
 * after a barrier by gathering its rows, in the same order, from bands of rows kept for the
 * owners within 2S of each boundary. */
#define GATHER_BLOCK 64

static int32_t chunk_lo(const grn_world *w, int t) {
  return (int32_t)((int64_t)w->n * t / w->threads);
}

/* Plan the fused step after a refresh; fused stays off when chunks are too small for bands. */
int grn__plan_fused(grn_world *w) {
  w->fused = false;
  const int n = w->n, nt = w->threads;
  int span = 0;
  for (int a = 0; a < n; a++) {
    for (int p = w->nstart[a]; p < w->nstart[a + 1]; p++) {
      const int d = a > w->nb[p] ? a - w->nb[p] : w->nb[p] - a;
      span = d > span ? d : span;
    }
  }
  if (w->no_fuse || n < 64 || n / nt < 4 * span + 2 * GATHER_BLOCK) {
    return GRN_OK;
  }
  /* each thread's block buffer: the rows of any GATHER_BLOCK consecutive owners */
  int block = 64;
  for (int a = 0; a < n; a++) {
    const int e = a + GATHER_BLOCK;
    const int k = w->nstart[e < n ? e : n] - w->nstart[a];
    block = k > block ? k : block;
  }
  /* bands around each inner chunk boundary: owners [B − 2S, B + 2S) */
  int64_t rows = (int64_t)block * nt;
  for (int k = 1; k < nt; k++) {
    const int b = chunk_lo(w, k);
    rows += w->nstart[b + 2 * span] - w->nstart[b - 2 * span];
  }
  if (rows > INT32_MAX / 2) {
    return GRN_OK;
  }
  if (rows > w->ringcap) {
    const int64_t want = rows + rows / 4;
    grn_force_row *q = grn__alloc(w, sizeof(grn_force_row) * (size_t)want);
    if (!q) {
      return GRN_OK; /* the reference passes need no rows kept: carry on without fusing */
    }
    grn__free(w, w->ring, sizeof(grn_force_row) * (size_t)w->ringcap);
    w->ring = q;
    w->ringcap = (int)want;
  }
  /* running sums, in a ring per thread: grain g's sum is in use from owner g − S (its first row)
   * to g + S + GATHER_BLOCK (its integration), so a ring wider than that never holds two grains
   * at once, and it stays in cache where a sum per grain would stream through memory. Zero
   * between steps: the sweep clears each sum once its grain is integrated. */
  int sums = 64;
  while (sums < 2 * span + 2 * GATHER_BLOCK + 64) {
    sums *= 2;
  }
  if ((int64_t)sums * nt > w->fsumcap) {
    const int want = sums * nt;
    double *f = grn__alloc(w, 6 * sizeof(double) * (size_t)want);
    if (!f) {
      return GRN_OK;
    }
    grn__free(w, w->fsum, 6 * sizeof(double) * (size_t)w->fsumcap);
    w->fsum = f;
    w->fsumcap = want;
  }
  memset(w->fsum, 0, 6 * sizeof(double) * (size_t)w->fsumcap);
  w->fsum_mask = sums - 1;
  w->span = span;
  w->ring_rows = block;
  w->fused = true;
  return GRN_OK;
}

/* Band k's rows: its pair range and where it starts in the row buffer. */
static void band_of(const grn_world *w, int k, int32_t *p0, int32_t *p1, int32_t *off) {
  int32_t o = w->ring_rows * w->threads;
  for (int j = 1; j < k; j++) {
    const int b = chunk_lo(w, j);
    o += w->nstart[b + 2 * w->span] - w->nstart[b - 2 * w->span];
  }
  const int b = chunk_lo(w, k);
  *p0 = w->nstart[b - 2 * w->span];
  *p1 = w->nstart[b + 2 * w->span];
  *off = o;
}

/* Add the rows of owners [a0, a1) (in the block buffer at base + q) to the running sums of the
 * grains in [ilo, ihi), in pair order, and copy those that bands keep. */
static void add_block(const grain_ctx *c, const int32_t *restrict nb, const grn_force_row *rows,
                      int32_t base, double *restrict fsum, int32_t fm, int a0, int a1, int ilo,
                      int ihi, const slots *bands, grn_force_row *keep) {
  for (int a = a0; a < a1; a++) {
    const int p0 = c->pstart[a], p1 = c->pstart[a + 1];
    if (a >= ilo && a < ihi) {
      double *sa = &fsum[6 * (size_t)(a & fm)];
      double fx = sa[0], fy = sa[1], fz = sa[2], tx = sa[3], ty = sa[4], tz = sa[5];
      for (int p = p0; p < p1; p++) {
        const grn_force_row *row = &rows[base + p];
        fx -= row->f[0];
        fy -= row->f[1];
        fz -= row->f[2];
        tx += row->ta[0];
        ty += row->ta[1];
        tz += row->ta[2];
      }
      sa[0] = fx;
      sa[1] = fy;
      sa[2] = fz;
      sa[3] = tx;
      sa[4] = ty;
      sa[5] = tz;
    }
    for (int p = p0; p < p1; p++) {
      const int b = nb[p];
      if (b >= ilo && b < ihi) {
        const grn_force_row *row = &rows[base + p];
        double *sb = &fsum[6 * (size_t)(b & fm)];
        sb[0] += row->f[0];
        sb[1] += row->f[1];
        sb[2] += row->f[2];
        sb[3] += row->tb[0];
        sb[4] += row->tb[1];
        sb[5] += row->tb[2];
      }
    }
  }
  const int q0 = c->pstart[a0], q1 = c->pstart[a1];
  for (int k = 0; k < bands->nb; k++) {
    const int lo = q0 > bands->p0[k] ? q0 : bands->p0[k];
    const int hi = q1 < bands->p1[k] ? q1 : bands->p1[k];
    if (lo < hi) {
      memcpy(&keep[bands->off[k] + (lo - bands->p0[k])], &rows[base + lo],
             sizeof(grn_force_row) * (size_t)(hi - lo));
    }
  }
}

/* Integrate grain g from its running sum, and clear the sum for the next step. */
static inline void finish_sum(const grain_ctx *c, double *restrict fsum, int32_t fm, int g,
                              const grn_world *w, pass_sums *sum) {
  double *sg = &fsum[6 * (size_t)(g & fm)];
  finish_one(c, g, sg, w, sum);
  memset(sg, 0, 6 * sizeof(double));
}

void grn__step_fused(grn_world *w) {
  const pair_ctx pc = pair_ctx_of(w, w->ring, true);
  const grain_ctx gc = grain_ctx_of(w, true);
  const int32_t *restrict pstart = w->nstart;
  const int nt = w->threads, span = w->span;
  const bool simd = w->simd;
  const int32_t fm = w->fsum_mask;
  double omax = 0.0, vm2 = 0.0, vm2_slow = 0.0;
  int touching = 0, moving = 0, count = 0, killed = 0;
  w->table_valid = false; /* the full table is not maintained here */
#pragma omp parallel num_threads(nt) reduction(max : omax, vm2, vm2_slow)                       \
    reduction(+ : touching, moving, count, killed)
  {
    const pair_ctx lc = pc;
    const grain_ctx lg = gc;
    pass_sums sum = {0};
    /* phase 1: each chunk sweeps its owners and integrates its interior grains behind them */
#pragma omp for schedule(static, 1)
    for (int t = 0; t < nt; t++) {
      const int lo = chunk_lo(w, t), hi = chunk_lo(w, t + 1);
      slots bands = {0, 0, 0, {0, 0}, {0, 0}, {0, 0}};
      if (t > 0) {
        band_of(w, t, &bands.p0[bands.nb], &bands.p1[bands.nb], &bands.off[bands.nb]);
        bands.nb++;
      }
      if (t < nt - 1) {
        band_of(w, t + 1, &bands.p0[bands.nb], &bands.p1[bands.nb], &bands.off[bands.nb]);
        bands.nb++;
      }
      const int ilo = t > 0 ? lo + span : lo, ihi = t < nt - 1 ? hi - span : hi;
      double *fsum = w->fsum + 6 * (size_t)(fm + 1) * (size_t)t;
      int g = ilo;
      for (int a0 = lo; a0 < hi; a0 += GATHER_BLOCK) {
        const int a1 = a0 + GATHER_BLOCK < hi ? a0 + GATHER_BLOCK : hi;
        const int32_t base = t * w->ring_rows - pstart[a0];
        range_forces(&lc, w->na, pstart[a0], pstart[a1], base, simd, &sum);
        add_block(&lg, w->nb, w->ring, base, fsum, fm, a0, a1, ilo, ihi, &bands, w->ring);
        for (; g < ihi && g + span < a1; g++) {
          finish_sum(&lg, fsum, fm, g, w, &sum);
        }
      }
      for (; g < ihi; g++) {
        finish_sum(&lg, fsum, fm, g, w, &sum);
      }
    }
    /* phase 2 (after the loop's barrier): grains within S of each inner boundary */
#pragma omp for schedule(static, 1)
    for (int k = 1; k < nt; k++) {
      slots s = {0, 0, 1, {0, 0}, {0, 0}, {0, 0}};
      band_of(w, k, &s.p0[0], &s.p1[0], &s.off[0]);
      const int b = chunk_lo(w, k);
      for (int i = b - span; i < b + span; i++) {
        double ft[6];
        sum_rows(&lg, w->ring, &s, i, ft);
        finish_one(&lg, i, ft, w, &sum);
      }
    }
    omax = sum.omax > omax ? sum.omax : omax;
    vm2 = sum.vm2 > vm2 ? sum.vm2 : vm2;
    vm2_slow = sum.vm2_slow > vm2_slow ? sum.vm2_slow : vm2_slow;
    touching += sum.touching;
    moving += sum.moving;
    count += sum.count;
    killed += sum.killed;
  }
  w->over_max = omax;
  w->contacts = touching;
  const pass_sums total = {omax, vm2, vm2_slow, touching, moving, count, killed};
  finish_pass(w, &total);
}
