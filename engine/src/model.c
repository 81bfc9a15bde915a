/* The model registry: one ops table per grn_model (model.h), the granular model's table, and the
 * public read-outs that depend on the model (its name, the cost of a step). */
#include "model.h"

static void granular_stats(const grn_world *w, grn_world_stats *out) {
  (void)w;
  out->substeps = 1;
  out->tree = false;
  out->forces = "pairs";
}

/* N = round(BASE[quality]·amount/100) (spec §1), or exactly the definition's grains. */
static int granular_count(const grn_world_def *def) {
  static const int base_count[3] = {750, 1500, 3000};
  if (def->grains > 0) {
    return def->grains;
  }
  const int q = (int)grn__def_param(def, GRN_SP_QUALITY);
  return (int)lround(base_count[q < 0   ? 0
                                : q > 2 ? 2
                                        : q] *
                     grn__def_param(def, GRN_SP_AMOUNT) / 100.0);
}

/* 2 µs per grain on a slow machine: about six contacts each (the daemon's pacing figure). */
static double granular_cost(const grn_world_def *def, int n) {
  (void)def;
  return GRN_GRAIN_STEP_US * n;
}

/* The granular model's block: its near list and fused ring (the grains and the pair list are the
 * world's). */
static void granular_free(grn_world *w) {
  grn__near_free(w);
  grn__fused_free(w);
}

const grn_model_ops grn__model_granular = {.kind = GRN_MODEL_GRANULAR,
                                           .info = {"granular", "grains", true, true},
                                           .pairs = true,
                                           .own_slack = true,
                                           .near = true,
                                           .free = granular_free,
                                           .count = granular_count,
                                           .count_param = "amount",
                                           .step = grn__granular_step,
                                           .measure = grn__common_measures,
                                           .stats = granular_stats,
                                           .cost = granular_cost};

static const grn_model_ops *const models[] = {
    [GRN_MODEL_GRANULAR] = &grn__model_granular,
    [GRN_MODEL_FLUID] = &grn__model_fluid,
    [GRN_MODEL_GRAVITY] = &grn__model_gravity,
};

const grn_model_ops *grn__model_of(grn_model kind) {
  return (int)kind >= 0 && (size_t)kind < sizeof models / sizeof models[0] ? models[kind] : NULL;
}

const char *grn_model_name(grn_model model) {
  const grn_model_ops *m = grn__model_of(model);
  return m ? m->info.name : "";
}

const grn_model_info *grn_model_info_of(grn_model model) {
  const grn_model_ops *m = grn__model_of(model);
  return m ? &m->info : NULL;
}

double grn_world_def_step_cost(const grn_world_def *def) {
  const grn_model_ops *m = def && def->scene ? grn__model_of(def->scene->model) : NULL;
  return m ? m->cost(def, grn_world_def_grains(def)) : 0.0;
}
