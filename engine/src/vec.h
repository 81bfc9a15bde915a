/* Small vector helpers of the granular step's scalar code (static inline: they vanish into their
 * callers; the same IEEE operations in the same order wherever they are used). */
#ifndef GRAINLAB_VEC_H
#define GRAINLAB_VEC_H

#include "internal.h"

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

#endif
