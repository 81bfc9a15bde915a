/* Writes one flowing silo's frames twice for test_playback.mjs: every frame at 60 a second (what
 * the picture should be) and every fourth at 15 a second (what the daemon sends), each stream from
 * its own encoder, with the publishing times of a session keeping real time.
 * Usage: frame_movie DIR SECONDS → DIR/full/NNNNN.bin and DIR/sparse/NNNNN.bin (NNNNN: the frame
 * at 60 a second, counted from the first written). */
#include "frame.h"
#include "settled.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int write_frame(const char *dir, const char *sub, int k, const uint8_t *buf, size_t len) {
  frame_header h;
  memcpy(&h, buf, sizeof h);
  h.published_us = 1000000ull + (uint64_t)k * 1000000ull / 60ull;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s/%05d.bin", dir, sub, k);
  FILE *f = fopen(path, "wb");
  const int ok = f && fwrite(&h, sizeof h, 1, f) == 1 &&
                 fwrite(buf + sizeof h, 1, len - sizeof h, f) == len - sizeof h;
  return (f && fclose(f) == 0 && ok) ? 0 : -1;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: frame_movie DIR SECONDS\n");
    return 2;
  }
  const char *dir = argv[1];
  const int frames = 60 * atoi(argv[2]);
  char sub[4096];
  for (int i = 0; i < 2; i++) {
    snprintf(sub, sizeof sub, "%s/%s", dir, i ? "sparse" : "full");
    if (mkdir(sub, 0755) != 0 && errno != EEXIST) {
      perror(sub);
      return 1;
    }
  }
  grn_world_def d;
  grn_error e;
  grn_world *w = NULL;
  if (grn_world_def_default(&d, "silo", &e) != GRN_OK || grn_world_create(&d, &w, &e) != GRN_OK) {
    fprintf(stderr, "no silo: %s\n", e.message);
    return 1;
  }
  settle_world(w);
  act_or_exit(w, "open_hole");
  grn_world_step(w, 240); /* a second into the flow: the stream below the plate has formed */
  frame_encoder *full = frame_encoder_new(), *sparse = frame_encoder_new();
  for (int k = 0; k < frames; k++) {
    grn_world_step(w, 4);
    const uint8_t *buf;
    size_t len;
    if (frame_encode(full, w, false, &buf, &len) != 0 || write_frame(dir, "full", k, buf, len)) {
      fprintf(stderr, "frame %d failed\n", k);
      return 1;
    }
    if (k % 4 == 0 && (frame_encode(sparse, w, false, &buf, &len) != 0 ||
                       write_frame(dir, "sparse", k, buf, len))) {
      fprintf(stderr, "frame %d failed\n", k);
      return 1;
    }
  }
  frame_encoder_free(full);
  frame_encoder_free(sparse);
  grn_world_destroy(w);
  return 0;
}
