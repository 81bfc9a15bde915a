/* The daemon's side of a session worker: spawn it sandboxed, call it with a deadline, and find
 * out why it ended. One worker_client per worker process; not thread-safe. */
#ifndef GRAINLAB_WORKER_CLIENT_H
#define GRAINLAB_WORKER_CLIENT_H

#include "worker_proto.h"

#include <stdbool.h>
#include <sys/types.h>

typedef struct worker_client {
  pid_t pid;
  int fd;
  const uint8_t *frames; /* the worker's frame memory, read-only here (NULL: none) */
  size_t frame_bytes;
  bool ended;
  char reason[200]; /* why it ended, once ended */
  /* Readable once the caller gives up on the worker (its session ends): a call in flight then
   * returns at once and the worker is killed, since a long step cannot be interrupted otherwise.
   * -1: none. */
  int cancel_fd;
} worker_client;

/* Shared memory a worker needs for the frames of a world of `grains` grains: the compressed
 * keyframe can exceed the raw payload by zstd's worst-case margin. */
size_t worker_frame_bytes(int grains);

/* Start `exe` with only its channel (and, when create->frame_bytes > 0, the frame memory)
 * (stdin/stdout/stderr on /dev/null unless keep_stderr), send the definition, and wait for its
 * first status (timeout_ms). cancel_fd (-1: none) cuts every wait short once readable. On failure
 * the worker is reaped and `reason` says why; returns 0 or -1. */
int worker_spawn(worker_client *wc, const char *exe, const worker_create *create, bool keep_stderr,
                 int timeout_ms, int cancel_fd, worker_status *first);

/* Send one command and wait up to timeout_ms for its reply (a worker_status or worker_error in
 * `reply`, at most reply_size bytes). Returns the reply type, or -1 when the worker ended or did
 * not answer in time — then it is killed, reaped and `reason` is set. */
int worker_call(worker_client *wc, const void *cmd, size_t size, void *reply, size_t reply_size,
                int timeout_ms);

/* What a typed call got back: the worker's status, or the engine's refusal with its reason. */
typedef struct worker_result {
  int type; /* WORKER_REPLY_STATUS, WORKER_REPLY_ERROR, or -1: the worker ended (see `reason`) */
  worker_status status;
  grn_error error;
} worker_result;

/* The samples a step command brought, in order (the caller's; each call empties it first). */
typedef struct worker_samples {
  worker_sample *at;
  int n, cap;
  int lost; /* not kept: no memory for them */
} worker_samples;
void worker_samples_free(worker_samples *s);

/* One command each, with its reply in `out`; each returns out->type. */
/* digest: the reply's digest must be of the state after these steps (worker_proto.h); samples:
 * where the samples taken on the way go (NULL: read and dropped). */
int worker_call_step(worker_client *wc, int steps, bool digest, int timeout_ms,
                     worker_samples *samples, worker_result *out);
int worker_call_act(worker_client *wc, const grn_action *action, int timeout_ms,
                    worker_result *out);
int worker_call_set(worker_client *wc, int param, double value, int timeout_ms, worker_result *out);
/* A frame into the shared memory (a keyframe when `key`; its delta form too when `delta`), with
 * the force chains behind the plane through (px, pz) with normal (nx, nz) when `chains` is given
 * (NULL: none). */
int worker_call_frame(worker_client *wc, bool key, bool delta, const double chains[4],
                      int timeout_ms, worker_result *out);
int worker_call_status(worker_client *wc, int timeout_ms, worker_result *out);
/* A snapshot (server/common/snapshot.h's `format`) of the world now: its text in *text (malloc'd,
 * *len bytes), at most `cap` bytes (a worker that sends more is ended), then its status; NULL on
 * any other reply. */
int worker_call_snapshot(worker_client *wc, int format, size_t cap, int timeout_ms, char **text,
                         size_t *len, worker_result *out);
/* The world's whole state (grn_world_save) in *state (malloc'd, *len bytes, at most `cap`), and
 * the status with the digest it was saved at; NULL on any other reply. */
int worker_call_save(worker_client *wc, size_t cap, int timeout_ms, char **state, size_t *len,
                     worker_result *out);
/* The worker's world made from a saved state (worker_proto.h's RESTORE), which must restore to
 * `steps` and `digest`; refused (WORKER_REPLY_ERROR, the engine's GRN_E_BAD_STATE) with the world
 * kept as it was. Every piece goes out within timeout_ms, or the worker is ended. */
int worker_call_restore(worker_client *wc, const void *state, size_t len, uint64_t steps,
                        uint64_t digest, int timeout_ms, worker_result *out);
/* A command that is its header alone (STATUS, and the test builds' limit breakers). */
int worker_call_bare(worker_client *wc, uint32_t type, int timeout_ms, worker_result *out);

/* Stop it (QUIT, then SIGKILL after timeout_ms) and reap it. */
void worker_stop(worker_client *wc, int timeout_ms);

#endif
