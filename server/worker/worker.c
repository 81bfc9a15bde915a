/* grainlab-worker: one session's simulation in its own sandboxed process. It reads its world
 * definition from the channel, builds the world, then locks itself down (resource limits, no new
 * privileges, a seccomp allow-list that kills on anything else) and serves commands. */
#define _GNU_SOURCE
#include "worker_proto.h"

#include "frame.h"
#include "heap.h"
#include "snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int chan = WORKER_CHANNEL_FD;
static uint8_t *frames;     /* the shared frame memory (NULL: none asked for) */
static size_t frame_bytes;  /* its size */
static uint32_t frame_size; /* bytes of the last frame written, reported once */
static uint32_t chain_size; /* and of the chains message after it */
static uint32_t delta_size; /* and of its delta form after those */
static grn_contact *chain_buf;
static int chain_cap;
/* The last digest and the step it is of: a reply not asked for a fresh one carries it; an action
 * or a parameter change, which may move grains without a step, forgets it. */
static uint64_t digest;
static uint64_t digest_steps = WORKER_NO_DIGEST;

static void send_msg(const void *msg, size_t size) {
  if (send(chan, msg, size, MSG_NOSIGNAL) != (ssize_t)size) {
    _exit(WORKER_EXIT_PROTOCOL); /* the daemon is gone: nothing left to serve */
  }
}

static void send_error(const grn_error *e) {
  worker_error r;
  memset(&r, 0, sizeof r);
  r.h.type = WORKER_REPLY_ERROR;
  r.h.size = sizeof r;
  r.error = *e;
  send_msg(&r, sizeof r);
}

/* A snapshot's piece, as one worker_data message. */
static int send_piece(void *ctx, const char *data, size_t len) {
  worker_data *d = ctx;
  d->h.type = WORKER_REPLY_DATA;
  d->h.size = (uint32_t)(sizeof d->h + len);
  memcpy(d->bytes, data, len);
  send_msg(d, d->h.size);
  return 0;
}

static void send_sample(const grn_world *w) {
  worker_sample r;
  memset(&r, 0, sizeof r);
  r.h.type = WORKER_REPLY_SAMPLE;
  r.h.size = sizeof r;
  r.steps = grn_world_step_count(w);
  grn_world_stats st;
  grn_world_get_stats(w, &st);
  r.alive = st.alive;
  grn_world_measurements(w, &r.meas);
  send_msg(&r, sizeof r);
}

static void send_status(const grn_world *w, bool fresh) {
  worker_status r;
  memset(&r, 0, sizeof r);
  r.h.type = WORKER_REPLY_STATUS;
  r.h.size = sizeof r;
  r.steps = grn_world_step_count(w);
  r.t = grn_world_time(w);
  r.asleep = grn_world_asleep(w);
  grn_world_stats st;
  grn_world_get_stats(w, &st);
  r.alive = st.alive;
  if (fresh && digest_steps != r.steps) {
    digest = grn_world_digest(w);
    digest_steps = r.steps;
  }
  r.digest = digest;
  r.digest_steps = digest_steps;
  grn_world_measurements(w, &r.meas);
  r.settle_left = grn_world_settle_left(w);
  r.frame_size = frame_size;
  r.chain_size = chain_size;
  r.delta_size = delta_size;
  frame_size = chain_size = delta_size = 0;
  send_msg(&r, sizeof r);
}

/* The whole-process limits, then no new privileges, then the filter (spec "Sessions and
 * sandboxing", in that order). Threads: clone is allowed only with CLONE_THREAD, so the OpenMP
 * runtime may start its team, and the filter is synchronised to every thread. */
static int lock_down(uint64_t memory_limit) {
  const struct rlimit as = {memory_limit, memory_limit}, zero = {0, 0};
  const struct rlimit files = {WORKER_CHANNEL_FD + 1, WORKER_CHANNEL_FD + 1};
  if (setrlimit(RLIMIT_AS, &as) != 0 || setrlimit(RLIMIT_CORE, &zero) != 0 ||
      setrlimit(RLIMIT_FSIZE, &zero) != 0 || setrlimit(RLIMIT_NOFILE, &files) != 0) {
    return -1;
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return -1;
  }
  scmp_filter_ctx f = seccomp_init(SCMP_ACT_KILL_PROCESS);
  if (!f) {
    return -1;
  }
  static const int allowed[] = {SCMP_SYS(read),
                                SCMP_SYS(write),
                                SCMP_SYS(recvfrom),
                                SCMP_SYS(sendto),
                                SCMP_SYS(recvmsg),
                                SCMP_SYS(sendmsg),
                                SCMP_SYS(ppoll),
                                SCMP_SYS(poll),
                                SCMP_SYS(mmap),
                                SCMP_SYS(munmap),
                                SCMP_SYS(mremap),
                                SCMP_SYS(mprotect),
                                SCMP_SYS(madvise),
                                SCMP_SYS(brk),
                                SCMP_SYS(futex),
                                SCMP_SYS(sched_yield),
                                SCMP_SYS(sched_getaffinity),
                                SCMP_SYS(clock_gettime),
                                SCMP_SYS(clock_nanosleep),
                                SCMP_SYS(nanosleep),
                                SCMP_SYS(gettid),
                                SCMP_SYS(getpid),
                                SCMP_SYS(set_robust_list),
                                SCMP_SYS(rseq),
                                SCMP_SYS(rt_sigprocmask),
                                SCMP_SYS(rt_sigreturn),
                                SCMP_SYS(sigaltstack),
                                SCMP_SYS(rt_sigaction),
                                SCMP_SYS(exit),
                                SCMP_SYS(exit_group),
                                SCMP_SYS(close),
                                SCMP_SYS(getrusage)};
  int rc = 0;
  for (size_t k = 0; k < sizeof allowed / sizeof allowed[0] && rc == 0; k++) {
    rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, allowed[k], 0);
  }
  if (rc == 0) {
    rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                          SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
  }
  if (rc == 0) {
    /* getrlimit/setrlimit are prlimit64(0, ...) in glibc; any other pid could be the daemon,
     * whose RLIMIT_FSIZE a compromised worker could otherwise set to 0 */
    rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 1, SCMP_A0(SCMP_CMP_EQ, 0));
  }
  if (rc == 0) {
    /* clone3 hides its flags behind a pointer: say "not here" and glibc falls back to clone */
    rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  }
  if (rc == 0) {
    rc = seccomp_attr_set(f, SCMP_FLTATR_CTL_TSYNC, 1);
  }
  if (rc == 0) {
    rc = seccomp_load(f);
  }
  seccomp_release(f);
  return rc == 0 ? 0 : -1;
}

/* The world of the definition; *d keeps what a restored world takes from it (threads). */
static grn_world *create(const worker_create *c, grn_world_def *d, grn_error *e) {
  char scene[sizeof c->scene + 1];
  memcpy(scene, c->scene, sizeof c->scene);
  scene[sizeof c->scene] = '\0';
  if (grn_world_def_default(d, scene, e) != GRN_OK) {
    return NULL;
  }
  /* the daemon validated these; the worker trusts nothing it reads and checks them again */
  for (int i = 0; i < d->scene->param_count; i++) {
    if (grn_world_def_set_at(d, i, c->param[i], e) != GRN_OK) {
      return NULL;
    }
  }
  d->seed = c->seed;
  d->grains = c->grains;
  d->threads = c->threads;
  grn_world *w = NULL;
  if (grn_world_create(d, &w, e) != GRN_OK) {
    return NULL;
  }
  return w;
}

/* The world's whole state (grn_world_save) in pieces, then the status with its digest; an error
 * (no memory) before any piece. */
static void save(const grn_world *w, worker_data *piece) {
  const size_t n = grn_world_save_size(w);
  unsigned char *state = malloc(n > 0 ? n : 1);
  grn_error e = {0};
  if (!state || grn_world_save(w, state, n, &e) != GRN_OK) {
    if (!state) {
      e.code = GRN_E_NOMEM;
      snprintf(e.message, sizeof e.message, "no memory to save the world");
    }
    free(state);
    send_error(&e);
    return;
  }
  for (size_t at = 0; at < n;) {
    const size_t k = n - at < WORKER_PIECE ? n - at : WORKER_PIECE;
    send_piece(piece, (const char *)state + at, k);
    at += k;
  }
  free(state);
  send_status(w, true);
}

/* RESTORE (worker_proto.h): its pieces read whatever happens, so that the channel stays in step;
 * *w replaced by the world made from them only when that world is the one announced. Returns
 * false when the daemon broke the protocol. */
static bool restore(const worker_restore *q, uint64_t memory_limit, const grn_world_def *d,
                    grn_world **w, unsigned char *buf) {
  if (q->size == 0 || q->size > memory_limit) {
    return false;
  }
  unsigned char *state = malloc(q->size); /* NULL: the pieces are read and dropped */
  for (uint64_t at = 0; at < q->size;) {
    const uint64_t want = q->size - at < WORKER_PIECE ? q->size - at : WORKER_PIECE;
    const ssize_t got = recv(chan, buf, WORKER_MAX_MESSAGE, 0);
    worker_header h;
    if (got < (ssize_t)sizeof h) {
      free(state);
      return false;
    }
    memcpy(&h, buf, sizeof h);
    if (h.type != WORKER_CMD_PIECE || h.size != (size_t)got || got != (ssize_t)(sizeof h + want)) {
      free(state);
      return false;
    }
    if (state) {
      memcpy(state + at, buf + sizeof h, want);
    }
    at += want;
  }
  grn_error e = {0};
  if (!state) {
    e.code = GRN_E_NOMEM;
    snprintf(e.message, sizeof e.message, "no memory for a state of %llu bytes",
             (unsigned long long)q->size);
    send_error(&e);
    return true;
  }
  grn_world *made = NULL;
  const int rc = grn_world_restore(d, state, q->size, &made, &e);
  free(state);
  if (rc != GRN_OK) {
    send_error(&e);
    return true;
  }
  const uint64_t made_digest = grn_world_digest(made), made_steps = grn_world_step_count(made);
  if (made_steps != q->steps || made_digest != q->digest) {
    grn_world_destroy(made);
    e.code = GRN_E_BAD_STATE;
    snprintf(e.field, sizeof e.field, "state");
    snprintf(e.message, sizeof e.message,
             "the state restores to step %llu, digest %016llx, not the step %llu, digest %016llx "
             "it was saved at",
             (unsigned long long)made_steps, (unsigned long long)made_digest,
             (unsigned long long)q->steps, (unsigned long long)q->digest);
    send_error(&e);
    return true;
  }
  grn_world_destroy(*w);
  *w = made;
  digest = made_digest;
  digest_steps = q->steps;
  send_status(*w, true);
  return true;
}

#ifdef GRAINLAB_TEST_COMMANDS
static void test_command(uint32_t type) {
  if (type == WORKER_CMD_TEST_HOG) {
    /* the limit is on address space, which malloc maps whole: one written byte a chunk keeps
     * each mapping real, where filling every page only timed this machine's page faults (2.6 s
     * for 1 GB on the test VM, past the 5 s heartbeat when loaded) */
    for (;;) {
      volatile char *p = malloc(64u << 20);
      if (!p) {
        _exit(WORKER_EXIT_NOMEM);
      }
      p[0] = 1;
    }
  }
  if (type == WORKER_CMD_TEST_SYSCALL) {
    const int fd = open("/etc/hostname", O_RDONLY); /* the filter kills before this returns */
    _exit(fd >= 0 ? WORKER_EXIT_OK : WORKER_EXIT_SETUP);
  }
  if (type == WORKER_CMD_TEST_PRLIMIT) {
    struct rlimit mine, other;
    if (getrlimit(RLIMIT_FSIZE, &mine) != 0) { /* prlimit64(0, ...): allowed */
      _exit(WORKER_EXIT_SETUP);
    }
    /* pid 1 stands for any other process; reading only, and the filter kills before this */
    const long r = syscall(SYS_prlimit64, 1, RLIMIT_FSIZE, NULL, &other);
    _exit(r == 0 ? WORKER_EXIT_OK : WORKER_EXIT_SETUP);
  }
  if (type == WORKER_CMD_TEST_HANG) {
    for (;;) {
      const struct timespec ts = {1, 0};
      nanosleep(&ts, NULL);
    }
  }
}
#endif

int main(void) {
  static unsigned char buf[WORKER_MAX_MESSAGE];
  heap_map_large_arrays();
  worker_create c;
  const ssize_t n = recv(chan, &c, sizeof c, 0);
  if (n != (ssize_t)sizeof c || c.h.type != WORKER_CMD_CREATE || c.h.size != sizeof c ||
      c.version != WORKER_PROTO_VERSION) {
    return WORKER_EXIT_PROTOCOL;
  }
  grn_error e = {0};
  grn_world_def def;
  grn_world *w = create(&c, &def, &e);
  if (!w) {
    send_error(&e);
    return WORKER_EXIT_SETUP;
  }
  const grn_scene_info *scene = grn_scene_find(c.scene);
  frame_encoder *enc = NULL;
  if (c.frame_bytes > 0) {
    /* map the frame memory before the sandbox closes mmap of new files; the fd goes */
    void *map = mmap(NULL, c.frame_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, WORKER_FRAME_FD, 0);
    close(WORKER_FRAME_FD);
    enc = frame_encoder_new();
    if (map == MAP_FAILED || !enc) {
      e.code = GRN_E_NOMEM;
      snprintf(e.message, sizeof e.message, "cannot map the frame memory");
      send_error(&e);
      return WORKER_EXIT_SETUP;
    }
    frames = map;
    frame_bytes = c.frame_bytes;
    chain_cap = (int)(c.frame_bytes / sizeof(grn_contact)); /* more than the memory could carry */
    chain_buf = calloc((size_t)chain_cap, sizeof *chain_buf);
    if (!chain_buf) {
      e.code = GRN_E_NOMEM;
      snprintf(e.message, sizeof e.message, "no memory for force chains");
      send_error(&e);
      return WORKER_EXIT_SETUP;
    }
  }
  /* the world is built (all its files and start-up allocations done): lock down before serving;
   * the engine's threads start at the first step, under a filter that lets clone make threads */
  if (lock_down(c.memory_limit) != 0) {
    e.code = GRN_E_INVALID;
    snprintf(e.message, sizeof e.message, "sandbox setup failed: %s", strerror(errno));
    send_error(&e);
    return WORKER_EXIT_SETUP;
  }
  send_status(w, true);
  for (;;) {
    const ssize_t got = recv(chan, buf, sizeof buf, 0);
    if (got <= 0) {
      grn_world_destroy(w);
      return got == 0 ? WORKER_EXIT_OK : WORKER_EXIT_PROTOCOL;
    }
    worker_header h;
    if ((size_t)got < sizeof h) {
      return WORKER_EXIT_PROTOCOL;
    }
    memcpy(&h, buf, sizeof h);
    if (h.size != (size_t)got) {
      return WORKER_EXIT_PROTOCOL;
    }
    switch (h.type) {
    case WORKER_CMD_STEP: {
      worker_step s;
      if (h.size != sizeof s) {
        return WORKER_EXIT_PROTOCOL;
      }
      memcpy(&s, buf, sizeof s);
      if (s.steps < 0 || s.steps > WORKER_MAX_STEPS) {
        return WORKER_EXIT_PROTOCOL;
      }
      /* in pieces that end at each sample, which is sent as it is taken */
      const uint64_t every = (uint64_t)grn_scene_sample_steps(scene);
      for (int left = s.steps; left > 0;) {
        const uint64_t to_sample = every - grn_world_step_count(w) % every;
        const int k = to_sample < (uint64_t)left ? (int)to_sample : left;
        if (grn_world_step(w, k) != GRN_OK) {
          return WORKER_EXIT_NOMEM;
        }
        left -= k;
        if (grn_world_step_count(w) % every == 0) {
          send_sample(w);
        }
      }
      send_status(w, s.digest != 0);
      break;
    }
    case WORKER_CMD_ACT: {
      worker_act a;
      if (h.size != sizeof a) {
        return WORKER_EXIT_PROTOCOL;
      }
      memcpy(&a, buf, sizeof a);
      if (grn_world_act(w, &a.action, &e) != GRN_OK) {
        send_error(&e);
      } else {
        digest_steps = WORKER_NO_DIGEST;
        send_status(w, true);
      }
      break;
    }
    case WORKER_CMD_SET: {
      worker_set s;
      if (h.size != sizeof s) {
        return WORKER_EXIT_PROTOCOL;
      }
      memcpy(&s, buf, sizeof s);
      if (grn_world_set_param_at(w, s.param, s.value, &e) != GRN_OK) {
        send_error(&e);
      } else {
        digest_steps = WORKER_NO_DIGEST;
        send_status(w, true);
      }
      break;
    }
    case WORKER_CMD_STATUS:
      send_status(w, true);
      break;
    case WORKER_CMD_FRAME: {
      worker_frame f;
      if (h.size != sizeof f || !enc) {
        return WORKER_EXIT_PROTOCOL;
      }
      memcpy(&f, buf, sizeof f);
      const uint8_t *out;
      size_t len;
      if (frame_encode(enc, w, f.key != 0, &out, &len) != 0) {
        return WORKER_EXIT_NOMEM;
      }
      if (len > frame_bytes) {
        e.code = GRN_E_BUFFER;
        snprintf(e.message, sizeof e.message, "a frame of %zu bytes exceeds the %zu shared", len,
                 frame_bytes);
        send_error(&e);
        break;
      }
      memcpy(frames, out, len);
      frame_size = (uint32_t)len;
      size_t at = (len + 7) & ~(size_t)7; /* where the next part goes */
      if (f.chains) {
        const int n = grn_world_chains(w, f.px, f.pz, f.nx, f.nz, chain_buf, chain_cap);
        if (n < 0 ||
            frame_encode_chains(enc, chain_buf, n < chain_cap ? n : chain_cap, &out, &len) != 0 ||
            at + len > frame_bytes) {
          e.code = n < 0 ? GRN_E_INVALID : GRN_E_BUFFER;
          snprintf(e.message, sizeof e.message, "cannot encode the force chains");
          frame_size = 0;
          send_error(&e);
          break;
        }
        memcpy(frames + at, out, len);
        chain_size = (uint32_t)len;
        at = (at + len + 7) & ~(size_t)7;
      }
      if (f.delta) {
        /* nothing when the frame is a keyframe; one that does not fit is left out (the viewer
         * waiting for it asks again with the next frame) */
        if (frame_encode_delta(enc, &out, &len) != 0) {
          return WORKER_EXIT_NOMEM;
        }
        if (len > 0 && at + len <= frame_bytes) {
          memcpy(frames + at, out, len);
          delta_size = (uint32_t)len;
        }
      }
      send_status(w, false); /* frames are sent every tick: the digest only when asked */
      break;
    }
    case WORKER_CMD_SNAPSHOT: {
      worker_snapshot q;
      if (h.size != sizeof q) {
        return WORKER_EXIT_PROTOCOL;
      }
      memcpy(&q, buf, sizeof q);
      if (q.format != SNAPSHOT_CSV && q.format != SNAPSHOT_VTK) {
        return WORKER_EXIT_PROTOCOL;
      }
      char title[160];
      snprintf(title, sizeof title, "grainlab %s, step %llu, t = %.6g s", scene->name,
               (unsigned long long)grn_world_step_count(w), grn_world_time(w));
      worker_data *piece = malloc(sizeof *piece);
      const int rc =
          piece ? snapshot_write(w, (snapshot_format)q.format, title, send_piece, piece) : -2;
      free(piece);
      if (rc != 0) {
        /* nothing was sent yet: the writer allocates and counts before its first piece */
        e.code = rc == -3 ? GRN_E_BUFFER : GRN_E_NOMEM;
        snprintf(e.message, sizeof e.message, "%s",
                 rc == -3 ? "more touching pairs than a snapshot carries"
                          : "no memory for the snapshot");
        send_error(&e);
        break;
      }
      send_status(w, false);
      break;
    }
    case WORKER_CMD_SAVE: {
      if (h.size != sizeof h) {
        return WORKER_EXIT_PROTOCOL;
      }
      worker_data *piece = malloc(sizeof *piece);
      if (!piece) {
        e.code = GRN_E_NOMEM;
        snprintf(e.message, sizeof e.message, "no memory to save the world");
        send_error(&e);
        break;
      }
      save(w, piece);
      free(piece);
      break;
    }
    case WORKER_CMD_RESTORE: {
      worker_restore q;
      if (h.size != sizeof q) {
        return WORKER_EXIT_PROTOCOL;
      }
      memcpy(&q, buf, sizeof q);
      const grn_world *before = w;
      if (!restore(&q, c.memory_limit, &def, &w, buf)) {
        return WORKER_EXIT_PROTOCOL;
      }
      /* another world: its first frame is a keyframe (the encoder's deltas are of the old one),
       * and shares no grain with the frames before */
      if (enc && w != before) {
        frame_encoder_restart(enc);
      }
      break;
    }
    case WORKER_CMD_QUIT:
      grn_world_destroy(w);
      return WORKER_EXIT_OK;
    default:
#ifdef GRAINLAB_TEST_COMMANDS
      test_command(h.type);
#endif
      return WORKER_EXIT_PROTOCOL;
    }
  }
}
