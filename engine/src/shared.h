/* The parameters and measurements that more than one scene has, each described once (name, unit,
 * range, default): a scene lists those it takes in its own file, among its own. The models and
 * the shared measuring code reach them through the world's binding (bind.c), found by name when a
 * world is made or restored: no parameter or measurement has an id outside its scene's list. */
#ifndef GRAINLAB_SHARED_H
#define GRAINLAB_SHARED_H

#include "grainlab/grainlab.h"

/* ---- parameters -------------------------------------------------------------------------- */
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
#define P_VCAP(def)                                                                                \
  { "vcap", "", 0.0, 100.0, def, false, false, "speed cap applied after each kick; 0: none" }

/* The parameters the models read (forces.c, fluid.c, gravity.c, model.c), each found in the
 * world's scene by its descriptor's name (bind.c): grn__param(w, GRN_SP_MU) is 0 in a scene that
 * does not list one (no cohesion, no cap, a direct sum). */
typedef enum grn_shared_param {
  GRN_SP_MU,
  GRN_SP_MUR,
  GRN_SP_COH,
  GRN_SP_AMOUNT,
  GRN_SP_QUALITY,
  GRN_SP_VISC,
  GRN_SP_EPS,
  GRN_SP_THETA,
  GRN_SP_VCAP,
  GRN_SP_COUNT
} grn_shared_param;

/* ---- measurements ------------------------------------------------------------------------ */
/* Units follow spec §1 (SI); a model that is not in SI units (N-body, G = 1) says so in its
 * grn_model_info, and its figures carry no SI unit. */
#define M_T                                                                                        \
  { "t", "s", "time", false, false }
#define M_ANGLE                                                                                    \
  { "angle", "deg", "angle of repose", false, false }
#define M_TOP                                                                                      \
  { "top", "m", "top height", false, false }
#define M_CX                                                                                       \
  { "cx", "m", "pile centre x", false, false }
#define M_CZ                                                                                       \
  { "cz", "m", "pile centre z", false, false }
#define M_OVER_MAX                                                                                 \
  { "over_max", "m", "largest overlap", false, false }
#define M_FLOWING                                                                                  \
  { "flowing", "", "flowing fraction", false, false }
#define M_ALIVE                                                                                    \
  { "alive", "", "particles", false, true }
#define M_FRONT                                                                                    \
  { "front", "m", "front position", false, false }
#define M_HEIGHT                                                                                   \
  { "height", "m", "water height at the wall", false, false }
#define M_KINETIC                                                                                  \
  { "kinetic", "J", "kinetic energy", false, false }
#define M_POTENTIAL                                                                                \
  { "potential", "J", "potential energy", false, false }
#define M_ENERGY                                                                                   \
  { "energy", "J", "total energy", false, false }
#define M_ENERGY_DRIFT                                                                             \
  { "energy_drift", "", "relative energy drift", true, false }
#define M_ANGULAR_MOMENTUM                                                                         \
  { "angular_momentum", "", "angular momentum", false, false }
#define M_VIRIAL                                                                                   \
  { "virial", "", "virial ratio 2K/|W|", false, false }

/* The measurements the models and measure.c take, found likewise: grn__put(w, GRN_SM_TOP, v)
 * writes one where the scene lists it and nowhere else. */
typedef enum grn_shared_measure {
  GRN_SM_T,
  GRN_SM_ANGLE,
  GRN_SM_TOP,
  GRN_SM_CX,
  GRN_SM_CZ,
  GRN_SM_OVER_MAX,
  GRN_SM_FLOWING,
  GRN_SM_ALIVE,
  GRN_SM_FRONT,
  GRN_SM_HEIGHT,
  GRN_SM_KINETIC,
  GRN_SM_POTENTIAL,
  GRN_SM_ENERGY,
  GRN_SM_ENERGY_DRIFT,
  GRN_SM_ANGULAR_MOMENTUM,
  GRN_SM_VIRIAL,
  GRN_SM_COUNT
} grn_shared_measure;

/* Where the world's scene lists each shared parameter and measurement: an index into its lists,
 * -1 where it has none. Made from the scene alone (grn__bind), so never saved. */
typedef struct grn_binding {
  int16_t param[GRN_SP_COUNT];
  int16_t measure[GRN_SM_COUNT];
} grn_binding;

#endif
