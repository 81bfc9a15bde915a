/* grainlab: headless command line for the engine — run a scene printing JSON Lines, benchmark
 * the packed bed, list the scene catalogue. Bad input: one line on stderr, exit status 2. */
#define _POSIX_C_SOURCE 200809L
#include "api_json.h"
#include "grainlab/grainlab.h"
#include "heap.h"
#include "snapshot.h"
#include "store.h"
#include "timeline.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE 2
#define MAX_ACTIONS 256

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "grainlab: error: %s\n", line);
  return EXIT_USAGE;
}

static int engine_error(const grn_error *e) {
  return usage_error("%s", e->message);
}

static void usage(FILE *f) {
  fputs("usage:\n"
        "  grainlab run --scene NAME [--grains N | --quality Q --amount PCT] [--set KEY=VALUE]...\n"
        "               [--seed S] [--seconds T] [--threads K] [--action TIME:NAME[:ARG,...]]...\n"
        "               [--snapshot FILE.csv|FILE.vtk]\n"
        "  grainlab bench --scene pour|tilt|silo|dambreak|cluster --grains N [--steps S]\n"
        "                 [--threads K] [--seed S] [--fill bed|scene] [--action NAME[:ARG,...]]\n"
        "                 [--after SECONDS]\n"
        "  grainlab scenes\n"
        "  grainlab replay --db FILE --run ID [--threads K]\n"
        "  grainlab backup --db FILE --out FILE\n",
        f);
}

/* ---- strict option values ---------------------------------------------------------------- */
static int parse_int(const char *opt, const char *text, long lo, long hi, long *out) {
  double v = 0.0;
  if (grn_parse_number(text, &v) != GRN_OK || v != floor(v)) {
    return usage_error("%s: '%s' is not a whole number", opt, text);
  }
  if (v < (double)lo || v > (double)hi) {
    return usage_error("%s = %s is outside %ld..%ld", opt, text, lo, hi);
  }
  *out = (long)v;
  return 0;
}

static int parse_seed(const char *text, uint64_t *out) {
  /* any 64-bit integer: unsigned, or negative (taken modulo 2^64) */
  const char *p = text;
  const bool neg = *p == '-';
  if (neg) {
    p++;
  }
  if (!*p || strspn(p, "0123456789") != strlen(p)) {
    return usage_error("--seed: '%s' is not an integer", text);
  }
  errno = 0;
  char *end = NULL;
  const unsigned long long v = strtoull(p, &end, 10);
  if (errno == ERANGE || *end || (neg && v > (unsigned long long)INT64_MAX + 1ull)) {
    return usage_error("--seed: '%s' does not fit in 64 bits", text);
  }
  *out = neg ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  return 0;
}

/* ---- JSON output ------------------------------------------------------------------------- */
static void put_json_number(double v) {
  if (isfinite(v)) {
    printf("%.10g", v);
  } else {
    fputs("null", stdout);
  }
}

static void print_measurements(const grn_scene_info *scene, const grn_measurements *m) {
  putchar('{');
  bool first = true;
  for (int k = 0; k < scene->measure_count && k < m->count; k++) {
    printf("%s\"%s\":", first ? "" : ",", scene->measures[k].name);
    put_json_number(m->value[k]);
    first = false;
  }
  printf("%s\"state\":\"%s\"}", first ? "" : ",", grn_state_name(m->state));
}

/* The catalogue as GET /api/scenes serves it: the same function, the same text. */
static int cmd_scenes(void) {
  json_t *j = api_scenes_json();
  char *text = j ? api_dumps(j) : NULL;
  json_decref(j);
  if (!text) {
    fputs("grainlab: error: out of memory\n", stderr);
    return 1;
  }
  puts(text);
  free(text);
  return 0;
}

/* ---- shared option parsing for run and bench ---------------------------------------------- */
typedef struct timed_action {
  uint64_t step;
  grn_action action;
} timed_action;

typedef struct options {
  const char *scene;
  grn_world_def def;
  bool have_def;
  long grains, steps;
  bool grains_set, quality_set;
  double seconds;
  long threads;
  uint64_t seed;
  bool seed_set;
  int nsets;
  const char *sets[64];
  int nactions;
  const char *actions[MAX_ACTIONS];
  /* bench: the start action, acted once settled, `after` seconds before the timing */
  const char *start_action;
  grn_action start;
  grn_fill fill;
  double after;
  /* run: the final state's particles and contacts, written to this file (format by extension) */
  const char *snapshot;
  snapshot_format snap_format;
} options;

static int parse_options(int argc, char **argv, bool bench, options *o) {
  memset(o, 0, sizeof *o);
  o->seconds = 10.0;
  o->threads = 1;
  o->steps = 1000;
  o->fill = GRN_FILL_BED;
  o->after = -1.0;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    const bool takes = strncmp(a, "--", 2) == 0;
    if (!takes) {
      return usage_error("unexpected argument '%s'", a);
    }
    if (!v) {
      return usage_error("%s needs a value", a);
    }
    int rc = 0;
    long tmp = 0;
    if (strcmp(a, "--scene") == 0) {
      o->scene = v;
    } else if (strcmp(a, "--grains") == 0) {
      rc = parse_int(a, v, 1, GRN_MAX_GRAINS, &o->grains);
      o->grains_set = true;
    } else if (strcmp(a, "--threads") == 0) {
      rc = parse_int(a, v, 1, 256, &o->threads);
    } else if (strcmp(a, "--seed") == 0) {
      rc = parse_seed(v, &o->seed);
      o->seed_set = true;
    } else if (!bench && (strcmp(a, "--quality") == 0 || strcmp(a, "--amount") == 0)) {
      if (o->nsets >= 62) {
        return usage_error("too many parameters");
      }
      o->sets[o->nsets++] = a + 2; /* the parameter's name, without "--" */
      o->sets[o->nsets++] = v;
      o->quality_set = true;
    } else if (!bench && strcmp(a, "--set") == 0) {
      if (o->nsets >= 62) {
        return usage_error("too many --set options");
      }
      const char *eq = strchr(v, '=');
      if (!eq || eq == v) {
        return usage_error("--set: '%s' is not KEY=VALUE", v);
      }
      o->sets[o->nsets++] = v; /* split at '=' later */
      o->sets[o->nsets++] = NULL;
    } else if (!bench && strcmp(a, "--seconds") == 0) {
      if (grn_parse_number(v, &o->seconds) != GRN_OK) {
        return usage_error("--seconds: '%s' is not a number", v);
      }
      if (!(o->seconds > 0.0 && o->seconds <= 1e6)) {
        return usage_error("--seconds = %s is outside (0, 1e6]", v);
      }
    } else if (!bench && strcmp(a, "--action") == 0) {
      if (o->nactions == MAX_ACTIONS) {
        return usage_error("more than %d actions", MAX_ACTIONS);
      }
      o->actions[o->nactions++] = v;
    } else if (!bench && strcmp(a, "--snapshot") == 0) {
      const char *dot = strrchr(v, '.');
      if (!dot || snapshot_format_parse(dot + 1, &o->snap_format) != 0) {
        return usage_error("--snapshot: '%s' ends neither in .csv nor in .vtk", v);
      }
      o->snapshot = v;
    } else if (bench && strcmp(a, "--steps") == 0) {
      rc = parse_int(a, v, 1, 100000000, &tmp);
      o->steps = tmp;
    } else if (bench && strcmp(a, "--fill") == 0) {
      if (strcmp(v, "bed") != 0 && strcmp(v, "scene") != 0) {
        return usage_error("--fill: '%s' is neither 'bed' nor 'scene'", v);
      }
      o->fill = strcmp(v, "bed") == 0 ? GRN_FILL_BED : GRN_FILL_SCENE;
    } else if (bench && strcmp(a, "--action") == 0) {
      o->start_action = v;
    } else if (bench && strcmp(a, "--after") == 0) {
      if (grn_parse_number(v, &o->after) != GRN_OK) {
        return usage_error("--after: '%s' is not a number", v);
      }
      if (!(o->after >= 0.0 && o->after <= 3600.0)) {
        return usage_error("--after = %s is outside [0, 3600]", v);
      }
    } else {
      return usage_error("unknown option '%s'", a);
    }
    if (rc) {
      return rc;
    }
    i++;
  }
  if (!o->scene) {
    return usage_error("--scene is required");
  }
  if (o->after >= 0.0 && !o->start_action) {
    return usage_error("--after needs --action");
  }
  o->after = o->after >= 0.0 ? o->after : 0.0;
  grn_error e = {0};
  if (grn_world_def_default(&o->def, o->scene, &e) != GRN_OK) {
    return engine_error(&e);
  }
  if (o->start_action && (grn_action_parse(o->start_action, &o->start, &e) != GRN_OK ||
                          grn_action_check(o->def.scene, &o->start, &e) != GRN_OK)) {
    return usage_error("--action '%s': %s", o->start_action, e.message);
  }
  if (o->grains_set && o->quality_set) {
    return usage_error("--grains excludes --quality and --amount");
  }
  for (int k = 0; k < o->nsets; k += 2) {
    char key[64];
    const char *val;
    if (o->sets[k + 1]) {
      snprintf(key, sizeof key, "%s", o->sets[k]);
      val = o->sets[k + 1];
    } else {
      const char *eq = strchr(o->sets[k], '=');
      snprintf(key, sizeof key, "%.*s", (int)(eq - o->sets[k]), o->sets[k]);
      val = eq + 1;
      if (o->grains_set && (strcmp(key, "quality") == 0 || strcmp(key, "amount") == 0)) {
        return usage_error("--grains excludes --quality and --amount");
      }
    }
    if (grn_world_def_set_text(&o->def, key, val, &e) != GRN_OK) {
      return engine_error(&e);
    }
  }
  o->def.grains = o->grains_set ? (int)o->grains : 0;
  o->def.threads = (int)o->threads;
  if (bench) {
    o->def.fill = o->fill; /* the benchmark's workload decides the count check too */
    o->def.allow_sleep = false;
  }
  if (o->seed_set) {
    o->def.seed = o->seed;
  }
  if (grn_world_def_validate(&o->def, &e) != GRN_OK) {
    return engine_error(&e);
  }
  return 0;
}

static int compare_actions(const void *a, const void *b) {
  const timed_action *x = a, *y = b;
  return x->step < y->step ? -1 : x->step > y->step ? 1 : 0;
}

/* Steps a world along a timeline to its end, applying each event as it falls due; with
 * `samples` (the scene's interval, grn_scene_sample_steps; 0: none), prints the measurements at
 * every sample of the world. The timeline counts the steps taken here: a reset restarts the
 * world's clock, not the run's. */
static int play(grn_world *w, const grn_scene_info *scene, timeline *tl, uint64_t samples) {
  grn_error e;
  for (uint64_t now = grn_world_step_count(w);;) {
    const timeline_event *ev;
    while ((ev = timeline_due(tl, now)) != NULL) {
      if (timeline_apply(w, ev, &e) != GRN_OK) {
        fprintf(stderr, "grainlab: error: step %" PRIu64 ": %s\n", now, e.message);
        return 1;
      }
    }
    if (timeline_done(tl, now)) {
      return 0;
    }
    const uint64_t at = grn_world_step_count(w);
    const uint64_t want = samples ? samples - at % samples : INT_MAX;
    const uint64_t k = timeline_room(tl, now, want);
    now += k;
    if (grn_world_step(w, (int)k) != GRN_OK) {
      fprintf(stderr, "grainlab: error: out of memory at t = %g s\n", grn_world_time(w));
      return 1;
    }
    if (samples && grn_world_step_count(w) % samples == 0) {
      grn_measurements m;
      grn_world_measurements(w, &m);
      print_measurements(scene, &m);
      putchar('\n');
    }
  }
}

static int to_file(void *ctx, const char *data, size_t len) {
  return fwrite(data, 1, len, ctx) == len ? 0 : -1;
}

/* A run that failed leaves no snapshot behind (not an empty or partial file). */
static void drop_snapshot(const options *o, FILE *f) {
  if (f) {
    fclose(f);
    unlink(o->snapshot);
  }
}

static int write_snapshot(const options *o, const grn_world *w, FILE *f) {
  char title[160];
  snprintf(title, sizeof title, "grainlab %s run, step %" PRIu64 ", t = %.6g s", o->def.scene->name,
           grn_world_step_count(w), grn_world_time(w));
  const int rc = snapshot_write(w, o->snap_format, title, to_file, f);
  const int write_errno = errno;
  const int closed = fclose(f);
  if (rc != 0 || closed != 0) {
    fprintf(stderr, "grainlab: error: --snapshot '%s': %s\n", o->snapshot,
            rc == -2   ? "out of memory"
            : rc == -3 ? "more touching pairs than a snapshot carries"
                       : strerror(rc != 0 ? write_errno : errno));
    unlink(o->snapshot);
    return 1;
  }
  return 0;
}

static int cmd_run(int argc, char **argv) {
  options o;
  int rc = parse_options(argc, argv, false, &o);
  if (rc) {
    return rc;
  }
  const double h = GRN_STEP_SECONDS;
  const uint64_t total = (uint64_t)llround(o.seconds / h);
  timed_action acts[MAX_ACTIONS] = {0};
  grn_error e = {0};
  for (int k = 0; k < o.nactions; k++) {
    const char *text = o.actions[k];
    const char *colon = strchr(text, ':');
    char tbuf[64];
    if (!colon || colon == text || (size_t)(colon - text) >= sizeof tbuf) {
      return usage_error("--action: '%s' is not TIME:NAME[:ARG,...]", text);
    }
    snprintf(tbuf, sizeof tbuf, "%.*s", (int)(colon - text), text);
    double at;
    if (grn_parse_number(tbuf, &at) != GRN_OK) {
      return usage_error("--action: time '%s' is not a number", tbuf);
    }
    if (at < 0.0 || at > o.seconds) {
      return usage_error("--action: time %s is outside 0..%g (the run's --seconds)", tbuf,
                         o.seconds);
    }
    if (grn_action_parse(colon + 1, &acts[k].action, &e) != GRN_OK ||
        grn_action_check(o.def.scene, &acts[k].action, &e) != GRN_OK) {
      return engine_error(&e);
    }
    acts[k].step = (uint64_t)llround(at / h);
  }
  /* stable order for equal times: insertion order (qsort is not stable, so sort by index too) */
  for (int k = 0; k < o.nactions; k++) {
    acts[k].step = acts[k].step * MAX_ACTIONS + (uint64_t)k;
  }
  qsort(acts, (size_t)o.nactions, sizeof acts[0], compare_actions);
  for (int k = 0; k < o.nactions; k++) {
    acts[k].step /= MAX_ACTIONS;
  }

  /* a path that cannot be written is told before the run, not after it */
  FILE *snap = o.snapshot ? fopen(o.snapshot, "w") : NULL;
  if (o.snapshot && !snap) {
    return usage_error("--snapshot: cannot write '%s': %s", o.snapshot, strerror(errno));
  }
  grn_world *w = NULL;
  if (grn_world_create(&o.def, &w, &e) != GRN_OK) {
    fprintf(stderr, "grainlab: error: %s\n", e.message);
    drop_snapshot(&o, snap);
    return 1;
  }
  timeline tl = {.end = total};
  for (int k = 0; k < o.nactions; k++) {
    const timeline_event ev = {.step = acts[k].step, .is_action = true, .action = acts[k].action};
    if (timeline_add(&tl, &ev) != 0) {
      fprintf(stderr, "grainlab: error: out of memory\n");
      timeline_free(&tl);
      grn_world_destroy(w);
      drop_snapshot(&o, snap);
      return 1;
    }
  }
  rc = play(w, o.def.scene, &tl, (uint64_t)grn_scene_sample_steps(o.def.scene));
  timeline_free(&tl);
  if (rc != 0) {
    drop_snapshot(&o, snap);
  } else if (snap) {
    rc = write_snapshot(&o, w, snap);
  }
  if (rc != 0) {
    grn_world_destroy(w);
    return rc;
  }
  grn_measurements m;
  grn_world_measurements(w, &m);
  grn_world_stats st;
  grn_world_get_stats(w, &st);
  fputs("{\"final\":", stdout);
  print_measurements(o.def.scene, &m);
  if (o.def.scene->chains) {
    /* force chains behind the vertical cut through the pile centre, seen from +z */
    const int kx = grn_scene_measure_index(o.def.scene, "cx"),
              kz = grn_scene_measure_index(o.def.scene, "cz");
    const double px = kx >= 0 && isfinite(m.value[kx]) ? m.value[kx] : 0.0;
    const double pz = kz >= 0 && isfinite(m.value[kz]) ? m.value[kz] : 0.0;
    printf(",\"chains\":%d,\"contacts\":%d", grn_world_chains(w, px, pz, 0.0, 1.0, NULL, 0),
           grn_world_contacts(w, NULL, 0));
  }
  printf(",\"digest\":\"%016" PRIx64 "\",\"steps\":%" PRIu64 ",\"grains\":%d}\n",
         grn_world_digest(w), grn_world_step_count(w), st.alive);
  grn_world_destroy(w);
  return fflush(stdout) == 0 ? 0 : 1;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static long peak_rss_bytes(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss * 1024L; /* Linux reports kilobytes */
}

static int cmd_bench(int argc, char **argv) {
  options o;
  int rc = parse_options(argc, argv, true, &o);
  if (rc) {
    return rc;
  }
  if (!o.grains_set) {
    return usage_error("bench needs --grains N");
  }
  grn_error e = {0};
  grn_world *w = NULL;
  if (grn_world_create(&o.def, &w, &e) != GRN_OK) {
    fprintf(stderr, "grainlab: error: %s\n", e.message);
    return 1;
  }
  /* untimed: let the lattice pack down under the settle drag, then half a second more */
  const double t0 = now_seconds();
  grn_measurements m;
  grn_world_measurements(w, &m);
  /* grains pack down first; water starts at its rest density on the lattice and a Plummer sphere
   * in equilibrium, so both are timed from the start (settling 100 000 particles of water would
   * take an hour): the model says which */
  const bool settle = grn_model_info_of(o.def.scene->model)->settles;
  while (settle && (m.state == GRN_STATE_SETTLING || grn_world_time(w) < 0.5)) {
    if (grn_world_step(w, GRN_SAMPLE_STEPS) != GRN_OK) {
      fprintf(stderr, "grainlab: error: out of memory while settling\n");
      grn_world_destroy(w);
      return 1;
    }
    grn_world_measurements(w, &m);
  }
  grn_world_step(w, settle ? 120 : 1);
  /* a dynamic workload: the action that starts it (open the silo's hole, tilt the bed), then
   * `after` seconds for the flow to develop, untimed */
  if (o.start_action) {
    if (grn_world_act(w, &o.start, &e) != GRN_OK) {
      grn_world_destroy(w);
      return usage_error("--action '%s': %s", o.start_action, e.message);
    }
    if (grn_world_step(w, (int)lround(o.after / GRN_STEP_SECONDS)) != GRN_OK) {
      fprintf(stderr, "grainlab: error: out of memory after the action\n");
      grn_world_destroy(w);
      return 1;
    }
  }
  const double settle_wall = now_seconds() - t0;
  grn_world_stats before, after;
  grn_world_get_stats(w, &before);
  /* timed in chunks of a sample interval, the resting grains counted after each (a pass over
   * the velocities, well under 1 % of a chunk) */
  double resting = 0.0;
  int looks = 0;
  const double t1 = now_seconds();
  for (long done = 0; done < o.steps; done += GRN_SAMPLE_STEPS) {
    const long k = o.steps - done < GRN_SAMPLE_STEPS ? o.steps - done : GRN_SAMPLE_STEPS;
    if (grn_world_step(w, (int)k) != GRN_OK) {
      fprintf(stderr, "grainlab: error: out of memory while timing\n");
      grn_world_destroy(w);
      return 1;
    }
    grn_world_stats now;
    grn_world_get_stats(w, &now);
    resting += now.alive > 0 ? (double)grn_world_resting(w) / now.alive : 0.0;
    looks++;
  }
  const double dt = now_seconds() - t1;
  grn_world_get_stats(w, &after);
  const double gs = (double)after.alive * (double)o.steps;
  printf("{\"scene\":\"%s\",\"grains\":%d,\"threads\":%ld,\"steps\":%ld,"
         "\"contacts_per_grain\":%.3f,\"coordination\":%.3f,\"pairs_per_grain\":%.3f,"
         "\"near_pairs_per_grain\":%.3f,\"rebuilds\":%" PRIu64 ",\"relists\":%" PRIu64
         ",\"refreshes\":%" PRIu64
         ",\"seconds\":%.4f,\"ns_per_grain_step\":%.2f,\"grain_steps_per_s\":%.0f,"
         "\"peak_rss_bytes\":%ld,\"rss_bytes_per_grain\":%.1f,\"engine_bytes\":%zu,"
         "\"settle_seconds_wall\":%.2f,\"max_speed\":%.4g,\"model\":\"%s\",\"substeps\":%d,"
         "\"particle_substeps_per_s\":%.0f,\"steps_per_s\":%.2f,\"force\":\"%s\","
         "\"resting_fraction\":%.4f}\n",
         o.def.scene->name, after.alive, o.threads, o.steps, (double)after.contacts / after.alive,
         2.0 * after.contacts / after.alive, (double)after.pairs / after.alive,
         (double)after.near_pairs / after.alive, after.rebuilds - before.rebuilds,
         after.relists - before.relists, after.refreshes - before.refreshes, dt, 1e9 * dt / gs,
         gs / dt, peak_rss_bytes(), (double)peak_rss_bytes() / after.alive, after.bytes_live,
         settle_wall, after.max_speed, grn_model_name(o.def.scene->model), after.substeps,
         gs * after.substeps / dt, (double)o.steps / dt, after.forces,
         looks > 0 ? resting / looks : 0.0);
  grn_world_destroy(w);
  return 0;
}

/* Re-run a stored run headless: its scene, parameters and seed, each recorded parameter change
 * and action at its step, up to the step where the run ended; the digest must be the stored one. */
static int cmd_replay(int argc, char **argv) {
  const char *db = NULL;
  long run = 0, threads = 1;
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) {
      return usage_error("option '%s' needs a value", argv[i]);
    }
    if (strcmp(argv[i], "--db") == 0) {
      db = argv[i + 1];
    } else if (strcmp(argv[i], "--run") == 0) {
      if (parse_int("--run", argv[i + 1], 1, INT64_MAX / 2, &run) != 0) {
        return EXIT_USAGE;
      }
    } else if (strcmp(argv[i], "--threads") == 0) {
      if (parse_int("--threads", argv[i + 1], 1, 64, &threads) != 0) {
        return EXIT_USAGE;
      }
    } else {
      return usage_error("unknown option '%s' for replay", argv[i]);
    }
  }
  if (!db || run == 0) {
    return usage_error("replay needs --db FILE and --run ID");
  }
  store_replay r;
  char err[256];
  if (store_load_replay(db, run, &r, err, sizeof err) != 0) {
    return usage_error("run %ld of '%s': %s", run, db, err);
  }
  if (!r.ended) {
    store_replay_free(&r);
    return usage_error("run %ld has not ended: nothing to compare with", run);
  }
  r.def.threads = (int)threads;
  grn_world *w;
  grn_error e;
  if (grn_world_create(&r.def, &w, &e) != GRN_OK) {
    store_replay_free(&r);
    return engine_error(&e);
  }
  const int rc = play(w, r.def.scene, &r.events, 0);
  if (rc != 0) {
    grn_world_destroy(w);
    store_replay_free(&r);
    return rc;
  }
  grn_measurements m;
  grn_world_measurements(w, &m);
  grn_world_stats st;
  grn_world_get_stats(w, &st);
  char digest[17];
  snprintf(digest, sizeof digest, "%016" PRIx64, grn_world_digest(w));
  fputs("{\"final\":", stdout);
  print_measurements(r.def.scene, &m);
  /* a run cut short mid-call has no digest recorded: nothing to check the replay against */
  const bool recorded = r.digest[0] != '\0';
  printf(",\"digest\":\"%s\",\"steps\":%" PRIu64 ",\"grains\":%d,\"run\":%ld,"
         "\"recorded_digest\":%s%s%s,\"same\":%s}\n",
         digest, grn_world_step_count(w), st.alive, run, recorded ? "\"" : "",
         recorded ? r.digest : "null", recorded ? "\"" : "",
         !recorded                       ? "null"
         : strcmp(digest, r.digest) == 0 ? "true"
                                         : "false");
  grn_world_destroy(w);
  store_replay_free(&r);
  return fflush(stdout) == 0 ? 0 : 1;
}

/* A consistent copy of a live database (SQLite's online backup): grainlabd may keep writing. */
static int cmd_backup(int argc, char **argv) {
  const char *db = NULL, *out = NULL;
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) {
      return usage_error("option '%s' needs a value", argv[i]);
    }
    if (strcmp(argv[i], "--db") == 0) {
      db = argv[i + 1];
    } else if (strcmp(argv[i], "--out") == 0) {
      out = argv[i + 1];
    } else {
      return usage_error("unknown option '%s' for backup", argv[i]);
    }
  }
  if (!db || !out) {
    return usage_error("backup needs --db FILE and --out FILE");
  }
  char err[300];
  const long runs = store_backup(db, out, err, sizeof err);
  if (runs < 0) {
    fprintf(stderr, "grainlab: error: %s\n", err);
    return 1;
  }
  printf("{\"backup\":\"%s\",\"runs\":%ld}\n", out, runs);
  return 0;
}

int main(int argc, char **argv) {
  heap_map_large_arrays();
  if (argc < 2) {
    return usage_error("no command (grainlab --help lists the commands)");
  }
  if (strcmp(argv[1], "run") == 0) {
    return cmd_run(argc, argv);
  }
  if (strcmp(argv[1], "bench") == 0) {
    return cmd_bench(argc, argv);
  }
  if (strcmp(argv[1], "replay") == 0) {
    return cmd_replay(argc, argv);
  }
  if (strcmp(argv[1], "backup") == 0) {
    return cmd_backup(argc, argv);
  }
  if (strcmp(argv[1], "scenes") == 0) {
    if (argc != 2) {
      return usage_error("'scenes' takes no arguments");
    }
    return cmd_scenes();
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return 0;
  }
  return usage_error("unknown command '%s' (grainlab --help lists the commands)", argv[1]);
}
