/* Settled states kept in the data directory (issue 33): a scene's grains first settle under a
 * drag, the same way for every session of the same scene, parameters and seed, so a node settles
 * each such definition once and later sessions start from the kept state, bit-identical to
 * settling again. Bounded in bytes (the least recently used go first), written whole under a
 * temporary name and renamed, checked when read (a file that fails is deleted), and shared by
 * every session of the node, which also learn here who is settling a definition right now. */
#ifndef GRAINLAB_SETTLED_H
#define GRAINLAB_SETTLED_H

#include "grainlab/grainlab.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct settled settled;

/* What names a settled state: everything that shapes the settle. Every parameter of the scene
 * (a live one, changed later, may still shape how the grains come to rest), the seed, the grain
 * count, the engine's state version and version. Not the thread count, which moves no grain
 * (CONVENTIONS.md, determinism). */
typedef struct settled_key {
  char text[1024]; /* canonical; numbers as C99 hex floats, exact */
  char file[96];   /* "<scene>-<hash of text>.state" */
} settled_key;

/* The key of a definition; false when there is none to keep: a scene that does not settle, or a
 * definition too long to name. */
bool settled_key_of(const grn_world_def *def, settled_key *out);

/* A kept state as grn_world_save wrote it, and where the world it came from stood. */
typedef struct settled_state {
  char *bytes; /* malloc'd */
  size_t len;
  uint64_t steps, digest;
  double t;
} settled_state;
void settled_state_free(settled_state *s);

/* The kept states in `dir` (made if missing), at most max_bytes of them (> 0). NULL with err when
 * the folder cannot be made. Half-written files of an earlier daemon are removed. */
settled *settled_open(const char *dir, uint64_t max_bytes, char *err, size_t errlen);
void settled_free(settled *c);

/* What a session that starts from `key` does (settled_look):
 * SETTLED_KEPT: restore *out (then settled_restored);
 * SETTLED_BUSY: another session settles it now, and promised it by *until: wait for it;
 * SETTLED_YOURS: nobody has it: the caller settles it, holding the claim *ticket until `until`,
 *   and keeps it (settled_put) or gives the claim back (settled_release). */
typedef enum settled_answer { SETTLED_KEPT = 0, SETTLED_BUSY, SETTLED_YOURS } settled_answer;
/* `until` and *busy_until are monotonic seconds. A kept file that cannot be read or fails its
 * checks (its key, size, checksum) is deleted here and counted as rejected. */
settled_answer settled_look(settled *c, const settled_key *key, double until, uint64_t *ticket,
                            double *busy_until, settled_state *out);
/* The kept state of `key` alone, claiming nothing: 0 with *out, or -1 (none; a damaged file is
 * deleted and counted as in settled_look). */
int settled_read(settled *c, const settled_key *key, settled_state *out);
/* Whether a state of `key` is kept (its file is there; not read). */
bool settled_has(settled *c, const settled_key *key);
/* Whether a session still holds the claim on `key` (in memory: cheap enough for every tick). */
bool settled_busy(settled *c, const settled_key *key);
/* Grows whenever a state is kept or a claim is given up: a waiting session looks again. */
uint64_t settled_generation(settled *c);
/* Keep a settled state (best effort: a full disk keeps nothing), then trim to the bound; the
 * claim `ticket` (0: none) ends either way. */
void settled_put(settled *c, const settled_key *key, uint64_t ticket, const settled_state *s);
/* The claim ends without a state (its session changed something, failed or ended). */
void settled_release(settled *c, uint64_t ticket);
/* A kept state was restored (a hit: it is used, so it goes last), or refused by the worker (the
 * engine's checks or its digest): its file is deleted. */
void settled_restored(settled *c, const settled_key *key);
void settled_refused(settled *c, const settled_key *key);
/* A session settles by itself (a miss), or waits for another's settle. */
void settled_missed(settled *c);
void settled_waited(settled *c);

typedef struct settled_stats {
  uint64_t hits, misses, waits, rejected, kept, evicted;
  uint64_t bytes, files, max_bytes;
} settled_stats;
/* NULL c: all zero (no cache). */
void settled_get_stats(settled *c, settled_stats *out);

#endif
