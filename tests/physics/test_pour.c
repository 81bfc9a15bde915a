/* Whole-pile checks: no contact in a pour ever carries more tangential force than mu·N (dry and
 * wet), a NaN grain is removed while the rest go on, and a free cluster conserves momentum. */
#include "../../engine/src/scene.h"
#include "../support/check.h"
#include "../support/lab.h"

/* Largest |Ft|/(mu·N) − 1 over the touching pairs of the table just computed. The table stores
 * the force on b as (N − coh)·n + Ft in floats, so Ft is recovered to ~1e-7 relative. */
static double worst_coulomb(const grn_world *w, double mu, double coh) {
  double worst = -1.0;
  for (int a = 0; a < w->n; a++) {
    for (int p = w->pairs.pstart[a]; p < w->pairs.pstart[a + 1]; p++) {
      const float fn = w->pairs.pfn[p];
      if (fn <= 1e-3f) {
        continue;
      }
      const int b = w->pairs.pb[p];
      grn_vec3 n = {w->pos[b].x - w->pos[a].x, w->pos[b].y - w->pos[a].y,
                    w->pos[b].z - w->pos[a].z};
      const double l = sqrt(n.x * n.x + n.y * n.y + n.z * n.z);
      n.x /= l;
      n.y /= l;
      n.z /= l;
      const float *f = w->pairs.table[p].f;
      const double fnn = f[0] * n.x + f[1] * n.y + f[2] * n.z;
      const double tx = f[0] - fnn * n.x, ty = f[1] - fnn * n.y, tz = f[2] - fnn * n.z;
      const double ft = sqrt(tx * tx + ty * ty + tz * tz);
      /* the float table rounds N and Ft at ~6e-8 of the total force */
      const double slack = 1e-6 * (fabs(fnn) + ft + coh) + 1e-9;
      const double excess = (ft - mu * fn - slack) / (mu * fn);
      worst = excess > worst ? excess : worst;
    }
  }
  return worst;
}

static void coulomb(double coh) {
  grn_world_def d;
  grn_error e;
  grn_world_def_default(&d, "pour", &e);
  d.grains = 750;
  grn_world_def_set(&d, "coh", coh, &e);
  grn_world *w;
  grn_world_create(&d, &w, &e);
  const double mu = grn__param(w, GRN_SP_MU);
  double worst = -1.0;
  int contacts = 0;
  for (int s = 0; s < 8 * 240; s++) {
    /* the step, unrolled so the table can be read right after the force pass */
    if (w->pairs.dirty || w->pairs.disp > 0.8 * (GRN_SKIN - grn__reach_gap(w))) {
      grn__rebuild(w);
    }
    grn__forces(w);
    const double x = worst_coulomb(w, mu, coh);
    worst = x > worst ? x : worst;
    contacts += w->fig.contacts;
    grn__gather_integrate(w);
    w->steps++;
    w->t = (double)w->steps * GRN_H;
    w->impl->script(w);
    if (w->steps % grn__sample_steps(w->impl) == 0) {
      w->impl->measure(w);
    }
  }
  char name[96];
  snprintf(name, sizeof name, "contact-steps checked (coh = %g N)", coh);
  CHECK_RANGE(name, contacts, 100000, 1e12);
  snprintf(name, sizeof name, "worst |Ft|/(mu·N) − 1 over a pour (coh = %g N)", coh);
  CHECK_RANGE(name, worst, -1.0, 0.0);
  grn_world_destroy(w);
}

static void nan_removed(void) {
  grn_world_def d;
  grn_error e;
  grn_world_def_default(&d, "pour", &e);
  d.grains = 600;
  grn_world *w;
  grn_world_create(&d, &w, &e);
  grn_world_step(w, 5 * 240);
  const int alive = w->fig.alive;
  /* poison a grain in the middle of the pile */
  int victim = -1;
  for (int i = 0; i < w->n && victim < 0; i++) {
    if ((w->flags[i] & GRN_F_ALIVE) && w->pos[i].y < 0.3 && fabs(w->pos[i].x) < 0.5) {
      victim = i;
    }
  }
  CHECK("found a grain inside the pile", victim >= 0);
  /* as if its own force went bad: the velocity turns NaN inside the integration */
  w->inv_m[victim] = NAN;
  grn_world_step(w, 1);
  CHECK_NEAR("grains after the NaN step", w->fig.alive, alive - 1, 0);
  grn_world_step(w, 2 * 240);
  int finite = 0, live = 0;
  for (int i = 0; i < w->n; i++) {
    if (w->flags[i] & GRN_F_ALIVE) {
      live++;
      finite += isfinite(w->pos[i].x + w->pos[i].y + w->pos[i].z + w->vel[i].x + w->vel[i].y +
                         w->vel[i].z + w->spin[i].x + w->spin[i].y + w->spin[i].z);
    }
  }
  CHECK_NEAR("grains still finite 2 s later", finite, live, 0);
  CHECK_NEAR("and none lost besides the NaN", live, alive - 1, 0);
  grn_world_destroy(w);
}

/* 300 grains in a loose ball, no gravity, no walls: every internal force comes in equal and
 * opposite pairs, so total momentum stays at its start to rounding (1e-9 of Σ m|v|). */
static void momentum(void) {
  grn_world *w = lab_new(2);
  uint64_t rng[4];
  grn__rng_seed(rng, 7);
  int placed = 0;
  for (int k = 0; placed < 300 && k < 100000; k++) {
    const double x = 3.0 * (grn__rng_uniform(rng) - 0.5), y = 3.0 * (grn__rng_uniform(rng) - 0.5),
                 z = 3.0 * (grn__rng_uniform(rng) - 0.5);
    if (x * x + y * y + z * z > 1.5 * 1.5) {
      continue;
    }
    const double r = grn__random_radius(w);
    bool clear = true;
    for (int j = 0; j < w->n && clear; j++) {
      const double dx = w->pos[j].x - x, dy = w->pos[j].y - y, dz = w->pos[j].z - z;
      clear = sqrt(dx * dx + dy * dy + dz * dz) > r + w->rad[j] - 0.01;
    }
    if (clear) {
      /* converging: the ball collapses into many collisions, plus a common drift */
      lab_add(w, x, y, z, r, 0.7 - 2.0 * x + grn__rng_uniform(rng), -0.3 - 2.0 * y,
              0.2 - 2.0 * z + grn__rng_uniform(rng));
      placed++;
    }
  }
  w->param[w->bind.param[GRN_SP_MUR]] = 0.2;
  grn_vec3 p0 = {0, 0, 0};
  double scale = 0.0;
  for (int i = 0; i < w->n; i++) {
    if (w->flags[i] & GRN_F_ALIVE) {
      const double m = 1.0 / w->inv_m[i];
      p0.x += m * w->vel[i].x;
      p0.y += m * w->vel[i].y;
      p0.z += m * w->vel[i].z;
      scale += m * sqrt(w->vel[i].x * w->vel[i].x + w->vel[i].y * w->vel[i].y +
                        w->vel[i].z * w->vel[i].z);
    }
  }
  int most = 0;
  for (int s = 0; s < 3 * 240; s++) {
    grn_world_step(w, 1);
    most = w->fig.contacts > most ? w->fig.contacts : most;
  }
  grn_vec3 p1 = {0, 0, 0};
  for (int i = 0; i < w->n; i++) {
    if (w->flags[i] & GRN_F_ALIVE) {
      const double m = 1.0 / w->inv_m[i];
      p1.x += m * w->vel[i].x;
      p1.y += m * w->vel[i].y;
      p1.z += m * w->vel[i].z;
    }
  }
  const double dp = sqrt((p1.x - p0.x) * (p1.x - p0.x) + (p1.y - p0.y) * (p1.y - p0.y) +
                         (p1.z - p0.z) * (p1.z - p0.z));
  printf("cluster: %d grains, at most %d contacts at once\n", w->fig.alive, most);
  CHECK_RANGE("contacts formed in the collapse", most, 100, 1e9);
  CHECK_RANGE("momentum change / Σ m|v|", dp / scale, 0.0, 1e-9);
  grn_world_destroy(w);
}

int main(void) {
  coulomb(0.0);
  coulomb(150.0);
  nan_removed();
  momentum();
  CHECK_DONE();
}
