/* Shared pieces of the scenes' catalogue entries: parameter descriptions used by more than one
 * scene (name, unit, range, default: described once, spec §1) and measurement sets. Internal to
 * engine/src/scenes/. */
#ifndef GRAINLAB_SCENES_PARAMS_H
#define GRAINLAB_SCENES_PARAMS_H

#include "../scene.h"

#define P_MU                                                                                       \
  { "mu", "", 0.0, 1.5, 0.5, false, false, "sliding friction between grains" }
#define P_MUR                                                                                      \
  { "mur", "", 0.0, 0.5, 0.1, false, false, "rolling friction between grains" }
#define P_COH(def)                                                                                 \
  { "coh", "N", 0.0, 400.0, def, false, false, "liquid-bridge cohesion at contact (wet sand > 0)" }
#define P_AMOUNT                                                                                   \
  { "amount", "%", 10.0, 400.0, 100.0, false, true, "grain count as % of the quality's base" }
#define P_QUALITY                                                                                  \
  { "quality", "", 0.0, 2.0, 2.0, true, true, "0, 1, 2: base 750, 1500, 3000 grains" }
#define P_SPOUT_X                                                                                  \
  { "spout_x", "m", -5.0, 5.0, 0.0, false, false, "spout position across the table" }
#define P_SPOUT_Z                                                                                  \
  { "spout_z", "m", -5.0, 5.0, 0.0, false, false, "spout position along the table" }
#define P_RATE                                                                                     \
  { "rate", "grains/s", 12.0, 2400.0, 120.0, false, false, "pour rate from the spout" }

#define P_HOLE                                                                                     \
  {                                                                                                \
    "hole", "m", 0.3, 1.6, 0.9, false, false,                                                      \
        "silo hole diameter (4.5 grain diameters by default)"                                      \
  }
#define P_ASPECT                                                                                   \
  {                                                                                                \
    "aspect", "", 0.5, 4.0, 2.0, false, true,                                                      \
        "slump: column height over its length (the column is built with it)"                       \
  }
#define P_TILT_RATE                                                                                \
  {                                                                                                \
    "tilt_rate", "deg/s", 0.1, 20.0, 2.0, false, false,                                            \
        "tilt: turning speed, also of a turn under way (a tilt action may give its own)"           \
  }

#define P_WIDTH                                                                                    \
  { "width", "m", 0.1, 1.0, 0.3, false, true, "water column width a (height 2a, tank 5a long)" }
#define P_FQUALITY(what)                                                                           \
  { "quality", "", 0.0, 2.0, 1.0, true, true, what }
#define P_VISC                                                                                     \
  {                                                                                                \
    "visc", "Pa s", 0.0, 20.0, 5.0, false, false,                                                  \
        "SPH dynamic viscosity (numerical: damps particle noise)"                                  \
  }
#define P_EPS(def)                                                                                 \
  { "eps", "", 0.0, 1.0, def, false, false, "softening length: 1/r^2 becomes 1/(r^2 + eps^2) near" }
#define P_THETA                                                                                    \
  {                                                                                                \
    "theta", "", 0.0, 1.0, 0.5, false, false,                                                      \
        "Barnes-Hut opening angle above 2048 bodies; 0: direct sum"                                \
  }
#define P_BODIES                                                                                   \
  {                                                                                                \
    "bodies", "", 16.0, 200000.0, 2000.0, true, true,                                              \
        "bodies in the Plummer sphere (total mass 1)"                                              \
  }
#define P_SPEED                                                                                    \
  { "speed", "", 0.2, 1.3, 1.0, false, true, "initial speed over the circular speed (1: circle)" }
#define P_VCAP(def)                                                                                \
  { "vcap", "", 0.0, 100.0, def, false, false, "speed cap applied after each kick; 0: none" }

/* Scenes whose walls rub like their grains (mu_wall = mu at setup) keep doing so after a live
 * change: a param_set hook, or the first thing one does. */
static inline void walls_follow_mu(grn_world *w, grn_param_id id, double value) {
  if (id == GRN_P_MU) {
    w->geom.mu_wall = value;
  }
}

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define SAME_LEN(a, b) _Static_assert(sizeof(a) / sizeof((a)[0]) == sizeof(b) / sizeof((b)[0]), #a)

/* A scene's measurement set: MEASURES(COMMON M(GRN_M_ANGLE) ...) */
#define MEASURES(...) (0u __VA_ARGS__)
#define M(k) | (1u << (k))
#define COMMON M(GRN_M_T) M(GRN_M_OVER_MAX) M(GRN_M_FLOWING) M(GRN_M_ALIVE)
#define WATER M(GRN_M_T) M(GRN_M_ALIVE) M(GRN_M_KINETIC) M(GRN_M_POTENTIAL) M(GRN_M_ENERGY)
#define GRAVITY WATER M(GRN_M_ENERGY_DRIFT) M(GRN_M_ANGULAR_MOMENTUM) M(GRN_M_VIRIAL)
#define PILE COMMON M(GRN_M_ANGLE) M(GRN_M_TOP) M(GRN_M_CX) M(GRN_M_CZ)
/* What a scene plots: PLOTS(array) in its info, of PLOT(title, S(key), RIGHT(key), REF(key)) */
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
