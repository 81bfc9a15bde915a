/* The particle models behind one interface (issue 15): granular DEM (forces.c, walls.c,
 * integrate.c, fused.c), SPH water (fluid.c) and softened N-body gravity (gravity.c). The world and
 * the catalogue reach a model only through its ops table; no other engine code branches on
 * grn_model. Each model owns its block in the world (grn_sph, grn_nbody in internal.h; the granular
 * model's arrays are the world's own pair machinery) and frees it itself. */
#ifndef GRAINLAB_MODEL_H
#define GRAINLAB_MODEL_H

#include "internal.h"

typedef struct grn_model_ops {
  grn_model kind;
  grn_model_info info; /* grn_model_info_of: its name, its particles, whether it settles */
  bool pairs;          /* uses the pair list: it is built after the scene's setup */
  /* in the pair list, a fast particle gets a slack of its own that covers REBUILD_STEPS of its
   * flight (pairs.c): grains falling out of a silo would otherwise bring a rebuild every few steps;
   * SPH's particles move together and share one */
  bool own_slack;
  /* keeps a near list and a fused ring in its block (w->gran): the granular model alone; every
   * other model's block lies over them, so nothing outside it touches them */
  bool near;
  /* Model constants from the parameters, after the scene's derive hook (setup, restore, a live
   * change); NULL: none. */
  void (*derive)(grn_world *w);
  /* Particles a definition makes when its scene has no count hook; NULL: the scene must say. */
  int (*count)(const grn_world_def *def);
  const char *count_param; /* the parameter it reads, as the scene's count_param */
  /* One step of H (all sub-steps). GRN_OK or GRN_E_NOMEM. */
  int (*step)(grn_world *w);
  /* Default measurement when the scene has none of its own (every sample of the scene's). */
  void (*measure)(grn_world *w);
  /* A parameter changed (after the scene derived its constants): drop cached forces. */
  void (*changed)(grn_world *w);
  /* Model figures of grn_world_get_stats: substeps, tree and forces. */
  void (*stats)(const grn_world *w, grn_world_stats *out);
  /* Free the model's block (world clear and destroy). */
  void (*free)(grn_world *w);
  /* The saved part of the model's block: state_size bytes at state_offset in grn_world, saved as
   * one block (size 0: none). Plain data, no pointers. */
  size_t state_offset, state_size;
  /* Cost of one step of H for a definition, µs on a slow machine (grn_world_def_step_cost). */
  double (*cost)(const grn_world_def *def, int particles);
} grn_model_ops;

extern const grn_model_ops grn__model_granular;
extern const grn_model_ops grn__model_fluid;
extern const grn_model_ops grn__model_gravity;

/* SPH (fluid.c): the model derives its constants from w->sph.s and w->sph.fall, which the
 * scene's derive hook sets first */
int grn__sph_add(grn_world *w, double x, double y, double z);
void grn__sph_energy(const grn_world *w, double *kinetic, double *potential);
int grn__sph_bed(grn_world *w);
double grn__sph_bed_depth(int n);
double grn__sph_bed_spacing(void);
void grn__sph_measure(grn_world *w);

/* N-body (gravity.c) */
int grn__nbody_forces(grn_world *w);
void grn__nbody_measure(grn_world *w);
int grn__nbody_add(grn_world *w, double m, double x, double y, double z, grn_vec3 v);
int grn__plummer(grn_world *w, int n);

#endif
