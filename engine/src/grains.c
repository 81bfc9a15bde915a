/* Grain storage (spec §1–§2): the per-grain arrays grown all or nothing, adding and removing
 * grains, random radii and the initial lattice with its settle time. */
#include "internal.h"
#include "model.h"

#include <string.h>

int grn__reserve_grains(grn_world *w, int need) {
  if (need <= w->cap) {
    return GRN_OK;
  }
  int nc = w->cap > 0 ? w->cap + w->cap / 2 : 64;
  nc = nc < need ? need : nc;
  const int oc = w->cap;
  /* per-grain arrays; pstart and rstart hold one more (the end of the last range); the near
   * list's only in the granular model's block (another model's block lies over it) */
  const bool near = w->model->near;
  struct {
    void **p;
    size_t elem;
    int extra;
    void *fresh;
  } a[] = {/* one spare vector each: the SIMD kernel loads 32 bytes at every 24-byte grn_vec3 */
           {(void **)&w->pos, sizeof(grn_vec3), 1, NULL},
           {(void **)&w->vel, sizeof(grn_vec3), 1, NULL},
           {(void **)&w->spin, sizeof(grn_vec3), 1, NULL},
           {(void **)&w->rad, sizeof(double), 0, NULL},
           {(void **)&w->inv_m, sizeof(double), 0, NULL},
           {(void **)&w->inv_i, sizeof(double), 0, NULL},
           {(void **)&w->hf, GRN_HF * sizeof(double), 0, NULL},
           {(void **)&w->id, sizeof(uint32_t), 0, NULL},
           {(void **)&w->flags, sizeof(uint8_t), 0, NULL},
           {(void **)&w->pairs.ref, sizeof(grn_vec3), 0, NULL},
           {(void **)&w->pairs.slack, sizeof(double), 0, NULL},
           {near ? (void **)&w->gran.near.nu : NULL, sizeof(float), 0, NULL},
           {near ? (void **)&w->gran.near.ref : NULL, sizeof(grn_vec3), 0, NULL},
           {(void **)&w->pairs.pstart, sizeof(int32_t), 1, NULL},
           {(void **)&w->pairs.rstart, sizeof(int32_t), 1, NULL},
           {near ? (void **)&w->gran.near.start : NULL, sizeof(int32_t), 1, NULL},
           {near ? (void **)&w->gran.near.rstart : NULL, sizeof(int32_t), 1, NULL},
           {(void **)&w->pairs.scr.cell, sizeof(int32_t), 0, NULL},
           {(void **)&w->pairs.scr.perm, sizeof(int32_t), 0, NULL},
           {(void **)&w->pairs.scr.newidx, sizeof(int32_t), 0, NULL}};
  const size_t count = sizeof a / sizeof a[0];
  /* all or nothing: allocate every new array before touching the old ones */
  for (size_t k = 0; k < count; k++) {
    a[k].fresh = a[k].p ? grn__alloc(w, a[k].elem * (size_t)(nc + a[k].extra)) : NULL;
    if (a[k].p && !a[k].fresh) {
      for (size_t j = 0; j < k; j++) {
        grn__free(w, a[j].fresh, a[j].elem * (size_t)(nc + a[j].extra));
      }
      return GRN_E_NOMEM;
    }
  }
  for (size_t k = 0; k < count; k++) {
    if (!a[k].p) {
      continue;
    }
    if (oc > 0) {
      memcpy(a[k].fresh, *a[k].p, a[k].elem * (size_t)(oc + a[k].extra));
      grn__free(w, *a[k].p, a[k].elem * (size_t)(oc + a[k].extra));
    }
    *a[k].p = a[k].fresh;
  }
  if (oc == 0) {
    w->pairs.pstart[0] = 0;
    w->pairs.rstart[0] = 0;
    if (near) {
      w->gran.near.start[0] = 0;
      w->gran.near.rstart[0] = 0;
    }
  }
  w->cap = nc;
  return GRN_OK;
}

double grn__random_radius(grn_world *w) {
  /* diameters uniform in [0.85 D0, 1.15 D0]: equal spheres would crystallise */
  return 0.5 * GRN_D0 * (1.0 - GRN_SPREAD + 2.0 * GRN_SPREAD * grn__rng_uniform(w->rng));
}

int grn__add_grain(grn_world *w, double x, double y, double z, double r, grn_vec3 v) {
  if (grn__reserve_grains(w, w->n + 1) != GRN_OK) {
    return GRN_E_NOMEM;
  }
  const int i = w->n++;
  const double m = GRN_RHO * 4.0 / 3.0 * GRN_PI * r * r * r;
  w->pos[i] = (grn_vec3){x, y, z};
  w->vel[i] = v;
  w->spin[i] = (grn_vec3){0.0, 0.0, 0.0};
  w->rad[i] = r;
  w->inv_m[i] = 1.0 / m;
  w->inv_i[i] = 1.0 / (0.4 * m * r * r);
  memset(&w->hf[GRN_HF * (size_t)i], 0, GRN_HF * sizeof(double));
  w->id[i] = w->next_id++;
  w->flags[i] = GRN_F_ALIVE;
  w->pairs.ref[i] = w->pos[i];
  w->pairs.slack[i] = 0.0; /* no pairs yet: the list is made again (dirty) before it moves */
  w->fig.alive++;
  w->pairs.dirty = true;
  return GRN_OK;
}

void grn__kill(grn_world *w, int i) {
  if (w->flags[i] & GRN_F_ALIVE) {
    w->flags[i] = 0;
    w->fig.alive--;
    w->pairs.dirty = true;
  }
}

/* Layers of LAT_A × LAT_A sites, LAT_G apart, every other layer shifted by half a spacing; the
 * settle time follows from the lattice's height. */
int grn__fill_lattice(grn_world *w, int count, double x0, double x1, double z0, double z1,
                      double y0) {
  const int nx = (int)floor((x1 - x0) / GRN_LAT_A), nz = (int)floor((z1 - z0) / GRN_LAT_A);
  if (nx < 1 || nz < 1) {
    return GRN_E_INVALID;
  }
  if (grn__reserve_grains(w, w->n + count) != GRN_OK) {
    return GRN_E_NOMEM;
  }
  int placed = 0;
  double top = y0;
  for (int layer = 0; placed < count; layer++) {
    const double sh = (layer & 1) ? 0.5 * GRN_LAT_A : 0.0;
    const int mx = (layer & 1) ? nx - 1 : nx, mz = (layer & 1) ? nz - 1 : nz;
    for (int b = 0; b < mz && placed < count; b++) {
      for (int a = 0; a < mx && placed < count; a++) {
        const double x = x0 + (a + 0.5) * GRN_LAT_A + sh, z = z0 + (b + 0.5) * GRN_LAT_A + sh;
        const grn_vec3 v0 = {0.0, 0.0, 0.0};
        if (grn__add_grain(w, x, y0 + layer * GRN_LAT_G, z, grn__random_radius(w), v0) != GRN_OK) {
          return GRN_E_NOMEM;
        }
        placed++;
      }
    }
    top = y0 + layer * GRN_LAT_G;
  }
  w->settle.drag = grn__settle_time(top);
  return GRN_OK;
}

/* A lattice packs down at the drag's terminal speed (0.97/step gives ≈1.3 m/s), so the settle
 * time grows with its height: a 100k-grain lattice given a flat 1 s crashed through the floor. */
double grn__settle_time(double lattice_height) {
  return 1.0 + 1.0 * lattice_height;
}
