/* Reading a sample's measurement by name, as every client does: the scene's list gives its
 * place. */
#ifndef GRAINLAB_TEST_MEASURED_H
#define GRAINLAB_TEST_MEASURED_H

#include "grainlab/grainlab.h"

#include <math.h>

/* NaN where the scene has no such measurement. */
static inline double measured(const grn_scene_info *scene, const grn_measurements *m,
                              const char *name) {
  const int k = grn_scene_measure_index(scene, name);
  return k >= 0 && k < m->count ? m->value[k] : NAN;
}

/* The same for a sample of world w. */
static inline double measured_in(const grn_world *w, const grn_measurements *m, const char *name) {
  return measured(grn_world_scene(w), m, name);
}

#endif
