/* The one list of scenes, one line each, in catalogue order (grn_scene_at indexes it): adding a
 * scene is its file in scenes/ plus one line here. The validator, the CLI, the API and the docs
 * all read these entries (style rule 10). */
#include "../scene.h"

// clang-format off
#define SCENES(X)                                                                                  \
  X(pour)                                                                                          \
  X(wet)                                                                                           \
  X(chains)                                                                                        \
  X(slump)                                                                                         \
  X(tilt)                                                                                          \
  X(silo)                                                                                          \
  X(dambreak)                                                                                      \
  X(drop)                                                                                          \
  X(orbit)                                                                                         \
  X(softening)                                                                                     \
  X(cluster)                                                                                       \
  X(drum)                                                                                          \
  X(janssen)                                                                                       \
  /* one line per scene above, each ending in a backslash */
// clang-format on

#define DECLARE(name) extern const grn_scene grn__scene_##name;
SCENES(DECLARE)
#undef DECLARE

static const grn_scene *const scenes[] = {
#define ENTRY(name) &grn__scene_##name,
    SCENES(ENTRY)
#undef ENTRY
};

int grn_scene_count(void) {
  return (int)(sizeof scenes / sizeof scenes[0]);
}

const grn_scene_info *grn_scene_at(int index) {
  return index >= 0 && index < grn_scene_count() ? &scenes[index]->info : NULL;
}

const grn_scene_info *grn_scene_find(const char *name) {
  for (int i = 0; name && i < grn_scene_count(); i++) {
    if (strcmp(scenes[i]->info.name, name) == 0) {
      return &scenes[i]->info;
    }
  }
  return NULL;
}

int grn_scene_sample_steps(const grn_scene_info *scene) {
  const grn_scene *s = grn__scene_impl(scene);
  return s ? (int)grn__sample_steps(s) : GRN_SAMPLE_STEPS;
}

const grn_scene *grn__scene_impl(const grn_scene_info *info) {
  for (int i = 0; i < grn_scene_count(); i++) {
    if (&scenes[i]->info == info) {
      return scenes[i];
    }
  }
  return NULL;
}
