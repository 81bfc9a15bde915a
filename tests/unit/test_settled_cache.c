/* Kept settled states (server/daemon/settled.c, issue 33) without a daemon: what names a state,
 * who settles a definition now, a state kept and read back whole across a restart, damaged files
 * refused and deleted, and the bound in bytes evicting the least recently used first. */
#define _GNU_SOURCE
#include "../support/check.h"
#include "settled.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char dir[64];

static double now_mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static settled_key key_for(const char *scene, const char *param, double value, uint64_t seed) {
  grn_world_def d;
  grn_error e;
  grn_world_def_default(&d, scene, &e);
  if (param) {
    grn_world_def_set(&d, param, value, &e);
  }
  d.seed = seed;
  settled_key k;
  settled_key_of(&d, &k);
  return k;
}

/* A made-up state of n bytes, its content drawn from `fill`. */
static settled_state state_of(size_t n, unsigned char fill, uint64_t steps) {
  settled_state s = {malloc(n), n, steps, 0x1234abcdull + steps, (double)steps / 240.0};
  for (size_t i = 0; i < n; i++) {
    s.bytes[i] = (char)(fill + i * 7);
  }
  return s;
}

static int files_in(const char *d, char names[][96], int max) {
  DIR *dd = opendir(d);
  int n = 0;
  for (const struct dirent *e; dd && (e = readdir(dd)) != NULL;) {
    if (e->d_name[0] != '.' && n < max) {
      snprintf(names[n++], 96, "%.95s", e->d_name);
    }
  }
  if (dd) {
    closedir(dd);
  }
  return n;
}

static void keys(void) {
  grn_world_def d;
  grn_error e;
  grn_world_def_default(&d, "silo", &e);
  settled_key a, b;
  CHECK("a silo has a key", settled_key_of(&d, &a));
  d.threads = 4;
  CHECK("the thread count moves no grain: the same key",
        settled_key_of(&d, &b) && strcmp(a.text, b.text) == 0 && strcmp(a.file, b.file) == 0);
  printf("# %s\n# %s\n", a.file, a.text);
  const settled_key hole = key_for("silo", "hole", 0.8, 1), seed = key_for("silo", NULL, 0, 2);
  CHECK("a live parameter is part of the key", strcmp(hole.text, a.text) != 0);
  CHECK("so is the seed", strcmp(seed.text, a.text) != 0 && strcmp(seed.file, a.file) != 0);
  const settled_key near = key_for("silo", "mu", 0.5 + 1e-15, 1);
  const settled_key mu = key_for("silo", "mu", 0.5, 1);
  CHECK("numbers are exact: 0.5 and 0.5 + 1e-15 differ", strcmp(near.text, mu.text) != 0);
  CHECK("the file is named by its scene", strncmp(a.file, "silo-", 5) == 0);
  grn_world_def_default(&d, "orbit", &e);
  CHECK("a scene that does not settle has none", !settled_key_of(&d, &a));
}

static void claims_and_kept(void) {
  char err[200];
  settled *c = settled_open(dir, 1 << 20, err, sizeof err);
  CHECK("the cache opens (and makes its folder)", c != NULL);
  const settled_key k = key_for("silo", NULL, 0, 1);
  uint64_t ticket, other;
  double busy_until;
  settled_state got;
  const double until = now_mono() + 30.0;
  CHECK("nothing kept: the first to look settles it",
        settled_look(c, &k, until, &ticket, &busy_until, &got) == SETTLED_YOURS && ticket != 0);
  CHECK("the next is told another settles it, and until when",
        settled_look(c, &k, until + 5.0, &other, &busy_until, &got) == SETTLED_BUSY && other == 0 &&
            busy_until == until);
  CHECK("busy, in memory", settled_busy(c, &k));
  const uint64_t gen = settled_generation(c);
  settled_state s = state_of(5000, 3, 920);
  settled_put(c, &k, ticket, &s);
  CHECK("keeping it moves the generation and ends the claim",
        settled_generation(c) > gen && !settled_busy(c, &k));
  CHECK("it is read back", settled_look(c, &k, until, &ticket, &busy_until, &got) == SETTLED_KEPT);
  CHECK("whole: the same bytes, step, time and digest",
        got.len == s.len && memcmp(got.bytes, s.bytes, s.len) == 0 && got.steps == 920 &&
            got.digest == s.digest && got.t == s.t);
  settled_restored(c, &k);
  settled_state_free(&got);
  CHECK("it is there, and read alone", settled_has(c, &k) && settled_read(c, &k, &got) == 0 &&
                                           got.len == s.len && got.steps == 920);
  settled_state_free(&got);
  const settled_key none = key_for("silo", "mu", 0.9, 1);
  CHECK("reading a key nobody kept claims nothing",
        !settled_has(c, &none) && settled_read(c, &none, &got) == -1 && !settled_busy(c, &none));
  settled_stats st;
  settled_get_stats(c, &st);
  CHECK("one kept, one hit, its bytes counted",
        st.kept == 1 && st.hits == 1 && st.files == 1 && st.bytes > s.len);
  /* a claim given back lets the next settle it; one that expired too */
  const settled_key k2 = key_for("slump", NULL, 0, 1);
  settled_look(c, &k2, until, &ticket, &busy_until, &got);
  settled_release(c, ticket);
  CHECK("a claim given back: the next settles it",
        settled_look(c, &k2, now_mono() - 1.0, &ticket, &busy_until, &got) == SETTLED_YOURS);
  CHECK("a claim past its time: the next settles it",
        settled_look(c, &k2, until, &ticket, &busy_until, &got) == SETTLED_YOURS);
  settled_release(c, ticket);
  settled_free(c);

  /* a restart finds it; a half-written file of the one before is removed */
  char tmp[128];
  snprintf(tmp, sizeof tmp, "%s/.tmp-abcdef", dir);
  close(open(tmp, O_CREAT | O_WRONLY, 0600));
  c = settled_open(dir, 1 << 20, err, sizeof err);
  CHECK("after a restart: kept",
        settled_look(c, &k, until, &ticket, &busy_until, &got) == SETTLED_KEPT &&
            memcmp(got.bytes, s.bytes, s.len) == 0);
  settled_state_free(&got);
  CHECK("and the half-written file is gone", access(tmp, F_OK) != 0);

  /* a byte of the state changed on disk: refused by the checksum, deleted, settled again */
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, k.file);
  const int fd = open(path, O_RDWR);
  struct stat sb;
  fstat(fd, &sb);
  char byte;
  pread(fd, &byte, 1, sb.st_size - 100);
  byte ^= 0x40;
  pwrite(fd, &byte, 1, sb.st_size - 100);
  close(fd);
  CHECK("a damaged file is not restored: the caller settles it",
        settled_look(c, &k, until, &ticket, &busy_until, &got) == SETTLED_YOURS);
  settled_get_stats(c, &st);
  CHECK("it is deleted and counted", access(path, F_OK) != 0 && st.rejected == 1 && st.files == 0);
  settled_put(c, &k, ticket, &s);
  /* cut short: the size no longer adds up */
  truncate(path, 200);
  CHECK("a truncated file is refused",
        settled_look(c, &k, until, &ticket, &busy_until, &got) == SETTLED_YOURS &&
            access(path, F_OK) != 0);
  settled_put(c, &k, ticket, &s);
  /* a state the worker refused (the engine's checks, the digest) */
  settled_refused(c, &k);
  CHECK("a state the worker refused is deleted", access(path, F_OK) != 0);
  /* another key's file under this key's name (a hash clash, or a file moved): not this state */
  const settled_key k3 = key_for("silo", "mu", 0.6, 1);
  settled_put(c, &k3, 0, &s);
  char from[256];
  snprintf(from, sizeof from, "%s/%s", dir, k3.file);
  rename(from, path);
  CHECK("a file of another key under its name is refused",
        settled_look(c, &k, until, &ticket, &busy_until, &got) == SETTLED_YOURS);
  settled_release(c, ticket);
  settled_free(c);
  settled_state_free(&s);
}

static void bound(void) {
  char err[200];
  /* room for two states of 4000 bytes and their headers, not three */
  settled *c = settled_open(dir, 9000, err, sizeof err);
  settled_state s = state_of(4000, 9, 600);
  settled_key k[3];
  const char *scenes[3] = {"silo", "slump", "tilt"};
  for (int i = 0; i < 3; i++) {
    k[i] = key_for(scenes[i], NULL, 0, 5);
  }
  settled_put(c, &k[0], 0, &s);
  const struct timespec pause = {0, 20000000}; /* distinct modification times */
  nanosleep(&pause, NULL);
  settled_put(c, &k[1], 0, &s);
  nanosleep(&pause, NULL);
  settled_restored(c, &k[0]); /* used: now the newer of the two */
  nanosleep(&pause, NULL);
  settled_put(c, &k[2], 0, &s);
  char names[8][96];
  const int n = files_in(dir, names, 8);
  settled_stats st;
  settled_get_stats(c, &st);
  printf("# kept past the bound of 9000 bytes: %d files, %llu bytes, %llu evicted\n", n,
         (unsigned long long)st.bytes, (unsigned long long)st.evicted);
  bool has0 = false, has1 = false, has2 = false;
  for (int i = 0; i < n; i++) {
    has0 = has0 || strcmp(names[i], k[0].file) == 0;
    has1 = has1 || strcmp(names[i], k[1].file) == 0;
    has2 = has2 || strcmp(names[i], k[2].file) == 0;
  }
  CHECK("two of three fit: the least recently used went",
        n == 2 && has0 && !has1 && has2 && st.evicted >= 1 && st.bytes <= 9000);
  settled_state big = state_of(9000, 1, 60);
  const settled_key kb = key_for("drum", NULL, 0, 5);
  settled_put(c, &kb, 0, &big);
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, kb.file);
  CHECK("a state larger than the bound is not kept, and evicts nothing",
        access(path, F_OK) != 0 && files_in(dir, names, 8) == 2);
  settled_free(c);
  /* a smaller bound at the next start is obeyed at once */
  c = settled_open(dir, 5000, err, sizeof err);
  settled_get_stats(c, &st);
  CHECK("a restart with a smaller bound trims", st.files == 1 && st.bytes <= 5000);
  settled_free(c);
  settled_state_free(&s);
  settled_state_free(&big);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/grainlab-settled-XXXXXX");
  if (!mkdtemp(dir)) {
    return 2;
  }
  strcat(dir, "/settled"); /* made by settled_open */
  keys();
  claims_and_kept();
  bound();
  char cmd[160];
  snprintf(cmd, sizeof cmd, "rm -rf '%.*s'", (int)(strlen(dir) - 8), dir);
  if (system(cmd) != 0) {
    printf("# could not remove %s\n", dir);
  }
  CHECK_DONE();
}
