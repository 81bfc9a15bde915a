/* The one scene catalogue and parameter table (style rule 3/10): the validator, the CLI, the API
 * and the docs all read these entries; plus status names, strict number and action parsing. */
#include "internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *grn_status_name(int status) {
  switch (status) {
#define GRN_X_NAME(name, value, msg)                                                               \
  case value:                                                                                      \
    return #name;
    GRN_STATUS_TABLE(GRN_X_NAME)
#undef GRN_X_NAME
  default:
    return "GRN_E_UNKNOWN";
  }
}

const char *grn_status_message(int status) {
  switch (status) {
#define GRN_X_MSG(name, value, msg)                                                                \
  case value:                                                                                      \
    return msg;
    GRN_STATUS_TABLE(GRN_X_MSG)
#undef GRN_X_MSG
  default:
    return "unknown status";
  }
}

int grn__fail(grn_error *err, int code, const char *field, const char *fmt, ...) {
  if (err) {
    err->code = code;
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
  }
  return code;
}

int grn_parse_number(const char *text, double *out) {
  if (!text || !*text) {
    return GRN_E_NOT_NUMBER;
  }
  /* strtod accepts leading blanks, hex floats, "inf" and "nan": none is a parameter value */
  for (const char *c = text; *c; c++) {
    if (!strchr("0123456789+-.eE", *c)) {
      return GRN_E_NOT_NUMBER;
    }
  }
  char *end = NULL;
  errno = 0;
  const double v = strtod(text, &end);
  if (end == text || *end != '\0' || errno == ERANGE || !isfinite(v)) {
    return GRN_E_NOT_NUMBER;
  }
  *out = v;
  return GRN_OK;
}

/* ---- parameters --------------------------------------------------------------------------- */
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
  { "aspect", "", 0.5, 4.0, 2.0, false, false, "slump: column height over its length" }
#define P_TILT_RATE                                                                                \
  {                                                                                                \
    "tilt_rate", "deg/s", 0.1, 20.0, 2.0, false, false,                                            \
        "tilt: turning speed when an action gives none"                                            \
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

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define SAME_LEN(a, b) _Static_assert(sizeof(a) / sizeof((a)[0]) == sizeof(b) / sizeof((b)[0]), #a)

static const grn_param_id pour_params[] = {GRN_P_MU,      GRN_P_MUR,     GRN_P_COH,
                                           GRN_P_AMOUNT,  GRN_P_QUALITY, GRN_P_SPOUT_X,
                                           GRN_P_SPOUT_Z, GRN_P_RATE};
static const grn_param_info pour_info[] = {P_MU,      P_MUR,     P_COH(0.0), P_AMOUNT,
                                           P_QUALITY, P_SPOUT_X, P_SPOUT_Z,  P_RATE};
SAME_LEN(pour_params, pour_info);
/* wet sand: the same pour with liquid bridges (the reference's wet-sand slider default) */
static const grn_param_info wet_info[] = {P_MU,      P_MUR,     P_COH(150.0), P_AMOUNT,
                                          P_QUALITY, P_SPOUT_X, P_SPOUT_Z,    P_RATE};
SAME_LEN(pour_params, wet_info);
static const char *const pour_actions[] = {"spout", "pour", "tool", "tool_off", "reset"};

static const grn_param_id slump_params[] = {GRN_P_MU,     GRN_P_MUR,     GRN_P_COH,
                                            GRN_P_AMOUNT, GRN_P_QUALITY, GRN_P_ASPECT};
static const grn_param_info slump_info[] = {P_MU, P_MUR, P_COH(0.0), P_AMOUNT, P_QUALITY, P_ASPECT};
SAME_LEN(slump_params, slump_info);
static const char *const slump_actions[] = {"pull_dam", "tool", "tool_off", "reset"};

static const grn_param_id tilt_params[] = {GRN_P_MU,     GRN_P_MUR,     GRN_P_COH,
                                           GRN_P_AMOUNT, GRN_P_QUALITY, GRN_P_TILT_RATE};
static const grn_param_info tilt_info[] = {P_MU,     P_MUR,     P_COH(0.0),
                                           P_AMOUNT, P_QUALITY, P_TILT_RATE};
SAME_LEN(tilt_params, tilt_info);
static const char *const tilt_actions[] = {"tilt", "tool", "tool_off", "reset"};

static const grn_param_id silo_params[] = {GRN_P_MU,     GRN_P_MUR,     GRN_P_COH,
                                           GRN_P_AMOUNT, GRN_P_QUALITY, GRN_P_HOLE};
static const grn_param_info silo_info[] = {P_MU, P_MUR, P_COH(0.0), P_AMOUNT, P_QUALITY, P_HOLE};
SAME_LEN(silo_params, silo_info);
static const char *const silo_actions[] = {"open_hole", "plug_hole", "tool", "tool_off", "reset"};

static const grn_param_id dambreak_params[] = {GRN_P_WIDTH, GRN_P_QUALITY, GRN_P_VISC};
static const grn_param_info dambreak_info[] = {
    P_WIDTH, P_FQUALITY("0, 1, 2: 8, 12, 16 particles across the column"), P_VISC};
SAME_LEN(dambreak_params, dambreak_info);
static const grn_param_id drop_params[] = {GRN_P_QUALITY, GRN_P_VISC};
static const grn_param_info drop_info[] = {P_FQUALITY("0, 1, 2: particle spacing 5, 4, 3 cm"),
                                           P_VISC};
SAME_LEN(drop_params, drop_info);
static const char *const reset_only[] = {"reset"};

static const grn_param_id orbit_params[] = {GRN_P_EPS, GRN_P_SPEED};
static const grn_param_info orbit_info[] = {P_EPS(0.0), P_SPEED};
SAME_LEN(orbit_params, orbit_info);
static const grn_param_id softening_params[] = {GRN_P_EPS, GRN_P_VCAP};
static const grn_param_info softening_info[] = {P_EPS(0.2), P_VCAP(3.0)};
SAME_LEN(softening_params, softening_info);
static const grn_param_id cluster_params[] = {GRN_P_BODIES, GRN_P_EPS, GRN_P_THETA, GRN_P_VCAP};
static const grn_param_info cluster_info[] = {P_BODIES, P_EPS(0.02), P_THETA, P_VCAP(0.0)};
SAME_LEN(cluster_params, cluster_info);

#define MEASURES(...) (0u __VA_ARGS__)
#define M(k) | (1u << (k))
#define COMMON M(GRN_M_T) M(GRN_M_OVER_MAX) M(GRN_M_FLOWING) M(GRN_M_ALIVE)
#define WATER M(GRN_M_T) M(GRN_M_ALIVE) M(GRN_M_KINETIC) M(GRN_M_POTENTIAL) M(GRN_M_ENERGY)
#define GRAVITY WATER M(GRN_M_ENERGY_DRIFT) M(GRN_M_ANGULAR_MOMENTUM) M(GRN_M_VIRIAL)
#define PILE COMMON M(GRN_M_ANGLE) M(GRN_M_TOP) M(GRN_M_CX) M(GRN_M_CZ)

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
static const grn_plot_info angle_plots[] = {PLOT("Angle of repose, deg", S(GRN_M_ANGLE))};
static const grn_plot_info slump_plots[] = {
    PLOT("Angle, deg · runout front, m", S(GRN_M_ANGLE), RIGHT(GRN_M_FRONT))};
static const grn_plot_info silo_plots[] = {
    PLOT("Flow, kg/s (dashed: Beverloo)", S(GRN_M_FLOW), REF(GRN_M_BEVERLOO))};
#define ENERGIES                                                                                   \
  PLOT("Energy, J: kinetic, potential, total", S(GRN_M_KINETIC), S(GRN_M_POTENTIAL),               \
       REF(GRN_M_ENERGY))
static const grn_plot_info dambreak_plots[] = {
    PLOT("Surge front and water height at the wall, m", S(GRN_M_FRONT), S(GRN_M_HEIGHT)), ENERGIES};
static const grn_plot_info drop_plots[] = {ENERGIES, PLOT("Top of the water, m", S(GRN_M_TOP))};
/* N-body: kinetic and potential trade while their sum stays flat; the relative drift of that sum
 * from t = 0, on its own axis, shows how well it is conserved */
static const grn_plot_info gravity_plots[] = {
    PLOT("Energy (G = 1 units): kinetic, potential, total · drift of the total", S(GRN_M_KINETIC),
         S(GRN_M_POTENTIAL), REF(GRN_M_ENERGY), RIGHT(GRN_M_ENERGY_DRIFT)),
    PLOT("Virial ratio 2K/|W| · angular momentum", S(GRN_M_VIRIAL), RIGHT(GRN_M_ANGULAR_MOMENTUM))};
#define PLOTS(a) LEN(a), a

static const grn_scene_info scenes[] = {
    {"pour", GRN_MODEL_GRANULAR,
     "grains fall from a spout onto a table and build a cone; the spout rides 0.6 m above the "
     "pile",
     LEN(pour_params), pour_params, pour_info, LEN(pour_actions), pour_actions, MEASURES(PILE),
     PLOTS(angle_plots)},
    {"wet", GRN_MODEL_GRANULAR,
     "the pour with wet sand: liquid bridges hold grains together and the cone stands steeper",
     LEN(pour_params), pour_params, wet_info, LEN(pour_actions), pour_actions, MEASURES(PILE),
     PLOTS(angle_plots)},
    {"chains", GRN_MODEL_GRANULAR,
     "a poured pile showing its force chains: the strongest contacts behind a vertical cut",
     LEN(pour_params), pour_params, pour_info, LEN(pour_actions), pour_actions, MEASURES(PILE),
     PLOTS(angle_plots)},
    {"slump", GRN_MODEL_GRANULAR,
     "a column of grains behind a dam in a channel; pull the dam and the column collapses",
     LEN(slump_params), slump_params, slump_info, LEN(slump_actions), slump_actions,
     MEASURES(COMMON M(GRN_M_ANGLE) M(GRN_M_TOP) M(GRN_M_FRONT)), PLOTS(slump_plots)},
    {"tilt", GRN_MODEL_GRANULAR,
     "a box partly filled with grains, tilted about its bottom axis until the surface avalanches",
     LEN(tilt_params), tilt_params, tilt_info, LEN(tilt_actions), tilt_actions,
     MEASURES(COMMON M(GRN_M_ANGLE) M(GRN_M_TOP)), PLOTS(angle_plots)},
    {"silo", GRN_MODEL_GRANULAR,
     "a cylinder with a plugged hole in its floor plate; open it and the grains drain",
     LEN(silo_params), silo_params, silo_info, LEN(silo_actions), silo_actions,
     MEASURES(COMMON M(GRN_M_FLOW) M(GRN_M_MASS_ABOVE) M(GRN_M_FILL) M(GRN_M_BEVERLOO)),
     PLOTS(silo_plots)},
    {"dambreak", GRN_MODEL_FLUID,
     "SPH water: a column of width a and height 2a against the left wall of a tank 5a long, "
     "released at t = 0",
     LEN(dambreak_params), dambreak_params, dambreak_info, LEN(reset_only), reset_only,
     MEASURES(WATER M(GRN_M_FRONT) M(GRN_M_HEIGHT)), PLOTS(dambreak_plots)},
    {"drop", GRN_MODEL_FLUID, "SPH water: a ball of water falls into a pool and splashes",
     LEN(drop_params), drop_params, drop_info, LEN(reset_only), reset_only,
     MEASURES(WATER M(GRN_M_TOP)), PLOTS(drop_plots)},
    {"orbit", GRN_MODEL_GRAVITY,
     "two equal bodies on a circular orbit (speed 1) or an ellipse; units with G = 1",
     LEN(orbit_params), orbit_params, orbit_info, LEN(reset_only), reset_only, MEASURES(GRAVITY),
     PLOTS(gravity_plots)},
    {"softening", GRN_MODEL_GRAVITY,
     "two bodies pass each other nearly head-on; the softening length decides how hard they "
     "swing, the speed cap keeps the step bounded",
     LEN(softening_params), softening_params, softening_info, LEN(reset_only), reset_only,
     MEASURES(GRAVITY), PLOTS(gravity_plots)},
    {"cluster", GRN_MODEL_GRAVITY,
     "a Plummer sphere of many bodies in virial equilibrium (total mass 1, energy -1/4)",
     LEN(cluster_params), cluster_params, cluster_info, LEN(reset_only), reset_only,
     MEASURES(GRAVITY), PLOTS(gravity_plots)},
};

static const grn_scene_impl *const impls[] = {
    &grn__scene_pour,  &grn__scene_pour,      &grn__scene_pour,     &grn__scene_slump,
    &grn__scene_tilt,  &grn__scene_silo,      &grn__scene_dambreak, &grn__scene_drop,
    &grn__scene_orbit, &grn__scene_softening, &grn__scene_cluster};
_Static_assert(sizeof scenes / sizeof scenes[0] == sizeof impls / sizeof impls[0],
               "every scene needs an implementation");

int grn_scene_count(void) {
  return (int)(sizeof scenes / sizeof scenes[0]);
}

const grn_scene_info *grn_scene_at(int index) {
  return index >= 0 && index < grn_scene_count() ? &scenes[index] : NULL;
}

const grn_scene_info *grn_scene_find(const char *name) {
  for (int i = 0; name && i < grn_scene_count(); i++) {
    if (strcmp(scenes[i].name, name) == 0) {
      return &scenes[i];
    }
  }
  return NULL;
}

const grn_scene_impl *grn__scene_impl(const grn_scene_info *info) {
  for (int i = 0; i < grn_scene_count(); i++) {
    if (&scenes[i] == info) {
      return impls[i];
    }
  }
  return NULL;
}

/* Units follow spec §1 (SI); N-body energies and momenta are in its G = 1 model units. */
static const grn_measure_info measures[] = {{"t", "s", "time"},
                                            {"angle", "deg", "angle of repose"},
                                            {"top", "m", "top height"},
                                            {"cx", "m", "pile centre x"},
                                            {"cz", "m", "pile centre z"},
                                            {"over_max", "m", "largest overlap"},
                                            {"flowing", "", "flowing fraction"},
                                            {"alive", "", "particles"},
                                            {"front", "m", "front position"},
                                            {"flow", "kg/s", "discharge rate"},
                                            {"mass_above", "kg", "mass above the plate"},
                                            {"fill", "m", "fill height"},
                                            {"beverloo", "kg/s", "Beverloo prediction"},
                                            {"height", "m", "water height at the wall"},
                                            {"kinetic", "J", "kinetic energy"},
                                            {"potential", "J", "potential energy"},
                                            {"energy", "J", "total energy"},
                                            {"energy_drift", "", "relative energy drift"},
                                            {"angular_momentum", "", "angular momentum"},
                                            {"virial", "", "virial ratio 2K/|W|"}};
_Static_assert(sizeof measures / sizeof measures[0] == GRN_MEASURE_COUNT,
               "a name for every measurement");

const grn_measure_info *grn_measure_info_of(grn_measure_key key) {
  return (int)key >= 0 && key < GRN_MEASURE_COUNT ? &measures[key] : NULL;
}

const char *grn_measure_name(grn_measure_key key) {
  const grn_measure_info *info = grn_measure_info_of(key);
  return info ? info->name : "";
}

int grn__no_act(grn_world *w, const grn_action *a, grn_error *err) {
  (void)w;
  return grn__fail(err, GRN_E_UNSUPPORTED, grn_action_name(a->kind),
                   "this scene has no action '%s'", grn_action_name(a->kind));
}

int grn_scene_param_index(const grn_scene_info *scene, const char *name) {
  for (int i = 0; scene && name && i < scene->param_count; i++) {
    if (strcmp(scene->param_info[i].name, name) == 0) {
      return i;
    }
  }
  return -1;
}

/* Shared by the definition and live changes: validates and returns the parameter id. */
int grn__check_param(const grn_scene_info *scene, const char *name, double value, grn_error *err) {
  const int k = grn_scene_param_index(scene, name);
  if (k < 0) {
    return grn__fail(err, GRN_E_UNKNOWN_PARAM, name ? name : "",
                     "unknown parameter '%s' for scene '%s'", name ? name : "(null)",
                     scene ? scene->name : "(none)");
  }
  const grn_param_info *pi = &scene->param_info[k];
  if (!isfinite(value)) {
    return grn__fail(err, GRN_E_NOT_NUMBER, pi->name, "parameter '%s' must be a finite number",
                     pi->name);
  }
  if (value < pi->min || value > pi->max) {
    return grn__fail(err, GRN_E_RANGE, pi->name, "parameter '%s' = %g is outside %g..%g%s%s",
                     pi->name, value, pi->min, pi->max, *pi->unit ? " " : "", pi->unit);
  }
  if (pi->integer && value != floor(value)) {
    return grn__fail(err, GRN_E_RANGE, pi->name, "parameter '%s' = %g must be a whole number",
                     pi->name, value);
  }
  return (int)scene->params[k];
}

/* ---- actions ------------------------------------------------------------------------------ */
/* Tool positions reach well past any scene's walls (a tool parked outside does nothing); its
 * velocity is bounded by the grain speed limit so a swept tool cannot launch grains past it. */
static const grn_action_arg spout_args[] = {
    {"x", "m", -5.0, 5.0, true, false, "spout position across the table"},
    {"z", "m", -5.0, 5.0, true, false, "spout position along the table"}};
static const grn_action_arg pour_args[] = {
    {"on", "", 0.0, 1.0, true, true, "pour from the spout (true) or stop (false)"}};
static const grn_action_arg tool_args[] = {
    {"x", "m", -100.0, 100.0, true, false, "tool centre"},
    {"y", "m", -100.0, 100.0, true, false, "tool centre"},
    {"z", "m", -100.0, 100.0, true, false, "tool centre"},
    {"vx", "m/s", -GRN_VMAX, GRN_VMAX, false, false, "tool velocity"},
    {"vy", "m/s", -GRN_VMAX, GRN_VMAX, false, false, "tool velocity"},
    {"vz", "m/s", -GRN_VMAX, GRN_VMAX, false, false, "tool velocity"}};
static const grn_action_arg pull_dam_args[] = {
    {"speed", "m/s", 0.05, 10.0, false, false, "how fast the dam rises (default 1.5)"}};
static const grn_action_arg tilt_args[] = {
    {"angle", "deg", -60.0, 60.0, true, false, "tilt to reach"},
    {"rate", "deg/s", 0.1, 90.0, false, false, "turning speed (default: the tilt_rate parameter)"}};

#define ARGS(a) LEN(a), a
static const grn_action_info actions[GRN_ACTION_COUNT] = {
    {"spout", GRN_A_SPOUT, ARGS(spout_args), false, "move the spout"},
    {"pour", GRN_A_POUR, ARGS(pour_args), false, "start or stop pouring"},
    {"tool", GRN_A_TOOL, ARGS(tool_args), true,
     "place a spherical tool in the grains, moving with the velocity given"},
    {"tool_off", GRN_A_TOOL_OFF, 0, NULL, false, "take the tool away"},
    {"pull_dam", GRN_A_PULL_DAM, ARGS(pull_dam_args), false, "pull the dam up"},
    {"tilt", GRN_A_TILT, ARGS(tilt_args), false, "tilt the box about its bottom axis"},
    {"open_hole", GRN_A_OPEN_HOLE, 0, NULL, false, "pull the plug out of the silo's hole"},
    {"plug_hole", GRN_A_PLUG_HOLE, 0, NULL, false, "plug the silo's hole"},
    {"reset", GRN_A_RESET, 0, NULL, false, "start the scene over, same parameters and seed"}};

const grn_action_info *grn_action_info_of(grn_action_kind kind) {
  return (int)kind >= 0 && kind < GRN_ACTION_COUNT ? &actions[kind] : NULL;
}

const grn_action_info *grn_action_find(const char *name) {
  for (int k = 0; name && k < GRN_ACTION_COUNT; k++) {
    if (strcmp(actions[k].name, name) == 0) {
      return &actions[k];
    }
  }
  return NULL;
}

const char *grn_action_name(grn_action_kind kind) {
  const grn_action_info *info = grn_action_info_of(kind);
  return info ? info->name : "";
}

/* A boolean argument in text: on/off. */
static bool parse_switch(const char *text, double *out) {
  if (strcmp(text, "on") == 0 || strcmp(text, "off") == 0) {
    *out = text[1] == 'n' ? 1.0 : 0.0;
    return true;
  }
  return false;
}

int grn_action_parse(const char *text, grn_action *out, grn_error *err) {
  if (!text) {
    return grn__fail(err, GRN_E_INVALID, "action", "no action given");
  }
  if (strcmp(text, "tool:off") == 0) { /* the spelling of engine 0.1, kept for stored runs */
    text = "tool_off";
  }
  char name[32];
  const char *colon = strchr(text, ':');
  const size_t len = colon ? (size_t)(colon - text) : strlen(text);
  if (len == 0 || len >= sizeof name) {
    return grn__fail(err, GRN_E_UNKNOWN_ACTION, "action", "unknown action '%.40s'", text);
  }
  memcpy(name, text, len);
  name[len] = '\0';
  const grn_action_info *info = grn_action_find(name);
  if (!info) {
    return grn__fail(err, GRN_E_UNKNOWN_ACTION, name, "unknown action '%s'", name);
  }
  grn_action a = {.kind = info->kind};
  const char *args = colon ? colon + 1 : NULL;
  if (colon && *args == '\0') {
    return grn__fail(err, GRN_E_INVALID, name, "action '%s' has an empty argument list", name);
  }
  while (args) {
    if (a.nargs == 6) {
      return grn__fail(err, GRN_E_INVALID, name, "action '%s' has too many arguments", name);
    }
    const char *comma = strchr(args, ',');
    const size_t alen = comma ? (size_t)(comma - args) : strlen(args);
    char num[64];
    if (alen == 0 || alen >= sizeof num) {
      return grn__fail(err, GRN_E_NOT_NUMBER, name, "action '%s': argument %d is not a number",
                       name, a.nargs + 1);
    }
    memcpy(num, args, alen);
    num[alen] = '\0';
    const bool boolean = a.nargs < info->arg_count && info->args[a.nargs].boolean;
    if (boolean ? !parse_switch(num, &a.args[a.nargs])
                : grn_parse_number(num, &a.args[a.nargs]) != GRN_OK) {
      if (boolean) {
        return grn__fail(err, GRN_E_INVALID, name, "action '%s' takes 'on' or 'off', not '%s'",
                         name, num);
      }
      return grn__fail(err, GRN_E_NOT_NUMBER, name,
                       "action '%s': argument %d '%s' is not a finite number", name, a.nargs + 1,
                       num);
    }
    a.nargs++;
    args = comma ? comma + 1 : NULL;
  }
  *out = a;
  return GRN_OK;
}

int grn_action_format(const grn_action *a, char *buf, size_t size) {
  const grn_action_info *info = a ? grn_action_info_of(a->kind) : NULL;
  if (!info || a->nargs < 0 || a->nargs > 6 || !buf || size == 0) {
    return GRN_E_INVALID;
  }
  size_t at = (size_t)snprintf(buf, size, "%s", info->name);
  for (int i = 0; i < a->nargs && at < size; i++) {
    const char sep = i ? ',' : ':';
    if (i < info->arg_count && info->args[i].boolean) {
      at += (size_t)snprintf(buf + at, size - at, "%c%s", sep, a->args[i] != 0.0 ? "on" : "off");
    } else {
      at += (size_t)snprintf(buf + at, size - at, "%c%.17g", sep, a->args[i]);
    }
  }
  return at < size ? (int)at : GRN_E_BUFFER;
}

int grn_action_check(const grn_scene_info *scene, const grn_action *a, grn_error *err) {
  const grn_action_info *info = a ? grn_action_info_of(a->kind) : NULL;
  if (!scene || !info) {
    return grn__fail(err, GRN_E_INVALID, "action", "invalid action");
  }
  const char *nm = info->name;
  bool ok = false;
  for (int i = 0; i < scene->action_count; i++) {
    ok = ok || strcmp(scene->actions[i], nm) == 0;
  }
  if (!ok) {
    return grn__fail(err, GRN_E_UNSUPPORTED, nm, "scene '%s' has no action '%s'", scene->name, nm);
  }
  int required = 0;
  while (required < info->arg_count && info->args[required].required) {
    required++;
  }
  const bool partial = info->optional_together && a->nargs > required && a->nargs < info->arg_count;
  if (a->nargs < required || a->nargs > info->arg_count || partial) {
    if (partial) {
      return grn__fail(err, GRN_E_INVALID, nm,
                       "action '%s' takes %d arguments, or all %d with '%s', got %d", nm, required,
                       info->arg_count, info->args[required].name, a->nargs);
    }
    if (required == info->arg_count) {
      return grn__fail(err, GRN_E_INVALID, nm, "action '%s' takes %d argument%s, got %d", nm,
                       required, required == 1 ? "" : "s", a->nargs);
    }
    return grn__fail(err, GRN_E_INVALID, nm, "action '%s' takes %d to %d arguments, got %d", nm,
                     required, info->arg_count, a->nargs);
  }
  for (int k = 0; k < a->nargs; k++) {
    const grn_action_arg *arg = &info->args[k];
    if (!isfinite(a->args[k])) {
      return grn__fail(err, GRN_E_NOT_NUMBER, arg->name, "action '%s': %s must be a finite number",
                       nm, arg->name);
    }
    if (arg->boolean ? a->args[k] != 0.0 && a->args[k] != 1.0
                     : a->args[k] < arg->min || a->args[k] > arg->max) {
      return grn__fail(err, GRN_E_RANGE, arg->name, "action '%s': %s = %g is outside %g..%g%s%s",
                       nm, arg->name, a->args[k], arg->min, arg->max, *arg->unit ? " " : "",
                       arg->unit);
    }
  }
  return GRN_OK;
}
