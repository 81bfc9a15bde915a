/* The scalar contact law of one pair (spec §2, style rule 9): the reference the AVX2 kernel
 * (contact_avx2.c) matches bit for bit. Static inline: the pair loops of forces.c and fused.c
 * inline it. Its damping constants come from contact.c. */
#ifndef GRAINLAB_CONTACT_LAW_H
#define GRAINLAB_CONTACT_LAW_H

#include "contact.h"
#include "vec.h"

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

#endif
