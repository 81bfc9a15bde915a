/* Writes the fuzzers' seed corpus (tests/fuzz/corpus/): a real saved state of every scene, small
 * (count parameters at their minimum, quality 0; dambreak as a packed bed of 150 particles) and 240
 * steps in, and a handful of action and parameter inputs. Regenerate after a change of the state
 * format (GRN_ENGINE_STATE_VERSION), from the repository root:
 *   cmake --build build --target make_corpus && build/make_corpus tests/fuzz/corpus
 * It writes only seed-* files. Beside them sit inputs a fuzzer found, which are kept: found-* (the
 * action corpus after `fuzz_action -merge=1`, 70 inputs that reach 195 more edges than the seeds)
 * and crash-* (regression inputs, named for what they hit; none so far). */
#include "grainlab/grainlab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int write_file(const char *dir, const char *name, const void *data, size_t size) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
    fprintf(stderr, "cannot write %s\n", path);
    return 1;
  }
  printf("%s: %zu bytes\n", path, size);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: make_corpus CORPUS_DIR (with restore/ and action/ in it)\n");
    return EXIT_FAILURE;
  }
  char dir[400];
  int bad = 0;
  snprintf(dir, sizeof dir, "%s/restore", argv[1]);
  for (int s = 0; s < grn_scene_count(); s++) {
    const grn_scene_info *sc = grn_scene_at(s);
    grn_world_def d;
    grn_error e;
    grn_world_def_default(&d, sc->name, &e);
    for (int i = 0; i < sc->param_count; i++) {
      const grn_param_info *p = &sc->param_info[i];
      if (!strcmp(p->name, "quality") || !strcmp(p->name, "amount") || !strcmp(p->name, "bodies")) {
        d.param[sc->params[i]] = p->min;
      }
    }
    if (!strcmp(sc->name, "dambreak")) {
      d.fill = GRN_FILL_BED;
      d.grains = 150;
    }
    grn_world *w = NULL;
    if (grn_world_create(&d, &w, &e) != GRN_OK) {
      fprintf(stderr, "%s: %s\n", sc->name, e.message);
      return EXIT_FAILURE;
    }
    grn_world_step(w, 240);
    const size_t size = grn_world_save_size(w);
    void *buf = malloc(size);
    if (!buf || grn_world_save(w, buf, size, &e) != GRN_OK) {
      return EXIT_FAILURE;
    }
    char name[96];
    snprintf(name, sizeof name, "seed-%s.state", sc->name);
    bad += write_file(dir, name, buf, size);
    free(buf);
    grn_world_destroy(w);
  }
  /* fields: scene, action, parameter name, value (fuzz_action.c) */
  static const char *const actions[] = {
      "pour\nspout:1.5,-2\nmu\n0.5",       "pour\npour:off\nrate\n1e3",
      "silo\nopen_hole\nhole\n0.6",        "tilt\ntilt:30,5\ntilt_rate\n2",
      "slump\npull_dam:1.5\naspect\n2",    "drum\ntool:0,1,0,0,0,0\nrpm\n3",
      "cluster\nreset\nbodies\n1000",      "dambreak\ntool_off\nvisc\n0.001",
      "pour\nspout:1e308,-1e308\nmu\nnan", "orbit\ntool:\neps\n-0x1p-1074"};
  snprintf(dir, sizeof dir, "%s/action", argv[1]);
  for (size_t k = 0; k < sizeof actions / sizeof actions[0]; k++) {
    char name[32];
    snprintf(name, sizeof name, "seed-%02zu.txt", k);
    bad += write_file(dir, name, actions[k], strlen(actions[k]));
  }
  return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
