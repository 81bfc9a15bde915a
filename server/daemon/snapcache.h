/* Snapshots of finished runs, made once by a replay and kept in the data directory, so that a
 * run's snapshot costs one replay however often it is asked for (issue 32). */
#ifndef GRAINLAB_SNAPCACHE_H
#define GRAINLAB_SNAPCACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct snapcache snapcache;

/* The kept snapshots in `dir` (made if missing), at most max_bytes of them: past it the least
 * recently made go. NULL with err when the folder cannot be made. */
snapcache *snapcache_open(const char *dir, uint64_t max_bytes, char *err, size_t errlen);
void snapcache_free(snapcache *c);

/* The kept snapshot of `run` in format `fmt` ("csv", "vtk"), made from the state whose digest is
 * `digest` (the run's recorded end: a snapshot of anything else is never served as this run's):
 * 0 with its text (malloc'd, *len bytes) and step; -1 when none is kept. */
int snapcache_get(snapcache *c, int64_t run, const char *digest, const char *fmt, char **text,
                  size_t *len, uint64_t *steps);
/* Keeps one (best effort: a full disk keeps nothing, and the next request replays again). */
void snapcache_put(snapcache *c, int64_t run, const char *digest, const char *fmt, const char *text,
                   size_t len, uint64_t steps);

#endif
