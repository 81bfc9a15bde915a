/* Shared pieces of the scenes' catalogue entries: the granular scenes' common parameters, the
 * walls that follow mu, and the plot macros (the descriptions themselves are in ../shared.h).
 * Internal to engine/src/scenes/. */
#ifndef GRAINLAB_SCENES_PARAMS_H
#define GRAINLAB_SCENES_PARAMS_H

#include "../scene.h"

/* Every granular scene's first parameters (then its own, from GRANULAR_PARAMS on): what its
 * grains are and how many. */
#define GRANULAR_PARAMS(coh) P_MU, P_MUR, P_COH(coh), P_AMOUNT, P_QUALITY
enum { GRANULAR_PARAM_COUNT = 5 };

/* Scenes whose walls rub like their grains (mu_wall = mu at setup) keep doing so after a live
 * change: a param_set hook, or the first thing one does. */
static inline void walls_follow_mu(grn_world *w, int index, double value) {
  if (grn__is_param(w, index, GRN_SP_MU)) {
    w->geom.mu_wall = value;
  }
}

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* What a scene plots: PLOTS(array) in its info, of PLOT(title, S(m), RIGHT(m), REF(m)), each m
 * an index into the scene's measurements */
#define PLOT(title, ...)                                                                           \
  {                                                                                                \
    title, LEN(((const grn_plot_series[]){__VA_ARGS__})), (const grn_plot_series[]) {              \
      __VA_ARGS__                                                                                  \
    }                                                                                              \
  }
#define S(key)                                                                                     \
  { key, false, false }
#define RIGHT(key)                                                                                 \
  { key, true, false }
#define REF(key)                                                                                   \
  { key, false, true }
#define PLOTS(a) LEN(a), a

#endif
