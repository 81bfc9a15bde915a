/* Walls and boundaries (spec §2 "Walls, floor and tool"): the generic frictional wall contact,
 * the floor and plate with their springs, the hole's rim, box walls, the dam, the silo's cylinder,
 * the turning drum and the user's tool. */
#include "step.h"

#include <string.h>

/* One frictional wall contact of a grain (no spring): n points from the wall to the grain. */
typedef struct wall_touch {
  grn_vec3 n;
  double over, mu;
  grn_vec3 wall_v;
} wall_touch;

/* Frictional wall contact: friction is viscous (CW·|vt|) when slow, Coulomb (mu·N) when fast,
 * and never more than what stops the contact point within this step (its effective mass is
 * 2/7·m): CW·H/(2/7·m) > 2 for grains under ≈ 8.75 kg, and an uncapped viscous branch would flip
 * the slip every step and grow. A grain against `share` walls at once (a box's corner, the dam and
 * a side wall) gets that cap from each of them, so each takes 1/share of it: with the whole cap
 * from two walls, a small grain wedged in a corner under a column's weight rattled at 0.5 m/s
 * for ever and the column never came to rest. */
static void wall_contact(const grain_ctx *w, int i, const wall_touch *c, int share, grn_vec3 *f,
                         grn_vec3 *t) {
  const double r = w->rad[i];
  const grn_vec3 n = c->n;
  const grn_vec3 vc = sub(sub(w->vel[i], c->wall_v), scale(cross(w->spin[i], n), r));
  const double vn = dot(vc, n);
  const double fn = GRN_KN * c->over - w->k.cn * vn;
  if (fn <= 0.0) {
    return;
  }
  grn_vec3 ff = scale(n, fn);
  const grn_vec3 vt = sub(vc, scale(n, vn));
  const double ts = sqrt(dot(vt, vt));
  if (ts > 1e-9 && c->mu > 0.0) {
    double ft = GRN_CW * ts;
    const double lim = c->mu * fn, stop = (2.0 / 7.0) * ts / (w->inv_m[i] * GRN_H * share);
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
  const double fn = grn__spring_normal(over, v.y, w->k.cn);
  double *hf = &w->hf[GRN_HF * (size_t)i];
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

/* A rough wall's tangential spring at a grain's contact (issue 15's drum, issue 34's tube): u in
 * the history u[0..1] along the wall's tangents t1 and t2, stiffness KT, damping CT, Coulomb's
 * limit mu·N (past it the spring slides). e points from the grain's centre to its contact point,
 * vc is the contact point's velocity relative to the wall. Adds the force and its torque; returns
 * N (0: the grain pulls away). */
static double rough_contact(const grain_ctx *w, int i, grn_vec3 e, grn_vec3 t1, grn_vec3 t2,
                            grn_vec3 vc, double over, double mu, double *u_hist, grn_vec3 *f,
                            grn_vec3 *t) {
  const double vn = -dot(vc, e); /* along n = −e, from the wall to the grain */
  const double fn = grn__spring_normal(over, vn, w->k.cn);
  const double v1 = dot(vc, t1), v2 = dot(vc, t2);
  grn_vec3 u = v3(u_hist[0] + v1 * GRN_H, u_hist[1] + v2 * GRN_H, 0.0); /* (t1, t2) components */
  grn_vec3 ft = scale(u, -GRN_KT);
  const double flim = mu * fn;
  if (cap_to(&ft, flim)) {
    u = scale(ft, -1.0 / GRN_KT);
  } else {
    ft = sub(ft, scale(v3(v1, v2, 0.0), w->k.ct));
    cap_to(&ft, flim);
  }
  u_hist[0] = u.x;
  u_hist[1] = u.y;
  const grn_vec3 fw = add(scale(t1, ft.x), scale(t2, ft.y));
  *f = add(*f, add(scale(e, -fn), fw));
  *t = add(*t, scale(cross(e, fw), w->rad[i]));
  return fn;
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
  double *hf = &w->hf[GRN_HF * (size_t)i];
  const double fn = rough_contact(w, i, e, t1, v3(0.0, 0.0, 1.0), vc, over, g->drum_mu, hf, f, t);
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

/* A rough silo cylinder (silo_rough): its tangential spring, in the grain's wall history, along
 * the azimuth and the vertical; no rolling resistance. */
static bool tube_contact(const grain_ctx *w, int i, grn_vec3 *f, grn_vec3 *t) {
  const grn_geom *g = &w->geom;
  const double r = w->rad[i];
  const grn_vec3 p = w->pos[i];
  const double rho2 = p.x * p.x + p.z * p.z, lim = g->silo_r - r;
  if (!(p.y > g->plate_y - r && rho2 > lim * lim)) {
    return false;
  }
  const double rho = sqrt(rho2);
  const grn_vec3 e = v3(p.x / rho, 0.0, p.z / rho), t1 = v3(-e.z, 0.0, e.x);
  const grn_vec3 vc = add(w->vel[i], scale(cross(w->spin[i], e), r));
  rough_contact(w, i, e, t1, v3(0.0, 1.0, 0.0), vc, rho - lim, g->mu_wall,
                &w->hf[GRN_HF * (size_t)i + 4], f, t);
  return true;
}

void grn__boundaries(const grain_ctx *w, int i, grn_vec3 *f, grn_vec3 *t) {
  const grn_geom *g = &w->geom;
  const grn_vec3 p = w->pos[i];
  const double r = w->rad[i];
  const grn_vec3 still = v3(0.0, 0.0, 0.0);
  /* the frictional walls the grain touches, applied together below (at most the rim, four box
   * walls, the dam, the silo's cylinder and the tool) */
  wall_touch touch[8];
  int nt = 0;
  double ground = g->floor_y;
  bool flat = p.x >= g->fx0 && p.x <= g->fx1 && p.z >= g->fz0 && p.z <= g->fz1;
  if (g->plate && p.y > g->plate_y - 0.5 * r) {
    const double rho2 = p.x * p.x + p.z * p.z;
    if (g->plugged || rho2 >= g->hole_r * g->hole_r) {
      /* the plate's top holds a grain whose centre is above it; one below it (a grain on its way
       * through when the hole was plugged or made smaller) falls on, never kicked up by a spring
       * compressed by more than its radius */
      ground = g->plate_y;
      flat = p.y >= g->plate_y;
    } else {
      /* centre over the hole: the grain meets the hole's rim, a ring */
      flat = false;
      const double rho = sqrt(rho2) + 1e-12, e = g->hole_r - rho, dy = p.y - g->plate_y;
      const double dd = e * e + dy * dy;
      if (dd < r * r) {
        const double dist = sqrt(dd) + 1e-12;
        touch[nt++] = (wall_touch){v3(-p.x / rho * e / dist, dy / dist, -p.z / rho * e / dist),
                                   r - dist, g->mu_wall, still};
      }
    }
  }
  /* the floor's springs hold the grain on the floor, or on the drum's wall (a drum has no floor) */
  if ((flat && floor_contact(w, i, ground, f, t)) ||
      (g->drum_r > 0.0 && drum_contact(w, i, f, t))) {
    w->flags[i] |= GRN_F_FLOOR;
  } else if (w->flags[i] & GRN_F_FLOOR) {
    w->flags[i] &= (uint8_t)~GRN_F_FLOOR;
    memset(&w->hf[GRN_HF * (size_t)i], 0, 4 * sizeof(double));
  }
  if (g->silo_rough && tube_contact(w, i, f, t)) {
    w->flags[i] |= GRN_F_WALL;
  } else if (w->flags[i] & GRN_F_WALL) {
    w->flags[i] &= (uint8_t)~GRN_F_WALL;
    memset(&w->hf[GRN_HF * (size_t)i + 4], 0, 2 * sizeof(double));
  }
  if (g->box) {
    if (p.x - r < g->xmin) {
      touch[nt++] = (wall_touch){v3(1, 0, 0), g->xmin - p.x + r, g->mu_wall, still};
    }
    if (p.x + r > g->xmax) {
      touch[nt++] = (wall_touch){v3(-1, 0, 0), p.x + r - g->xmax, g->mu_wall, still};
    }
    if (p.z - r < g->zmin) {
      touch[nt++] = (wall_touch){v3(0, 0, 1), g->zmin - p.z + r, g->mu_wall, still};
    }
    if (p.z + r > g->zmax) {
      touch[nt++] = (wall_touch){v3(0, 0, -1), p.z + r - g->zmax, g->mu_wall, still};
    }
  }
  /* the dam holds only grains above its (lifted) lower edge */
  if (g->dam && p.x + r > g->dam_x && p.y > g->dam_edge) {
    touch[nt++] = (wall_touch){v3(-1, 0, 0), p.x + r - g->dam_x, g->mu_wall, still};
  }
  if (g->silo_r > 0.0 && !g->silo_rough && p.y > g->plate_y - r) {
    const double rho2 = p.x * p.x + p.z * p.z, lim = g->silo_r - r;
    if (rho2 > lim * lim) {
      const double rho = sqrt(rho2);
      touch[nt++] = (wall_touch){v3(-p.x / rho, 0, -p.z / rho), rho - lim, g->mu_wall, still};
    }
  }
  if (g->tool) {
    const grn_vec3 d = sub(p, g->tool_p);
    const double rr = g->tool_r + r, d2 = dot(d, d);
    if (d2 < rr * rr && d2 > 1e-12) {
      const double dl = sqrt(d2);
      touch[nt++] = (wall_touch){scale(d, 1.0 / dl), rr - dl, 0.3, g->tool_v};
    }
  }
  for (int k = 0; k < nt; k++) {
    wall_contact(w, i, &touch[k], nt, f, t);
  }
}
