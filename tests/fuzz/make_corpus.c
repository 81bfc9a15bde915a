/* Writes the fuzzers' seed corpus (tests/fuzz/corpus/): a real saved state of every scene, small
 * (count parameters at their minimum, quality 0; dambreak as a packed bed of 150 particles) and 240
 * steps in; the stream's frames of such worlds (keyframes, predicted frames, deltas, force
 * chains); every action of the catalogue as a websocket message and a REST body, every scene as a
 * create body; and a handful of action, parameter and runs-query inputs. Regenerate after a change
 * of the state format (GRN_ENGINE_STATE_VERSION), the frame format or the catalogue, from the
 * repository root:
 *   cmake --build build --target make_corpus && build/make_corpus tests/fuzz/corpus
 * It writes only seed-* files. Beside them sit inputs a fuzzer found, which are kept: found-* (a
 * corpus after `fuzz_<h> -merge=1`: inputs that reach edges the seeds do not; bench/README.md says
 * how many) and crash-* (regression inputs, named for what they hit). */
#include "api_json.h"
#include "frame.h"
#include "grainlab/grainlab.h"

#include <stdint.h>
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

/* The small definition of a scene that the seeds use. */
static void small_def(const grn_scene_info *sc, grn_world_def *d) {
  grn_error e;
  grn_world_def_default(d, sc->name, &e);
  for (int i = 0; i < sc->param_count; i++) {
    const grn_param_info *p = &sc->params[i];
    if (!strcmp(p->name, "quality") || !strcmp(p->name, "amount") || !strcmp(p->name, "bodies")) {
      d->param[i] = p->min;
    }
  }
  if (!strcmp(sc->name, "dambreak")) {
    d->fill = GRN_FILL_BED;
    d->grains = 150;
  }
}

/* One frame message of fuzz_frame.c's input: its length, then its bytes. */
static int append_msg(uint8_t **buf, size_t *len, const uint8_t *msg, size_t n) {
  uint8_t *more = realloc(*buf, *len + 4 + n);
  if (!more) {
    return 1;
  }
  const uint32_t n32 = (uint32_t)n;
  memcpy(more + *len, &n32, 4);
  memcpy(more + *len + 4, msg, n);
  *buf = more;
  *len += 4 + n;
  return 0;
}

/* A viewer's stream of a small world, as the worker encodes it: a keyframe, predicted frames
 * 0.02 s apart (the odd ones followed by their delta form, as a viewer that skipped would get
 * them), the force chains after each frame where the scene shows them, and a keyframe again. */
static int frame_seed(const char *dir, const grn_scene_info *sc) {
  grn_world_def d;
  grn_error e;
  small_def(sc, &d);
  grn_world *w = NULL;
  frame_encoder *enc = frame_encoder_new();
  if (!enc || grn_world_create(&d, &w, &e) != GRN_OK) {
    fprintf(stderr, "%s: no world for frames\n", sc->name);
    frame_encoder_free(enc);
    return 1;
  }
  grn_world_step(w, 240);
  static grn_contact chains[4096];
  uint8_t *buf = NULL;
  size_t len = 0;
  int bad = 0;
  for (int f = 0; f < 5 && !bad; f++) {
    const uint8_t *out;
    size_t n;
    bad |= frame_encode(enc, w, f == 4, &out, &n) != 0 || append_msg(&buf, &len, out, n);
    if (f % 2 == 1 && !bad) {
      bad |= frame_encode_delta(enc, &out, &n) != 0 || n == 0 || append_msg(&buf, &len, out, n);
    }
    if (sc->chains && !bad) {
      const int c = grn_world_chains(w, 0.0, 0.0, 0.0, 1.0, chains, 4096);
      bad |= c < 0 || frame_encode_chains(enc, chains, c < 4096 ? c : 4096, &out, &n) != 0 ||
             append_msg(&buf, &len, out, n);
    }
    grn_world_step(w, 4);
  }
  char name[96];
  snprintf(name, sizeof name, "seed-%s.frames", sc->name);
  bad = bad ? (fprintf(stderr, "%s: cannot encode frames\n", sc->name), 1)
            : write_file(dir, name, buf, len);
  free(buf);
  grn_world_destroy(w);
  frame_encoder_free(enc);
  return bad;
}

/* A JSON value as text after the byte `first` (none if negative: fuzz_rest_body.c's reader
 * byte), then released. */
static int write_json(const char *dir, const char *name, int first, json_t *j) {
  char *text = j ? api_dumps(j) : NULL;
  json_decref(j);
  if (!text || strlen(text) >= 4000) {
    free(text);
    return 1;
  }
  char out[4096];
  const size_t at = first >= 0 ? 1 : 0;
  out[0] = (char)first;
  memcpy(out + at, text, strlen(text));
  const size_t n = at + strlen(text);
  free(text);
  return write_file(dir, name, out, n);
}

/* Every action of the catalogue (the engine's and the daemon's own) with every argument given, in
 * the middle of its range, as a websocket message and as a REST actions body. */
static int action_seeds(const char *ws_dir, const char *rest_dir) {
  int own_count;
  const grn_action_info *own = api_session_actions(&own_count);
  int bad = 0;
  for (int k = 0; k < GRN_ACTION_COUNT + own_count; k++) {
    const grn_action_info *info =
        k < GRN_ACTION_COUNT ? grn_action_info_of((grn_action_kind)k) : &own[k - GRN_ACTION_COUNT];
    json_t *a = json_pack("{s:s}", "type", info->name);
    for (int i = 0; i < info->arg_count; i++) {
      const grn_action_arg *g = &info->args[i];
      json_object_set_new(a, g->name,
                          g->boolean ? json_true() : json_real(0.5 * (g->min + g->max)));
    }
    char name[96];
    snprintf(name, sizeof name, "seed-action-%s.json", info->name);
    bad += write_json(ws_dir, name, -1, json_pack("{s:s, s:O}", "type", "action", "action", a));
    bad += write_json(rest_dir, name, 3, a);
  }
  return bad;
}

/* A create body of every scene (its default parameters, a label, private) and a scene switch. */
static int scene_seeds(const char *rest_dir) {
  int bad = 0;
  for (int s = 0; s < grn_scene_count(); s++) {
    const grn_scene_info *sc = grn_scene_at(s);
    grn_world_def d;
    grn_error e;
    grn_world_def_default(&d, sc->name, &e);
    char name[96];
    snprintf(name, sizeof name, "seed-create-%s.json", sc->name);
    bad +=
        write_json(rest_dir, name, 0,
                   json_pack("{s:s, s:o, s:i, s:s, s:b}", "scene", sc->name, "params",
                             api_params_json(&d), "seed", 7, "label", "lab 3 · été", "private", 1));
    snprintf(name, sizeof name, "seed-scene-%s.json", sc->name);
    bad += write_json(rest_dir, name, 4,
                      json_pack("{s:s, s:o}", "scene", sc->name, "params", api_params_json(&d)));
    /* a live change and a fork of this scene's parameters (the first byte picks the scene) */
    snprintf(name, sizeof name, "seed-params-%s.json", sc->name);
    bad += write_json(rest_dir, name, 2 | s << 3, api_params_json(&d));
    snprintf(name, sizeof name, "seed-fork-%s.json", sc->name);
    bad += write_json(rest_dir, name, 6 | s << 3,
                      json_pack("{s:o, s:s}", "params", api_params_json(&d), "label", "fork"));
  }
  return bad;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: make_corpus CORPUS_DIR (with restore/, action/, frame/, ws_message/, "
                    "rest_body/ and runs_filter/ in it)\n");
    return EXIT_FAILURE;
  }
  char dir[400];
  int bad = 0;
  snprintf(dir, sizeof dir, "%s/restore", argv[1]);
  for (int s = 0; s < grn_scene_count(); s++) {
    const grn_scene_info *sc = grn_scene_at(s);
    grn_world_def d;
    grn_error e;
    small_def(sc, &d);
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
  snprintf(dir, sizeof dir, "%s/frame", argv[1]);
  for (int s = 0; s < grn_scene_count(); s++) {
    bad += frame_seed(dir, grn_scene_at(s));
  }
  char ws_dir[400], rest_dir[400];
  snprintf(ws_dir, sizeof ws_dir, "%s/ws_message", argv[1]);
  snprintf(rest_dir, sizeof rest_dir, "%s/rest_body", argv[1]);
  bad += action_seeds(ws_dir, rest_dir) + scene_seeds(rest_dir);
  /* the rest of the websocket's messages and the REST bodies (first byte: the reader) */
  static const char *const texts[][3] = {
      {"ws_message", "seed-auth.json",
       "{\"type\":\"auth\",\"token\":"
       "\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}"},
      {"ws_message", "seed-auth-extra.json", "{\"type\":\"auth\",\"token\":5,\"x\":[1,{}]}"},
      {"ws_message", "seed-unknown.json", "{\"type\":\"hello\",\"a\":\"\\u00e9\"}"},
      {"ws_message", "seed-action-bad.json", "{\"type\":\"action\",\"action\":[1e999]}"},
      {"ws_message", "seed-rate.json", "{\"type\":\"rate\",\"fps\":4}"},
      {"ws_message", "seed-rate-60.json", "{\"fps\":60,\"type\":\"rate\"}"},
      {"ws_message", "seed-rate-bad.json", "{\"type\":\"rate\",\"fps\":2.5e0}"},
      {"ws_message", "seed-rate-big.json", "{\"type\":\"rate\",\"fps\":-9223372036854775809}"},
      {"ws_message", "seed-rate-extra.json", "{\"type\":\"rate\",\"fps\":\"5\",\"x\":{}}"},
      {"rest_body", "seed-patch.json", "\x01{\"speed\":2.5}"},
      {"rest_body", "seed-patch-label.json", "\x01{\"speed\":-1,\"label\":\"x\"}"},
      {"rest_body", "seed-replay.json", "\x05{\"label\":\"again\",\"private\":false}"},
      {"rest_body", "seed-object.json",
       "\x07{\"a\":{\"b\":[true,null,\"\\ud83d\\ude00\"]},\"a\":1}"},
      /* GET /api/runs's query, as it stands in the URL */
      {"runs_filter", "seed-00.txt", "scene=pour&sort=-param.mu&limit=10&offset=5"},
      {"runs_filter", "seed-01.txt",
       "param.mu.min=0.2&param.mu.max=0.6&result.angle.min=20&result.angle.max=1e3"},
      {"runs_filter", "seed-02.txt", "from=2026-12-02T10:00:00Z&to=1800000000&end_reason=finished"},
      {"runs_filter", "seed-03.txt", "label=caf%C3%A9&session=a1b2c3d4e5f6&sort=result.angle"},
      {"runs_filter", "seed-04.txt", "sort=id&limit=500&offset=1000000000&label"},
      {"runs_filter", "seed-05.txt", "scene=pour&scene=silo&x=%FF&param..min=1&sort=-started_at"},
  };
  for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
    snprintf(dir, sizeof dir, "%s/%s", argv[1], texts[k][0]);
    bad += write_file(dir, texts[k][1], texts[k][2], strlen(texts[k][2]));
  }
  return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
