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
  bool bed_script;              /* the script runs on the benchmark's bed too (the tilt turns it) */
  /* every sample_steps steps and after setup; NULL: the model's measurement */
  void (*measure)(grn_world *w);
  /* the scene's own actions (tool and reset are the world's); NULL: none */
  int (*act)(grn_world *w, const grn_action *a, grn_error *err);
  /* Steps between two measurement samples, as fast as the scene's physics needs them to be seen
   * (its catalogue entry: grn_scene_sample_steps); 0: GRN_SAMPLE_STEPS. */
  int sample_steps;
  double calm;                            /* sleep speed, m/s */
  int (*bed)(grn_world *w);               /* GRN_FILL_BED workload; NULL: the scene has none */
  int (*count)(const grn_world_def *def); /* particles the definition makes; NULL: the model's */
  const char *count_param; /* with a count hook: the parameter it reads (NULL: a fixed count) */
  /* Scene constants from the parameters, before the model derives its own (setup, restore, a live
   * change): the SPH spacing and fall height; NULL: none. */
  void (*derive)(grn_world *w);
  /* Keeps the world awake (something is poured, pulled or turned); NULL: never. */
  bool (*busy)(const grn_world *w);
  /* Whether the built scene can take a live value the catalogue's range allows (a silo's hole
   * must leave the cylinder 2.5 holes across): GRN_OK or an error naming the limit; NULL: any. */
  int (*live_check)(const grn_world *w, int index, double value, grn_error *err);
  /* Side effect of a live change of the parameter at `index` in its list, after it is stored in
   * w->param; NULL: none. */
  void (*param_set)(grn_world *w, int index, double value);
  /* Restore: whether a saved state block is sane (bools hold 0 or 1, counts in range). */
  bool (*state_ok)(const grn_world *w);
  /* The scene's part of grn_world_geometry beyond w->geom (the tilt); NULL: none. */
  void (*geometry)(const grn_world *w, grn_geometry *out);
};

static inline uint64_t grn__sample_steps(const grn_scene *s) {
  return s->sample_steps > 0 ? (uint64_t)s->sample_steps : GRN_SAMPLE_STEPS;
}

/* Bounds on what a saved state may hold (issue 16): restore refuses a state beyond them, so every
 * state it accepts steps safely. Nothing a scene builds comes near them: the largest scene (a pour
 * of GRN_MAX_GRAINS) spans 66 m, the water tanks a few metres, bodies start within a few units of
 * the origin, and every speed the engine gives is far below GRN_STATE_FAST.
 *  - GRN_STATE_FAR, m: a grain's |x|, |y|, |z|. The default kill depth (w->geom.kill_y) is
 *    1e9 m; beyond it the pair grid's extent can overflow to infinity, and plan_grid (pairs.c)
 *    would grow its cells forever.
 *  - GRN_STATE_SIZE, m: every length of the scene's geometry (walls, table, height map). A length
 *    over GRN_CELL_MAP is cast to int for the height-map bins: 1e6 / 0.2 fits with room.
 *  - GRN_STATE_FAST, m/s: a grain's speed, 10^4 times the tool's top speed; spin, a grain at that
 *    speed rolling on 1 mm. Ten steps move a grain by at most 12.5 km, well inside the grid.
 *  - GRN_STATE_COUNT: a counter's ceiling (poured, log_n, pour_acc), so that adding to it cannot
 *    overflow an int (2^30: at one per step, 52 days of simulated time).
 *  - GRN_STATE_SLACK, m: a grain's pair-list slack; a rebuild gives at most half the skin plus
 *    what a grain at GRN_VMAX covers in REBUILD_STEPS steps (pairs.c), about 1.06 m. */
#define GRN_STATE_FAR 1e9
#define GRN_STATE_SIZE 1e6
#define GRN_STATE_FAST (1e4 * GRN_VMAX)
#define GRN_STATE_SPIN (GRN_STATE_FAST / 1e-3)
#define GRN_STATE_COUNT (1 << 30)
#define GRN_STATE_SLACK 2.0

/* |v| <= limit, false for NaN */
static inline bool grn__within(double v, double limit) {
  return fabs(v) <= limit;
}

/* Whether the byte of a bool read from outside input is 0 or 1 (anything else is undefined
 * behaviour to read as a bool). */
static inline bool grn__bool_ok(const bool *b) {
  unsigned char byte;
  memcpy(&byte, b, 1);
  return byte <= 1;
}

#endif
