/* Scene "janssen": the Janssen effect, the classic lab of the "apparent mass" (Janssen 1895;
 * Sperl 2006). Grains poured into a vertical tube stand on a scale, the tube's base; the scale's
 * reading saturates as the fill grows, because the walls carry the rest. Janssen's law:
 * M_app = M_sat·(1 − exp(−M/M_sat)), M_sat = ρ_b·π·R²·R/(2·K·μ_w). Measured: the poured mass, the
 * base's normal force over g (averaged over each sample's 0.25 s, as a scale settles on a
 * reading), the fill's bulk density, K fitted to this run's readings and the law with it. */
#include "params.h"

/* Its parameters after the granular ones, and its measurements after the common four. */
enum { DIAMETER = GRANULAR_PARAM_COUNT, WALL_MU, RATE, JANSSEN_PARAMS };
enum { POURED = 4, APPARENT, LAW, K_FIT, BULK_DENSITY, JANSSEN_MEASURES };

#define LAYER_STEPS 20 /* grains leave the feed every 1/12 s ... */
#define DROP 0.5       /* ... from this far above the resting fill, m */
#define FEED_SPEED 1.0 /* ... moving down at this speed, m/s */
#define LOG 64         /* (poured, apparent) readings kept for the fit */
/* K is fitted once there are FIT_MIN readings and the scale reads below BENT of the poured mass:
 * till then the readings lie on the line M_app = M, and any K fits them */
#define FIT_MIN 8
#define BENT 0.9

/* The fill's state: grains fed so far and owed by the rate, the base's load summed over the steps
 * since the last sample, and the readings kept for the fit: every `stride`-th sample (each time
 * the log fills, every other reading is dropped and the stride doubles, so the log spans the run).
 */
typedef struct janssen_state {
  int poured;
  double owed;
  double load_sum;
  int load_steps;
  int log_n, stride, skip;
  double log_m[LOG], log_a[LOG];
} janssen_state;

static janssen_state *st(const grn_world *w) {
  return w->ss;
}

static double radius_of(const grn_world *w) {
  return 0.5 * w->param[DIAMETER];
}

static int janssen_setup(grn_world *w) {
  const double rt = radius_of(w);
  grn_geom *g = &w->geom;
  g->floor_y = 0.0; /* the scale */
  g->fx0 = g->fz0 = -rt;
  g->fx1 = g->fz1 = rt;
  g->silo_r = rt;
  g->silo_rough = true; /* static friction: a column at rest hangs on the wall */
  g->mu_wall = w->param[WALL_MU];
  g->kill_y = -1.0;
  w->settle.drag = 0.0; /* the tube fills from empty: nothing to settle */
  st(w)->stride = 1;
  const int rc = grn__hmap_init(w, -rt, -rt, grn__hmap_cells(2.0 * rt), grn__hmap_cells(2.0 * rt));
  return rc == GRN_OK ? grn__reserve_grains(w, w->n_target) : rc;
}

/* The resting fill: the mean surface inside 0.8·R, from a fresh height map (falling grains do not
 * count, measure.c), m above the base; and the highest resting top anywhere. */
static double resting_fill(grn_world *w, double *highest) {
  grn__surface(w, 0.0, 0.0);
  const double r08 = 0.8 * radius_of(w), cs = GRN_CELL_MAP;
  double sum = 0.0;
  int cells = 0;
  *highest = 0.0;
  for (int b = 0; b < w->maps.hnz; b++) {
    const double z = w->maps.hz0 + (b + 0.5) * cs;
    for (int a = 0; a < w->maps.hnx; a++) {
      const double x = w->maps.hx0 + (a + 0.5) * cs, h = w->maps.hmap[a + w->maps.hnx * b];
      *highest = h > *highest ? h : *highest;
      if (x * x + z * z < r08 * r08) {
        sum += h;
        cells++;
      }
    }
  }
  return cells ? sum / cells : 0.0;
}

/* One layer of the feed: the grains the rate owes, at random spots across the tube DROP above the
 * highest resting grain, none overlapping a grain already there. */
static void feed(grn_world *w) {
  janssen_state *s = st(w);
  s->owed += w->param[RATE] * LAYER_STEPS * GRN_H;
  const int left = w->n_target - s->poured;
  const double share = floor(s->owed);
  const int want = share < left ? (int)share : left;
  if (want <= 0) {
    return;
  }
  double top;
  resting_fill(w, &top);
  const double y = top + DROP, lim = radius_of(w) - 0.5 * GRN_D0 * (1.0 + GRN_SPREAD) - 0.01;
  for (int tries = 0, placed = 0; tries < 20 * want && placed < want; tries++) {
    const double a = 2.0 * GRN_PI * grn__rng_uniform(w->rng);
    const double rho = lim * sqrt(grn__rng_uniform(w->rng)), r = grn__random_radius(w);
    const double x = rho * cos(a), z = rho * sin(a);
    bool clear = true;
    for (int j = 0; j < w->n && clear; j++) {
      const double dx = w->pos[j].x - x, dy = w->pos[j].y - y, dz = w->pos[j].z - z;
      const double rr = r + w->rad[j] + 0.005;
      clear = !(w->flags[j] & GRN_F_ALIVE) || dx * dx + dy * dy + dz * dz >= rr * rr;
    }
    if (!clear || grn__add_grain(w, x, y, z, r, (grn_vec3){0.0, -FEED_SPEED, 0.0}) != GRN_OK) {
      continue;
    }
    s->poured++;
    s->owed -= 1.0;
    placed++;
  }
}

/* The base's normal force on each grain it holds (the floor's law, grn__spring_normal), summed at
 * every step: the scale's reading is its mean over a sample. */
static void janssen_script(grn_world *w) {
  double load = 0.0;
  for (int i = 0; i < w->n; i++) {
    if ((w->flags[i] & (GRN_F_ALIVE | GRN_F_FLOOR)) == (GRN_F_ALIVE | GRN_F_FLOOR)) {
      const double over = w->geom.floor_y + w->rad[i] - w->pos[i].y;
      load += over > 0.0 ? grn__spring_normal(over, w->vel[i].y, w->k.cn) : 0.0;
    }
  }
  st(w)->load_sum += load;
  st(w)->load_steps++;
  if (st(w)->poured < w->n_target && w->steps % LAYER_STEPS == 0) {
    feed(w);
  }
}

static bool janssen_busy(const grn_world *w) {
  return st(w)->poured < w->n_target;
}

/* Janssen's law for the poured mass m and the saturation mass ms. */
static double law(double m, double ms) {
  return ms * -expm1(-m / ms);
}

/* M_sat by least squares over the logged readings: the sum of squares has one minimum in
 * log(M_sat) between a hundredth of the largest poured mass (the walls carry nearly all) and a
 * thousand times it (they carry nothing), found by a golden-section search. */
static double fit_saturation(const janssen_state *s) {
  double most = 0.0;
  for (int k = 0; k < s->log_n; k++) {
    most = s->log_m[k] > most ? s->log_m[k] : most;
  }
  if (!(most > 0.0)) {
    return NAN; /* no reading with grains in it (a restored log may hold anything finite) */
  }
  double lo = log(0.01 * most), hi = log(1000.0 * most);
  const double g = 0.5 * (sqrt(5.0) - 1.0);
  double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo), f1 = 0.0, f2 = 0.0;
  for (int it = 0; it < 80; it++) {
    f1 = f2 = 0.0;
    for (int k = 0; k < s->log_n; k++) {
      const double e1 = s->log_a[k] - law(s->log_m[k], exp(x1));
      const double e2 = s->log_a[k] - law(s->log_m[k], exp(x2));
      f1 += e1 * e1;
      f2 += e2 * e2;
    }
    if (f1 < f2) {
      hi = x2;
    } else {
      lo = x1;
    }
    x1 = hi - g * (hi - lo);
    x2 = lo + g * (hi - lo);
  }
  return exp(0.5 * (lo + hi));
}

static void log_reading(janssen_state *s, double m, double a) {
  if (s->skip > 0) {
    s->skip--;
    return;
  }
  if (s->log_n == LOG) {
    for (int k = 0; k < LOG / 2; k++) {
      s->log_m[k] = s->log_m[2 * k];
      s->log_a[k] = s->log_a[2 * k];
    }
    s->log_n = LOG / 2;
    s->stride *= 2;
  }
  s->log_m[s->log_n] = m;
  s->log_a[s->log_n] = a;
  s->log_n++;
  s->skip = s->stride - 1;
}

static void janssen_measure(grn_world *w) {
  janssen_state *s = st(w);
  double *m = w->meas.value;
  double mass = 0.0;
  for (int i = 0; i < w->n; i++) {
    mass += w->flags[i] & GRN_F_ALIVE ? 1.0 / w->inv_m[i] : 0.0;
  }
  m[POURED] = mass;
  m[APPARENT] = s->load_steps > 0 ? s->load_sum / s->load_steps / GRN_G : NAN;
  s->load_sum = 0.0;
  s->load_steps = 0;
  double top;
  const double fill = resting_fill(w, &top), rt = radius_of(w);
  const double rho_b = fill > 2.0 * GRN_D0 ? mass / (GRN_PI * rt * rt * fill) : NAN;
  m[BULK_DENSITY] = rho_b;
  m[K_FIT] = m[LAW] = NAN;
  if (isfinite(m[APPARENT]) && mass > 0.0) {
    log_reading(s, mass, m[APPARENT]);
  }
  if (s->log_n >= FIT_MIN && isfinite(rho_b) && m[APPARENT] < BENT * mass) {
    const double ms = fit_saturation(s);
    m[K_FIT] = rho_b * GRN_PI * rt * rt * rt / (2.0 * w->param[WALL_MU] * ms);
    m[LAW] = law(mass, ms);
  }
  grn__common_measures(w);
  w->meas.state = grn__plain_state(w);
}

/* The wall takes a new friction at once; the fit starts again from the next reading, so that K
 * and the law never mix two settings (the scale's reading itself tells the state now). */
static void janssen_param_set(grn_world *w, int index, double value) {
  if (index == WALL_MU) {
    w->geom.mu_wall = value;
  }
  st(w)->log_n = st(w)->skip = 0;
  st(w)->stride = 1;
}

/* Restore (issue 16): the counts within their ranges, the sums and the log finite. */
static bool janssen_state_ok(const grn_world *w) {
  const janssen_state *s = st(w);
  bool ok = s->poured >= 0 && s->poured <= w->n_target && s->owed >= 0.0 &&
            s->owed <= GRN_STATE_COUNT && s->load_sum >= 0.0 && s->load_sum <= 1e30 &&
            s->load_steps >= 0 && s->load_steps <= GRN_STATE_COUNT && s->log_n >= 0 &&
            s->log_n <= LOG && s->stride >= 1 && s->stride <= GRN_STATE_COUNT && s->skip >= 0 &&
            s->skip < s->stride;
  for (int k = 0; ok && k < LOG; k++) {
    ok = grn__within(s->log_m[k], 1e30) && grn__within(s->log_a[k], 1e30);
  }
  return ok;
}

static const grn_param_info janssen_params[JANSSEN_PARAMS] = {
    GRANULAR_PARAMS(0.0),
    [DIAMETER] = {"diameter", "m", 1.2, 3.0, 2.2, false, true,
                  "tube diameter (the tube is built with it: 11 grain diameters by default)"},
    [WALL_MU] = {"wall_mu", "", 0.1, 1.0, 0.5, false, false, "friction of the tube's wall"},
    [RATE] = {"rate", "grains/s", 6.0, 600.0, 60.0, false, false, "fill rate"}};
static const grn_measure_info janssen_measures[JANSSEN_MEASURES] = {
    M_T,
    M_OVER_MAX,
    M_FLOWING,
    M_ALIVE,
    [POURED] = {"poured_mass", "kg", "poured mass", false, false},
    [APPARENT] = {"apparent_mass", "kg", "apparent mass (the scale's reading)", false, false},
    [LAW] = {"janssen_mass", "kg", "Janssen's law, K fitted", true, false},
    [K_FIT] = {"janssen_k", "", "Janssen coefficient K (fitted)", true, false},
    [BULK_DENSITY] = {"bulk_density", "kg/m^3", "bulk density", false, false}};
static const char *const janssen_actions[] = {"tool", "tool_off", "reset"};
static const grn_plot_info janssen_plots[] = {
    PLOT("Mass, kg: poured, on the scale (dashed: Janssen's law)", S(POURED), S(APPARENT),
         REF(LAW)),
    PLOT("Janssen coefficient K, fitted", S(K_FIT))};

const grn_scene grn__scene_janssen = {
    .info = {"janssen", GRN_MODEL_GRANULAR,
             "grains poured into a tube stand on a scale: its reading saturates as the walls "
             "carry the rest (the Janssen effect)",
             LEN(janssen_params), janssen_params, LEN(janssen_actions), janssen_actions,
             LEN(janssen_measures), janssen_measures, PLOTS(janssen_plots)},
    .state_size = sizeof(janssen_state),
    .setup = janssen_setup,
    .script = janssen_script,
    .measure = janssen_measure,
    .calm = 0.02,
    .busy = janssen_busy,
    .param_set = janssen_param_set,
    .state_ok = janssen_state_ok};
