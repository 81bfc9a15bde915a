/* World lifecycle: definitions and validation, create, reset and destroy, the step loop with sleep
 * and wake, actions and live parameters. Grain storage is in grains.c, read-out in query.c, the
 * contact law's constants in contact.c, the allocator in alloc.c and random numbers in rng.c. */
#include "contact.h"
#include "internal.h"
#include "model.h"
#include "scene.h"

#include <stdlib.h>
#include <string.h>

/* s: how long every settling grain must stay slower than GRN_VFLOW to count as at rest (a grain
 * falling from rest passes GRN_VFLOW within 4 steps, so the lattice's first steps do not count);
 * and the longest the grains may take to be found at rest once the drag is off. */
#define SETTLE_CALM 0.5
#define SETTLE_FREE 1.0

/* ---- definitions ------------------------------------------------------------------------- */
int grn_world_def_default(grn_world_def *def, const char *scene, grn_error *err) {
  const grn_scene_info *info = grn_scene_find(scene);
  if (!info) {
    return grn__fail(err, GRN_E_UNKNOWN_SCENE, "scene", "unknown scene '%.64s'",
                     scene ? scene : "(null)");
  }
  memset(def, 0, sizeof *def);
  def->scene = info;
  for (int i = 0; i < info->param_count; i++) {
    def->param[i] = info->params[i].def;
  }
  def->seed = 1;
  def->grains = 0;
  def->threads = 1;
  def->allow_sleep = true;
  def->simd = true;
  def->fill = GRN_FILL_SCENE;
  return GRN_OK;
}

int grn_world_def_set_at(grn_world_def *def, int index, double value, grn_error *err) {
  const int rc = grn__check_param(def->scene, index, value, err);
  if (rc == GRN_OK) {
    def->param[index] = value;
  }
  return rc;
}

int grn_world_def_set(grn_world_def *def, const char *name, double value, grn_error *err) {
  const int k = grn_scene_param_index(def->scene, name);
  return k < 0 ? grn__unknown_param(def->scene, name, err)
               : grn_world_def_set_at(def, k, value, err);
}

int grn_world_def_set_text(grn_world_def *def, const char *name, const char *value,
                           grn_error *err) {
  if (grn_scene_param_index(def->scene, name) < 0) {
    return grn__unknown_param(def->scene, name, err);
  }
  double v;
  if (grn_parse_number(value, &v) != GRN_OK) {
    return grn__fail(err, GRN_E_NOT_NUMBER, name, "parameter '%s': '%.40s' is not a number", name,
                     value ? value : "");
  }
  return grn_world_def_set(def, name, v, err);
}

int grn_world_def_grains(const grn_world_def *def) {
  const grn_scene *impl = def->scene ? grn__scene_impl(def->scene) : NULL;
  if (impl && impl->count) {
    return impl->count(def);
  }
  const grn_model_ops *m = impl ? grn__model_of(impl->info.model) : &grn__model_granular;
  return m->count ? m->count(def) : -1;
}

const char *grn_world_def_count_param(const grn_world_def *def) {
  const grn_scene *impl = def->scene ? grn__scene_impl(def->scene) : NULL;
  if (!impl) {
    return NULL;
  }
  if (def->grains > 0) {
    return "grains";
  }
  return impl->count ? impl->count_param : grn__model_of(impl->info.model)->count_param;
}

int grn_world_def_validate(const grn_world_def *def, grn_error *err) {
  if (!def || !def->scene || !grn__scene_impl(def->scene)) {
    return grn__fail(err, GRN_E_UNKNOWN_SCENE, "scene", "no valid scene in the definition");
  }
  for (int i = 0; i < def->scene->param_count; i++) {
    const int rc = grn__check_param(def->scene, i, def->param[i], err);
    if (rc < 0) {
      return rc;
    }
  }
  if (def->grains < 0 || def->grains > GRN_MAX_GRAINS) {
    return grn__fail(err, GRN_E_RANGE, "grains", "grains = %d is outside 1..%d", def->grains,
                     GRN_MAX_GRAINS);
  }
  if (def->threads < 1 || def->threads > 256) {
    return grn__fail(err, GRN_E_RANGE, "threads", "threads = %d is outside 1..256", def->threads);
  }
  if (def->fill != GRN_FILL_SCENE && def->fill != GRN_FILL_BED) {
    return grn__fail(err, GRN_E_INVALID, "fill", "unknown fill mode %d", (int)def->fill);
  }
  if (def->fill == GRN_FILL_BED && !grn__scene_impl(def->scene)->bed) {
    return grn__fail(err, GRN_E_UNSUPPORTED, "fill", "scene '%s' has no packed-bed fill",
                     def->scene->name);
  }
  if (grn_world_def_grains(def) < 1) {
    return grn__fail(err, GRN_E_UNSUPPORTED, "grains",
                     "scene '%s' sets its particle count from its parameters, not from grains",
                     def->scene->name);
  }
  if ((def->alloc == NULL) != (def->free == NULL)) {
    return grn__fail(err, GRN_E_INVALID, "alloc", "alloc and free hooks go together");
  }
  return GRN_OK;
}

/* ---- lifecycle --------------------------------------------------------------------------- */
void grn__world_clear(grn_world *w) {
  if (w->model->free) {
    w->model->free(w);
  }
  grn__free(w, w->pos, sizeof(grn_vec3) * (size_t)(w->cap + 1));
  grn__free(w, w->vel, sizeof(grn_vec3) * (size_t)(w->cap + 1));
  grn__free(w, w->spin, sizeof(grn_vec3) * (size_t)(w->cap + 1));
  grn__free(w, w->rad, sizeof(double) * (size_t)w->cap);
  grn__free(w, w->inv_m, sizeof(double) * (size_t)w->cap);
  grn__free(w, w->inv_i, sizeof(double) * (size_t)w->cap);
  grn__free(w, w->hf, GRN_HF * sizeof(double) * (size_t)w->cap);
  grn__free(w, w->id, sizeof(uint32_t) * (size_t)w->cap);
  grn__free(w, w->flags, sizeof(uint8_t) * (size_t)w->cap);
  grn__pairs_free(w);
  grn__free(w, w->maps.hmap, sizeof(double) * (size_t)w->maps.hnx * (size_t)w->maps.hnz);
  grn__free(w, w->ss, w->impl->state_size);
  /* keep allocator, threads, inputs; drop everything derived from them */
  grn_world keep = *w;
  const size_t off = offsetof(grn_world, n);
  memset((char *)w + off, 0, sizeof *w - off);
  w->mem.live = keep.mem.live;
}

/* Build the scene from the world's inputs: used by create and by the reset action. */
/* Model constants that follow from the parameters; neither saved nor cleared by a reset. */
void grn__model_init(grn_world *w) {
  w->pairs.skin = GRN_SKIN;
  w->pairs.cell_rmin = 0.5 * GRN_D0;
  if (w->impl->derive) {
    w->impl->derive(w);
  }
  if (w->model->derive) {
    w->model->derive(w);
  }
}

/* The scene's state block, zeroed (setup and restore). */
int grn__scene_state(grn_world *w) {
  if (w->impl->state_size > 0) {
    w->ss = grn__alloc(w, w->impl->state_size);
    if (!w->ss) {
      return GRN_E_NOMEM;
    }
    memset(w->ss, 0, w->impl->state_size);
  }
  return GRN_OK;
}

int grn__world_setup(grn_world *w) {
  if (grn__scene_state(w) != GRN_OK) {
    return GRN_E_NOMEM;
  }
  grn__model_init(w);
  grn__rng_seed(w->rng, w->seed);
  w->gravity = (grn_vec3){0.0, -GRN_G, 0.0};
  w->geom.kill_y = -1e9;
  w->geom.mu_wall = GRN_MU_FLOOR;
  w->geom.mu_floor = GRN_MU_FLOOR;
  w->geom.mur_floor = GRN_MUR_FLOOR;
  w->geom.fx0 = w->geom.fz0 = -INFINITY;
  w->geom.fx1 = w->geom.fz1 = INFINITY;
  w->meas.state = GRN_STATE_SETTLING;
  for (int k = 0; k < GRN_MEASURE_MAX; k++) {
    w->meas.value[k] = NAN;
  }
  for (int q = 0; q < 4; q++) {
    w->meas.line[q] = NAN;
  }
  w->meas.count = w->scene->measure_count;
  int rc = w->fill == GRN_FILL_BED ? w->impl->bed(w) : w->impl->setup(w);
  /* the scene set the drag's worst case; a model that settles then looks for rest without it */
  w->settle.until = w->settle.drag > 0.0 && w->model->info.settles ? w->settle.drag + SETTLE_FREE
                                                                   : w->settle.drag;
  if (rc == GRN_OK && w->n > 0 && w->model->pairs) {
    rc = grn__rebuild(w);
  }
  if (rc == GRN_OK) {
    grn__measure(w);
  }
  return rc;
}

grn_world *grn__world_new(const grn_world_def *def) {
  grn_mem mem;
  grn__mem_init(&mem, def);
  grn_world *w = mem.alloc(sizeof *w, mem.ctx);
  if (!w) {
    return NULL;
  }
  memset(w, 0, sizeof *w);
  w->mem = mem;
  w->mem.live = sizeof *w;
  w->opt.threads = def ? def->threads : 1;
  w->opt.allow_sleep = def ? def->allow_sleep : true;
  w->opt.simd = (def ? def->simd : true) && grn__simd_available();
  grn__consts_init(&w->k);
  return w;
}

int grn_world_create(const grn_world_def *def, grn_world **out, grn_error *err) {
  int rc = grn_world_def_validate(def, err);
  if (rc != GRN_OK) {
    return rc;
  }
  grn_world *w = grn__world_new(def);
  if (!w) {
    return grn__fail(err, GRN_E_NOMEM, "", "out of memory creating the world");
  }
  w->scene = def->scene;
  w->impl = grn__scene_impl(def->scene);
  w->model = grn__model_of(def->scene->model);
  grn__bind(w);
  memcpy(w->param, def->param, sizeof w->param);
  w->seed = def->seed;
  w->n_target = grn_world_def_grains(def);
  w->fill = def->fill;
  rc = grn__world_setup(w);
  if (rc != GRN_OK) {
    grn_world_destroy(w);
    return grn__fail(err, rc, "", "could not build scene '%s': %s", def->scene->name,
                     grn_status_message(rc));
  }
  *out = w;
  return GRN_OK;
}

void grn_world_destroy(grn_world *w) {
  if (!w) {
    return;
  }
  grn__world_clear(w);
  w->mem.free(w, sizeof *w, w->mem.ctx);
}

/* ---- stepping ---------------------------------------------------------------------------- */
bool grn__must_rebuild(const grn_world *w) {
  return w->pairs.dirty || w->pairs.moved ||
         w->pairs.disp > 0.8 * (w->pairs.skin - grn__reach_gap(w));
}

static void wake(grn_world *w) {
  w->sleep.on = false;
  w->sleep.still = 0.0;
}

/* The granular model's step of H (spec §2): the pair list and near list kept fresh, one of the
 * three equivalent force paths, then the sleep check. */
int grn__granular_step(grn_world *w) {
  if (w->sleep.on) {
    return GRN_OK;
  }
  if (grn__must_rebuild(w)) {
    const int rc = grn__update_pairs(w);
    if (rc != GRN_OK) {
      return rc;
    }
  }
  if (!w->gran.fused.off && grn__near_stale(w)) {
    /* with no room for it, near_valid and fused stay false: the reference passes need
     * neither */
    if (grn__near_refresh(w) == GRN_OK) {
      (void)grn__plan_fused(w);
      grn__near_refs(w);
    }
  }
  if (w->gran.fused.on) {
    grn__step_fused(w);
  } else if (w->gran.near.valid && !w->gran.fused.off) {
    const int rc = grn__step_near(w);
    if (rc != GRN_OK) {
      return rc;
    }
  } else {
    const int rc = grn__forces(w);
    if (rc != GRN_OK) {
      return rc;
    }
    grn__gather_integrate(w);
  }
  /* Settling ends when the grains are at rest, not at the lattice's worst-case time (issue 30: a
   * slump at aspect 3 sat under the drag for 16 s, at rest for the last 5). The drag stops once
   * no grain has moved faster than GRN_VFLOW for SETTLE_CALM s; but under the drag a grain's
   * speed is only its unbalanced force times 0.14 s, so a column creeping at 0.1 m/s may not be
   * at rest at all: the grains must then be found so again without the drag (within SETTLE_FREE
   * s) before the scene is settled. */
  if (w->t < w->settle.until) {
    const double now = (double)(w->steps + 1) * GRN_H;
    const bool drag = w->t < w->settle.drag;
    w->settle.calm = w->fig.vmax < GRN_VFLOW ? w->settle.calm + GRN_H : 0.0;
    if (w->settle.calm >= SETTLE_CALM) {
      w->settle.until = drag ? now + SETTLE_FREE : now;
      w->settle.drag = drag ? now : w->settle.drag; /* this was the last step under the drag */
      /* settled: grains re-listed while they fell are out of cell order, and a bed at rest keeps
       * its order for good (a packed bed stepped 15 % slower so): the list is made again */
      w->pairs.dirty = w->pairs.dirty || (!drag && w->pairs.since > 0);
    }
    if (drag && now >= w->settle.drag) {
      w->settle.calm = 0.0; /* calm under the drag says nothing of calm without it */
    }
  }
  /* sleep once every grain has stayed calm for 1 s with nothing poured or pushed */
  const bool busy = w->geom.tool || w->t < w->settle.until || (w->impl->busy && w->impl->busy(w));
  w->sleep.still = (w->fig.vmax < w->impl->calm && !busy) ? w->sleep.still + GRN_H : 0.0;
  if (w->sleep.still > 1.0 && w->opt.allow_sleep) {
    w->sleep.on = true;
    w->fig.flowing = 0.0;
  }
  return GRN_OK;
}

/* The scene's measurement, or its model's where the scene has none. */
void grn__measure(grn_world *w) {
  if (w->impl->measure) {
    w->impl->measure(w);
  } else {
    w->model->measure(w);
  }
}

int grn_world_step(grn_world *w, int steps) {
  for (int s = 0; s < steps; s++) {
    const int rc = w->model->step(w);
    if (rc != GRN_OK) {
      return rc;
    }
    if (w->geom.tool) {
      w->geom.tool_p.x += w->geom.tool_v.x * GRN_H;
      w->geom.tool_p.y += w->geom.tool_v.y * GRN_H;
      w->geom.tool_p.z += w->geom.tool_v.z * GRN_H;
    }
    w->steps++;
    w->t = (double)w->steps * GRN_H;
    if (w->impl->script && (w->fill == GRN_FILL_SCENE || w->impl->bed_script)) {
      w->impl->script(w);
    }
    if (w->steps % grn__sample_steps(w->impl) == 0) {
      grn__measure(w);
    }
  }
  return GRN_OK;
}

/* ---- actions and live parameters --------------------------------------------------------- */
double grn_world_settle_left(const grn_world *w) {
  return w->t < w->settle.until ? w->settle.until - w->t : 0.0;
}

/* Nothing that starts an experiment happens under the settle drag (issue 30: a dam pulled while
 * the column settled collapsed in slow motion, to 0.4 of Lube's runout). */
static int refuse_settling(const grn_world *w, const char *what, grn_error *err) {
  return grn__fail(err, GRN_E_SETTLING, what,
                   "the grains are still settling (at most %.1f s more): '%s' waits until they "
                   "are at rest",
                   grn_world_settle_left(w), what);
}

int grn_world_act(grn_world *w, const grn_action *a, grn_error *err) {
  int rc = grn_action_check(w->scene, a, err);
  if (rc != GRN_OK) {
    return rc;
  }
  if (grn_world_settle_left(w) > 0.0 && a->kind != GRN_A_RESET && a->kind != GRN_A_TOOL_OFF) {
    return refuse_settling(w, grn_action_name(a->kind), err);
  }
  switch (a->kind) {
  case GRN_A_TOOL:
    w->geom.tool = true;
    w->geom.tool_r = 0.35;
    w->geom.tool_p = (grn_vec3){a->args[0], a->args[1], a->args[2]};
    w->geom.tool_v =
        a->nargs == 6 ? (grn_vec3){a->args[3], a->args[4], a->args[5]} : (grn_vec3){0.0, 0.0, 0.0};
    break;
  case GRN_A_TOOL_OFF:
    w->geom.tool = false;
    break;
  case GRN_A_RESET: {
    /* a fresh copy of the inputs, rebuilt: same parameters and seed give the same start */
    double param[GRN_PARAM_MAX];
    memcpy(param, w->param, sizeof param);
    const uint64_t seed = w->seed;
    const int target = w->n_target;
    const grn_fill fill = w->fill;
    grn__world_clear(w);
    memcpy(w->param, param, sizeof param);
    w->seed = seed;
    w->n_target = target;
    w->fill = fill;
    rc = grn__world_setup(w);
    if (rc != GRN_OK) {
      return grn__fail(err, rc, "reset", "reset failed: %s", grn_status_message(rc));
    }
    break;
  }
  default:
    rc = w->impl->act ? w->impl->act(w, a, err) : grn__no_act(w, a, err);
    if (rc != GRN_OK) {
      return rc;
    }
  }
  wake(w);
  return GRN_OK;
}

int grn_world_set_param(grn_world *w, const char *name, double value, grn_error *err) {
  const int k = grn_scene_param_index(w->scene, name);
  return k < 0 ? grn__unknown_param(w->scene, name, err) : grn_world_set_param_at(w, k, value, err);
}

int grn_world_set_param_at(grn_world *w, int id, double value, grn_error *err) {
  const int rc = grn__check_param(w->scene, id, value, err);
  if (rc != GRN_OK) {
    return rc;
  }
  const char *name = w->scene->params[id].name;
  if (w->scene->params[id].restart) {
    return grn__fail(err, GRN_E_UNSUPPORTED, name,
                     "parameter '%s' is fixed when the scene is built: restart the scene to change "
                     "it",
                     name);
  }
  if (grn_world_settle_left(w) > 0.0) {
    return refuse_settling(w, name, err);
  }
  if (w->impl->live_check) {
    const int live = w->impl->live_check(w, id, value, err);
    if (live != GRN_OK) {
      return live;
    }
  }
  const double gap_before = grn__reach_gap(w);
  w->param[id] = value;
  if (grn__reach_gap(w) != gap_before) {
    w->pairs.dirty = true; /* pairs must now be listed out to the liquid-bridge reach */
  }
  if (w->impl->derive) {
    w->impl->derive(w);
  }
  if (w->model->derive) {
    w->model->derive(w);
  }
  if (w->model->changed) {
    w->model->changed(w);
  }
  if (w->impl->param_set) {
    w->impl->param_set(w, id, value);
  }
  wake(w);
  return GRN_OK;
}
