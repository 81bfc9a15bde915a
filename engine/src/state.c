/* Save and restore of the complete world state, contact history included, so that a restored run
 * continues bit-identically (spec §5). Saved states are outside input: restore checks everything
 * that could index memory before using it. */
#include "model.h"
#include "scene.h"

#include <string.h>

static const char magic[8] = {'G', 'R', 'N', 'S', 'T', 'A', 'T', 'E'};

typedef struct stream {
  unsigned char *out;      /* NULL while only counting */
  const unsigned char *in; /* restore */
  size_t size, pos;
  bool ok;
} stream;

static void put(stream *s, const void *p, size_t n) {
  if (s->out && n > 0) { /* n = 0 may come with NULL: bodies have no pair arrays */
    if (s->pos + n > s->size) {
      s->ok = false;
      return;
    }
    memcpy(s->out + s->pos, p, n);
  }
  s->pos += n;
}

static void get(stream *s, void *p, size_t n) {
  if (n == 0) {
    return;
  }
  if (!s->ok || n > s->size - s->pos) {
    s->ok = false;
    memset(p, 0, n);
    return;
  }
  memcpy(p, s->in + s->pos, n);
  s->pos += n;
}

/* Everything scalar that evolves, in one list so save and restore cannot drift apart. */
// clang-format off
#define SCALARS(X)                                                                                 \
  X(seed) X(n_target) X(fill) X(gravity) X(steps) X(t) X(settle.drag) X(settle.until)               \
  X(settle.calm) X(pairs.disp) X(pairs.dirty) X(fig.vmax) X(fig.over_max) X(fig.flowing) X(fig.alive) X(fig.contacts)              \
  X(pairs.rebuilds) X(sleep.still) X(sleep.on) X(next_id) X(rng) X(geom) X(meas.state) X(meas.line) X(maps.hnx) X(maps.hnz) X(maps.hx0) X(maps.hz0)   \
  X(n) X(pairs.nl) X(pairs.m) X(pairs.moved) X(pairs.since) X(pairs.relisted) X(pairs.relists)
// clang-format on

/* Parameters and measurements go by name (issue 34): a count, then for each its name's length
 * (one byte), the name and the value. A scene that gains one still reads its older states. */
_Static_assert(GRN_MEASURE_MAX <= 32 && GRN_PARAM_MAX <= 32, "get_table marks names in 32 bits");

static void put_table(stream *s, int count, const char *const names[], const double values[]) {
  const uint32_t n = (uint32_t)count;
  put(s, &n, sizeof n);
  for (int i = 0; i < count; i++) {
    const uint8_t len = (uint8_t)strlen(names[i]);
    put(s, &len, 1);
    put(s, names[i], len);
    put(s, &values[i], sizeof values[i]);
  }
}

/* Reads a table into values[], each entry where the scene's list has that name (find). A name it
 * lacks, or one given twice, is refused; one the table lacks keeps the value values[] held. */
static bool get_table(stream *s, const grn_scene_info *scene,
                      int (*find)(const grn_scene_info *, const char *), int most,
                      double values[]) {
  uint32_t n = 0;
  get(s, &n, sizeof n);
  uint32_t seen = 0;
  if (!s->ok || n > (uint32_t)most) {
    return false;
  }
  for (uint32_t e = 0; e < n; e++) {
    uint8_t len = 0;
    char name[33];
    get(s, &len, 1);
    if (len == 0 || len >= sizeof name) {
      return false;
    }
    get(s, name, len);
    name[len] = '\0';
    const int k = s->ok ? find(scene, name) : -1;
    if (k < 0 || (seen & (1u << k))) {
      return false;
    }
    seen |= 1u << k;
    get(s, &values[k], sizeof values[k]);
  }
  return s->ok;
}

static void write_all(const grn_world *w, stream *s) {
  const uint32_t version = GRN_ENGINE_STATE_VERSION;
  const uint32_t name_len = (uint32_t)strlen(w->scene->name);
  put(s, magic, sizeof magic);
  put(s, &version, sizeof version);
  put(s, &name_len, sizeof name_len);
  put(s, w->scene->name, name_len);
  const char
      *names[GRN_PARAM_MAX > GRN_MEASURE_MAX ? GRN_PARAM_MAX : GRN_MEASURE_MAX]; /* either list */
  for (int i = 0; i < w->scene->param_count; i++) {
    names[i] = w->scene->params[i].name;
  }
  put_table(s, w->scene->param_count, names, w->param);
  for (int i = 0; i < w->scene->measure_count; i++) {
    names[i] = w->scene->measures[i].name;
  }
  put_table(s, w->scene->measure_count, names, w->meas.value);
#define X(f) put(s, &w->f, sizeof w->f);
  SCALARS(X)
#undef X
  if (w->model->state_size > 0) { /* the model's saved block (model.h) */
    put(s, (const char *)w + w->model->state_offset, w->model->state_size);
  }
  put(s, w->ss, w->impl->state_size); /* the scene's block (scene.h) */
  const size_t n = (size_t)w->n, m = (size_t)w->pairs.m;
  put(s, w->pos, sizeof(grn_vec3) * n);
  put(s, w->vel, sizeof(grn_vec3) * n);
  put(s, w->spin, sizeof(grn_vec3) * n);
  put(s, w->rad, sizeof(double) * n);
  put(s, w->inv_m, sizeof(double) * n);
  put(s, w->inv_i, sizeof(double) * n);
  put(s, w->hf, GRN_HF * sizeof(double) * n);
  put(s, w->id, sizeof(uint32_t) * n);
  put(s, w->flags, n);
  put(s, w->pairs.ref, sizeof(grn_vec3) * n);
  put(s, w->pairs.slack, sizeof(double) * n);
  put(s, w->pairs.pstart, sizeof(int32_t) * ((size_t)w->pairs.nl + 1));
  put(s, w->pairs.pb, sizeof(int32_t) * m);
  put(s, w->pairs.hist, sizeof(grn_hist) * m);
  put(s, w->pairs.pfn, sizeof(float) * m);
}

size_t grn_world_save_size(const grn_world *w) {
  stream s = {0};
  s.ok = true;
  write_all(w, &s);
  return s.pos;
}

int grn_world_save(const grn_world *w, void *buf, size_t size, grn_error *err) {
  const size_t need = grn_world_save_size(w);
  if (!buf || size < need) {
    return grn__fail(err, GRN_E_BUFFER, "size", "state needs %zu bytes, buffer has %zu", need,
                     size);
  }
  stream s = {.out = buf, .size = size, .ok = true};
  write_all(w, &s);
  return GRN_OK;
}

/* The world's own scalars (issue 16): every double finite and within the bounds of scene.h, every
 * count in range, every enum a member. Returns what is wrong, NULL when sane. Fields not checked
 * here are safe at any value: seed, rebuilds, relists and next_id are unsigned counters (wrapping
 * is defined, ids only order grains and feed the digest); since and relisted only decide whether
 * the next update rebuilds (relist.c compares them in 64 bits); rng may hold any bits (xoshiro
 * stuck at zero still returns numbers in [0, 1)); meas.value and meas.line may hold anything (NaN
 * is their normal "none", and the next sample overwrites them); the model's block (nbody.e0) is
 * measured again when it is not finite (gravity.c). */
static const char *scalars_bad(const grn_world *w) {
  const double far = GRN_STATE_SIZE;
  /* t is steps·H after every step (world.c) */
  if (w->t != (double)w->steps * GRN_H || !(w->settle.drag >= 0.0 && w->settle.drag <= far) ||
      !(w->settle.until >= w->settle.drag && w->settle.until <= far) ||
      !(w->settle.calm >= 0.0 && w->settle.calm <= far) ||
      !(w->pairs.disp >= 0.0 && w->pairs.disp <= far) ||
      !(w->fig.vmax >= 0.0 && w->fig.vmax <= GRN_STATE_FAST) ||
      !grn__within(w->fig.over_max, far) || !(w->fig.flowing >= 0.0 && w->fig.flowing <= 1.0) ||
      !(w->sleep.still >= 0.0 && w->sleep.still <= far) || w->fig.contacts < 0 ||
      w->pairs.since < 0 || w->pairs.relisted < 0) {
    return "bad clock or counters";
  }
  if (!grn__within(w->gravity.x, GRN_G) || !grn__within(w->gravity.y, GRN_G) ||
      !grn__within(w->gravity.z, GRN_G)) {
    return "bad gravity";
  }
  const grn_geom *g = &w->geom;
  /* walls and floor extents may be infinite (none); nothing else may */
  const double open[] = {g->floor_y, g->fx0,  g->fx1,  g->fz0, g->fz1,
                         g->xmin,    g->xmax, g->zmin, g->zmax};
  for (size_t k = 0; k < sizeof open / sizeof open[0]; k++) {
    if (!(isinf(open[k]) || grn__within(open[k], far))) {
      return "bad walls";
    }
  }
  const double len[] = {g->silo_r, g->drum_r, g->hole_r, g->tool_r};
  for (size_t k = 0; k < sizeof len / sizeof len[0]; k++) {
    if (!(len[k] >= 0.0 && len[k] <= far)) {
      return "bad geometry";
    }
  }
  const double at[] = {g->drum_y,   g->plate_y,  g->dam_x,   g->dam_edge,
                       g->tool_p.x, g->tool_p.y, g->tool_p.z};
  for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
    if (!grn__within(at[k], GRN_STATE_FAR)) { /* the tool and the dam edge move */
      return "bad geometry";
    }
  }
  const double mu[] = {g->mu_wall, g->mu_floor, g->mur_floor, g->drum_mu};
  for (size_t k = 0; k < sizeof mu / sizeof mu[0]; k++) {
    if (!(mu[k] >= 0.0 && mu[k] <= 100.0)) {
      return "bad friction";
    }
  }
  if (!grn__within(g->drum_w, 1e3) || !grn__within(g->tool_v.x, GRN_VMAX) ||
      !grn__within(g->tool_v.y, GRN_VMAX) || !grn__within(g->tool_v.z, GRN_VMAX) ||
      !(g->kill_y >= -GRN_STATE_FAR && g->kill_y <= far)) {
    return "bad geometry";
  }
  if ((int)w->meas.state < 0 || w->meas.state > GRN_STATE_DRAINED) {
    return "bad measurement state";
  }
  if (!grn__within(w->maps.hx0, far) || !grn__within(w->maps.hz0, far)) {
    return "bad height map";
  }
  return NULL;
}

/* Grain i (issue 16): finite and within the bounds of scene.h, only known flags. */
static bool grain_ok(const grn_world *w, int i) {
  const grn_vec3 p = w->pos[i], v = w->vel[i], s = w->spin[i];
  const double far = GRN_STATE_FAR, fast = GRN_STATE_FAST, spin = GRN_STATE_SPIN;
  for (int k = 0; k < GRN_HF; k++) {
    if (!grn__within(w->hf[GRN_HF * (size_t)i + k], GRN_STATE_SIZE)) {
      return false;
    }
  }
  /* the slack bounds how far a fast grain's rebuild looks for partners (pairs.c) */
  const grn_vec3 r = w->pairs.ref[i];
  if (!grn__within(r.x, far) || !grn__within(r.y, far) || !grn__within(r.z, far) ||
      !(w->pairs.slack[i] >= 0.0 && w->pairs.slack[i] <= GRN_STATE_SLACK)) {
    return false;
  }
  return grn__within(p.x, far) && grn__within(p.y, far) && grn__within(p.z, far) &&
         grn__within(v.x, fast) && grn__within(v.y, fast) && grn__within(v.z, fast) &&
         grn__within(s.x, spin) && grn__within(s.y, spin) && grn__within(s.z, spin) &&
         (w->flags[i] & ~(GRN_F_ALIVE | GRN_F_FIXED | GRN_F_FLOOR | GRN_F_WALL)) == 0;
}

static int corrupt(grn_world *w, grn_error *err, const char *what) {
  grn_world_destroy(w);
  return grn__fail(err, GRN_E_BAD_STATE, "state", "saved state rejected: %s", what);
}

int grn_world_restore(const grn_world_def *def, const void *buf, size_t size, grn_world **out,
                      grn_error *err) {
  grn_world_def local;
  if (def) {
    local = *def;
    local.scene = grn_scene_at(0);
    local.grains = 0;
    local.fill = GRN_FILL_SCENE;
    if (local.threads < 1 || local.threads > 256) {
      return grn__fail(err, GRN_E_RANGE, "threads", "threads = %d is outside 1..256",
                       local.threads);
    }
    if ((local.alloc == NULL) != (local.free == NULL)) {
      return grn__fail(err, GRN_E_INVALID, "alloc", "alloc and free hooks go together");
    }
  }
  if (!buf) {
    return grn__fail(err, GRN_E_BAD_STATE, "state", "no state given");
  }
  stream s = {.in = buf, .size = size, .ok = true};
  char mg[8];
  uint32_t version = 0, name_len = 0;
  char name[64];
  get(&s, mg, sizeof mg);
  get(&s, &version, sizeof version);
  get(&s, &name_len, sizeof name_len);
  if (!s.ok || memcmp(mg, magic, sizeof mg) != 0) {
    return grn__fail(err, GRN_E_BAD_STATE, "state", "not a grainlab state");
  }
  if (version != GRN_ENGINE_STATE_VERSION) {
    return grn__fail(err, GRN_E_BAD_STATE, "state", "state version %u, engine reads %u", version,
                     GRN_ENGINE_STATE_VERSION);
  }
  if (name_len == 0 || name_len >= sizeof name) {
    return grn__fail(err, GRN_E_BAD_STATE, "state", "bad scene name");
  }
  get(&s, name, name_len);
  name[name_len] = '\0';
  const grn_scene_info *scene = grn_scene_find(name);
  if (!s.ok || !scene) {
    return grn__fail(err, GRN_E_BAD_STATE, "state", "unknown scene in state");
  }

  grn_world *w = grn__world_new(def ? &local : NULL);
  if (!w) {
    return grn__fail(err, GRN_E_NOMEM, "", "out of memory restoring the world");
  }
  w->scene = scene;
  w->impl = grn__scene_impl(scene);
  w->model = grn__model_of(scene->model);
  grn__bind(w);
  /* a parameter the state lacks (one added since) takes its default, a measurement NaN */
  for (int i = 0; i < scene->param_count; i++) {
    w->param[i] = scene->params[i].def;
  }
  for (int k = 0; k < GRN_MEASURE_MAX; k++) {
    w->meas.value[k] = NAN;
  }
  w->meas.count = scene->measure_count;
  if (!get_table(&s, scene, grn_scene_param_index, GRN_PARAM_MAX, w->param) ||
      !get_table(&s, scene, grn_scene_measure_index, GRN_MEASURE_MAX, w->meas.value)) {
    return corrupt(w, err, s.ok ? "a parameter or measurement unknown to the scene" : "truncated");
  }
#define X(f) get(&s, &w->f, sizeof w->f);
  SCALARS(X)
#undef X
  if (w->model->state_size > 0) {
    get(&s, (char *)w + w->model->state_offset, w->model->state_size);
  }
  if (grn__scene_state(w) != GRN_OK) {
    return corrupt(w, err, "out of memory");
  }
  get(&s, w->ss, w->impl->state_size);
  if (!s.ok) {
    return corrupt(w, err, "truncated");
  }
  for (int i = 0; i < scene->param_count; i++) {
    if (grn__check_param(scene, i, w->param[i], NULL) != GRN_OK) {
      return corrupt(w, err, "parameter out of range");
    }
  }
  /* a bool holding anything but 0 or 1 is undefined behaviour to read: check the bytes */
  const bool *flags_[] = {&w->pairs.dirty, &w->pairs.moved, &w->sleep.on,
                          &w->geom.box,    &w->geom.plate,  &w->geom.plugged,
                          &w->geom.dam,    &w->geom.tool,   &w->geom.silo_rough};
  for (size_t k = 0; k < sizeof flags_ / sizeof flags_[0]; k++) {
    if (!grn__bool_ok(flags_[k])) {
      return corrupt(w, err, "bad flag");
    }
  }
  const char *bad = scalars_bad(w);
  if (bad) {
    return corrupt(w, err, bad);
  }
  if (w->impl->state_ok && !w->impl->state_ok(w)) {
    return corrupt(w, err, "bad scene state");
  }
  const int n = w->n, nl = w->pairs.nl, m = w->pairs.m, hnx = w->maps.hnx, hnz = w->maps.hnz;
  if (n < 0 || n > GRN_MAX_GRAINS || nl < 0 || nl > n || m < 0 || w->n_target < 0 ||
      w->n_target > GRN_MAX_GRAINS || hnx < 0 || hnz < 0 || hnx > 20000 || hnz > 20000 ||
      (int64_t)hnx * hnz > 4000000 || !isfinite(w->maps.hx0) || !isfinite(w->maps.hz0) ||
      (w->fill != GRN_FILL_SCENE && w->fill != GRN_FILL_BED)) {
    return corrupt(w, err, "bad sizes");
  }
  const size_t need = (size_t)n * (3 * sizeof(grn_vec3) + (3 + GRN_HF) * sizeof(double) + 5) +
                      (size_t)m * (sizeof(int32_t) + sizeof(grn_hist) + sizeof(float));
  if (need > size - s.pos) {
    return corrupt(w, err, "truncated arrays");
  }
  /* reset derived sizes before growing: these fields were just read as the saved values */
  w->n = 0;
  w->pairs.nl = 0;
  w->pairs.m = 0;
  w->maps.hnx = w->maps.hnz = 0;
  if (grn__reserve_grains(w, n > 0 ? n : 1) != GRN_OK ||
      grn__hmap_init(w, w->maps.hx0, w->maps.hz0, hnx, hnz) != GRN_OK) {
    return corrupt(w, err, "out of memory");
  }
  w->n = n;
  get(&s, w->pos, sizeof(grn_vec3) * (size_t)n);
  get(&s, w->vel, sizeof(grn_vec3) * (size_t)n);
  get(&s, w->spin, sizeof(grn_vec3) * (size_t)n);
  get(&s, w->rad, sizeof(double) * (size_t)n);
  get(&s, w->inv_m, sizeof(double) * (size_t)n);
  get(&s, w->inv_i, sizeof(double) * (size_t)n);
  get(&s, w->hf, GRN_HF * sizeof(double) * (size_t)n);
  get(&s, w->id, sizeof(uint32_t) * (size_t)n);
  get(&s, w->flags, (size_t)n);
  get(&s, w->pairs.ref, sizeof(grn_vec3) * (size_t)n);
  get(&s, w->pairs.slack, sizeof(double) * (size_t)n);
  get(&s, w->pairs.pstart, sizeof(int32_t) * ((size_t)nl + 1));
  if (!s.ok || w->pairs.pstart[0] != 0 || w->pairs.pstart[nl] != m) {
    return corrupt(w, err, "bad pair index");
  }
  for (int i = 0; i < nl; i++) {
    if (w->pairs.pstart[i + 1] < w->pairs.pstart[i]) {
      return corrupt(w, err, "bad pair index");
    }
  }
  int alive = 0;
  for (int i = 0; i < n; i++) {
    if (!(w->rad[i] > 0.0 && w->rad[i] < 1.0 && w->inv_m[i] > 0.0 && w->inv_i[i] > 0.0 &&
          isfinite(w->inv_m[i] + w->inv_i[i]))) {
      return corrupt(w, err, "bad grain size or mass");
    }
    /* a non-finite grain would poison its neighbours' forces before it could be removed; one
     * too far or too fast would overflow the pair grid (scene.h) */
    if (!grain_ok(w, i)) {
      return corrupt(w, err, "grain state out of bounds");
    }
    alive += (w->flags[i] & GRN_F_ALIVE) != 0;
  }
  if (alive != w->fig.alive) { /* the world counts its alive grains on every add and kill */
    return corrupt(w, err, "bad alive count");
  }
  /* the pair arrays: the rebuild path's growth keeps all five the same capacity */
  {
    const int saved_m = m;
    w->pairs.mcap = 0;
    if (grn__grow_pairs(w, saved_m > 0 ? saved_m : 1) != GRN_OK) {
      return corrupt(w, err, "out of memory");
    }
  }
  get(&s, w->pairs.pb, sizeof(int32_t) * (size_t)m);
  get(&s, w->pairs.hist, sizeof(grn_hist) * (size_t)m);
  get(&s, w->pairs.pfn, sizeof(float) * (size_t)m);
  if (!s.ok || s.pos != size) {
    return corrupt(w, err, s.ok ? "trailing bytes" : "truncated");
  }
  for (int a = 0; a < nl; a++) {
    for (int p = w->pairs.pstart[a]; p < w->pairs.pstart[a + 1]; p++) {
      if (w->pairs.pb[p] < 0 || w->pairs.pb[p] >= nl || w->pairs.pb[p] == a) {
        return corrupt(w, err, "bad pair partner");
      }
    }
  }
  for (int p = 0; p < m; p++) { /* a non-finite spring or force would poison both grains */
    const grn_hist *h = &w->pairs.hist[p];
    if (!isfinite(h->u[0] + h->u[1] + h->u[2] + h->th[0] + h->th[1] + h->th[2] + w->pairs.pfn[p])) {
      return corrupt(w, err, "non-finite contact history");
    }
  }
  w->pairs.nl = nl;
  w->pairs.m = m;
  /* the force rows are not saved: every row is recomputed before it is read */
  grn__rebuild_refs(w);
  grn__model_init(w);
  if (w->model->near) {
    w->gran.near.valid = false; /* made again before the next step; it changes no result */
  }
  *out = w;
  return GRN_OK;
}
