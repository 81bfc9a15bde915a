/* libFuzzer harness (issue 16): the engine's text parsers, which read what clients send. The input
 * is split at newlines into fields: a scene name (or any text: then the scene is picked by the
 * first byte), an action text, a parameter name and a value text. Checks that grn_action_parse,
 * grn_action_check, grn_parse_number and grn_world_def_set_text never crash, and that an action
 * that parses formats back to a text that parses to the same action (grainlab.h). Built like
 * fuzz_restore.c; seeds in corpus/action/. */
#include "grainlab/grainlab.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) {
    return 0;
  }
  memcpy(text, data, size);
  text[size] = '\0';
  const char *field[4] = {"", "", "", ""};
  char *at = text;
  for (int k = 0; k < 4; k++) {
    field[k] = at;
    char *nl = strchr(at, '\n');
    if (!nl) {
      break;
    }
    *nl = '\0';
    at = nl + 1;
  }
  grn_error e;
  const grn_scene_info *scene = grn_scene_find(field[0]);
  if (!scene) {
    scene = grn_scene_at((size > 0 ? data[0] : 0) % grn_scene_count());
  }

  grn_action a;
  if (grn_action_parse(field[1], &a, &e) == GRN_OK) {
    (void)grn_action_check(scene, &a, &e);
    char out[512];
    const int len = grn_action_format(&a, out, sizeof out);
    grn_action b;
    if (len < 0 || (size_t)len >= sizeof out || grn_action_parse(out, &b, &e) != GRN_OK ||
        b.kind != a.kind || b.nargs != a.nargs ||
        memcmp(b.args, a.args, sizeof(double) * (size_t)a.nargs) != 0) {
      abort(); /* the text form must read back to the same action */
    }
  }

  double v;
  if (grn_parse_number(field[3], &v) == GRN_OK && !(v == v && v - v == 0.0)) {
    abort(); /* only finite numbers parse */
  }
  grn_world_def d;
  if (grn_world_def_default(&d, scene->name, &e) == GRN_OK &&
      grn_world_def_set_text(&d, field[2], field[3], &e) == GRN_OK) {
    (void)grn_world_def_validate(&d, &e);
    (void)grn_world_def_grains(&d);
  }
  free(text);
  return 0;
}
