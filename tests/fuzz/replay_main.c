/* Runs a libFuzzer harness without libFuzzer: every file of each directory (or each file) given
 * on the command line, in name order, through LLVMFuzzerTestOneInput. ctest runs it over the
 * checked-in seed corpus (label fuzz), so the regression inputs are replayed on every run with gcc
 * and without clang; bench/fuzz.sh builds the same harnesses with libFuzzer. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    return 1;
  }
  size_t cap = 1 << 16, n = 0;
  unsigned char *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      unsigned char *bigger = realloc(buf, cap * 2);
      if (!bigger) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = bigger;
      cap *= 2;
    }
  }
  fclose(f);
  if (!buf) {
    fprintf(stderr, "out of memory reading %s\n", path);
    return 1;
  }
  LLVMFuzzerTestOneInput(buf, n);
  free(buf);
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
  int files = 0, bad = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "no such file or directory: %s\n", argv[i]);
      return EXIT_FAILURE;
    }
    if (!S_ISDIR(st.st_mode)) {
      bad += run_file(argv[i]);
      files++;
      continue;
    }
    DIR *d = opendir(argv[i]);
    if (!d) {
      return EXIT_FAILURE;
    }
    char **names = NULL;
    size_t count = 0;
    const struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
      if (ent->d_name[0] == '.') {
        continue;
      }
      char **more = realloc(names, sizeof *names * (count + 1));
      if (!more) {
        return EXIT_FAILURE;
      }
      names = more;
      names[count] = malloc(strlen(argv[i]) + strlen(ent->d_name) + 2);
      if (!names[count]) {
        return EXIT_FAILURE;
      }
      sprintf(names[count], "%s/%s", argv[i], ent->d_name);
      count++;
    }
    closedir(d);
    qsort(names, count, sizeof *names, by_name);
    for (size_t k = 0; k < count; k++) {
      bad += run_file(names[k]);
      files++;
      free(names[k]);
    }
    free(names);
  }
  printf("replayed %d input(s), %d unreadable\n", files, bad);
  printf("%s every input ran without a crash (want at least one input: %d)\n",
         bad == 0 && files > 0 ? "ok  " : "FAIL", files);
  return bad == 0 && files > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
