/* The channel between grainlabd and a session's worker process: fixed-layout messages over an
 * AF_UNIX SOCK_SEQPACKET socket pair (one message per packet), all little-endian host structs
 * since both ends are built together. The daemon sends commands; the worker answers each one. */
#ifndef GRAINLAB_WORKER_PROTO_H
#define GRAINLAB_WORKER_PROTO_H

#include "grainlab/grainlab.h"

#include <stdint.h>

/* 2: parameters are set by id; 3: the digest on demand; 4: snapshots; 5: every sample of a step;
 * 6: the status says how long the grains may still settle; 7: a frame's delta form on request
 * (stream format 2); 8: a world's whole state saved, and a world made again from one (issue 33:
 * a settled state kept and shared); 9: parameters by their index in the scene's own list, no
 * longer by engine-wide ids (issue 34); 10: the frames' scene geometry carries the drum (stream
 * format 4) */
#define WORKER_PROTO_VERSION 10u
#define WORKER_MAX_MESSAGE 65536
/* The most steps one step command may ask for: a minute of simulated time. */
#define WORKER_MAX_STEPS ((int)(60.0 / GRN_STEP_SECONDS + 0.5))
#define WORKER_CHANNEL_FD 3 /* the worker finds its end of the socket pair here */
#define WORKER_FRAME_FD 4   /* and here the shared memory its stream frames are written to */

/* Exit codes a worker chooses; anything else (or a signal) is a crash. */
enum {
  WORKER_EXIT_OK = 0,
  WORKER_EXIT_PROTOCOL = 10, /* the daemon sent something it cannot read */
  WORKER_EXIT_SETUP = 11,    /* the sandbox or the world could not be set up */
  WORKER_EXIT_NOMEM = 12     /* the memory limit was reached */
};

typedef enum worker_cmd {
  WORKER_CMD_CREATE = 1, /* worker_create → worker_status */
  WORKER_CMD_STEP,       /* worker_step → a worker_sample per sample taken, then worker_status */
  WORKER_CMD_ACT,        /* grn_action → worker_status or worker_error */
  WORKER_CMD_SET,        /* worker_set → worker_status or worker_error */
  WORKER_CMD_STATUS,     /* nothing → worker_status */
  WORKER_CMD_QUIT,       /* nothing → the worker exits 0 */
  WORKER_CMD_FRAME,      /* worker_frame → worker_status with the frame in the shared memory */
  WORKER_CMD_SNAPSHOT, /* worker_snapshot → worker_data... then worker_status, or worker_error */
  WORKER_CMD_SAVE,     /* nothing → worker_data... (the engine's saved state) then worker_status
                          with its digest, or worker_error before any piece */
  WORKER_CMD_RESTORE,  /* worker_restore, then its pieces (WORKER_CMD_PIECE) → worker_status of
                          the world made from it, or worker_error with the old world kept */
  WORKER_CMD_PIECE,    /* worker_data: one piece of a state RESTORE announced */
  /* test-only (GRAINLAB_TEST_COMMANDS builds): prove that limits end the worker */
  WORKER_CMD_TEST_HOG = 100, /* allocate and touch memory until the limit stops it */
  WORKER_CMD_TEST_SYSCALL,   /* try to open a file: the filter must kill the process */
  WORKER_CMD_TEST_HANG,      /* stop answering */
  WORKER_CMD_TEST_PRLIMIT    /* read another process's limits: the filter must kill */
} worker_cmd;

typedef enum worker_reply {
  WORKER_REPLY_STATUS = 1,
  WORKER_REPLY_ERROR,
  WORKER_REPLY_DATA,
  WORKER_REPLY_SAMPLE
} worker_reply;

typedef struct worker_header {
  uint32_t type; /* worker_cmd or worker_reply */
  uint32_t size; /* bytes of the whole message, header included */
} worker_header;

typedef struct worker_create {
  worker_header h;
  uint32_t version;
  char scene[32];
  double param[GRN_PARAM_MAX]; /* the scene's parameters in its order, validated again here */
  uint64_t seed;
  int32_t grains;
  int32_t threads;
  uint64_t memory_limit; /* bytes of address space for the worker process */
  uint64_t frame_bytes;  /* size of the shared frame memory on WORKER_FRAME_FD; 0: none */
} worker_create;

typedef struct worker_frame {
  worker_header h;
  uint8_t key;    /* 1: a keyframe now (a viewer joined) */
  uint8_t chains; /* 1: the force chains too, in the slab behind the plane below */
  uint8_t delta;  /* 1: the frame as a delta against its keyframe too (a viewer skipped frames) */
  double px, pz, nx, nz;
} worker_frame;

/* Force chains a frame carries at most, per grain: more touching pairs than a packing has. */
#define WORKER_CHAINS_PER_GRAIN 4

typedef struct worker_step {
  worker_header h;
  int32_t steps;
  int32_t digest; /* 1: the reply's digest is of the state after these steps (a pass over every
                     grain, as long as a few steps' contact forces: not asked for while pacing) */
} worker_step;

/* The world's particles and contacts as text (server/common/snapshot.h), sent as worker_data
 * pieces in order, then the status; an error (no memory, too many contacts) comes before any
 * piece. */
typedef struct worker_snapshot {
  worker_header h;
  int32_t format; /* snapshot_format */
  int32_t pad;
} worker_snapshot;

/* One piece of a snapshot's text or of a saved state (either way): the header, then
 * h.size - sizeof h bytes. */
typedef struct worker_data {
  worker_header h;
  char bytes[WORKER_MAX_MESSAGE - sizeof(worker_header)];
} worker_data;

/* The bytes one piece carries at most. */
#define WORKER_PIECE (WORKER_MAX_MESSAGE - sizeof(worker_header))

/* A saved state (grn_world_save) the worker makes its world from, in place of the one it has:
 * `size` bytes follow in pieces of WORKER_PIECE bytes (the last one the rest). The engine checks
 * the state as outside input; the worker also refuses one that does not restore to `steps` and
 * `digest`, what the world it was saved from had (a file damaged where the engine's checks cannot
 * see it). A refused state leaves the world as it was. */
typedef struct worker_restore {
  worker_header h;
  uint64_t size;
  uint64_t steps;
  uint64_t digest;
} worker_restore;

/* A measurement sample the engine took during a step command (every grn_scene_sample_steps of
 * the world's steps), sent as it is taken: a call of many steps (a late tick, `step n`, a fork's
 * fast-forward) loses none of them. */
typedef struct worker_sample {
  worker_header h;
  uint64_t steps;
  int32_t alive;
  int32_t pad;
  grn_measurements meas;
} worker_sample;

typedef struct worker_act {
  worker_header h;
  grn_action action;
} worker_act;

typedef struct worker_set {
  worker_header h;
  int32_t param; /* the parameter's index in the scene's list */
  int32_t pad;
  double value;
} worker_set;

typedef struct worker_status {
  worker_header h;
  uint64_t steps;
  double t;
  uint8_t asleep;
  int32_t alive;
  uint64_t digest;       /* the engine's digest of the state at digest_steps */
  uint64_t digest_steps; /* = steps when the reply was asked for it (every command but a pacing
                            step or a frame); WORKER_NO_DIGEST before the first */
  grn_measurements meas;
  double settle_left;  /* grn_world_settle_left: seconds of simulated time, at most */
  uint32_t frame_size; /* bytes of the frame just written to the shared memory (FRAME only) */
  uint32_t chain_size; /* bytes of the chains message after it, at frame_size rounded up to 8 */
  uint32_t delta_size; /* bytes of its delta form after those, at their end rounded up to 8 */
} worker_status;

#define WORKER_NO_DIGEST UINT64_MAX

typedef struct worker_error {
  worker_header h;
  grn_error error;
} worker_error;

#endif
