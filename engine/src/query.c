/* Read-out (spec §5 and the public views): state names, measurements, the grain, geometry,
 * height-map and stats views, the digest, contacts and force chains. */
#include "internal.h"
#include "model.h"
#include "scene.h"

static const char *const state_names[] = {"settling", "filling", "running", "asleep",
                                          "flowing",  "jammed",  "drained"};

const char *grn_state_name(grn_state s) {
  return (int)s >= 0 && s <= GRN_STATE_DRAINED ? state_names[s] : "";
}

void grn_world_measurements(const grn_world *w, grn_measurements *out) {
  *out = w->meas;
}

const grn_scene_info *grn_world_scene(const grn_world *w) {
  return w->scene;
}

uint64_t grn_world_step_count(const grn_world *w) {
  return w->steps;
}

double grn_world_time(const grn_world *w) {
  return w->t;
}

bool grn_world_asleep(const grn_world *w) {
  return w->sleep.on;
}

void grn_world_grains(const grn_world *w, grn_grains_view *out) {
  out->count = w->n;
  out->pos = (const double *)w->pos;
  out->vel = (const double *)w->vel;
  out->spin = (const double *)w->spin;
  out->radius = w->rad;
  out->id = w->id;
  out->alive = w->flags; /* GRN_F_ALIVE is bit 0 */
}

void grn_world_geometry(const grn_world *w, grn_geometry *out) {
  const grn_geom *g = &w->geom;
  *out = (grn_geometry){g->floor_y, g->fx0,     g->fx1,      g->fz0,      g->fz1,      g->box,
                        g->xmin,    g->xmax,    g->zmin,     g->zmax,     g->silo_r,   g->plate,
                        g->plugged, g->plate_y, g->hole_r,   g->dam,      g->dam_x,    g->dam_edge,
                        g->tool,    g->tool_r,  g->tool_p.x, g->tool_p.y, g->tool_p.z, 0.0,
                        g->drum_r,  g->drum_y,  g->drum_w};
  if (w->impl->geometry) {
    w->impl->geometry(w, out);
  }
}

void grn_world_height_map(const grn_world *w, grn_height_map *out) {
  out->nx = w->maps.hnx;
  out->nz = w->maps.hnz;
  out->x0 = w->maps.hx0;
  out->z0 = w->maps.hz0;
  out->cell = GRN_CELL_MAP;
  out->top = w->maps.hmap;
}

int grn_world_resting(const grn_world *w) {
  int resting = 0;
  for (int i = 0; i < w->n; i++) {
    if ((w->flags[i] & (GRN_F_ALIVE | GRN_F_FIXED)) != GRN_F_ALIVE) {
      continue;
    }
    const grn_vec3 v = w->vel[i], o = w->spin[i];
    const double r2 = w->rad[i] * w->rad[i], lim2 = GRN_VREST * GRN_VREST;
    resting +=
        v.x * v.x + v.y * v.y + v.z * v.z < lim2 && (o.x * o.x + o.y * o.y + o.z * o.z) * r2 < lim2;
  }
  return resting;
}

void grn_world_get_stats(const grn_world *w, grn_world_stats *out) {
  out->alive = w->fig.alive;
  out->pairs = w->pairs.m;
  out->contacts = w->fig.contacts;
  out->rebuilds = w->pairs.rebuilds;
  out->relists = w->pairs.relists;
  out->refreshes = w->model->near ? w->gran.near.refreshes : 0;
  out->near_pairs = w->model->near && w->gran.near.valid ? w->gran.near.m : 0;
  out->max_speed = w->fig.vmax;
  out->over_max = w->fig.over_max;
  out->bytes_live = w->mem.live;
  out->substeps = 1;
  out->tree = false;
  out->forces = "pairs";
  if (w->model->stats) {
    w->model->stats(w, out);
  }
}

uint64_t grn_world_digest(const grn_world *w) {
  /* FNV-1a over the bit patterns: any difference in any bit shows */
  uint64_t h = 0xcbf29ce484222325ull;
  const unsigned char *parts[3] = {(const unsigned char *)w->pos, (const unsigned char *)w->vel,
                                   (const unsigned char *)w->spin};
  for (int i = 0; i < w->n; i++) {
    if (!(w->flags[i] & GRN_F_ALIVE)) {
      continue;
    }
    for (int k = 0; k < 3; k++) {
      const unsigned char *b = parts[k] + sizeof(grn_vec3) * (size_t)i;
      for (size_t j = 0; j < sizeof(grn_vec3); j++) {
        h = (h ^ b[j]) * 0x100000001b3ull;
      }
    }
  }
  return h;
}

/* ---- contacts and force chains ----------------------------------------------------------- */
int grn_world_contacts(const grn_world *w, grn_contact *out, int cap) {
  int k = 0;
  for (int a = 0; a < w->pairs.nl; a++) {
    for (int p = w->pairs.pstart[a]; p < w->pairs.pstart[a + 1]; p++) {
      if (w->pairs.pfn[p] > 0.0f && (w->flags[a] & w->flags[w->pairs.pb[p]] & GRN_F_ALIVE)) {
        if (k < cap) {
          out[k] = (grn_contact){w->id[a], w->id[w->pairs.pb[p]], w->pairs.pfn[p]};
        }
        k++;
      }
    }
  }
  return k;
}

int grn_world_chains(const grn_world *w, double px, double pz, double nx, double nz,
                     grn_contact *out, int cap) {
  const double l = hypot(nx, nz);
  if (!(l > 0.0) || !isfinite(l) || !isfinite(px) || !isfinite(pz)) {
    return GRN_E_INVALID;
  }
  nx /= l;
  nz /= l;
  double sum = 0.0;
  int c = 0;
  for (int p = 0; p < w->pairs.m; p++) {
    if (w->pairs.pfn[p] > 0.0f) {
      sum += w->pairs.pfn[p];
      c++;
    }
  }
  if (c == 0) {
    return 0;
  }
  const double strong = 1.6 * sum / c, slab = 3.0 * GRN_D0;
  int k = 0;
  for (int a = 0; a < w->pairs.nl; a++) {
    for (int p = w->pairs.pstart[a]; p < w->pairs.pstart[a + 1]; p++) {
      const int b = w->pairs.pb[p];
      if (w->pairs.pfn[p] <= strong || !(w->flags[a] & w->flags[b] & GRN_F_ALIVE)) {
        continue;
      }
      /* depth of the contact's midpoint in front of the plane: behind it is [−slab, 0] */
      const double depth = (0.5 * (w->pos[a].x + w->pos[b].x) - px) * nx +
                           (0.5 * (w->pos[a].z + w->pos[b].z) - pz) * nz;
      if (depth > 0.0 || depth < -slab) {
        continue;
      }
      if (k < cap) {
        out[k] = (grn_contact){w->id[a], w->id[b], w->pairs.pfn[p]};
      }
      k++;
    }
  }
  return k;
}
