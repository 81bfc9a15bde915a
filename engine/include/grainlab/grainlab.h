/* grainlab engine public API: worlds built from a scene catalogue, stepped, measured, saved and
 * restored. Pure computation: no I/O, no globals, threads only as many as the definition asks for.
 */
#ifndef GRAINLAB_GRAINLAB_H
#define GRAINLAB_GRAINLAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(GRN_BUILDING_ENGINE)
#define GRN_API __attribute__((visibility("default")))
#else
#define GRN_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define GRN_ENGINE_VERSION "0.1.0"
/* One step of simulated time (s), and how many steps lie between two measurement samples where a
 * scene does not sample faster (0.25 s; grn_scene_sample_steps gives each scene's). The daemon,
 * the CLI and the store read these; nothing else spells the numbers. */
#define GRN_STEP_SECONDS (1.0 / 240.0)
#define GRN_SAMPLE_STEPS 60
/* Bumped whenever a change alters trajectories or the saved-state layout.
 * 4: each model saves its own block (N-body: the initial energy), no longer a field of every
 *    world; trajectories unchanged.
 * 5: each scene saves its own state block (spout, dam, tilt, silo log, softening pass) after the
 *    world's scalars, instead of ~25 mixed fields among them; trajectories unchanged.
 * 6: the saved geometry holds a rotating drum wall (radius, axis height, speed, friction);
 *    trajectories unchanged.
 * 7: one more parameter (rpm) in the saved parameter array; trajectories unchanged.
 * 8: each grain's position at the last pair-list rebuild and its slack are saved: the list is
 *    made again once a grain has moved by its own slack, not once the fastest grain's summed
 *    travel reaches 0.8 SKIN, and fast grains get a wider slack (issue 18: a silo's stream of
 *    falling grains brought a rebuild every 3 steps). Rebuilds come at other steps, grains are
 *    renumbered then, and sums are made in another order: trajectories change.
 * 9: the settle drag ends once the settling grains are at rest (none faster than 0.15 m/s for
 *    0.25 s), no longer at the lattice's worst case, and the time they have been so is saved; a
 *    grain against several frictional walls at once takes a share of each wall's "stop the
 *    contact point" cap (wedged in a corner it rattled for ever); a grain whose centre is below
 *    the silo's plate no longer meets the plate's top; the silo's hole and every scene's wall
 *    friction follow live changes; the silo's state block holds its mean flow's window and its
 *    bulk density (issue 30). Trajectories change.
 * 10: parameters and measurements are saved by name, each a table of (name, value), no longer as
 *    arrays indexed by engine-wide enums: a scene owns its lists (issue 34), and a parameter or
 *    measurement added later finds its default or NaN in an older state instead of breaking it;
 *    and each grain's boundary history has room for a rough silo wall's spring (6 numbers, not
 *    4). Trajectories unchanged (test_golden's digests are the same).
 * 11: when grains that moved their slack alone end the pair list, they are listed again and their
 *    new pairs merged into the list, without renumbering (relist.c); a rebuild comes every 64 such
 *    re-listings, once half the grains were re-listed, and when the grains have settled (issue 33:
 *    a flowing silo rebuilt its list every ~9 steps for the few grains landing at the foot of its
 *    jet). The order of grains and of their pairs differs, so the sums' rounding does:
 *    trajectories change. The list's re-listing counters are saved. */
#define GRN_ENGINE_STATE_VERSION 11u

/* ---- Status codes: one table, names and messages generated from it ---------------------- */
#define GRN_STATUS_TABLE(X)                                                                        \
  X(GRN_OK, 0, "ok")                                                                               \
  X(GRN_E_INVALID, -1, "invalid argument")                                                         \
  X(GRN_E_UNKNOWN_SCENE, -2, "unknown scene")                                                      \
  X(GRN_E_UNKNOWN_PARAM, -3, "unknown parameter")                                                  \
  X(GRN_E_RANGE, -4, "value out of range")                                                         \
  X(GRN_E_NOT_NUMBER, -5, "value is not a finite number")                                          \
  X(GRN_E_UNKNOWN_ACTION, -6, "unknown action")                                                    \
  X(GRN_E_UNSUPPORTED, -7, "not supported by this scene")                                          \
  X(GRN_E_NOMEM, -8, "out of memory")                                                              \
  X(GRN_E_BAD_STATE, -9, "saved state is corrupt or from another engine version")                  \
  X(GRN_E_BUFFER, -10, "buffer too small")                                                         \
  X(GRN_E_SETTLING, -11, "the grains are still settling")

typedef enum grn_status {
#define GRN_X_ENUM(name, value, msg) name = (value),
  GRN_STATUS_TABLE(GRN_X_ENUM)
#undef GRN_X_ENUM
} grn_status;

/* Symbolic name ("GRN_E_RANGE") and default message of a status; never NULL. */
GRN_API const char *grn_status_name(int status);
GRN_API const char *grn_status_message(int status);

/* Detail of a failed call: the status, the offending field (parameter, action or argument name;
 * empty when none) and a one-line message naming it. Every call that can fail on outside input
 * takes an optional grn_error* (NULL is allowed) and, on failure, changes nothing else. */
typedef struct grn_error {
  int code;
  char field[32];
  char message[192];
} grn_error;

/* ---- Models, scenes, parameters ------------------------------------------------------------ */
typedef enum grn_model {
  GRN_MODEL_GRANULAR = 0, /* DEM grains (spec §1–§3) */
  GRN_MODEL_FLUID,        /* SPH water (spec §4) */
  GRN_MODEL_GRAVITY       /* softened N-body gravity (spec §4), units with G = 1 */
} grn_model;

/* "granular", "fluid" or "gravity"; "" for anything else. */
GRN_API const char *grn_model_name(grn_model model);

/* What a model is, for every client: its name, what its particles are called ("grains", "water
 * particles", "bodies"), whether its scenes first pack down under a settling drag (state
 * `settling`), which timed runs wait out, and whether its figures are in SI units (the
 * measurements' units, grn_measure_info) or, for N-body gravity, in model units with G = 1. */
typedef struct grn_model_info {
  const char *name;
  const char *particles;
  bool settles;
  bool si;
} grn_model_info;

/* NULL for a model out of range. */
GRN_API const grn_model_info *grn_model_info_of(grn_model model);

/* Most parameters one scene declares and most measurements one scene reports: a definition's
 * values and a sample's figures are arrays of this size, indexed like the scene's own lists. */
#define GRN_PARAM_MAX 16
#define GRN_MEASURE_MAX 24
/* Every scene's first measurement is "t", the sample's simulated time (s). */
#define GRN_MEASURE_T 0

typedef struct grn_param_info {
  const char *name; /* as used by the CLI and the API, e.g. "mu" */
  const char *unit; /* "" when dimensionless */
  double min, max;  /* inclusive validation limits: out of range is an error, never a clamp */
  double def;       /* default */
  bool integer;     /* value must be a whole number */
  bool restart;     /* fixed when the scene is built (particle count, initial orbit): a live
                       change is refused with GRN_E_UNSUPPORTED; a restart takes it */
  const char *description;
} grn_param_info;

/* What a measurement is, for every client: its key as the API spells it, its unit ("" when
 * dimensionless), a short label for tables and plot axes, and whether it is a figure over a
 * window that starts again at every change (a silo's flows): its value then belongs to the
 * parameters in force since the last change, where any other tells the state now, which earlier
 * settings may have shaped. */
typedef struct grn_measure_info {
  const char *name;
  const char *unit;
  const char *label;
  bool window;
  bool count; /* a number of things (the particles): a whole number, shown without decimals */
} grn_measure_info;

/* What a scene plots over time: plots of measurement series, for every client to draw alike. A
 * series on the right has its own axis; a reference series (a theory curve, a conserved total) is
 * drawn dashed. */
typedef struct grn_plot_series {
  int measure; /* index into the scene's measures */
  bool right;
  bool reference;
} grn_plot_series;

typedef struct grn_plot_info {
  const char *title;
  int series_count;
  const grn_plot_series *series;
} grn_plot_info;

typedef struct grn_scene_info {
  const char *name;
  grn_model model;
  const char *description;
  /* The scene's parameters, declared in its own file: a parameter's id is its index here
   * (grn_scene_param_index), and a definition's param[] follows this order. */
  int param_count;
  const grn_param_info *params;
  int action_count;
  const char *const *actions; /* action names the scene accepts */
  /* What it measures, in the order of grn_measurements.value (grn_scene_measure_index). The same
   * name means the same figure, unit and label in every scene. */
  int measure_count;
  const grn_measure_info *measures;
  int plot_count;
  const grn_plot_info *plots;
  bool chains; /* shows its force chains (grn_world_chains) behind a vertical cut through the
                  pile's centre (its measurements cx and cz), seen from +z: viewers get them
                  with every frame */
} grn_scene_info;

GRN_API int grn_scene_count(void);
GRN_API const grn_scene_info *grn_scene_at(int index);
GRN_API const grn_scene_info *grn_scene_find(const char *name);
/* Steps between two of the scene's measurement samples: GRN_SAMPLE_STEPS (0.25 s), or fewer where
 * its physics is faster (a dam break's surge crosses its tank in half a second). */
GRN_API int grn_scene_sample_steps(const grn_scene_info *scene);
/* Index of a parameter, or of a measurement, within a scene's list; -1 when it has none. */
GRN_API int grn_scene_param_index(const grn_scene_info *scene, const char *name);
GRN_API int grn_scene_measure_index(const grn_scene_info *scene, const char *name);

/* Strict number parsing shared by the CLI and the daemon: the whole string must be a finite
 * decimal number. Returns GRN_OK or GRN_E_NOT_NUMBER. */
GRN_API int grn_parse_number(const char *text, double *out);

/* ---- World definition -------------------------------------------------------------------- */
typedef void *(*grn_alloc_fn)(size_t size, void *ctx);
typedef void (*grn_free_fn)(void *ptr, size_t size, void *ctx);

typedef enum grn_fill {
  GRN_FILL_SCENE = 0, /* the scene's own initial fill (pour: pouring from the spout) */
  GRN_FILL_BED = 1    /* a walled box of N grains packed from a lattice: the benchmark workload */
} grn_fill;

#define GRN_MAX_GRAINS 4000000

typedef struct grn_world_def {
  const grn_scene_info *scene;
  double param[GRN_PARAM_MAX]; /* indexed like scene->params */
  uint64_t seed;
  int grains; /* 0: N = round(BASE[quality]·amount/100); else exactly this many (1..GRN_MAX_GRAINS)
               */
  int threads;      /* worker threads for stepping, 1..256 */
  bool allow_sleep; /* false keeps every step computed (benchmarks) */
  bool simd;        /* the AVX2 contact kernel where the CPU has it: same bits as scalar code */
  grn_fill fill;
  grn_alloc_fn alloc; /* NULL: malloc/free */
  grn_free_fn free;
  void *alloc_ctx;
} grn_world_def;

/* Fill every field with the scene's defaults. Fails only on an unknown scene name. */
GRN_API int grn_world_def_default(grn_world_def *def, const char *scene, grn_error *err);
/* Validate and set one parameter by name, or by its index in the scene's list (a name resolved
 * once with grn_scene_param_index); on failure def is unchanged. */
GRN_API int grn_world_def_set(grn_world_def *def, const char *name, double value, grn_error *err);
GRN_API int grn_world_def_set_at(grn_world_def *def, int index, double value, grn_error *err);
/* Same, parsing the value text strictly. */
GRN_API int grn_world_def_set_text(grn_world_def *def, const char *name, const char *value,
                                   grn_error *err);
/* Check a whole definition (parameters, grains, threads) without building anything. */
GRN_API int grn_world_def_validate(const grn_world_def *def, grn_error *err);
/* Grain count the definition will create. */
GRN_API int grn_world_def_grains(const grn_world_def *def);
/* What sets that count, for a refusal to name: "grains" when the definition gives them, else the
 * scene's parameter ("amount", "bodies", ...); NULL for a scene whose count is fixed. */
GRN_API const char *grn_world_def_count_param(const grn_world_def *def);
/* Estimated cost of one step of H for the definition, in µs on a slow machine (a pacing figure,
 * not a measurement): granular 2 µs per grain; SPH 70 µs per particle (sub-steps included);
 * N-body 0.015 µs per pair summed directly (theta 0, or up to 2048 bodies), else 70 µs per body
 * through the tree. Each model gives its own figure. 0 for a definition without a scene. */
GRN_API double grn_world_def_step_cost(const grn_world_def *def);
/* The cost of one granular grain's step (the figure above): the unit of work budgets, in
 * grain-steps. */
#define GRN_GRAIN_STEP_US 2.0

/* ---- Actions ------------------------------------------------------------------------------ */
/* One catalogue of actions (grn_action_info_of): each has one name, spelled the same over REST
 * ({"type": NAME, ARG: value, ...}), the websocket, the CLI and the store ("NAME[:ARG,...]"). */
typedef enum grn_action_kind {
  GRN_A_SPOUT = 0, /* spout:X,Z */
  GRN_A_POUR,      /* pour:on|off (arg 1 or 0) */
  GRN_A_TOOL,      /* tool:X,Y,Z[,VX,VY,VZ] */
  GRN_A_TOOL_OFF,  /* tool_off ("tool:off" is still read: stored runs of engine 0.1 spell it so) */
  GRN_A_PULL_DAM,  /* pull_dam[:SPEED] */
  GRN_A_TILT,      /* tilt:DEG[,DEG_PER_S] */
  GRN_A_OPEN_HOLE, /* open_hole */
  GRN_A_PLUG_HOLE, /* plug_hole */
  GRN_A_RESET,     /* reset: the scene from its initial state, same parameters and seed */
  GRN_ACTION_COUNT
} grn_action_kind;

/* One argument of an action, in the order of grn_action.args. Required arguments come first; a
 * boolean argument (pour's `on`) is 1 or 0 in args, true/false in JSON and on/off in text. */
typedef struct grn_action_arg {
  const char *name; /* the JSON key, e.g. "x" */
  const char *unit; /* "" when dimensionless */
  double min, max;  /* inclusive limits: out of range is an error, never a clamp */
  bool required;
  bool boolean;
  const char *description;
} grn_action_arg;

typedef struct grn_action_info {
  const char *name;
  grn_action_kind kind;
  int arg_count;
  const grn_action_arg *args;
  bool optional_together; /* the optional arguments are given all together or not at all */
  const char *description;
} grn_action_info;

typedef struct grn_action {
  grn_action_kind kind;
  int nargs;
  double args[6];
} grn_action;

/* The catalogue entry of an action kind (NULL out of range), and by name (NULL if unknown). */
GRN_API const grn_action_info *grn_action_info_of(grn_action_kind kind);
GRN_API const grn_action_info *grn_action_find(const char *name);
GRN_API const char *grn_action_name(grn_action_kind kind);
/* Parse "NAME[:ARG,...]" (e.g. "spout:1.5,-2", "pour:off", "tool_off"). */
GRN_API int grn_action_parse(const char *text, grn_action *out, grn_error *err);
/* The text form grn_action_parse reads back to the same action (numbers to 17 digits). Returns
 * the length, or GRN_E_BUFFER when it does not fit in `size` bytes. */
GRN_API int grn_action_format(const grn_action *action, char *buf, size_t size);
/* Whether a scene accepts an action with these arguments (count and range checks included). */
GRN_API int grn_action_check(const grn_scene_info *scene, const grn_action *action, grn_error *err);

/* ---- Worlds -------------------------------------------------------------------------------- */
typedef struct grn_world grn_world;

GRN_API int grn_world_create(const grn_world_def *def, grn_world **out, grn_error *err);
GRN_API void grn_world_destroy(grn_world *world);

/* Advance by `steps` steps of GRN_STEP_SECONDS. Measurements are taken inside the step at every
 * sample (grn_scene_sample_steps) because the scene script depends on them (the spout rides on
 * the pile).
 * Returns GRN_OK, or GRN_E_NOMEM when the pair list could not grow: the grains stay valid but
 * contact history is lost, and the next step tries again. */
GRN_API int grn_world_step(grn_world *world, int steps);
/* Apply an action now; wakes a sleeping world. On failure the world is unchanged. While the
 * grains settle (grn_world_settle_left > 0) every action but reset and tool_off is refused with
 * GRN_E_SETTLING: an experiment started under the settle drag runs in slow motion. */
GRN_API int grn_world_act(grn_world *world, const grn_action *action, grn_error *err);
/* Change one parameter live (validated as in grn_world_def_set, and against what the built scene
 * can take: a silo's hole at most 2.5 holes across its cylinder); wakes a sleeping world. A
 * parameter marked restart is refused with GRN_E_UNSUPPORTED, and any while the grains settle with
 * GRN_E_SETTLING. */
GRN_API int grn_world_set_param(grn_world *world, const char *name, double value, grn_error *err);
/* The same by the parameter's index in the scene's list. */
GRN_API int grn_world_set_param_at(grn_world *world, int index, double value, grn_error *err);
/* Seconds of simulated time the settle drag may still last: at most this, and less if the grains
 * come to rest sooner (it then ends at once); 0 once it is over or for a scene that does not
 * settle. */
GRN_API double grn_world_settle_left(const grn_world *world);

typedef enum grn_state {
  GRN_STATE_SETTLING = 0,
  GRN_STATE_FILLING,
  GRN_STATE_RUNNING,
  GRN_STATE_ASLEEP,
  GRN_STATE_FLOWING, /* silo: draining */
  GRN_STATE_JAMMED,  /* silo: an arch over the hole stopped the flow */
  GRN_STATE_DRAINED  /* silo: the flow ended with the silo empty but for its slopes */
} grn_state;

typedef struct grn_measurements {
  double value[GRN_MEASURE_MAX]; /* in the order of scene->measures; NaN where not defined (e.g.
                                    no pile yet) */
  int count;                     /* scene->measure_count */
  grn_state state;
  /* the fitted slope line behind `angle`, for drawing: from (line[0], line[1]) to (line[2],
   * line[3]) in (distance, height) — radius from the pile centre for piles, x along channel or
   * box otherwise, m; NaN when there is no fit */
  double line[4];
} grn_measurements;

GRN_API const char *grn_state_name(grn_state state);
/* The latest sample (taken every grn_scene_sample_steps steps of simulated time). */
GRN_API void grn_world_measurements(const grn_world *world, grn_measurements *out);
GRN_API uint64_t grn_world_step_count(const grn_world *world);
/* The world's scene: whose lists its parameters and measurements follow. */
GRN_API const grn_scene_info *grn_world_scene(const grn_world *world);
GRN_API double grn_world_time(const grn_world *world);
GRN_API bool grn_world_asleep(const grn_world *world);

/* Read-only views, valid until the next step, action or parameter change. Positions, velocities
 * and spins are xyz triples; y is up. Slots with alive[i] == 0 are removed grains. */
typedef struct grn_grains_view {
  int count;
  const double *pos;
  const double *vel;
  const double *spin;
  const double *radius;
  const uint32_t *id;
  const uint8_t *alive;
} grn_grains_view;

GRN_API void grn_world_grains(const grn_world *world, grn_grains_view *out);

/* The scene's static and moving geometry, for drawing (metres, y up). */
typedef struct grn_geometry {
  double floor_y, floor_x0, floor_x1, floor_z0, floor_z1; /* ±inf for an endless floor */
  bool box;
  double box_x0, box_x1, box_z0, box_z1; /* ±inf for an open side */
  double silo_r;                         /* 0: no silo wall */
  bool plate, plugged;
  double plate_y, hole_r;
  bool dam;
  double dam_x, dam_edge; /* the dam holds grains above its lower edge */
  bool tool;
  double tool_r, tool_x, tool_y, tool_z;
  double tilt; /* rad: gravity turned by this about z (the box tilted the other way) */
  double drum_r, drum_y, drum_w; /* 0: no drum; else its axis along z at height drum_y, and how
                                    fast it turns, rad/s (counter-clockwise seen from +z) */
} grn_geometry;

GRN_API void grn_world_geometry(const grn_world *world, grn_geometry *out);

/* The height map of the last measurement: nx × nz cells of `cell` metres from (x0, z0), each the
 * top (y + r) of the grains resting in it (row-major in x), or the floor where none rest. */
typedef struct grn_height_map {
  int nx, nz;
  double x0, z0, cell;
  const double *top;
} grn_height_map;

GRN_API void grn_world_height_map(const grn_world *world, grn_height_map *out);

typedef struct grn_world_stats {
  int alive;
  int pairs;          /* listed pairs */
  int contacts;       /* touching pairs */
  uint64_t rebuilds;  /* pair-list rebuilds so far */
  uint64_t relists;   /* pair-list re-listings of a few grains so far */
  uint64_t refreshes; /* near-list refreshes since the world was made or restored */
  int near_pairs;     /* pairs of the near list: those the step looks at (0: not in use) */
  double max_speed;   /* m/s, last step */
  double over_max;    /* largest grain overlap of the last step, m */
  size_t bytes_live;  /* bytes the world holds through its allocator */
  int substeps;       /* model steps per step of H: SPH sub-steps from its CFL condition, else 1 */
  bool tree;          /* N-body: the last forces came from the Barnes–Hut tree */
  const char *forces; /* how the last forces were found: "pairs", "direct" (every pair of
                         bodies) or "tree" */
} grn_world_stats;
/* Alive free grains slower than 1 cm/s, in speed and in spin × radius: at most what a sleeping
 * region could leave out of a step. A pass over every grain, so not one of the stats above, which
 * the worker reads at every call. */
GRN_API int grn_world_resting(const grn_world *world);

GRN_API void grn_world_get_stats(const grn_world *world, grn_world_stats *out);

/* A touching pair of grains (stable ids) and its normal force, N. */
typedef struct grn_contact {
  uint32_t a, b;
  float fn;
} grn_contact;

/* Every touching pair of the last step; fills up to cap entries, returns how many there are. */
GRN_API int grn_world_contacts(const grn_world *world, grn_contact *out, int cap);
/* Force chains (spec §3): contacts whose normal force exceeds 1.6 × the mean over all contacts
 * and whose midpoint lies in the slab 3·D0 deep behind the vertical plane through (px, pz) with
 * horizontal normal (nx, nz) toward the viewer (any length but zero). Fills up
 * to cap entries, returns how many there are, or GRN_E_INVALID for a zero normal. */
GRN_API int grn_world_chains(const grn_world *world, double px, double pz, double nx, double nz,
                             grn_contact *out, int cap);

/* 64-bit hash over every grain's position, velocity and spin bits, in storage order. */
GRN_API uint64_t grn_world_digest(const grn_world *world);

/* Complete state including contact history. grn_world_save_size gives the exact size. */
GRN_API size_t grn_world_save_size(const grn_world *world);
GRN_API int grn_world_save(const grn_world *world, void *buf, size_t size, grn_error *err);
/* Rebuild a world from a saved state. `def` supplies only threads, sleep and allocator (it may be
 * NULL for one thread and malloc); scene, parameters and seed come from the state. The state is
 * treated as untrusted input: one that is truncated, from another version, or holds any value
 * that could not step safely (a count or index out of range, a non-finite number, a grain farther
 * than 1e9 m or faster than 3e5 m/s, a scene's counter beyond its range) is refused with
 * GRN_E_BAD_STATE; every state it accepts steps without undefined behaviour. */
GRN_API int grn_world_restore(const grn_world_def *def, const void *buf, size_t size,
                              grn_world **out, grn_error *err);

#ifdef __cplusplus
}
#endif
#endif
