/* libFuzzer harness (issue 16): the stream's frame decoder (server/stream/frame.c), which every
 * viewer (ws_probe, the load benchmark) runs on bytes from the network. The input is a sequence of
 * messages, each a 4-byte little-endian length and that many bytes (the last one takes what is
 * left); they go through one decoder in order: frame_decode_chains for a message whose kind byte
 * (offset 5) says force chains, frame_decode otherwise. Checks that every message is decoded or
 * refused without a sanitizer report, and that what was decoded stays inside the decoder's
 * bounds. Built like fuzz_restore.c; seeds in corpus/frame/: real keyframes, predicted frames,
 * deltas and chains of small worlds (make_corpus). */
#include "frame.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHAINS_CAP 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  frame_decoder d;
  memset(&d, 0, sizeof d);
  static grn_contact pairs[CHAINS_CAP];
  size_t at = 0;
  while (at + 4 <= size) {
    uint32_t len;
    memcpy(&len, data + at, 4);
    at += 4;
    const size_t n = len < size - at ? len : size - at;
    /* a copy of exactly its length, so that reading past it is a sanitizer report */
    uint8_t *msg = malloc(n ? n : 1);
    if (!msg) {
      break;
    }
    memcpy(msg, data + at, n);
    at += n;
    if (n > 5 && msg[5] == FRAME_CHAINS) {
      const int got = frame_decode_chains(&d, msg, n, pairs, CHAINS_CAP);
      for (int k = 0; k < got; k++) {
        if (got > CHAINS_CAP || pairs[k].a >= d.count || pairs[k].b >= d.count) {
          abort();
        }
      }
    } else if (frame_decode(&d, msg, n) == 0) {
      /* grains only come between keyframes: the keyframe's and the frame before's are a prefix */
      if (d.count > GRN_MAX_GRAINS || (d.count > 0 && d.cap < d.count) || d.run < 1 ||
          d.run > FRAME_ORDER_MAX || d.key_count > d.count || d.prev_count > d.count ||
          d.kept > d.count) {
        abort();
      }
      /* every decoded grain is readable (ASan reports it otherwise), its q and the history a
       * predicted frame will use too */
      volatile double sum = 0.0;
      for (uint32_t k = 0; k < d.count; k++) {
        sum += d.pos[3 * k] + d.pos[3 * k + 1] + d.pos[3 * k + 2] + d.shade[k] + d.radius[k];
      }
      for (size_t j = 0; j < 3 * (size_t)d.count; j++) {
        sum += d.q[j];
      }
      for (size_t j = 0; j < 3 * (size_t)d.prev_count; j++) {
        sum += d.q_prev[j];
      }
      for (size_t j = 0; j < 3 * (size_t)d.key_count; j++) {
        sum += d.key_q[j];
      }
      (void)sum;
    }
    free(msg);
  }
  frame_decoder_free(&d);
  return 0;
}
