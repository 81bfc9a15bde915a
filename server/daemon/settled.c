/* Kept settled states (see settled.h): one file each, a header that names its key and checks its
 * bytes, then the engine's saved state; written whole under a temporary name and renamed, so a
 * reader never sees half of one. Claims (who settles a key now) live in memory only: a restarted
 * daemon has no session settling anything. */
#define _GNU_SOURCE
#include "settled.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CLAIMS_MAX 64 /* definitions being settled at once; more settle unshared */
#define FORMAT 1u

/* A file's header, then the key's text (key_len bytes), then the state (size bytes). */
typedef struct file_header {
  char magic[8]; /* "GRNSETTL" */
  uint32_t format;
  uint32_t key_len;
  uint64_t steps, digest;
  double t;
  uint64_t size;
  uint64_t sum; /* FNV-1a of the key's text and the state: the engine's checks and the digest
                   do not see every byte (contact history) */
} file_header;

static const char magic[8] = {'G', 'R', 'N', 'S', 'E', 'T', 'T', 'L'};

typedef struct claim {
  char text[sizeof(((settled_key *)0)->text)];
  uint64_t ticket;
  double until;
} claim;

struct settled {
  char dir[PATH_MAX];
  uint64_t max_bytes;
  pthread_mutex_t lock; /* everything below, and the folder's files against a trim */
  claim claims[CLAIMS_MAX];
  int nclaims;
  uint64_t next_ticket;
  uint64_t generation; /* __atomic */
  settled_stats stats;
};

static double now_mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) {
    h = (h ^ p[i]) * 0x100000001b3ull;
  }
  return h;
}
#define FNV_START 0xcbf29ce484222325ull

bool settled_key_of(const grn_world_def *def, settled_key *out) {
  memset(out, 0, sizeof *out);
  const grn_scene_info *scene = def->scene;
  const grn_model_info *model = scene ? grn_model_info_of(scene->model) : NULL;
  if (!model || !model->settles) {
    return false;
  }
  size_t at = 0;
  int n = snprintf(out->text, sizeof out->text, "scene=%s seed=%llu grains=%d state=%u engine=%s",
                   scene->name, (unsigned long long)def->seed, def->grains,
                   GRN_ENGINE_STATE_VERSION, GRN_ENGINE_VERSION);
  for (int i = 0; n > 0 && (size_t)n < sizeof out->text - at && i < scene->param_count; i++) {
    at += (size_t)n;
    n = snprintf(out->text + at, sizeof out->text - at, " %s=%a", scene->params[i].name,
                 def->param[i]);
  }
  if (n < 0 || (size_t)n >= sizeof out->text - at) {
    return false;
  }
  snprintf(out->file, sizeof out->file, "%.40s-%016llx.state", scene->name,
           (unsigned long long)fnv1a(FNV_START, out->text, strlen(out->text)));
  return true;
}

void settled_state_free(settled_state *s) {
  free(s->bytes);
  memset(s, 0, sizeof *s);
}

static bool is_state(const char *name) {
  const size_t n = strlen(name);
  return name[0] != '.' && n > 6 && strcmp(name + n - 6, ".state") == 0;
}

/* Under the lock: the kept files counted again, and the least recently used deleted until they
 * fit the bound. */
static void trim(settled *c) {
  for (;;) {
    DIR *d = opendir(c->dir);
    if (!d) {
      return;
    }
    uint64_t total = 0, files = 0;
    char oldest[NAME_MAX + 1] = "";
    struct timespec when = {0, 0};
    for (const struct dirent *e; (e = readdir(d)) != NULL;) {
      struct stat st;
      if (!is_state(e->d_name) || fstatat(dirfd(d), e->d_name, &st, 0) != 0) {
        continue;
      }
      total += (uint64_t)st.st_size;
      files++;
      if (!oldest[0] || st.st_mtim.tv_sec < when.tv_sec ||
          (st.st_mtim.tv_sec == when.tv_sec && st.st_mtim.tv_nsec < when.tv_nsec)) {
        snprintf(oldest, sizeof oldest, "%s", e->d_name);
        when = st.st_mtim;
      }
    }
    const bool over = total > c->max_bytes && oldest[0];
    if (over && unlinkat(dirfd(d), oldest, 0) == 0) {
      c->stats.evicted++;
    }
    closedir(d);
    if (!over) {
      c->stats.bytes = total;
      c->stats.files = files;
      return;
    }
  }
}

settled *settled_open(const char *dir, uint64_t max_bytes, char *err, size_t errlen) {
  if (mkdir(dir, 0750) != 0 && errno != EEXIST) {
    snprintf(err, errlen, "cannot make %s: %s", dir, strerror(errno));
    return NULL;
  }
  settled *c = calloc(1, sizeof *c);
  if (!c) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  snprintf(c->dir, sizeof c->dir, "%s", dir);
  c->max_bytes = max_bytes;
  c->stats.max_bytes = max_bytes;
  c->next_ticket = 1;
  pthread_mutex_init(&c->lock, NULL);
  DIR *d = opendir(dir);
  for (const struct dirent *e; d && (e = readdir(d)) != NULL;) {
    if (strncmp(e->d_name, ".tmp-", 5) == 0) {
      unlinkat(dirfd(d), e->d_name, 0); /* a daemon died while keeping one */
    }
  }
  if (d) {
    closedir(d);
  }
  pthread_mutex_lock(&c->lock);
  trim(c); /* counts what an earlier daemon kept, and obeys a smaller bound */
  pthread_mutex_unlock(&c->lock);
  return c;
}

void settled_free(settled *c) {
  if (c) {
    pthread_mutex_destroy(&c->lock);
    free(c);
  }
}

/* Under the lock: a live claim on the key's text (expired ones go), or NULL. */
static claim *claim_of(settled *c, const char *text) {
  const double now = now_mono();
  for (int i = 0; i < c->nclaims;) {
    if (c->claims[i].until < now) {
      c->claims[i] = c->claims[--c->nclaims];
      continue;
    }
    if (strcmp(c->claims[i].text, text) == 0) {
      return &c->claims[i];
    }
    i++;
  }
  return NULL;
}

static void drop_claim(settled *c, uint64_t ticket) {
  for (int i = 0; ticket && i < c->nclaims; i++) {
    if (c->claims[i].ticket == ticket) {
      c->claims[i] = c->claims[--c->nclaims];
      __atomic_add_fetch(&c->generation, 1, __ATOMIC_RELEASE);
      return;
    }
  }
}

/* Under the lock: the file goes (a damaged or refused one). */
static void forget_file(settled *c, const char *file) {
  char path[PATH_MAX + 128];
  snprintf(path, sizeof path, "%s/%s", c->dir, file);
  struct stat st;
  if (stat(path, &st) == 0 && unlink(path) == 0) {
    c->stats.bytes -=
        c->stats.bytes >= (uint64_t)st.st_size ? (uint64_t)st.st_size : c->stats.bytes;
    c->stats.files -= c->stats.files > 0;
  }
}

/* Read an open kept file, checked whole; 0, or -1 when it is not a good state of `key`. */
static int read_file(int fd, const settled_key *key, settled_state *out) {
  struct stat st;
  file_header h;
  const size_t klen = strlen(key->text);
  if (fstat(fd, &st) != 0 || read(fd, &h, sizeof h) != (ssize_t)sizeof h ||
      memcmp(h.magic, magic, sizeof magic) != 0 || h.format != FORMAT || h.key_len != klen ||
      h.size == 0 || (uint64_t)st.st_size != sizeof h + klen + h.size) {
    return -1;
  }
  char text[sizeof key->text];
  if (read(fd, text, klen) != (ssize_t)klen || memcmp(text, key->text, klen) != 0) {
    return -1;
  }
  char *bytes = malloc(h.size);
  size_t got = 0;
  while (bytes && got < h.size) {
    const ssize_t n = read(fd, bytes + got, h.size - got);
    if (n <= 0) {
      break;
    }
    got += (size_t)n;
  }
  if (!bytes || got != h.size || fnv1a(fnv1a(FNV_START, text, klen), bytes, h.size) != h.sum) {
    free(bytes);
    return -1;
  }
  *out = (settled_state){bytes, h.size, h.steps, h.digest, h.t};
  return 0;
}

int settled_read(settled *c, const settled_key *key, settled_state *out) {
  memset(out, 0, sizeof *out);
  char path[PATH_MAX + 128];
  snprintf(path, sizeof path, "%s/%s", c->dir, key->file);
  /* opened under the lock (no trim deletes it between), read without it: a deleted file stays
   * readable through its descriptor */
  pthread_mutex_lock(&c->lock);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  pthread_mutex_unlock(&c->lock);
  if (fd < 0) {
    return -1;
  }
  const int rc = read_file(fd, key, out);
  close(fd);
  if (rc != 0) {
    pthread_mutex_lock(&c->lock);
    forget_file(c, key->file);
    c->stats.rejected++;
    pthread_mutex_unlock(&c->lock);
  }
  return rc;
}

bool settled_has(settled *c, const settled_key *key) {
  char path[PATH_MAX + 128];
  snprintf(path, sizeof path, "%s/%s", c->dir, key->file);
  return access(path, F_OK) == 0;
}

settled_answer settled_look(settled *c, const settled_key *key, double until, uint64_t *ticket,
                            double *busy_until, settled_state *out) {
  *ticket = 0;
  *busy_until = 0.0;
  if (settled_read(c, key, out) == 0) {
    return SETTLED_KEPT;
  }
  pthread_mutex_lock(&c->lock);
  settled_answer a = SETTLED_YOURS;
  const claim *held = claim_of(c, key->text);
  if (held) {
    a = SETTLED_BUSY;
    *busy_until = held->until;
  } else if (c->nclaims < CLAIMS_MAX) {
    claim *mine = &c->claims[c->nclaims++];
    snprintf(mine->text, sizeof mine->text, "%s", key->text);
    mine->ticket = *ticket = c->next_ticket++;
    mine->until = until;
  }
  pthread_mutex_unlock(&c->lock);
  return a;
}

bool settled_busy(settled *c, const settled_key *key) {
  pthread_mutex_lock(&c->lock);
  const bool busy = claim_of(c, key->text) != NULL;
  pthread_mutex_unlock(&c->lock);
  return busy;
}

uint64_t settled_generation(settled *c) {
  return __atomic_load_n(&c->generation, __ATOMIC_ACQUIRE);
}

void settled_release(settled *c, uint64_t ticket) {
  if (ticket) {
    pthread_mutex_lock(&c->lock);
    drop_claim(c, ticket);
    pthread_mutex_unlock(&c->lock);
  }
}

static bool write_all(int fd, const void *data, size_t len) {
  for (size_t done = 0; done < len;) {
    const ssize_t n = write(fd, (const char *)data + done, len - done);
    if (n <= 0) {
      return false;
    }
    done += (size_t)n;
  }
  return true;
}

void settled_put(settled *c, const settled_key *key, uint64_t ticket, const settled_state *s) {
  const size_t klen = strlen(key->text);
  file_header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, magic, sizeof magic);
  h.format = FORMAT;
  h.key_len = (uint32_t)klen;
  h.steps = s->steps;
  h.digest = s->digest;
  h.t = s->t;
  h.size = s->len;
  h.sum = fnv1a(fnv1a(FNV_START, key->text, klen), s->bytes, s->len);
  char tmp[PATH_MAX + 32], path[PATH_MAX + 128];
  snprintf(tmp, sizeof tmp, "%s/.tmp-XXXXXX", c->dir);
  snprintf(path, sizeof path, "%s/%s", c->dir, key->file);
  const bool fits = sizeof h + klen + s->len <= c->max_bytes && s->len > 0;
  const int fd = fits ? mkostemp(tmp, O_CLOEXEC) : -1;
  bool whole = false;
  if (fd >= 0) {
    whole = write_all(fd, &h, sizeof h) && write_all(fd, key->text, klen) &&
            write_all(fd, s->bytes, s->len) && fsync(fd) == 0;
    close(fd);
  }
  pthread_mutex_lock(&c->lock);
  if (fd >= 0 && (!whole || rename(tmp, path) != 0)) {
    unlink(tmp);
  } else if (fd >= 0) {
    c->stats.kept++;
    trim(c);
  }
  drop_claim(c, ticket);
  __atomic_add_fetch(&c->generation, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&c->lock);
}

void settled_restored(settled *c, const settled_key *key) {
  char path[PATH_MAX + 128];
  snprintf(path, sizeof path, "%s/%s", c->dir, key->file);
  pthread_mutex_lock(&c->lock);
  c->stats.hits++;
  utimensat(AT_FDCWD, path, NULL, 0); /* used now: the last to be evicted */
  pthread_mutex_unlock(&c->lock);
}

void settled_refused(settled *c, const settled_key *key) {
  pthread_mutex_lock(&c->lock);
  forget_file(c, key->file);
  c->stats.rejected++;
  pthread_mutex_unlock(&c->lock);
}

void settled_missed(settled *c) {
  pthread_mutex_lock(&c->lock);
  c->stats.misses++;
  pthread_mutex_unlock(&c->lock);
}

void settled_waited(settled *c) {
  pthread_mutex_lock(&c->lock);
  c->stats.waits++;
  pthread_mutex_unlock(&c->lock);
}

void settled_get_stats(settled *c, settled_stats *out) {
  memset(out, 0, sizeof *out);
  if (c) {
    pthread_mutex_lock(&c->lock);
    *out = c->stats;
    pthread_mutex_unlock(&c->lock);
  }
}
