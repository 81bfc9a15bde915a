/* Spawning, calling and reaping session workers (see worker_client.h). */
#define _GNU_SOURCE
#include "worker_client.h"

#include "frame.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void describe_exit(worker_client *wc, int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (sig == SIGSYS) {
      snprintf(wc->reason, sizeof wc->reason, "worker made a forbidden system call (seccomp)");
    } else {
      snprintf(wc->reason, sizeof wc->reason, "worker killed by signal %d (%s)", sig,
               sigdescr_np(sig) ? sigdescr_np(sig) : "unknown");
    }
    return;
  }
  switch (WEXITSTATUS(status)) {
  case WORKER_EXIT_OK:
    snprintf(wc->reason, sizeof wc->reason, "worker ended");
    break;
  case WORKER_EXIT_NOMEM:
    snprintf(wc->reason, sizeof wc->reason, "worker reached its memory limit");
    break;
  case WORKER_EXIT_SETUP:
    snprintf(wc->reason, sizeof wc->reason, "worker could not set up its world or sandbox");
    break;
  case WORKER_EXIT_PROTOCOL:
    snprintf(wc->reason, sizeof wc->reason, "worker broke the protocol");
    break;
  default:
    snprintf(wc->reason, sizeof wc->reason, "worker exited with status %d", WEXITSTATUS(status));
  }
}

static int64_t now_ms(void);

/* Reap the worker: wait up to grace_ms for it to end by itself (then its own exit tells why),
 * else kill it and give `why`. */
static void finish_within(worker_client *wc, const char *why, int grace_ms) {
  if (wc->ended) {
    return;
  }
  int status = 0;
  pid_t r = 0;
  for (const int64_t until = now_ms() + grace_ms;;) {
    r = waitpid(wc->pid, &status, WNOHANG);
    if (r != 0 || now_ms() >= until) {
      break;
    }
    const struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
  if (r == 0) {
    kill(wc->pid, SIGKILL);
    waitpid(wc->pid, &status, 0);
    snprintf(wc->reason, sizeof wc->reason, "%s", why ? why : "worker stopped");
  } else if (r == wc->pid) {
    describe_exit(wc, status);
  }
  if (wc->fd >= 0) {
    close(wc->fd);
    wc->fd = -1;
  }
  if (wc->frames) {
    munmap((void *)wc->frames, wc->frame_bytes);
    wc->frames = NULL;
  }
  wc->ended = true;
}

static void finish(worker_client *wc, const char *why) {
  finish_within(wc, why, 0);
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Receive one message within the deadline; -1 on end, timeout or a malformed reply. */
/* One reply, by `deadline` (ms, now_ms's clock): a status or an error, or one of the `extra` kind
 * the command asked for (WORKER_REPLY_DATA, WORKER_REPLY_SAMPLE; 0: none). */
static int receive_by(worker_client *wc, void *reply, size_t reply_size, int64_t deadline,
                      uint32_t extra) {
  for (;;) {
    const int64_t left = deadline - now_ms();
    struct pollfd p[2] = {{wc->fd, POLLIN, 0}, {wc->cancel_fd, POLLIN, 0}};
    const int r = poll(p, wc->cancel_fd >= 0 ? 2 : 1, left > 0 ? (int)left : 0);
    if (r < 0 && errno == EINTR) {
      continue;
    }
    if (r > 0 && wc->cancel_fd >= 0 && (p[1].revents & POLLIN)) {
      finish(wc, "worker stopped: its session ended");
      return -1;
    }
    if (r <= 0) {
      finish(wc, "worker stopped answering (no heartbeat)");
      return -1;
    }
    const ssize_t n = recv(wc->fd, reply, reply_size, MSG_TRUNC);
    if (n <= 0) {
      /* closed: it is ending on its own, and its exit says why */
      finish_within(wc, "worker closed its channel", 1000);
      return -1;
    }
    worker_header h;
    if ((size_t)n < sizeof h || (size_t)n > reply_size) {
      finish(wc, "worker sent a malformed reply");
      return -1;
    }
    memcpy(&h, reply, sizeof h);
    if (h.size != (size_t)n || (h.type == WORKER_REPLY_STATUS && h.size != sizeof(worker_status)) ||
        (h.type == WORKER_REPLY_ERROR && h.size != sizeof(worker_error)) ||
        (h.type == WORKER_REPLY_SAMPLE && h.size != sizeof(worker_sample)) ||
        (h.type != WORKER_REPLY_STATUS && h.type != WORKER_REPLY_ERROR && h.type != extra)) {
      finish(wc, "worker sent a malformed reply");
      return -1;
    }
    return (int)h.type;
  }
}

static int receive(worker_client *wc, void *reply, size_t reply_size, int timeout_ms) {
  return receive_by(wc, reply, reply_size, now_ms() + timeout_ms, 0);
}

/* A worker's text is outside input (a compromised worker sends any bytes): end it within its
 * buffers before anything reads it with %s. */
static void own_text(grn_error *e) {
  e->field[sizeof e->field - 1] = '\0';
  e->message[sizeof e->message - 1] = '\0';
}

/* Give up before any process exists: drop the frame memory, keep the reason. */
static void abandon(worker_client *wc) {
  if (wc->frames) {
    munmap((void *)wc->frames, wc->frame_bytes);
    wc->frames = NULL;
  }
  wc->ended = true;
}

size_t worker_frame_bytes(int grains) {
  /* the larger raw payload of a keyframe (8 bytes a grain and the geometry) and a predicted frame
   * or a delta (10 bytes a grain) */
  const size_t raw = 10 * (size_t)grains + sizeof(grn_geometry);
  const size_t chains = 12 * WORKER_CHAINS_PER_GRAIN * (size_t)grains;
  /* each part (the frame, its chains, its delta) > FRAME_HEADER + ZSTD_compressBound(its raw
   * size), plus alignment */
  return 3 * (FRAME_HEADER + 4096) + 2 * (raw + raw / 128) + chains + chains / 128;
}

int worker_spawn(worker_client *wc, const char *exe, const worker_create *create, bool keep_stderr,
                 int timeout_ms, int cancel_fd, worker_status *first) {
  memset(wc, 0, sizeof *wc);
  wc->fd = -1;
  wc->cancel_fd = cancel_fd;
  int mem = -1;
  if (create->frame_bytes > 0) {
    /* the frame memory: created here, shared with the worker on fd 4, read-only on this side */
    mem = memfd_create("grainlab-frames", MFD_CLOEXEC);
    void *map = MAP_FAILED;
    if (mem >= 0 && ftruncate(mem, (off_t)create->frame_bytes) == 0) {
      map = mmap(NULL, create->frame_bytes, PROT_READ, MAP_SHARED, mem, 0);
    }
    if (map == MAP_FAILED) {
      snprintf(wc->reason, sizeof wc->reason, "frame memory: %s", strerror(errno));
      if (mem >= 0) {
        close(mem);
      }
      wc->ended = true;
      return -1;
    }
    wc->frames = map;
    wc->frame_bytes = create->frame_bytes;
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    snprintf(wc->reason, sizeof wc->reason, "socketpair: %s", strerror(errno));
    if (mem >= 0) {
      close(mem);
    }
    abandon(wc);
    return -1;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    snprintf(wc->reason, sizeof wc->reason, "fork: %s", strerror(errno));
    close(sv[0]);
    close(sv[1]);
    if (mem >= 0) {
      close(mem);
    }
    abandon(wc);
    return -1;
  }
  if (pid == 0) {
    /* child: the channel on fd 3 (and the frame memory on 4) and nothing else; both are first
     * moved above 9 so that placing one cannot close the other (only async-signal-safe calls) */
    const int chan_hi = fcntl(sv[1], F_DUPFD, 10);
    const int mem_hi = mem >= 0 ? fcntl(mem, F_DUPFD, 10) : -1;
    const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (chan_hi < 0 || (mem >= 0 && mem_hi < 0) || null < 0 || dup2(null, 0) < 0 ||
        dup2(null, 1) < 0 || (!keep_stderr && dup2(null, 2) < 0) ||
        dup2(chan_hi, WORKER_CHANNEL_FD) < 0 ||
        (mem_hi >= 0 && dup2(mem_hi, WORKER_FRAME_FD) < 0)) {
      _exit(WORKER_EXIT_SETUP);
    }
    close_range(mem >= 0 ? WORKER_FRAME_FD + 1 : WORKER_CHANNEL_FD + 1, ~0u, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL); /* the daemon's blocked signals are not the worker's */
    char *const argv[] = {(char *)"grainlab-worker", NULL};
    execv(exe, argv);
    _exit(127);
  }
  close(sv[1]);
  if (mem >= 0) {
    close(mem); /* the mapping stays */
  }
  wc->pid = pid;
  wc->fd = sv[0];
  if (send(wc->fd, create, sizeof *create, MSG_NOSIGNAL) != (ssize_t)sizeof *create) {
    finish(wc, "could not send the world definition");
    return -1;
  }
  unsigned char buf[sizeof(worker_status) > sizeof(worker_error) ? sizeof(worker_status)
                                                                 : sizeof(worker_error)];
  const int type = receive(wc, buf, sizeof buf, timeout_ms);
  if (type == WORKER_REPLY_ERROR) {
    worker_error e;
    memcpy(&e, buf, sizeof e);
    own_text(&e.error);
    finish(wc, NULL);
    snprintf(wc->reason, sizeof wc->reason, "%s", e.error.message);
    return -1;
  }
  if (type != WORKER_REPLY_STATUS) {
    return -1;
  }
  if (first) {
    memcpy(first, buf, sizeof *first);
  }
  return 0;
}

int worker_call(worker_client *wc, const void *cmd, size_t size, void *reply, size_t reply_size,
                int timeout_ms) {
  if (wc->ended) {
    return -1;
  }
  if (send(wc->fd, cmd, size, MSG_NOSIGNAL) != (ssize_t)size) {
    /* the other end is gone: find out why */
    return receive(wc, reply, reply_size, timeout_ms);
  }
  return receive(wc, reply, reply_size, timeout_ms);
}

/* A reply that is a status or an error, into out by its type. */
typedef union status_or_error {
  worker_status st;
  worker_error er;
} status_or_error;

static int take_reply(worker_result *out, const status_or_error *reply) {
  if (out->type == WORKER_REPLY_STATUS) {
    out->status = reply->st;
  } else if (out->type == WORKER_REPLY_ERROR) {
    out->error = reply->er.error;
    own_text(&out->error);
  }
  return out->type;
}

static int typed_call(worker_client *wc, const void *cmd, size_t size, int timeout_ms,
                      worker_result *out) {
  status_or_error reply;
  memset(out, 0, sizeof *out);
  out->type = worker_call(wc, cmd, size, &reply, sizeof reply, timeout_ms);
  return take_reply(out, &reply);
}

void worker_samples_free(worker_samples *s) {
  free(s->at);
  *s = (worker_samples){0};
}

int worker_call_step(worker_client *wc, int steps, bool digest, int timeout_ms,
                     worker_samples *samples, worker_result *out) {
  memset(out, 0, sizeof *out);
  if (samples) {
    samples->n = 0;
    samples->lost = 0;
  }
  if (wc->ended) {
    out->type = -1;
    return -1;
  }
  const worker_step cmd = {{WORKER_CMD_STEP, sizeof cmd}, steps, digest ? 1 : 0};
  const int64_t deadline = now_ms() + timeout_ms;
  /* a send that fails finds out why in the receive */
  (void)send(wc->fd, &cmd, sizeof cmd, MSG_NOSIGNAL);
  union {
    worker_status st;
    worker_error er;
    worker_sample sm;
  } reply;
  int type, taken = 0;
  while ((type = receive_by(wc, &reply, sizeof reply, deadline, WORKER_REPLY_SAMPLE)) ==
         WORKER_REPLY_SAMPLE) {
    /* the engine samples once in a step at most: more is a broken or hostile worker */
    if (++taken > steps) {
      finish(wc, "worker sent more samples than it took steps");
      type = -1;
      break;
    }
    if (!samples) {
      continue;
    }
    if (samples->n == samples->cap) {
      const int cap = samples->cap ? 2 * samples->cap : 16;
      worker_sample *more = realloc(samples->at, sizeof *more * (size_t)cap);
      if (!more) {
        samples->lost++;
        continue;
      }
      samples->at = more;
      samples->cap = cap;
    }
    samples->at[samples->n++] = reply.sm;
  }
  out->type = type;
  if (type == WORKER_REPLY_STATUS) {
    out->status = reply.st;
  } else if (type == WORKER_REPLY_ERROR) {
    out->error = reply.er.error;
    own_text(&out->error);
  }
  return type;
}

int worker_call_act(worker_client *wc, const grn_action *action, int timeout_ms,
                    worker_result *out) {
  worker_act cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.h = (worker_header){WORKER_CMD_ACT, sizeof cmd};
  cmd.action = *action;
  return typed_call(wc, &cmd, sizeof cmd, timeout_ms, out);
}

int worker_call_set(worker_client *wc, int param, double value, int timeout_ms,
                    worker_result *out) {
  const worker_set cmd = {{WORKER_CMD_SET, sizeof cmd}, (int32_t)param, 0, value};
  return typed_call(wc, &cmd, sizeof cmd, timeout_ms, out);
}

int worker_call_frame(worker_client *wc, bool key, bool delta, const double chains[4],
                      int timeout_ms, worker_result *out) {
  worker_frame cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.h = (worker_header){WORKER_CMD_FRAME, sizeof cmd};
  cmd.key = key;
  cmd.delta = delta;
  cmd.chains = chains != NULL;
  if (chains) {
    cmd.px = chains[0];
    cmd.pz = chains[1];
    cmd.nx = chains[2];
    cmd.nz = chains[3];
  }
  return typed_call(wc, &cmd, sizeof cmd, timeout_ms, out);
}

/* A command answered by worker_data pieces and then a status (SNAPSHOT, SAVE): the pieces
 * gathered in *data (malloc'd, *len bytes, at most `cap`: a worker that sends more is ended). */
static int call_for_data(worker_client *wc, const void *cmd, size_t size, size_t cap,
                         int timeout_ms, char **data, size_t *len, worker_result *out) {
  memset(out, 0, sizeof *out);
  *data = NULL;
  *len = 0;
  if (wc->ended) {
    out->type = -1;
    return -1;
  }
  const int64_t deadline = now_ms() + timeout_ms;
  worker_data *piece = malloc(sizeof *piece);
  if (!piece) {
    out->type = WORKER_REPLY_ERROR;
    out->error.code = GRN_E_NOMEM;
    snprintf(out->error.message, sizeof out->error.message, "no memory for the worker's reply");
    return out->type;
  }
  /* a send that fails finds out why in the receive */
  (void)send(wc->fd, cmd, size, MSG_NOSIGNAL);
  char *all = NULL;
  size_t have = 0, room = 0;
  int type;
  while ((type = receive_by(wc, piece, sizeof *piece, deadline, WORKER_REPLY_DATA)) ==
         WORKER_REPLY_DATA) {
    const size_t n = piece->h.size - sizeof piece->h;
    if (n == 0) {
      continue; /* nothing to add (and no buffer yet to add it to) */
    }
    if (have + n > cap) {
      /* only a broken or hostile worker sends more than any world of its size could */
      finish(wc, "worker sent more than a world of its size could");
      type = -1;
      break;
    }
    if (have + n > room) {
      room = 2 * (have + n) < cap ? 2 * (have + n) : cap;
      char *more = realloc(all, room);
      if (!more) {
        /* the worker goes on sending: it is ended rather than read out of step */
        finish(wc, "no memory for the worker's reply");
        type = -1;
        break;
      }
      all = more;
    }
    memcpy(all + have, piece->bytes, n);
    have += n;
  }
  out->type = type;
  if (type == WORKER_REPLY_STATUS) {
    memcpy(&out->status, piece, sizeof out->status);
    *data = all ? all : calloc(1, 1);
    *len = have;
    all = NULL;
  } else if (type == WORKER_REPLY_ERROR) {
    worker_error e;
    memcpy(&e, piece, sizeof e);
    out->error = e.error;
    own_text(&out->error);
  }
  free(all);
  free(piece);
  return type;
}

int worker_call_snapshot(worker_client *wc, int format, size_t cap, int timeout_ms, char **text,
                         size_t *len, worker_result *out) {
  const worker_snapshot cmd = {{WORKER_CMD_SNAPSHOT, sizeof cmd}, format, 0};
  return call_for_data(wc, &cmd, sizeof cmd, cap, timeout_ms, text, len, out);
}

int worker_call_save(worker_client *wc, size_t cap, int timeout_ms, char **state, size_t *len,
                     worker_result *out) {
  const worker_header cmd = {WORKER_CMD_SAVE, sizeof cmd};
  return call_for_data(wc, &cmd, sizeof cmd, cap, timeout_ms, state, len, out);
}

/* One message out by `deadline`: a worker that stops reading (hung, its buffer full) must not
 * hold the caller in send. 0, or -1 with the worker ended. */
static int send_by(worker_client *wc, const void *msg, size_t size, int64_t deadline) {
  for (;;) {
    if (send(wc->fd, msg, size, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)size) {
      return 0;
    }
    if (errno != EAGAIN && errno != EINTR) {
      /* the other end is gone: its exit says why */
      finish_within(wc, "worker closed its channel", 1000);
      return -1;
    }
    const int64_t left = deadline - now_ms();
    struct pollfd p[2] = {{wc->fd, POLLOUT, 0}, {wc->cancel_fd, POLLIN, 0}};
    const int r = left > 0 ? poll(p, wc->cancel_fd >= 0 ? 2 : 1, (int)left) : 0;
    if (r > 0 && wc->cancel_fd >= 0 && (p[1].revents & POLLIN)) {
      finish(wc, "worker stopped: its session ended");
      return -1;
    }
    if (r == 0) {
      finish(wc, "worker stopped answering (no heartbeat)");
      return -1;
    }
  }
}

int worker_call_restore(worker_client *wc, const void *state, size_t len, uint64_t steps,
                        uint64_t digest, int timeout_ms, worker_result *out) {
  memset(out, 0, sizeof *out);
  if (wc->ended || len == 0) {
    out->type = -1;
    return -1;
  }
  const int64_t deadline = now_ms() + timeout_ms;
  worker_restore cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.h = (worker_header){WORKER_CMD_RESTORE, sizeof cmd};
  cmd.size = len;
  cmd.steps = steps;
  cmd.digest = digest;
  worker_data *piece = malloc(sizeof *piece);
  if (!piece) {
    out->type = WORKER_REPLY_ERROR;
    out->error.code = GRN_E_NOMEM;
    snprintf(out->error.message, sizeof out->error.message, "no memory to send a state");
    return out->type;
  }
  int rc = send_by(wc, &cmd, sizeof cmd, deadline);
  for (size_t at = 0; rc == 0 && at < len;) {
    const size_t k = len - at < WORKER_PIECE ? len - at : WORKER_PIECE;
    piece->h = (worker_header){WORKER_CMD_PIECE, (uint32_t)(sizeof piece->h + k)};
    memcpy(piece->bytes, (const char *)state + at, k);
    rc = send_by(wc, piece, piece->h.size, deadline);
    at += k;
  }
  free(piece);
  if (rc != 0) {
    out->type = -1;
    return -1;
  }
  status_or_error reply;
  out->type = receive_by(wc, &reply, sizeof reply, deadline, 0);
  return take_reply(out, &reply);
}

int worker_call_bare(worker_client *wc, uint32_t type, int timeout_ms, worker_result *out) {
  const worker_header cmd = {type, sizeof cmd};
  return typed_call(wc, &cmd, sizeof cmd, timeout_ms, out);
}

int worker_call_status(worker_client *wc, int timeout_ms, worker_result *out) {
  return worker_call_bare(wc, WORKER_CMD_STATUS, timeout_ms, out);
}

void worker_stop(worker_client *wc, int timeout_ms) {
  if (wc->ended) {
    return;
  }
  const worker_header quit = {WORKER_CMD_QUIT, sizeof quit};
  send(wc->fd, &quit, sizeof quit, MSG_NOSIGNAL);
  finish_within(wc, "worker did not stop in time", timeout_ms);
}
