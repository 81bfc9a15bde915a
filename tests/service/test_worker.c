/* Session workers as separate sandboxed processes: they compute exactly what the engine computes
 * in-process, answer commands, and when one is killed, hangs, runs out of memory or makes a
 * forbidden system call, only that one ends — with the reason — and the others go on. */
#define _GNU_SOURCE
#include "../support/check.h"
#include "frame.h"
#include "worker_client.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char *exe;

static worker_create definition(const char *scene, int quality) {
  worker_create c;
  memset(&c, 0, sizeof c);
  c.h.type = WORKER_CMD_CREATE;
  c.h.size = sizeof c;
  c.version = WORKER_PROTO_VERSION;
  snprintf(c.scene, sizeof c.scene, "%s", scene);
  grn_world_def d;
  grn_error e;
  grn_world_def_default(&d, scene, &e);
  grn_world_def_set(&d, "quality", quality, &e);
  memcpy(c.param, d.param, sizeof c.param);
  c.seed = 7;
  c.threads = 2;
  c.memory_limit = 512u << 20;
  return c;
}

static int step(worker_client *wc, int steps, worker_status *st) {
  worker_result r;
  const int type = worker_call_step(wc, steps, true, 5000, NULL, &r);
  *st = r.status;
  return type;
}

/* Every sample a step command takes comes back, in order, at the scene's own interval (issue 19):
 * a pour's every 60 steps, a dam break's every 4 (60 Hz); the last is the status's own. */
static void samples_of(const char *scene, int steps) {
  worker_client wc;
  worker_status st;
  const worker_create c = definition(scene, 0);
  char name[128];
  snprintf(name, sizeof name, "spawn a %s worker", scene);
  CHECK(name, worker_spawn(&wc, exe, &c, true, 5000, -1, &st) == 0);
  const int every = grn_scene_sample_steps(grn_scene_find(scene));
  worker_samples got = {0};
  worker_result r;
  snprintf(name, sizeof name, "%s: step %d with its samples", scene, steps);
  CHECK(name, worker_call_step(&wc, steps, false, 20000, &got, &r) == WORKER_REPLY_STATUS);
  bool spaced = got.n == steps / every;
  for (int i = 0; spaced && i < got.n; i++) {
    spaced = got.at[i].steps == (uint64_t)(every * (i + 1)) &&
             got.at[i].meas.value[GRN_MEASURE_T] == (double)(every * (i + 1)) * GRN_STEP_SECONDS &&
             got.at[i].alive > 0;
  }
  printf("# %s: %d samples in %d steps (one every %d steps, %.4g s)\n", scene, got.n, steps, every,
         every * GRN_STEP_SECONDS);
  snprintf(name, sizeof name, "%s: one sample every %d steps, each at its own step and time", scene,
           every);
  CHECK(name, spaced);
  snprintf(name, sizeof name, "%s: the last sample is the status's", scene);
  CHECK(name,
        got.n > 0 && memcmp(&got.at[got.n - 1].meas, &r.status.meas, sizeof r.status.meas) == 0);
  /* stepping in pieces that end at the samples changes nothing: the same steps in one call of an
   * in-process world give the same state */
  worker_result r1;
  CHECK("its digest", worker_call_status(&wc, 5000, &r1) == WORKER_REPLY_STATUS);
  grn_world_def d;
  grn_error e;
  grn_world_def_default(&d, scene, &e);
  grn_world_def_set(&d, "quality", 0, &e);
  d.seed = 7;
  d.threads = 1;
  grn_world *w;
  grn_world_create(&d, &w, &e);
  grn_world_step(w, steps);
  snprintf(name, sizeof name, "%s: the same digest as %d steps in one call in process", scene,
           steps);
  CHECK(name, r1.status.digest == grn_world_digest(w));
  grn_world_destroy(w);
  worker_samples_free(&got);
  worker_stop(&wc, 2000);
}

static double seconds_since(const struct timespec *t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0->tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0->tv_nsec);
}

static void same_as_in_process(void) {
  worker_client wc;
  worker_status st;
  const worker_create c = definition("pour", 0);
  CHECK("spawn a pour worker", worker_spawn(&wc, exe, &c, true, 5000, -1, &st) == 0);
  CHECK("it reports step 0", st.steps == 0);
  /* a pacing step is not asked for the digest: the reply keeps the one it has, and its step */
  worker_result pr;
  CHECK("step 240 in the sandbox, no digest asked",
        worker_call_step(&wc, 240, false, 5000, NULL, &pr) == WORKER_REPLY_STATUS);
  CHECK("its reply says its digest is still that of step 0",
        pr.status.steps == 240 && pr.status.digest_steps == 0 && pr.status.digest == st.digest);
  CHECK("240 more, the digest asked for", step(&wc, 240, &st) == WORKER_REPLY_STATUS);
  CHECK("its digest is of step 480", st.steps == 480 && st.digest_steps == 480);
  grn_world_def d;
  grn_error e;
  grn_world_def_default(&d, "pour", &e);
  grn_world_def_set(&d, "quality", 0, &e);
  d.seed = 7;
  d.threads = 1;
  grn_world *w;
  grn_world_create(&d, &w, &e);
  grn_world_step(w, 480);
  CHECK("the worker's digest equals the in-process world's", st.digest == grn_world_digest(w));
  CHECK_NEAR("simulated time, s", st.t, 2.0, 1e-12);
  grn_world_destroy(w);

  grn_action a;
  worker_result r;
  grn_action_parse("spout:1,1", &a, &e);
  CHECK("an action is accepted, its reply with the digest after it",
        worker_call_act(&wc, &a, 5000, &r) == WORKER_REPLY_STATUS &&
            r.status.digest_steps == r.status.steps);
  grn_action_parse("open_hole", &a, &e);
  CHECK("a wrong action is refused with an error",
        worker_call_act(&wc, &a, 5000, &r) == WORKER_REPLY_ERROR &&
            strstr(r.error.message, "open_hole"));
  const int mu = grn_scene_param_index(d.scene, "mu"); /* the worker's world is pour too */
  CHECK("an out-of-range parameter is refused",
        worker_call_set(&wc, mu, 7.0, 5000, &r) == WORKER_REPLY_ERROR &&
            r.error.code == GRN_E_RANGE);
  CHECK("a parameter past the scene's last is refused",
        worker_call_set(&wc, grn_scene_find("pour")->param_count, 1.0, 5000, &r) ==
                WORKER_REPLY_ERROR &&
            r.error.code == GRN_E_UNKNOWN_PARAM);
  CHECK("and one before its first", worker_call_set(&wc, -1, 1.0, 5000, &r) == WORKER_REPLY_ERROR &&
                                        r.error.code == GRN_E_UNKNOWN_PARAM);
  CHECK("an id past every parameter is refused",
        worker_call_set(&wc, 9999, 1.0, 5000, &r) == WORKER_REPLY_ERROR);
  CHECK("a parameter in range is taken",
        worker_call_set(&wc, mu, 0.7, 5000, &r) == WORKER_REPLY_STATUS);
  CHECK("and the worker still answers", step(&wc, 1, &st) == WORKER_REPLY_STATUS);
  worker_stop(&wc, 2000);
  printf("stopped: %s\n", wc.reason);
  CHECK("QUIT ends it cleanly", strcmp(wc.reason, "worker ended") == 0);
}

/* Frames the sandboxed worker writes into the shared memory decode to the engine's own
 * positions at the same step, within half a grid step (the in-process twin, same seed). */
static void frames_through_shared_memory(void) {
  worker_create c = definition("pour", 0);
  c.frame_bytes = worker_frame_bytes(750);
  worker_client wc;
  worker_status st;
  CHECK("spawn with frame memory", worker_spawn(&wc, exe, &c, true, 5000, -1, &st) == 0);
  grn_world_def d;
  grn_error e;
  grn_world_def_default(&d, "pour", &e);
  grn_world_def_set(&d, "quality", 0, &e);
  d.seed = 7;
  grn_world *w;
  grn_world_create(&d, &w, &e);
  frame_decoder dec;
  memset(&dec, 0, sizeof dec);
  double worst = 0.0;
  int decoded = 0, keys = 0;
  for (int f = 0; f < 120; f++) {
    step(&wc, 4, &st);
    grn_world_step(w, 4);
    worker_result r;
    const int type = worker_call_frame(&wc, f == 60, false, NULL, 5000, &r);
    st = r.status;
    if (type != WORKER_REPLY_STATUS || st.frame_size == 0 ||
        frame_decode(&dec, wc.frames, st.frame_size) != 0) {
      continue;
    }
    decoded++;
    frame_header h;
    memcpy(&h, wc.frames, sizeof h);
    keys += h.kind == FRAME_KEY;
    /* the twin's grains in id order */
    grn_grains_view g;
    grn_world_grains(w, &g);
    int k = 0;
    for (uint32_t id = 0; k < (int)dec.count && id < 100000; id++) {
      for (int i = 0; i < g.count; i++) {
        if (g.alive[i] && g.id[i] == id) {
          for (int a = 0; a < 3; a++) {
            worst = fmax(worst, fabs(dec.pos[3 * k + a] - g.pos[3 * i + a]) / dec.step);
          }
          k++;
          break;
        }
      }
    }
  }
  printf("frames: %d decoded (%d keyframes), worst error %.6f grid steps\n", decoded, keys, worst);
  CHECK_NEAR("frames decoded", decoded, 120, 0);
  CHECK_RANGE("keyframes (pour arrivals, the forced one)", keys, 2, 120);
  CHECK_RANGE("worst error against the in-process twin, grid steps", worst, 0.0, 0.5 + 1e-6);
  frame_decoder_free(&dec);
  grn_world_destroy(w);
  worker_stop(&wc, 2000);
}

/* A settled world saved by one worker and restored by another (issue 33): the same step and
 * digest, bit-identical onward with the same action, as a world that settled itself in-process;
 * a damaged state is refused and the world it would have replaced goes on. */
static void saved_and_restored(void) {
  worker_create c = definition("silo", 0);
  c.frame_bytes = worker_frame_bytes(4000);
  worker_client a, b;
  worker_status st, sb;
  CHECK("spawn the worker that settles", worker_spawn(&a, exe, &c, true, 5000, -1, &st) == 0);
  CHECK("spawn the worker that restores", worker_spawn(&b, exe, &c, true, 5000, -1, &sb) == 0);
  const double left0 = st.settle_left;
  for (int i = 0; i < 100 && st.settle_left > 0.0; i++) {
    step(&a, 60, &st);
  }
  printf("# settled at step %llu (settle_left %.3f s at step 0)\n", (unsigned long long)st.steps,
         left0);
  CHECK("the silo settles", st.settle_left == 0.0 && left0 > 0.0);
  char *state = NULL;
  size_t len = 0;
  worker_result r;
  CHECK("SAVE gives the state and a status",
        worker_call_save(&a, 64u << 20, 5000, &state, &len, &r) == WORKER_REPLY_STATUS && state);
  CHECK("the status's digest is of the step saved", r.status.steps == st.steps &&
                                                        r.status.digest_steps == st.steps &&
                                                        r.status.digest == st.digest);
  printf("# state: %zu bytes\n", len);
  /* the world that settled in-process, to the same step */
  grn_world_def d;
  grn_error e;
  grn_world_def_default(&d, "silo", &e);
  grn_world_def_set(&d, "quality", 0, &e);
  d.seed = 7;
  grn_world *w;
  grn_world_create(&d, &w, &e);
  grn_world_step(w, (int)st.steps);
  CHECK("the state's digest is that of a world that settled in-process",
        grn_world_digest(w) == st.digest);
  /* damaged where the engine's checks look (the magic), and where only the digest can tell: the
   * lowest bit of a grain's position (found in the state by its bytes) */
  char *bad = malloc(len);
  memcpy(bad, state, len);
  bad[0] ^= 1;
  CHECK("a state with a broken header is refused (engine)",
        worker_call_restore(&b, bad, len, st.steps, st.digest, 5000, &r) == WORKER_REPLY_ERROR &&
            r.error.code == GRN_E_BAD_STATE);
  grn_grains_view g;
  grn_world_grains(w, &g);
  const char *at = memmem(state, len, g.pos, 3 * sizeof(double));
  CHECK("the first grain's position is in the state", at != NULL);
  memcpy(bad, state, len);
  bad[at ? at - state : 0] ^= 1;
  const int type = worker_call_restore(&b, bad, len, st.steps, st.digest, 5000, &r);
  printf("# a grain moved by one bit (byte %td): %s\n", at ? at - state : -1,
         type == WORKER_REPLY_ERROR ? r.error.message : "taken");
  CHECK("a state whose grain moved by a bit is refused (the digest)",
        type == WORKER_REPLY_ERROR && r.error.code == GRN_E_BAD_STATE);
  CHECK("a truncated state is refused", worker_call_restore(&b, state, len - 8, st.steps, st.digest,
                                                            5000, &r) == WORKER_REPLY_ERROR);
  CHECK("a state that is not the digest announced is refused",
        worker_call_restore(&b, state, len, st.steps, st.digest ^ 1, 5000, &r) ==
                WORKER_REPLY_ERROR &&
            r.error.code == GRN_E_BAD_STATE);
  free(bad);
  CHECK("after every refusal the world is the one it had (step 0, settling)",
        worker_call_status(&b, 5000, &r) == WORKER_REPLY_STATUS && r.status.steps == 0 &&
            r.status.digest == sb.digest && r.status.settle_left > 0.0);
  CHECK("the good state is taken",
        worker_call_restore(&b, state, len, st.steps, st.digest, 5000, &r) == WORKER_REPLY_STATUS);
  CHECK("at the step and digest it was saved at, settled",
        r.status.steps == st.steps && r.status.digest == st.digest &&
            r.status.digest_steps == st.steps && r.status.settle_left == 0.0);
  worker_result fr;
  frame_header fh = {0};
  if (worker_call_frame(&b, false, false, NULL, 5000, &fr) == WORKER_REPLY_STATUS &&
      fr.status.frame_size >= sizeof fh) {
    memcpy(&fh, b.frames, sizeof fh);
  }
  CHECK("the restored world's first frame is a keyframe", fh.kind == FRAME_KEY);
  free(state);
  grn_action open;
  grn_action_parse("open_hole", &open, &e);
  worker_result ra, rb;
  CHECK("the same action taken by both workers",
        worker_call_act(&a, &open, 5000, &ra) == WORKER_REPLY_STATUS &&
            worker_call_act(&b, &open, 5000, &rb) == WORKER_REPLY_STATUS &&
            grn_world_act(w, &open, &e) == GRN_OK);
  step(&a, 480, &st);
  step(&b, 480, &sb);
  grn_world_step(w, 480);
  printf("# 480 steps after open_hole: %016llx %016llx %016llx\n", (unsigned long long)st.digest,
         (unsigned long long)sb.digest, (unsigned long long)grn_world_digest(w));
  CHECK("480 steps on, the restored world's digest is the settling worker's",
        sb.steps == st.steps && sb.digest == st.digest);
  CHECK("and the in-process world's", sb.digest == grn_world_digest(w));
  grn_world_destroy(w);
  worker_stop(&a, 2000);
  worker_stop(&b, 2000);
}

static void refused_definition(void) {
  worker_client wc;
  worker_create c = definition("pour", 0);
  c.param[grn_scene_param_index(grn_scene_find("pour"), "mu")] = 9.0; /* as if a buggy daemon
                                                                         passed it on */
  CHECK("a bad definition is refused", worker_spawn(&wc, exe, &c, true, 5000, -1, NULL) != 0);
  printf("reason: %s\n", wc.reason);
  CHECK("with the engine's message", strstr(wc.reason, "mu") != NULL);
}

/* kill -9 one worker: its end is reported at the next call, the other keeps stepping */
static void kill_one(void) {
  worker_client a, b;
  worker_status st;
  const worker_create c = definition("pour", 0);
  worker_spawn(&a, exe, &c, true, 5000, -1, &st);
  worker_spawn(&b, exe, &c, true, 5000, -1, &st);
  step(&a, 60, &st);
  step(&b, 60, &st);
  kill(a.pid, SIGKILL);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  CHECK("the killed worker does not answer", step(&a, 60, &st) == -1);
  const double took = seconds_since(&t0);
  printf("killed: %s (noticed in %.3f s)\n", a.reason, took);
  CHECK("its reason names the signal", strstr(a.reason, "signal 9") != NULL);
  CHECK_RANGE("noticed within 2 s", took, 0.0, 2.0);
  CHECK("the other worker keeps stepping",
        step(&b, 60, &st) == WORKER_REPLY_STATUS && st.steps == 120);
  worker_stop(&b, 2000);
}

/* The cancel: a long step in flight ends at once (the daemon's DELETE within a second), the worker
 * killed and reaped. */
static void cancelled(void) {
  worker_client wc;
  worker_status st;
  worker_create c = definition("pour", 0);
  const int fd = eventfd(0, EFD_CLOEXEC);
  CHECK("spawn with a cancel", worker_spawn(&wc, exe, &c, true, 5000, fd, &st) == 0);
  const pid_t pid = wc.pid;
  const uint64_t one = 1;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  /* the write comes while the longest step a call may ask for is in flight */
  const worker_step cmd = {{WORKER_CMD_STEP, sizeof cmd}, WORKER_MAX_STEPS, 0};
  CHECK("the long step goes out", send(wc.fd, &cmd, sizeof cmd, MSG_NOSIGNAL) == sizeof cmd);
  const struct timespec pause = {0, 50000000};
  nanosleep(&pause, NULL);
  CHECK("the cancel is written", write(fd, &one, sizeof one) == sizeof one);
  CHECK("the call in flight returns -1", step(&wc, 1, &st) == -1);
  const double took = seconds_since(&t0);
  printf("cancelled: %s (%.3f s)\n", wc.reason, took);
  CHECK("its reason says why", strstr(wc.reason, "session ended") != NULL);
  CHECK_RANGE("soon after the cancel (generous: a loaded machine)", took, 0.0, 3.0);
  CHECK("the worker is reaped", kill(pid, 0) == -1 && errno == ESRCH);
  close(fd);
}

#ifdef GRAINLAB_TEST_COMMANDS
static void limit(worker_cmd cmd, const char *what, const char *want) {
  worker_client a, b;
  worker_status st;
  worker_create c = definition("pour", 0);
  c.memory_limit = 256u << 20;
  worker_spawn(&a, exe, &c, true, 5000, -1, &st);
  worker_spawn(&b, exe, &c, true, 5000, -1, &st);
  const worker_header h = {cmd, sizeof h};
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  CHECK(what, worker_call(&a, &h, sizeof h, &st, sizeof st, 1500) == -1);
  printf("%s: %s (%.3f s)\n", what, a.reason, seconds_since(&t0));
  char name[96];
  snprintf(name, sizeof name, "reason: %s", want);
  CHECK(name, strstr(a.reason, want) != NULL);
  CHECK("the other worker keeps stepping", step(&b, 30, &st) == WORKER_REPLY_STATUS);
  worker_stop(&b, 2000);
}
#endif

/* A hostile worker (this program run as "grainlab-worker"): every text it sends fills its
 * buffer with no NUL. Scene "bad_spawn": the first reply is such an error; otherwise the first
 * reply is a status and every command after it gets such an error. */
static int hostile_worker(void) {
  worker_create c;
  if (recv(WORKER_CHANNEL_FD, &c, sizeof c, 0) != (ssize_t)sizeof c) {
    return 1;
  }
  worker_error e;
  memset(&e, 'A', sizeof e);
  e.h = (worker_header){WORKER_REPLY_ERROR, sizeof e};
  e.error.code = GRN_E_RANGE;
  if (strncmp(c.scene, "bad_spawn", sizeof c.scene) != 0) {
    worker_status st;
    memset(&st, 0, sizeof st);
    st.h = (worker_header){WORKER_REPLY_STATUS, sizeof st};
    send(WORKER_CHANNEL_FD, &st, sizeof st, 0);
    worker_header h;
    if (recv(WORKER_CHANNEL_FD, &h, sizeof h, MSG_TRUNC) <= 0) {
      return 1;
    }
  }
  send(WORKER_CHANNEL_FD, &e, sizeof e, 0);
  sleep(5); /* until the client stops it */
  return 0;
}

/* Text from a worker is outside input: the client ends it within its buffers. */
static void unterminated_text(void) {
  worker_client wc;
  worker_status st;
  worker_create c = definition("pour", 0);
  snprintf(c.scene, sizeof c.scene, "bad_spawn");
  CHECK("a worker that refuses its definition is refused",
        worker_spawn(&wc, "/proc/self/exe", &c, true, 5000, -1, &st) == -1);
  size_t n = strlen(wc.reason);
  printf("first-reply error without a NUL: reason of %zu bytes (want %zu, all 'A')\n", n,
         sizeof((grn_error *)0)->message - 1);
  CHECK("the reason is the message's bytes and no more",
        n == sizeof((grn_error *)0)->message - 1 && strspn(wc.reason, "A") == n);
  c = definition("pour", 0);
  CHECK("a hostile worker spawns",
        worker_spawn(&wc, "/proc/self/exe", &c, true, 5000, -1, &st) == 0);
  worker_result r;
  CHECK("its error reply is an error",
        worker_call_step(&wc, 1, true, 5000, NULL, &r) == WORKER_REPLY_ERROR);
  CHECK("the message ends within its buffer",
        memchr(r.error.message, 0, sizeof r.error.message) != NULL &&
            memchr(r.error.field, 0, sizeof r.error.field) != NULL);
  worker_stop(&wc, 2000);
}

int main(int argc, char **argv) {
  if (argc >= 1 && strcmp(argv[0], "grainlab-worker") == 0) {
    return hostile_worker();
  }
  if (argc < 2) {
    fprintf(stderr, "usage: test_worker path/to/grainlab-worker\n");
    return 2;
  }
  exe = argv[1];
  same_as_in_process();
  samples_of("pour", 240);
  samples_of("dambreak", 60);
  frames_through_shared_memory();
  saved_and_restored();
  refused_definition();
  kill_one();
  cancelled();
  unterminated_text();
#ifdef GRAINLAB_TEST_COMMANDS
  limit(WORKER_CMD_TEST_HOG, "allocating past the memory limit ends the worker", "memory limit");
  limit(WORKER_CMD_TEST_SYSCALL, "a forbidden system call ends the worker", "forbidden system");
  limit(WORKER_CMD_TEST_PRLIMIT, "prlimit64 on another pid ends the worker", "forbidden system");
  limit(WORKER_CMD_TEST_HANG, "a worker that stops answering is ended", "no heartbeat");
#else
  printf("limit tests need -DGRAINLAB_TEST_COMMANDS=ON\n");
#endif
  CHECK_DONE();
}
