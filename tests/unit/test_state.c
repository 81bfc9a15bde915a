/* Determinism and state: 1 and 2 threads give the same bits, save → restore continues to the
 * same digest, corrupt states are refused, an older state without a newer parameter restores, reset
 * starts over exactly, sleep changes nothing, and the allocator's books balance (zero after
 * destroy, no allocation in a warmed-up step). */
#include "../support/check.h"
#include "../support/settled.h"
#include "internal.h"

#include <string.h>

typedef struct counter {
  long long bytes, allocs;
} counter;

static void *count_alloc(size_t size, void *ctx) {
  counter *c = ctx;
  c->bytes += (long long)size;
  c->allocs++;
  return malloc(size);
}

static void count_free(void *p, size_t size, void *ctx) {
  counter *c = ctx;
  c->bytes -= (long long)size;
  free(p);
}

static grn_world *make(const char *scene, int grains, int threads, grn_fill fill, counter *c) {
  grn_world_def d;
  grn_error e;
  grn_world_def_default(&d, scene, &e);
  d.grains = grains;
  d.threads = threads;
  d.fill = fill;
  d.seed = 42;
  if (c) {
    d.alloc = count_alloc;
    d.free = count_free;
    d.alloc_ctx = c;
  }
  grn_world *w = NULL;
  if (grn_world_create(&d, &w, &e) != GRN_OK) {
    printf("create failed: %s\n", e.message);
    exit(1);
  }
  return w;
}

static void threads(void) {
  grn_world *a = make("pour", 1500, 1, GRN_FILL_SCENE, NULL);
  grn_world *b = make("pour", 1500, 2, GRN_FILL_SCENE, NULL);
  grn_world_step(a, 6 * 240);
  grn_world_step(b, 6 * 240);
  printf("pour digests: 1 thread %016llx, 2 threads %016llx\n",
         (unsigned long long)grn_world_digest(a), (unsigned long long)grn_world_digest(b));
  CHECK("pour: 1 and 2 threads give the same digest", grn_world_digest(a) == grn_world_digest(b));
  grn_world_destroy(a);
  grn_world_destroy(b);
  a = make("pour", 2000, 1, GRN_FILL_BED, NULL);
  b = make("pour", 2000, 2, GRN_FILL_BED, NULL);
  grn_world_step(a, 3 * 240);
  grn_world_step(b, 3 * 240);
  CHECK("bed: 1 and 2 threads give the same digest", grn_world_digest(a) == grn_world_digest(b));
  grn_world_destroy(a);
  grn_world_destroy(b);
}

/* The AVX2 kernel must give the scalar reference's bits (where the CPU has AVX2): in a wet pour
 * (bridges and contacts both), in a draining silo (re-listings), and in an avalanche, where a
 * quarter of the kernel's groups of four have a pair sliding at its Coulomb limit and half a pair
 * rolling at its limit, while the others skip that part of the law. */
static void simd_equals_scalar(const char *scene, int grains, grn_fill fill, bool wet,
                               const char *action) {
  grn_world_def d;
  grn_error e;
  grn_world *w[2];
  for (int k = 0; k < 2; k++) {
    grn_world_def_default(&d, scene, &e);
    d.grains = grains;
    d.fill = fill;
    d.simd = k == 1;
    if (wet) {
      grn_world_def_set(&d, "coh", 80, &e); /* wet: bridges and contacts both */
    }
    grn_world_create(&d, &w[k], &e);
    if (action) {
      settle_world(w[k]);
      act_or_exit(w[k], action);
    }
    grn_world_step(w[k], (action ? 3 : 6) * 240);
  }
  printf("AVX2 kernel in use: %s\n", w[1]->opt.simd ? "yes" : "no (CPU or build without it)");
  char name[128];
  snprintf(name, sizeof name, "%s%s%s: SIMD and scalar digests agree", scene,
           action ? " after " : "", action ? action : (wet ? ", wet" : ""));
  CHECK(name, grn_world_digest(w[0]) == grn_world_digest(w[1]));
  grn_world_destroy(w[0]);
  grn_world_destroy(w[1]);
}

/* The fused sweep (near list, rows added to running sums as they are made, grains integrated
 * behind the force front, bands at thread boundaries), and the two passes over the near list that
 * stand in for it when thread chunks are too short, must give the bits of the reference passes
 * over the whole pair list and a full table, for one thread and for two. The bed settles from
 * its lattice, so grains move and the near list is refreshed many times; with `wet` the grains
 * get liquid bridges after 1 s, which widens every reach (the near list must follow at once). */
static void fused_equals_reference(int grains, int threads, bool wet, bool fused) {
  grn_world *w[2];
  for (int k = 0; k < 2; k++) {
    w[k] = make("pour", grains, threads, GRN_FILL_BED, NULL);
    w[k]->gran.fused.off = k == 1;
    w[k]->pairs.dirty = true; /* re-plan with the flag */
  }
  bool used = false, subset = false;
  for (int s = 0; s < 2 * 240; s++) {
    if (wet && s == 240) {
      grn_error e;
      for (int k = 0; k < 2; k++) {
        grn_world_set_param(w[k], "coh", 120, &e);
      }
    }
    grn_world_step(w[0], 1);
    grn_world_step(w[1], 1);
    /* fused, or (chunks too short for its bands) the two passes over the near list */
    used = used || (fused ? w[0]->gran.fused.on : (w[0]->gran.near.valid && !w[0]->gran.fused.on));
    /* the near list leaves pairs out: without it the test would not test it */
    subset = subset || (w[0]->gran.near.valid && w[0]->gran.near.m < w[0]->pairs.m / 2);
  }
  char name[128];
  snprintf(name, sizeof name, "%s step used, near list < half the pairs (%d grains, %d threads)",
           fused ? "fused" : "two-pass near", grains, threads);
  CHECK(name, used && subset && !w[1]->gran.fused.on);
  snprintf(name, sizeof name, "fused and reference digests agree (%d grains, %d threads%s)", grains,
           threads, wet ? ", wet from 1 s" : "");
  CHECK(name, grn_world_digest(w[0]) == grn_world_digest(w[1]));
  grn_world_destroy(w[0]);
  grn_world_destroy(w[1]);
}

/* The same in a flow, where the near list gives each fast grain its own allowance (a silo's grains
 * falling through the hole, a tilted bed's avalanche): a fast grain past its allowance, or K steps
 * gone, must bring the refresh before any pair it left out can touch. */
static void flow_equals_reference(const char *scene, grn_fill fill, const char *action, int grains,
                                  int threads) {
  grn_world *w[2];
  for (int k = 0; k < 2; k++) {
    w[k] = make(scene, grains, threads, fill, NULL);
    w[k]->gran.fused.off = k == 1;
    w[k]->pairs.dirty = true;
    settle_world(w[k]);
    act_or_exit(w[k], action);
  }
  bool own = false, fused = false;
  double vpeak = 0.0;
  const uint64_t r0 = w[0]->gran.near.refreshes, s0 = w[0]->gran.fused.sieved;
  for (int s = 0; s < 3 * 240; s++) {
    grn_world_step(w[0], 1);
    grn_world_step(w[1], 1);
    /* fast grains with their own allowances while the list leaves pairs out */
    own = own ||
          (w[0]->gran.near.valid && w[0]->gran.near.fast > 0 && w[0]->gran.near.m < w[0]->pairs.m);
    vpeak = w[0]->fig.vmax > vpeak ? w[0]->fig.vmax : vpeak;
    fused = fused || w[0]->gran.fused.on;
  }
  char name[160];
  snprintf(name, sizeof name,
           "%s after %s: grains up to %.1f m/s, fast ones kept their own allowances (%llu "
           "refreshes, %llu rebuilds)",
           scene, action, vpeak, (unsigned long long)(w[0]->gran.near.refreshes - r0),
           (unsigned long long)w[0]->pairs.rebuilds);
  CHECK(name, own && vpeak > 1.0);
  if (threads == 1) { /* one thread fuses whatever the span of the flow's pairs */
    snprintf(name, sizeof name, "%s after %s: the fused step ran", scene, action);
    CHECK(name, fused);
  }
  if (fused && w[0]->opt.simd) { /* a flow is where the kernel sieves its near pairs */
    snprintf(name, sizeof name, "%s after %s: the kernel sieved the near pairs (%llu steps)", scene,
             action, (unsigned long long)(w[0]->gran.fused.sieved - s0));
    CHECK(name, w[0]->gran.fused.sieved > s0);
  }
  snprintf(name, sizeof name, "%s after %s: fused and reference digests agree (%d threads)", scene,
           action, threads);
  CHECK(name, grn_world_digest(w[0]) == grn_world_digest(w[1]));
  grn_world_destroy(w[0]);
  grn_world_destroy(w[1]);
}

static void save_restore(void) {
  grn_world *a = make("pour", 1200, 2, GRN_FILL_SCENE, NULL);
  grn_world_step(a, 3 * 240 + 17); /* mid-pour, between measurements */
  const size_t size = grn_world_save_size(a);
  unsigned char *buf = malloc(size);
  grn_error e;
  CHECK("save", grn_world_save(a, buf, size, &e) == GRN_OK);
  CHECK("save into a short buffer is refused",
        grn_world_save(a, buf, size - 1, &e) == GRN_E_BUFFER);
  grn_world_def d;
  grn_world_def_default(&d, "pour", &e);
  d.threads = 1;
  grn_world *b = NULL;
  CHECK("restore", grn_world_restore(&d, buf, size, &b, &e) == GRN_OK);
  CHECK("restored digest equals the saved world's", grn_world_digest(a) == grn_world_digest(b));
  grn_world_step(a, 3 * 240);
  grn_world_step(b, 3 * 240);
  CHECK("restored run continues to the same digest", grn_world_digest(a) == grn_world_digest(b));
  grn_measurements ma, mb;
  grn_world_measurements(a, &ma);
  grn_world_measurements(b, &mb);
  CHECK("and the same measurements", memcmp(ma.value, mb.value, sizeof ma.value) == 0);

  /* corrupt states: refused with GRN_E_BAD_STATE, never a crash */
  grn_world *c = NULL;
  int refused = 0, tried = 0;
  const size_t cuts[] = {0, 4, 8, 20, size / 3, size / 2, size - 1};
  for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
    tried++;
    refused += grn_world_restore(NULL, buf, cuts[k], &c, &e) == GRN_E_BAD_STATE;
  }
  CHECK_NEAR("truncated states refused", refused, tried, 0);
  unsigned char *bad = malloc(size + 8);
  memcpy(bad, buf, size);
  memset(bad + size, 0, 8);
  CHECK("trailing bytes refused",
        grn_world_restore(NULL, bad, size + 8, &c, &e) == GRN_E_BAD_STATE);
  bad[0] = 'X';
  CHECK("wrong magic refused", grn_world_restore(NULL, bad, size, &c, &e) == GRN_E_BAD_STATE);
  /* flip bytes all over: either refused or a valid world, never memory misuse (ASan) */
  uint64_t rng = 12345;
  int ok = 0, no = 0;
  for (int t = 0; t < 300; t++) {
    memcpy(bad, buf, size);
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    const size_t at = (size_t)(rng >> 33) % size;
    bad[at] ^= (unsigned char)(1u + (rng >> 24) % 255u);
    if (grn_world_restore(NULL, bad, size, &c, &e) == GRN_OK) {
      grn_world_step(c, 2);
      grn_world_destroy(c);
      ok++;
    } else {
      no++;
    }
  }
  printf("byte flips: %d restored, %d refused\n", ok, no);
  CHECK_NEAR("every flipped state handled", ok + no, 300, 0);
  free(bad);
  free(buf);
  grn_world_destroy(a);
  grn_world_destroy(b);
}

static void reset_and_sleep(void) {
  grn_world *a = make("pour", 300, 1, GRN_FILL_SCENE, NULL);
  grn_world *b = make("pour", 300, 1, GRN_FILL_SCENE, NULL);
  grn_world_step(a, 500);
  grn_action act;
  grn_error e;
  grn_action_parse("reset", &act, &e);
  CHECK("reset", grn_world_act(a, &act, &e) == GRN_OK);
  grn_world_step(a, 240);
  grn_world_step(b, 240);
  CHECK("reset starts over exactly", grn_world_digest(a) == grn_world_digest(b));
  /* run to sleep, then stepping changes nothing, and an action wakes it with state intact */
  for (int s = 0; s < 120 && !grn_world_asleep(b); s++) {
    grn_world_step(b, 60);
  }
  CHECK("a settled pile falls asleep", grn_world_asleep(b));
  const uint64_t d0 = grn_world_digest(b);
  grn_world_step(b, 240);
  CHECK("a sleeping world does not change", grn_world_digest(b) == d0);
  grn_action_parse("spout:1,1", &act, &e);
  grn_world_act(b, &act, &e);
  CHECK("an action wakes it", !grn_world_asleep(b));
  CHECK("waking changes no state", grn_world_digest(b) == d0);
  grn_world_destroy(a);
  grn_world_destroy(b);
}

static void allocation(void) {
  counter c = {0, 0};
  grn_world *w = make("pour", 1000, 2, GRN_FILL_BED, &c);
  grn_world_step(w, 4 * 240);
  const long long before = c.allocs;
  grn_world_step(w, 240);
  CHECK_NEAR("allocations in 240 warmed-up steps", (double)(c.allocs - before), 0, 0);
  grn_world_stats st;
  grn_world_get_stats(w, &st);
  CHECK_NEAR("engine's own byte count matches the allocator's", (double)st.bytes_live,
             (double)c.bytes, 0);
  grn_world_destroy(w);
  CHECK_NEAR("bytes outstanding after destroy", (double)c.bytes, 0, 0);
  /* a flowing silo on one thread updates its list every few steps (rebuilt or re-listed); its
   * fused step's buffers are kept through them (only large ones are let go at a rebuild), so what
   * it allocates is its lists growing now and then, not three buffers a rebuild */
  counter f = {0, 0};
  w = make("silo", 1500, 1, GRN_FILL_SCENE, &f);
  settle_world(w);
  act_or_exit(w, "open_hole");
  grn_world_step(w, 2 * 240);
  const long long fa = f.allocs;
  const uint64_t updates = w->pairs.rebuilds + w->pairs.relists;
  grn_world_step(w, 240);
  const long long made = (long long)(w->pairs.rebuilds + w->pairs.relists - updates);
  printf("flowing silo: %lld list updates in 240 steps\n", made);
  CHECK("the flowing silo updated its list in 240 steps", made > 10);
  printf("flowing silo: %lld allocations in 240 steps\n", f.allocs - fa);
  CHECK("a flowing silo allocates less than once in five list updates", 5 * (f.allocs - fa) < made);
  /* saved between two rebuilds, with grains re-listed since the last and a re-listing due at the
   * next step (state version 11): the restored run, on two threads, re-lists and rebuilds as the
   * saved one does, to the bit */
  while (w->pairs.since == 0 || !w->pairs.moved || w->pairs.dirty) {
    grn_world_step(w, 1);
  }
  const size_t size = grn_world_save_size(w);
  unsigned char *buf = malloc(size);
  grn_error e;
  grn_world_def d;
  grn_world_def_default(&d, "silo", &e);
  d.threads = 2;
  grn_world *b = NULL;
  const int since = w->pairs.since;
  CHECK("save a flowing silo between re-listings", grn_world_save(w, buf, size, &e) == GRN_OK);
  CHECK("restore it on two threads", grn_world_restore(&d, buf, size, &b, &e) == GRN_OK);
  const uint64_t relists = w->pairs.relists;
  grn_world_step(w, 240);
  grn_world_step(b, 240);
  printf("flowing silo saved %d re-listings after a rebuild: %llu re-listings in the next 240 "
         "steps\n",
         since, (unsigned long long)(w->pairs.relists - relists));
  CHECK("it re-listed again", w->pairs.relists > relists + 5);
  CHECK("the restored silo continues to the same digest",
        grn_world_digest(w) == grn_world_digest(b));
  free(buf);
  grn_world_destroy(b);
  grn_world_destroy(w);
}

/* Parameters and measurements are saved as tables of (name, value) after the scene's name (state
 * version 10): offset of the table's count, and of each entry, in a saved state. */
static size_t table_at(const unsigned char *buf, int which, size_t entry_at[], int *count) {
  uint32_t name_len, n;
  memcpy(&name_len, buf + 12, sizeof name_len);
  size_t at = 16 + name_len, start = at;
  for (int t = 0; t <= which; t++) {
    start = at;
    memcpy(&n, buf + at, sizeof n);
    at += sizeof n;
    for (uint32_t k = 0; k < n; k++) {
      if (t == which) {
        entry_at[k] = at;
      }
      at += 1 + buf[at] + sizeof(double);
    }
    *count = (int)n;
  }
  entry_at[*count] = at;
  return start;
}

/* A copy of a state without one entry of a table, as a state saved before that parameter or
 * measurement existed. */
static unsigned char *without(const unsigned char *buf, size_t size, int which, int entry,
                              size_t *out_size) {
  size_t at[GRN_MEASURE_MAX + 1];
  int n;
  const size_t count_at = table_at(buf, which, at, &n);
  const size_t cut = at[entry + 1] - at[entry];
  unsigned char *out = malloc(size - cut);
  memcpy(out, buf, at[entry]);
  memcpy(out + at[entry], buf + at[entry + 1], size - at[entry + 1]);
  const uint32_t less = (uint32_t)n - 1;
  memcpy(out + count_at, &less, sizeof less);
  *out_size = size - cut;
  return out;
}

static void named_tables(void) {
  grn_world *a = make("pour", 600, 1, GRN_FILL_SCENE, NULL);
  grn_world_step(a, 2 * 240 + 5);
  const size_t size = grn_world_save_size(a);
  unsigned char *buf = malloc(size);
  grn_error e;
  grn_world_save(a, buf, size, &e);
  const grn_scene_info *sc = grn_world_scene(a);
  size_t at[GRN_MEASURE_MAX + 1];
  int n;
  table_at(buf, 0, at, &n);
  CHECK("the parameters are saved by name, the scene's list in order",
        n == sc->param_count && buf[at[0]] == strlen(sc->params[0].name) &&
            memcmp(buf + at[0] + 1, sc->params[0].name, buf[at[0]]) == 0);
  table_at(buf, 1, at, &n);
  CHECK("and the measurements", n == sc->measure_count && buf[at[1]] == strlen("angle") &&
                                    memcmp(buf + at[1] + 1, "angle", 5) == 0);

  /* an older state, from before the scene's last parameter (rate, at its default here) and its
   * last measurement existed, still restores: the parameter at its default, the figure NaN until
   * the next sample; and the run goes on as the full state's does */
  size_t older_size, oldest_size;
  unsigned char *older = without(buf, size, 0, sc->param_count - 1, &older_size);
  unsigned char *oldest = without(older, older_size, 1, sc->measure_count - 1, &oldest_size);
  grn_world *b = NULL;
  CHECK("a state without a parameter or a measurement restores",
        grn_world_restore(NULL, oldest, oldest_size, &b, &e) == GRN_OK);
  grn_measurements m;
  if (b) {
    grn_world_measurements(b, &m);
    CHECK("the parameter it lacks takes its default",
          b->param[sc->param_count - 1] == sc->params[sc->param_count - 1].def);
    CHECK("the measurement it lacks is NaN until the next sample",
          isnan(m.value[sc->measure_count - 1]) && m.count == sc->measure_count);
    grn_world_step(a, 240);
    grn_world_step(b, 240);
    grn_measurements ma;
    grn_world_measurements(a, &ma);
    grn_world_measurements(b, &m);
    CHECK("and the run goes on as the full state's",
          grn_world_digest(a) == grn_world_digest(b) &&
              memcmp(ma.value, m.value, sizeof m.value) == 0);
    grn_world_destroy(b);
  }
  free(older);
  free(oldest);

  /* a name the scene does not have, one given twice, too many: refused */
  table_at(buf, 0, at, &n);
  unsigned char *bad = malloc(size);
  memcpy(bad, buf, size);
  bad[at[0] + 1] = 'z'; /* "mu" → "zu" */
  CHECK("an unknown parameter name is refused",
        grn_world_restore(NULL, bad, size, &b, &e) == GRN_E_BAD_STATE &&
            strstr(e.message, "unknown"));
  memcpy(bad, buf, size);
  memcpy(bad + at[1] + 1, "coh", 3); /* "mur" → "coh", which comes next */
  CHECK("a parameter given twice is refused",
        grn_world_restore(NULL, bad, size, &b, &e) == GRN_E_BAD_STATE);
  memcpy(bad, buf, size);
  const uint32_t many = GRN_PARAM_MAX + 1;
  memcpy(bad + at[0] - sizeof many, &many, sizeof many);
  CHECK("more parameters than any scene has is refused",
        grn_world_restore(NULL, bad, size, &b, &e) == GRN_E_BAD_STATE);
  memcpy(bad, buf, size);
  bad[at[0]] = 0;
  CHECK("an empty name is refused", grn_world_restore(NULL, bad, size, &b, &e) == GRN_E_BAD_STATE);
  free(bad);
  free(buf);
  grn_world_destroy(a);
}

int main(void) {
  threads();
  simd_equals_scalar("pour", 1500, GRN_FILL_SCENE, true, NULL);
  simd_equals_scalar("tilt", 3000, GRN_FILL_BED, false, "tilt:35,90");
  /* a draining silo re-lists its grains by the AVX2 search or the scalar one: the same pairs */
  simd_equals_scalar("silo", 1200, GRN_FILL_SCENE, false, "open_hole");
  fused_equals_reference(4000, 1, false, true);
  fused_equals_reference(9000, 2, false, true);
  fused_equals_reference(14000, 3, false, true); /* a middle chunk: a band and sums carried on */
  fused_equals_reference(4000, 1, true, true);
  fused_equals_reference(2000, 2, true, false);
  flow_equals_reference("silo", GRN_FILL_SCENE, "open_hole", 2000, 1);
  flow_equals_reference("tilt", GRN_FILL_BED, "tilt:35,90", 4000, 1);
  flow_equals_reference("tilt", GRN_FILL_BED, "tilt:35,90", 9000, 2);
  save_restore();
  named_tables();
  reset_and_sleep();
  allocation();
  CHECK_DONE();
}
