/* A scene as one object (issue 15): its public catalogue entry (grn_scene_info: parameters,
 * actions, measurements), its hooks and the size of its own state block. Each file in scenes/
 * defines its scene objects; scenes/registry.c lists them, one line each, in catalogue order. */
#ifndef GRAINLAB_SCENE_H
#define GRAINLAB_SCENE_H

#include "internal.h"

struct grn_scene {
  grn_scene_info info; /* the public face: grn_scene_at and grn_scene_find return &info */
  /* The scene's own state (script and measurement state that evolves): state_size bytes of plain
   * data at w->ss, zeroed before setup, saved and restored as one block. 0: none. */
  size_t state_size;
  int (*setup)(grn_world *w);   /* geometry and initial grains */
  void (*script)(grn_world *w); /* after each step; NULL: none */
  /* every GRN_MEASURE_EVERY steps and after setup; NULL: the model's measurement */
  void (*measure)(grn_world *w);
  /* the scene's own actions (tool and reset are the world's); NULL: none */
  int (*act)(grn_world *w, const grn_action *a, grn_error *err);
  double calm;                            /* sleep speed, m/s */
  int (*bed)(grn_world *w);               /* GRN_FILL_BED workload; NULL: the scene has none */
  int (*count)(const grn_world_def *def); /* particles the definition makes; NULL: the model's */
  /* Scene constants from the parameters, before the model derives its own (setup, restore, a live
   * change): the SPH spacing and fall height; NULL: none. */
  void (*derive)(grn_world *w);
  /* Keeps the world awake (something is poured, pulled or turned); NULL: never. */
  bool (*busy)(const grn_world *w);
  /* Side effect of a live parameter change, after it is stored in w->param; NULL: none. */
  void (*param_set)(grn_world *w, grn_param_id id, double value);
  /* Restore: whether a saved state block is sane (bools hold 0 or 1, counts in range). */
  bool (*state_ok)(const grn_world *w);
  /* The scene's part of grn_world_geometry beyond w->geom (the tilt); NULL: none. */
  void (*geometry)(const grn_world *w, grn_geometry *out);
};

/* Whether the byte of a bool read from outside input is 0 or 1 (anything else is undefined
 * behaviour to read as a bool). */
static inline bool grn__bool_ok(const bool *b) {
  unsigned char byte;
  memcpy(&byte, b, 1);
  return byte <= 1;
}

#endif
