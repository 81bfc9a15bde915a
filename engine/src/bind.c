/* The world's binding to its scene's lists (shared.h): where the scene keeps each parameter the
 * models read and each measurement the shared code writes, found by name once per world. */
#include "internal.h"

#include <string.h>

/* Each by its descriptor, so that its name is spelled once (shared.h); designated, so that an id
 * cannot drift from its row. */
static const grn_param_info shared_params[GRN_SP_COUNT] = {
    [GRN_SP_MU] = P_MU,         [GRN_SP_MUR] = P_MUR,         [GRN_SP_COH] = P_COH(0.0),
    [GRN_SP_AMOUNT] = P_AMOUNT, [GRN_SP_QUALITY] = P_QUALITY, [GRN_SP_VISC] = P_VISC,
    [GRN_SP_EPS] = P_EPS(0.0),  [GRN_SP_THETA] = P_THETA,     [GRN_SP_VCAP] = P_VCAP(0.0)};

static const grn_measure_info shared_measures[GRN_SM_COUNT] = {
    [GRN_SM_T] = M_T,
    [GRN_SM_ANGLE] = M_ANGLE,
    [GRN_SM_TOP] = M_TOP,
    [GRN_SM_CX] = M_CX,
    [GRN_SM_CZ] = M_CZ,
    [GRN_SM_OVER_MAX] = M_OVER_MAX,
    [GRN_SM_FLOWING] = M_FLOWING,
    [GRN_SM_ALIVE] = M_ALIVE,
    [GRN_SM_FRONT] = M_FRONT,
    [GRN_SM_HEIGHT] = M_HEIGHT,
    [GRN_SM_KINETIC] = M_KINETIC,
    [GRN_SM_POTENTIAL] = M_POTENTIAL,
    [GRN_SM_ENERGY] = M_ENERGY,
    [GRN_SM_ENERGY_DRIFT] = M_ENERGY_DRIFT,
    [GRN_SM_ANGULAR_MOMENTUM] = M_ANGULAR_MOMENTUM,
    [GRN_SM_VIRIAL] = M_VIRIAL};

void grn__bind(grn_world *w) {
  for (int k = 0; k < GRN_SP_COUNT; k++) {
    w->bind.param[k] = (int16_t)grn_scene_param_index(w->scene, shared_params[k].name);
  }
  for (int k = 0; k < GRN_SM_COUNT; k++) {
    w->bind.measure[k] = (int16_t)grn_scene_measure_index(w->scene, shared_measures[k].name);
  }
}

int grn__shared_param_index(const grn_scene_info *scene, grn_shared_param k) {
  return grn_scene_param_index(scene, shared_params[k].name);
}

double grn__def_param(const grn_world_def *def, grn_shared_param k) {
  const int i = grn__shared_param_index(def->scene, k);
  return i >= 0 ? def->param[i] : 0.0;
}
