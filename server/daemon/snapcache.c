/* Kept run snapshots (see snapcache.h): one file each, named by run, end digest and step, written
 * whole under a temporary name and renamed, so that a reader never sees half of one. */
#define _GNU_SOURCE
#include "snapcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct snapcache {
  char dir[PATH_MAX];
  uint64_t max_bytes;
  pthread_mutex_t lock; /* a put's trimming against a get's open */
};

snapcache *snapcache_open(const char *dir, uint64_t max_bytes, char *err, size_t errlen) {
  if (mkdir(dir, 0750) != 0 && errno != EEXIST) {
    snprintf(err, errlen, "cannot make %s: %s", dir, strerror(errno));
    return NULL;
  }
  snapcache *c = calloc(1, sizeof *c);
  if (!c) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  snprintf(c->dir, sizeof c->dir, "%s", dir);
  c->max_bytes = max_bytes;
  pthread_mutex_init(&c->lock, NULL);
  /* half-written files of a daemon that died while keeping one */
  DIR *d = opendir(dir);
  for (const struct dirent *e; d && (e = readdir(d)) != NULL;) {
    if (strncmp(e->d_name, ".tmp-", 5) == 0) {
      unlinkat(dirfd(d), e->d_name, 0);
    }
  }
  if (d) {
    closedir(d);
  }
  return c;
}

void snapcache_free(snapcache *c) {
  if (c) {
    pthread_mutex_destroy(&c->lock);
    free(c);
  }
}

/* Only what the store writes reaches a file name: 16 hex digits, and a known format. */
static bool names_ok(const char *digest, const char *fmt) {
  return strlen(digest) == 16 && strspn(digest, "0123456789abcdef") == 16 &&
         (strcmp(fmt, "csv") == 0 || strcmp(fmt, "vtk") == 0);
}

int snapcache_get(snapcache *c, int64_t run, const char *digest, const char *fmt, char **text,
                  size_t *len, uint64_t *steps) {
  if (!c || !names_ok(digest, fmt)) {
    return -1;
  }
  char prefix[64], suffix[8];
  snprintf(prefix, sizeof prefix, "run-%" PRId64 "-%s-", run, digest);
  snprintf(suffix, sizeof suffix, ".%s", fmt);
  pthread_mutex_lock(&c->lock);
  DIR *d = opendir(c->dir);
  int fd = -1;
  for (const struct dirent *e; d && fd < 0 && (e = readdir(d)) != NULL;) {
    const size_t n = strlen(e->d_name), p = strlen(prefix), s = strlen(suffix);
    char *end = NULL;
    if (n > p + s && strncmp(e->d_name, prefix, p) == 0 && strcmp(e->d_name + n - s, suffix) == 0) {
      *steps = strtoull(e->d_name + p, &end, 10);
      fd = end == e->d_name + n - s ? openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC) : -1;
    }
  }
  if (d) {
    closedir(d);
  }
  pthread_mutex_unlock(&c->lock);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (fd >= 0) {
      close(fd);
    }
    return -1;
  }
  char *buf = malloc((size_t)st.st_size + 1);
  const ssize_t got = buf ? read(fd, buf, (size_t)st.st_size) : -1;
  close(fd);
  if (got != st.st_size) {
    free(buf);
    return -1;
  }
  buf[got] = '\0';
  *text = buf;
  *len = (size_t)got;
  return 0;
}

/* Under the lock: the oldest files go until the folder holds at most max_bytes. */
static void trim(snapcache *c) {
  for (;;) {
    DIR *d = opendir(c->dir);
    if (!d) {
      return;
    }
    uint64_t total = 0;
    char oldest[NAME_MAX + 1] = "";
    struct timespec when = {0, 0};
    for (const struct dirent *e; (e = readdir(d)) != NULL;) {
      struct stat st;
      if (strncmp(e->d_name, "run-", 4) != 0 || fstatat(dirfd(d), e->d_name, &st, 0) != 0) {
        continue;
      }
      total += (uint64_t)st.st_size;
      if (!oldest[0] || st.st_mtim.tv_sec < when.tv_sec ||
          (st.st_mtim.tv_sec == when.tv_sec && st.st_mtim.tv_nsec < when.tv_nsec)) {
        snprintf(oldest, sizeof oldest, "%s", e->d_name);
        when = st.st_mtim;
      }
    }
    const bool over = total > c->max_bytes && oldest[0];
    if (over) {
      unlinkat(dirfd(d), oldest, 0);
    }
    closedir(d);
    if (!over) {
      return;
    }
  }
}

void snapcache_put(snapcache *c, int64_t run, const char *digest, const char *fmt, const char *text,
                   size_t len, uint64_t steps) {
  if (!c || !names_ok(digest, fmt) || len > c->max_bytes) {
    return;
  }
  char tmp[PATH_MAX + 32], path[PATH_MAX + 96];
  if (snprintf(tmp, sizeof tmp, "%s/.tmp-XXXXXX", c->dir) >= (int)sizeof tmp ||
      snprintf(path, sizeof path, "%s/run-%" PRId64 "-%s-%" PRIu64 ".%s", c->dir, run, digest,
               steps, fmt) >= (int)sizeof path) {
    return;
  }
  const int fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0) {
    return;
  }
  size_t done = 0;
  while (done < len) {
    const ssize_t n = write(fd, text + done, len - done);
    if (n <= 0) {
      break;
    }
    done += (size_t)n;
  }
  const bool whole = done == len && fsync(fd) == 0;
  close(fd);
  pthread_mutex_lock(&c->lock);
  if (!whole || rename(tmp, path) != 0) {
    unlink(tmp);
  } else {
    trim(c);
  }
  pthread_mutex_unlock(&c->lock);
}
