/* SPH scenes: `dambreak` (a column of width a and height 2a released against the left wall of a
 * tank 5a long, the classic Martin–Moyce experiment) and `drop` (a ball of water into a pool). */
#include "../model.h"
#include "params.h"

/* ---- dambreak ------------------------------------------------------------------------------- */
enum { DB_WIDTH, DB_QUALITY, DB_VISC, DB_PARAMS };
enum { DB_FRONT = 2, DB_HEIGHT, DB_KINETIC, DB_POTENTIAL, DB_ENERGY, DB_MEASURES };

/* Particles across the column for quality 0, 1, 2; the tank is half a column deep (a slab). */
static int across(double quality) {
  return 8 + 4 * (int)quality;
}

static void dambreak_derive(grn_world *w) {
  if (w->fill == GRN_FILL_BED) {
    w->sph.s = grn__sph_bed_spacing();
    w->sph.fall = grn__sph_bed_depth(w->n_target);
  } else {
    w->sph.s = w->param[DB_WIDTH] / across(w->param[DB_QUALITY]);
    w->sph.fall = 2.0 * w->param[DB_WIDTH];
  }
}

static int dambreak_count(const grn_world_def *def) {
  if (def->fill == GRN_FILL_BED) {
    return def->grains > 0 ? def->grains : 4000;
  }
  if (def->grains > 0) {
    return -1;
  }
  const int k = across(def->param[DB_QUALITY]);
  return k * 2 * k * (k / 2);
}

static int dambreak_setup(grn_world *w) {
  const double a = w->param[DB_WIDTH], s = w->sph.s;
  const int k = across(w->param[DB_QUALITY]), layers = k / 2;
  grn_geom *g = &w->geom;
  g->floor_y = 0.0;
  g->box = true;
  g->xmin = g->zmin = 0.0;
  g->xmax = 5.0 * a;
  g->zmax = layers * s;
  g->fx0 = g->fz0 = 0.0;
  g->fx1 = g->xmax;
  g->fz1 = g->zmax;
  if (grn__reserve_grains(w, w->n_target) != GRN_OK) {
    return GRN_E_NOMEM;
  }
  for (int z = 0; z < layers; z++) {
    for (int y = 0; y < 2 * k; y++) {
      for (int x = 0; x < k; x++) {
        if (grn__sph_add(w, (x + 0.5) * s, (y + 0.5) * s, (z + 0.5) * s) != GRN_OK) {
          return GRN_E_NOMEM;
        }
      }
    }
  }
  w->settle.drag = 0.0; /* released at t = 0 */
  return GRN_OK;
}

static const grn_param_info dambreak_params[DB_PARAMS] = {
    [DB_WIDTH] = {"width", "m", 0.1, 1.0, 0.3, false, true,
                  "water column width a (height 2a, tank 5a long)"},
    [DB_QUALITY] = P_FQUALITY("0, 1, 2: 8, 12, 16 particles across the column"),
    [DB_VISC] = P_VISC};
static const grn_measure_info dambreak_measures[DB_MEASURES] = {
    M_T,         M_ALIVE, [DB_FRONT] = M_FRONT, [DB_HEIGHT] = M_HEIGHT, [DB_KINETIC] = M_KINETIC,
    M_POTENTIAL, M_ENERGY};
static const char *const reset_only[] = {"reset"};
/* kinetic at k, then potential and the total */
#define ENERGIES(k) PLOT("Energy, J: kinetic, potential, total", S(k), S((k) + 1), REF((k) + 2))
static const grn_plot_info dambreak_plots[] = {
    PLOT("Surge front and water height at the wall, m", S(DB_FRONT), S(DB_HEIGHT)),
    ENERGIES(DB_KINETIC)};

const grn_scene grn__scene_dambreak = {
    .info = {"dambreak", GRN_MODEL_FLUID,
             "SPH water: a column of width a and height 2a against the left wall of a tank 5a "
             "long, released at t = 0",
             LEN(dambreak_params), dambreak_params, LEN(reset_only), reset_only,
             LEN(dambreak_measures), dambreak_measures, PLOTS(dambreak_plots)},
    .setup = dambreak_setup,
    .sample_steps = 4, /* 60 Hz: the surge and the splash last half a second */
    .bed = grn__sph_bed,
    .count = dambreak_count,
    .count_param = "quality",
    .derive = dambreak_derive};

/* ---- drop ----------------------------------------------------------------------------------- */
enum { DROP_QUALITY, DROP_VISC, DROP_PARAMS };
enum { DROP_TOP = 1, DROP_KINETIC = 3, DROP_MEASURES = 6 };
#define TANK_X 1.0
#define TANK_Z 0.4
#define POOL 0.3
#define BALL_R 0.15
#define BALL_Y 0.8

static double drop_spacing(double quality) {
  return quality < 0.5 ? 0.05 : quality < 1.5 ? 0.04 : 0.03;
}

/* The pool on a cubic lattice and the ball on the same lattice cut to a sphere; counts only when
 * w is NULL, so the catalogue's count and the scene always agree. */
static int drop_layout(grn_world *w, double s) {
  const int nx = (int)floor(TANK_X / s + 1e-9), nz = (int)floor(TANK_Z / s + 1e-9),
            ny = (int)floor(POOL / s + 1e-9);
  int count = 0;
  for (int z = 0; z < nz; z++) {
    for (int y = 0; y < ny; y++) {
      for (int x = 0; x < nx; x++) {
        if (w && grn__sph_add(w, (x + 0.5) * s, (y + 0.5) * s, (z + 0.5) * s) != GRN_OK) {
          return -1;
        }
        count++;
      }
    }
  }
  const int rb = (int)ceil(BALL_R / s);
  for (int z = -rb; z <= rb; z++) {
    for (int y = -rb; y <= rb; y++) {
      for (int x = -rb; x <= rb; x++) {
        if ((x * x + y * y + z * z) * s * s > BALL_R * BALL_R) {
          continue;
        }
        if (w &&
            grn__sph_add(w, 0.5 * TANK_X + x * s, BALL_Y + y * s, 0.5 * TANK_Z + z * s) != GRN_OK) {
          return -1;
        }
        count++;
      }
    }
  }
  return count;
}

static void drop_derive(grn_world *w) {
  w->sph.s = drop_spacing(w->param[DROP_QUALITY]);
  w->sph.fall = BALL_Y + BALL_R;
}

static int drop_count(const grn_world_def *def) {
  return def->grains > 0 ? -1 : drop_layout(NULL, drop_spacing(def->param[DROP_QUALITY]));
}

static int drop_setup(grn_world *w) {
  grn_geom *g = &w->geom;
  g->floor_y = 0.0;
  g->box = true;
  g->xmin = g->zmin = 0.0;
  g->xmax = TANK_X;
  g->zmax = TANK_Z;
  g->fx0 = g->fz0 = 0.0;
  g->fx1 = TANK_X;
  g->fz1 = TANK_Z;
  if (grn__reserve_grains(w, w->n_target) != GRN_OK) {
    return GRN_E_NOMEM;
  }
  w->settle.drag = 0.0;
  return drop_layout(w, w->sph.s) < 0 ? GRN_E_NOMEM : GRN_OK;
}

static const grn_param_info drop_params[DROP_PARAMS] = {
    [DROP_QUALITY] = P_FQUALITY("0, 1, 2: particle spacing 5, 4, 3 cm"), [DROP_VISC] = P_VISC};
static const grn_measure_info drop_measures[DROP_MEASURES] = {
    M_T, [DROP_TOP] = M_TOP, M_ALIVE, [DROP_KINETIC] = M_KINETIC, M_POTENTIAL, M_ENERGY};
static const grn_plot_info drop_plots[] = {ENERGIES(DROP_KINETIC),
                                           PLOT("Top of the water, m", S(DROP_TOP))};

const grn_scene grn__scene_drop = {
    .info = {"drop", GRN_MODEL_FLUID, "SPH water: a ball of water falls into a pool and splashes",
             LEN(drop_params), drop_params, LEN(reset_only), reset_only, LEN(drop_measures),
             drop_measures, PLOTS(drop_plots)},
    .setup = drop_setup,
    .sample_steps = 4, /* 60 Hz: the surge and the splash last half a second */
    .count = drop_count,
    .count_param = "quality",
    .derive = drop_derive};
