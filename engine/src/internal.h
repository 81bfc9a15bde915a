/* Engine internals shared by the engine's translation units (and engine unit tests only):
 * constants of spec §1, the world layout and the internal grn__ functions. */
#ifndef GRAINLAB_INTERNAL_H
#define GRAINLAB_INTERNAL_H

#include "grainlab/grainlab.h"
#include "shared.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- Constants (spec/engine.md §1, reference 000) ------------------------------------------ */
#define GRN_G 9.8
#define GRN_D0 0.2
#define GRN_SPREAD 0.15
#define GRN_RHO 2650.0
#define GRN_PI 3.14159265358979323846
#define GRN_M0 (GRN_RHO * GRN_PI / 6.0 * GRN_D0 * GRN_D0 * GRN_D0)
#define GRN_KN 40000.0
#define GRN_KT (GRN_KN * 2.0 / 7.0)
#define GRN_CW 1200.0
#define GRN_H GRN_STEP_SECONDS
#define GRN_SKIN 0.1
#define GRN_MU_FLOOR 1.0
#define GRN_MUR_FLOOR 0.3
#define GRN_VFLOW 0.15
#define GRN_VREST 0.01 /* m/s: a grain "resting" in the stats */
#define GRN_VMAX 30.0
#define GRN_GAP_WET 0.01
#define GRN_RHO_B (0.6 * GRN_RHO)
#define GRN_LAT_A 0.235
#define GRN_LAT_G 0.17
#define GRN_CELL_MAP 0.2 /* height-map cell, m */
#define GRN_NBIN 256     /* radial / profile bins */

/* Damping constants derive from the springs and the mean grain mass; computed once per world
 * (libm is not constexpr) and kept in grn_consts. */
typedef struct grn_consts {
  double cn, ct, kr, cr, krf, crf;
} grn_consts;

/* History of one listed pair: tangential spring u and rolling angle theta. Stored as float: at
 * 4-byte precision the relative error (6e-8) of a spring extension of ~1 cm is 1e-9 m, far below
 * anything the contact law resolves, and it keeps a packed bed under 1 KiB per grain (bench). */
typedef struct grn_hist {
  float u[3];
  float th[3];
} grn_hist;

/* One row of the contact-force table (reference 001): the force on the smaller partner b (its
 * negative acts on the owner a), and the torques on a and b. Written in pair order by the force
 * pass, read by each grain's gather, so the summation order is fixed whatever the thread count. */
typedef struct grn_force_row {
  float f[3];
  float ta[3];
  float tb[3];
} grn_force_row;
_Static_assert(sizeof(grn_hist) == 24, "grn_hist must stay packed");
_Static_assert(sizeof(grn_force_row) == 36, "grn_force_row must stay packed");

typedef struct grn_vec3 {
  double x, y, z;
} grn_vec3;

enum {
  GRN_F_ALIVE = 1u,
  GRN_F_FIXED = 2u,
  GRN_F_FLOOR = 4u, /* touching the floor: its floor springs carry history */
  GRN_F_WALL = 8u   /* touching a rough silo wall: its wall spring carries history */
};

/* Each grain's boundary history (hf): the floor's (or the drum wall's) tangential spring and
 * rolling angle, two components each, then a rough silo wall's tangential spring (azimuthal,
 * vertical). */
#define GRN_HF 6

typedef struct grn_grid {
  double ox, oy, oz, cs; /* origin and cell side */
  int nx, ny, nz;
} grn_grid;

/* Scene geometry switches read by the boundary pass. */
typedef struct grn_geom {
  double floor_y;
  double fx0, fx1, fz0, fz1; /* finite floor extent */
  bool box;                  /* axis-aligned box walls */
  double xmin, xmax, zmin, zmax;
  double mu_wall;
  double mu_floor, mur_floor; /* MU_FLOOR, MUR_FLOOR; tests may switch them off */
  double silo_r;              /* 0: none */
  /* the silo's cylinder is rough like the drum's wall: a tangential spring gives it static
   * friction (mu_wall), so a column at rest hangs on it (the Janssen effect); else its friction
   * acts only while grains slide */
  bool silo_rough;
  /* a horizontal drum: a cylinder about the z axis through (0, drum_y), radius drum_r (0: none),
   * turning at drum_w rad/s (counter-clockwise seen from +z), wall friction drum_mu */
  double drum_r, drum_y, drum_w, drum_mu;
  bool plate;
  double plate_y, hole_r;
  bool plugged; /* plug lies in the hole: the plate is whole */
  bool dam;
  double dam_x, dam_edge;
  bool tool;
  double tool_r;
  grn_vec3 tool_p, tool_v;
  double kill_y;
} grn_geom;

/* ---- the world's smaller blocks ------------------------------------------------------------ */
/* What the caller chose for how a world runs, not what it computes (grn_world_def). */
typedef struct grn_opts {
  int threads;
  bool allow_sleep;
  bool simd; /* AVX2 contact kernel (bit-identical to the scalar reference) */
} grn_opts;

/* Settling (spec §2 "Integration"): the drag (0.97 per step) acts while t < drag, and the scene
 * counts as settling (no experiment may start) while t < until. Both hold worst cases from the
 * lattice's height until the grains come to rest, first under the drag, then without it
 * (grn__granular_step). calm: seconds every grain has stayed slower than GRN_VFLOW. */
typedef struct grn_settle {
  double drag, until, calm;
} grn_settle;

/* Figures of the last step, kept by the integration pass (integrate.c) for the measurements,
 * the stats and the sleep check. */
typedef struct grn_figures {
  double vmax, over_max, flowing;
  int alive;
  int contacts;
} grn_figures;

/* Sleep (world.c): a world whose grains all stayed calm for a second steps nothing until woken. */
typedef struct grn_sleep {
  double still; /* seconds every grain has stayed calm */
  bool on;
} grn_sleep;

/* The measurements' maps (measure.c): the height map over the scene and radial or profile bins. */
typedef struct grn_maps {
  double *hmap; /* height map cells */
  int hnx, hnz;
  double hx0, hz0;
  double bin[GRN_NBIN];
  int binn[GRN_NBIN];
} grn_maps;

/* ---- the pair machinery: blocks owned by pairs.c and fused.c -------------------------------- */
/* Rebuild scratch (pairs.c), kept between rebuilds so a warmed-up step allocates nothing. */
typedef struct grn_relist {
  grn_grid grid;
  int ncell_cap;
  int32_t *cstart; /* ncell+1 */
  int32_t *cell;   /* per grain */
  int32_t *perm;   /* new -> old */
  int32_t *newidx; /* old -> new, -1 removed */
  void *scratch;   /* permutation buffer and old touching history; the near refresh's marks */
  size_t scratch_bytes;
} grn_relist;

/* The pair list (pairs.c), for every model with pairs: CSR under the owner (the larger grain),
 * contact history, and how far each grain may move before it is made again. */
typedef struct grn_pairs {
  int m, mcap;
  int nl;          /* grains covered by the list (those present at the last rebuild) */
  int32_t *pstart; /* n+1 */
  int32_t *pb;     /* partner of each pair */
  grn_hist *hist;
  float *pfn;      /* > 0: touching, its last normal force; < 0: liquid bridge only; 0: inactive */
  int32_t *rstart; /* n+1: reference list of pairs where a grain is the smaller partner */
  int32_t *rref;
  grn_force_row *table; /* full table of the reference passes (forces.c), on first use */
  int tcap;
  bool table_valid; /* inactive rows of the full table are zero */
  /* validity: each grain's position at the last rebuild and how far it may move from there
   * (saved); SPH keeps a running bound instead */
  grn_vec3 *ref;
  double *slack;
  double disp;     /* SPH: sum of vmax·H since the last rebuild */
  bool dirty;      /* made again before the next force pass */
  bool moved;      /* a grain moved its slack: re-listed, or made again (relist.c) */
  bool refs_stale; /* rstart/rref to be made before they are read (grn__pair_refs); not saved */
  int since;       /* re-listings since the last rebuild, and grains they re-listed */
  int relisted;
  uint64_t relists;
  /* settings of the model (grains by default; SPH derives its own) */
  double skin;      /* GRN_SKIN for grains, a quarter kernel for SPH */
  double cell_rmin; /* smallest radius the grid is planned for */
  uint64_t rebuilds;
  uint64_t rebuild_step;  /* step of the last rebuild, and steps between the last two (not saved: */
  uint64_t rebuild_every; /* they only set the near list's horizon, which changes no result) */
  grn_relist scr;
} grn_pairs;

/* The near list (pairs.c): the pairs of the list that can touch before it is refreshed — those
 * within reach + both allowances (nu), or still active — as indices into the pair list, in pair
 * order. Every other listed pair is apart with no history until then, so the fused step skips it;
 * the result is the same to the bit as stepping the whole list. */
typedef struct grn_near {
  bool valid;
  int m, cap;
  int span;        /* the largest |a − b| of a near pair (a, b), measured by the refresh */
  int32_t *start;  /* n+1: a grain's near pairs as owner */
  int32_t *b;      /* partner of each near pair */
  int32_t *p;      /* its pair in the list (history, last normal force) */
  int32_t *a;      /* its owner */
  int32_t *rstart; /* n+1 */
  int32_t *rref;   /* near pairs where a grain is the smaller partner, in near order */
  float *nu;       /* per grain: how far it may move from ref before the refresh, m */
  grn_vec3 *ref;   /* per grain: its position at the refresh */
  double margin;   /* the slow grains' allowance, twice; INFINITY: every listed pair is near */
  double gap;      /* reach gap the list was made for */
  int fast;        /* fast grains (allowances of their own) at the refresh */
  int over;        /* grains that moved past their allowance since */
  uint64_t refreshes;
} grn_near;

/* The fused step (fused.c): block buffers and bands of rows over the near list, and running sums,
 * planned at each refresh. */
typedef struct grn_fused {
  bool on, off;                 /* planned for this near list; off: never (tests) */
  int span, ring_rows, ringcap; /* ring: block buffers (ring_rows rows per thread), then bands */
  double *fsum; /* per thread a ring of 6 per grain: running force and torque sums */
  int fsumcap, fsum_mask;
  grn_force_row *ring;
  int32_t *act; /* per thread ring_rows: a block's pairs whose rows may be other than zero */
  int actcap;
  int32_t *bref; /* per band: the pairs of each grain within S of its boundary, as partner */
  int brefcap;
  uint64_t sieved; /* steps that sieved their near pairs (not saved; no result depends on it) */
} grn_fused;

/* The granular model's block (model.h): its near list and fused ring, owned by near.c and
 * fused.c and freed by the model; what it keeps besides the pair list it shares with SPH. */
typedef struct grn_granular {
  grn_near near;
  grn_fused fused;
} grn_granular;

/* ---- model blocks (model.h): each model's own constants and buffers -------------------------- */
/* SPH (fluid.c): constants derived from the scene's spacing and fall height, and per-particle and
 * per-pair buffers of the last density pass. */
typedef struct grn_sph {
  double s, fall;        /* particle spacing and the height water can fall, m (the scene's) */
  double h, m, k;        /* kernel radius, particle mass, EOS stiffness */
  double wall_k, wall_c; /* penalty walls */
  int substeps;          /* sub-steps per step of H, from the CFL condition */
  int cap;               /* capacity of acc, rho, prs */
  grn_vec3 *acc;         /* acceleration of the last force pass */
  double *rho, *prs;     /* density and pressure of the last density pass */
  double *tab;           /* per-pair table (reference 001 layout), 3 per pair */
  int tcap;              /* pairs tab holds */
  bool valid;            /* rho and prs match the positions and the parameters */
} grn_sph;

/* N-body (gravity.c): accelerations, the direct sum's planes and the Barnes–Hut tree. */
typedef struct grn_nbody {
  double e0;                 /* total energy at t = 0 (energy_drift); saved */
  double theta;              /* opening angle the tree was built for; 0: direct sum */
  int cap;                   /* capacity of acc, mass, phi */
  grn_vec3 *acc;             /* acceleration at the current positions */
  double *mass, *phi;        /* each body's mass; its potential from the tree walk */
  double *soa;               /* direct sum: x, y, z and mass planes of n (cap each) */
  bool acc_valid;            /* acc matches the positions and the parameters */
  struct grn_bh_node *nodes; /* Barnes–Hut tree of the current positions */
  int nnode, nodecap;
  struct grn_bh_key *keys; /* bodies sorted by Morton key */
  int keycap;
  double *lists; /* per-thread interaction lists of the grouped tree walk */
  size_t listcap;
  bool tree_valid;
} grn_nbody;

typedef struct grn_scene grn_scene; /* scene.h */

/* The allocator a world uses, and the bytes it holds through it (alloc.c). */
typedef struct grn_mem {
  grn_alloc_fn alloc;
  grn_free_fn free;
  void *ctx;
  size_t live;
} grn_mem;

struct grn_world {
  grn_mem mem;
  grn_opts opt;

  /* inputs that determine the run */
  const grn_scene_info *scene;
  const grn_scene *impl;             /* the scene object (scene.h) */
  const struct grn_model_ops *model; /* the scene's model (model.h) */
  double param[GRN_PARAM_MAX];       /* in the order of scene->params */
  grn_binding bind;                  /* where those the models read are (bind.c) */
  uint64_t seed;
  int n_target; /* grains the scene creates in all */
  grn_fill fill;
  grn_consts k;

  /* grains, storage order = cell order after each rebuild */
  int n, cap;
  grn_vec3 *pos, *vel, *spin;
  double *rad, *inv_m, *inv_i;
  double *hf; /* boundary history: GRN_HF per grain */
  uint32_t *id;
  uint8_t *flags;

  grn_pairs pairs; /* pairs.c: the granular model's and SPH's */

  /* dynamics */
  grn_vec3 gravity;
  uint64_t steps;
  double t;
  grn_settle settle;
  grn_figures fig;
  grn_sleep sleep;
  uint32_t next_id;
  uint64_t rng[4];

  grn_geom geom;

  /* the scene's own state block (scene.h): impl->state_size bytes, saved as one block */
  void *ss;

  /* the block of the world's model, owned by it (model.h): only the active member is used */
  union {
    grn_granular gran;
    grn_sph sph;
    grn_nbody nbody;
  };

  grn_measurements meas;
  grn_maps maps;
};

/* allocation (alloc.c), counted in w->mem */
void grn__mem_init(grn_mem *m, const grn_world_def *def); /* the definition's allocator or malloc */
void *grn__alloc(grn_world *w, size_t bytes);
void grn__free(grn_world *w, void *p, size_t bytes);
int grn__grow(grn_world *w, void **p, size_t elem, int *cap, int need);
int grn__regrow(grn_world *w, void **const arrays[], const size_t each[], int count, int *cap,
                int need);
int grn__regrow_keep(grn_world *w, void **const arrays[], const size_t each[], int count, int *cap,
                     int keep, int need);

/* The normal force of a boundary with a spring (the floor, the plate, a rough wall) on a grain
 * overlapping it by `over` while moving away from it at vn: spring and dashpot, never pulling
 * (walls.c; the janssen scene's scale reads the floor's). */
static inline double grn__spring_normal(double over, double vn, double cn) {
  const double fn = GRN_KN * over - cn * vn;
  return fn > 0.0 ? fn : 0.0;
}

/* errors */
int grn__fail(grn_error *err, int code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* parameter validation shared by definitions and live changes: GRN_OK or an error */
int grn__check_param(const grn_scene_info *scene, int index, double value, grn_error *err);
int grn__unknown_param(const grn_scene_info *scene, const char *name, grn_error *err);

/* the binding to the scene's lists (bind.c) */
void grn__bind(grn_world *w);
int grn__shared_param_index(const grn_scene_info *scene, grn_shared_param k); /* -1: none */
double grn__def_param(const grn_world_def *def, grn_shared_param k);          /* 0: none */

/* A parameter the models read (0 where the scene has none), and whether index k is it. */
static inline double grn__param(const grn_world *w, grn_shared_param k) {
  const int i = w->bind.param[k];
  return i >= 0 ? w->param[i] : 0.0;
}
static inline bool grn__is_param(const grn_world *w, int index, grn_shared_param k) {
  return w->bind.param[k] >= 0 && w->bind.param[k] == index;
}
/* A shared measurement, written where the scene lists it; read back (NaN where it has none). */
static inline void grn__put(grn_world *w, grn_shared_measure k, double v) {
  const int i = w->bind.measure[k];
  if (i >= 0) {
    w->meas.value[i] = v;
  }
}
static inline double grn__got(const grn_world *w, grn_shared_measure k) {
  const int i = w->bind.measure[k];
  return i >= 0 ? w->meas.value[i] : NAN;
}

/* rng (rng.c): xoshiro256** seeded by splitmix64 */
void grn__rng_seed(uint64_t s[4], uint64_t seed);
double grn__rng_uniform(uint64_t s[4]); /* [0, 1) */

/* grains (grains.c) */
int grn__reserve_grains(grn_world *w, int need);
int grn__add_grain(grn_world *w, double x, double y, double z, double r, grn_vec3 v);
void grn__kill(grn_world *w, int i);
double grn__random_radius(grn_world *w);
int grn__fill_lattice(grn_world *w, int count, double x0, double x1, double z0, double z1,
                      double y0);               /* also sets w->settle */
grn_state grn__plain_state(const grn_world *w); /* asleep, settling or running */
double grn__settle_time(double lattice_height);

/* contact law constants (contact.c) */
void grn__consts_init(grn_consts *k);

/* pair list (pairs.c) */
/* Owner of a pair: the larger grain; equal radii fall back to the stable id so that ownership, and
 * with it the place of a pair's history, never depends on storage order. */
static inline bool grn__owns(const grn_world *w, int i, int j) {
  return w->rad[i] > w->rad[j] || (w->rad[i] == w->rad[j] && w->id[i] > w->id[j]);
}
static inline int grn__clampi(int v, int n) {
  return v < 0 ? 0 : (v >= n ? n - 1 : v);
}
static inline int grn__cell_of(const grn_grid *g, grn_vec3 p) {
  const int ix = grn__clampi((int)floor((p.x - g->ox) / g->cs), g->nx);
  const int iy = grn__clampi((int)floor((p.y - g->oy) / g->cs), g->ny);
  const int iz = grn__clampi((int)floor((p.z - g->oz) / g->cs), g->nz);
  return ix + g->nx * (iy + g->ny * iz);
}
double grn__plan_grid(grn_world *w, const grn_vec3 *at); /* into pairs.scr.grid; largest radius */
/* Distance along one axis from coordinate p, in cell ci, to the slab of cell cj (0 in its own). */
static inline double grn__slab_gap(double p, double o, double cs, int ci, int cj) {
  return cj > ci ? (o + cs * cj) - p : (cj < ci ? p - (o + cs * (cj + 1)) : 0.0);
}

/* The cells of a row, within [*jx0, *jx1] and around ix, that come within R of x given the row's
 * squared y–z distance dyz2; false when none does. Cells wholly out of reach hold no partner, so
 * leaving them out finds the very same pairs among fewer candidates. */
static inline bool grn__row_cells(const grn_grid *g, double x, int ix, double R, double dyz2,
                                  int *jx0, int *jx1) {
  const double c2 = R * R - dyz2;
  if (!(c2 > 0.0)) {
    return false;
  }
  int lo = ix, hi = ix;
  for (double d = x - (g->ox + g->cs * lo); lo > *jx0 && d * d < c2; d += g->cs) {
    lo--;
  }
  for (double d = (g->ox + g->cs * (hi + 1)) - x; hi < *jx1 && d * d < c2; d += g->cs) {
    hi++;
  }
  *jx0 = lo;
  *jx1 = hi;
  return true;
}
/* A grain's coordinate along a sorting axis, and its index (or any key and its item). */
typedef struct grn_keyed {
  double c;
  int32_t q;
} grn_keyed;
/* By c, then q; no memory of its own (libc's qsort may call malloc). */
void grn__sort_keyed(grn_keyed *k, int n);
double grn__own_slack(grn_vec3 v, double e0);
int grn__rebuild(grn_world *w);
/* The list made valid again before a step (relist.c): only the grains past their slack listed
 * again where they alone ended it, else a rebuild. */
int grn__update_pairs(grn_world *w);
int grn__grow_pairs(grn_world *w, int need);
void grn__rebuild_refs(grn_world *w);
/* The reference lists, made if a rebuild or a re-listing left them stale: only the reference
 * passes and SPH read them, not the fused or near steps, so most updates never make them. */
void grn__pair_refs(grn_world *w);
double grn__reach_gap(const grn_world *w);
int grn__scratch(grn_world *w, size_t bytes); /* the rebuild's scratch, contents dropped */
/* Reference lists of n grains over m pairs with partners pb: a counting sort by partner, which
 * keeps each grain's list in pair order. fill is n ints of scratch. */
void grn__refs_of(int n, int m, const int32_t *pb, int32_t *rstart, int32_t *rref, int32_t *fill);
void grn__pairs_free(grn_world *w);

/* near list (near.c) */
bool grn__near_stale(const grn_world *w);
int grn__near_refresh(grn_world *w);
void grn__near_refs(grn_world *w); /* after grn__plan_fused decided whether the step is fused */
void grn__near_free(grn_world *w);

/* one step: the pair pass (forces.c), the gather and integration (integrate.c), the fused step
 * (fused.c) */
int grn__forces(grn_world *w);
int grn__step_near(grn_world *w); /* both passes over the near list (when fused is off) */
void grn__gather_integrate(grn_world *w);
int grn__plan_fused(grn_world *w);
void grn__step_fused(grn_world *w);
void grn__fused_free(grn_world *w);
void grn__fused_let_go(grn_world *w); /* off until planned again (at a rebuild) */

/* measurement helpers (measure.c) */
int grn__hmap_cells(double extent); /* cells covering an extent, m */
int grn__hmap_init(grn_world *w, double x0, double z0, int nx, int nz);
void grn__surface(grn_world *w, double y0, double only_above);
double grn__top_at(const grn_world *w, double x, double z);
void grn__pile_angle(grn_world *w);
void grn__channel_profile(grn_world *w, double half_width);
void grn__tray_profile(grn_world *w, double half_length, double half_width, double tilt);
void grn__common_measures(grn_world *w);

/* scenes */
const grn_scene *grn__scene_impl(const grn_scene_info *info); /* NULL: not a catalogue entry */
int grn__world_setup(grn_world *w);
int grn__scene_state(grn_world *w); /* allocates the scene's zeroed state block */
void grn__model_init(grn_world *w);
int grn__granular_step(grn_world *w);
void grn__measure(grn_world *w);
const struct grn_model_ops *grn__model_of(grn_model kind);
bool grn__must_rebuild(const grn_world *w);
grn_world *grn__world_new(const grn_world_def *def); /* empty world with allocator and threads */
void grn__world_clear(grn_world *w);

int grn__no_act(grn_world *w, const grn_action *a, grn_error *err);
/* geometry of the bench bed, shared by scenes that accept GRN_FILL_BED; *half: the box's half
 * side */
int grn__setup_bed(grn_world *w, double *half);

/* The set lanes of each 4-bit mask, in order, packed to the front (the rest zero): SIMD loops
 * store the lanes a compare kept without a branch per lane (contact_avx2.c). */
extern const int32_t grn__packed_lanes[16][4];

#endif
