/* The stream's frames: every decoded position within half a grid step of the engine's, keyframes
 * at least every 2 s with deltas between, sequence numbers rising, and the bytes per grain of a
 * pouring, flowing, settling pile. Malformed frames are refused. */
#include "../support/check.h"
#include "frame.h"

#include <string.h>

int main(void) {
  grn_world_def d;
  grn_error e;
  grn_world_def_default(&d, "pour", &e);
  grn_world_def_set(&d, "rate", 400, &e); /* 3000 grains in 7.5 s: a busy stream */
  grn_world *w;
  grn_world_create(&d, &w, &e);
  frame_encoder *enc = frame_encoder_new();
  frame_decoder dec;
  memset(&dec, 0, sizeof dec);
  double worst = 0.0, key_bytes = 0.0, delta_bytes = 0.0, all_bytes = 0.0;
  double key_grains = 0.0, delta_grains = 0.0, all_grains = 0.0, last_key_t = 0.0, key_gap = 0.0;
  double settle_bytes = 0.0, settle_grains = 0.0;
  int frames = 0, keys = 0, bad = 0, order = 0;
  uint32_t last_seq = 0;
  for (int f = 0; f < 60 * 14; f++) { /* 14 s at 60 frames/s */
    grn_world_step(w, 4);
    const uint8_t *buf;
    size_t len;
    if (frame_encode(enc, w, false, &buf, &len) != 0 || frame_decode(&dec, buf, len) != 0) {
      bad++;
      continue;
    }
    frame_header h;
    memcpy(&h, buf, sizeof h);
    order += frames > 0 && h.seq != last_seq + 1;
    last_seq = h.seq;
    frames++;
    all_bytes += (double)len;
    all_grains += h.count;
    if (h.t >= 9.0) { /* the pour ends at 7.5 s: from here the pile flows out and settles */
      settle_bytes += (double)len;
      settle_grains += h.count;
    }
    if (h.kind == FRAME_KEY) {
      keys++;
      key_bytes += (double)len;
      key_grains += h.count;
      key_gap = fmax(key_gap, h.t - last_key_t);
      last_key_t = h.t;
    } else {
      delta_bytes += (double)len;
      delta_grains += h.count;
    }
    /* compare with the engine, grain by grain in id order */
    grn_grains_view g;
    grn_world_grains(w, &g);
    uint32_t *ids = malloc(sizeof *ids * (size_t)g.count);
    int *idx = malloc(sizeof *idx * (size_t)g.count);
    int n = 0;
    for (int i = 0; i < g.count; i++) {
      if (g.alive[i]) {
        ids[n] = g.id[i];
        idx[n++] = i;
      }
    }
    for (int a = 1; a < n; a++) { /* insertion sort by id: storage is nearly sorted by cell */
      const uint32_t ki = ids[a];
      const int kx = idx[a];
      int b = a - 1;
      while (b >= 0 && ids[b] > ki) {
        ids[b + 1] = ids[b];
        idx[b + 1] = idx[b];
        b--;
      }
      ids[b + 1] = ki;
      idx[b + 1] = kx;
    }
    bad += n != (int)dec.count;
    for (int k = 0; k < n && k < (int)dec.count; k++) {
      for (int a = 0; a < 3; a++) {
        const double err = fabs(dec.pos[3 * k + a] - g.pos[3 * idx[k] + a]) / dec.step;
        worst = err > worst ? err : worst;
      }
    }
    free(ids);
    free(idx);
  }
  printf("%d frames, %d keyframes; bytes per grain: keyframe %.2f, delta %.2f, average %.2f "
         "overall and %.2f once the pour has ended\n",
         frames, keys, key_bytes / key_grains, delta_bytes / delta_grains, all_bytes / all_grains,
         settle_bytes / settle_grains);
  CHECK_NEAR("frames that failed to encode or decode", bad, 0, 0);
  CHECK_NEAR("sequence gaps", order, 0, 0);
  CHECK_RANGE("worst position error, grid steps", worst, 0.0, 0.5 + 1e-6);
  CHECK_RANGE("longest time between keyframes, s", key_gap, 0.0, FRAME_KEY_EVERY + 1.0 / 60.0);
  CHECK_RANGE("deltas between keyframes", frames - keys, frames / 2, frames);
  /* the budget for a settling pile: 3 bytes per grain per frame on average (while the
   * spout adds grains every 1/12 s each addition needs a keyframe, so that phase costs more) */
  CHECK_RANGE("average bytes per grain per frame, settling pile", settle_bytes / settle_grains, 0.0,
              3.0);

  /* a delta means nothing to a decoder that has not seen its keyframe, and junk is refused */
  const uint8_t *buf;
  size_t len;
  frame_encode(enc, w, false, &buf, &len);
  frame_header h;
  memcpy(&h, buf, sizeof h);
  frame_decoder fresh;
  memset(&fresh, 0, sizeof fresh);
  CHECK("a late joiner cannot use a delta",
        h.kind == FRAME_DELTA && frame_decode(&fresh, buf, len) != 0);
  CHECK("a truncated frame is refused", frame_decode(&dec, buf, len - 1) != 0);
  uint8_t *junk = malloc(len);
  memcpy(junk, buf, len);
  junk[0] ^= 0xff;
  CHECK("a wrong magic is refused", frame_decode(&dec, junk, len) != 0);
  /* a damaged payload must never be read out of bounds (the sanitizer build watches), and the
   * decoder must still take the next good frame afterwards */
  memcpy(junk, buf, len);
  junk[FRAME_HEADER + len / 2 - FRAME_HEADER / 2] ^= 0x5a;
  frame_decode(&dec, junk, len);
  const uint8_t *good;
  size_t good_len;
  frame_encode(enc, w, true, &good, &good_len);
  CHECK("after a damaged frame the decoder takes the next keyframe",
        frame_decode(&dec, good, good_len) == 0);
  frame_encode(enc, w, true, &buf, &len);
  CHECK("a forced keyframe starts a late joiner",
        frame_decode(&fresh, buf, len) == 0 && fresh.count == dec.count);
  /* a keyframe header that claims the most grains over a tiny payload: refused before the
   * decoder sizes anything for it (found by fuzz_frame: 64 bytes cost 160 MB) */
  frame_decoder blank;
  memset(&blank, 0, sizeof blank);
  uint8_t claim[FRAME_HEADER + 16];
  memcpy(claim, buf, FRAME_HEADER);
  memcpy(claim + FRAME_HEADER, buf + FRAME_HEADER, 16);
  frame_header ch;
  memcpy(&ch, claim, sizeof ch);
  ch.count = GRN_MAX_GRAINS;
  ch.raw_size = 8u * GRN_MAX_GRAINS + (uint32_t)sizeof(grn_geometry);
  ch.payload_size = 16;
  memcpy(claim, &ch, sizeof ch);
  CHECK("a huge claim over a few bytes is refused, nothing allocated",
        frame_decode(&blank, claim, sizeof claim) != 0 && blank.pos == NULL);
  free(junk);
  frame_decoder_free(&dec);
  frame_decoder_free(&fresh);
  frame_encoder_free(enc);
  grn_world_destroy(w);

  /* force chains travel as pairs of frame indices: decoded, they name the very pairs (by id) and
   * forces the engine lists for the same plane */
  grn_world_def_default(&d, "chains", &e);
  grn_world_def_set(&d, "amount", 20, &e);
  grn_world_create(&d, &w, &e);
  grn_world_step(w, 240 * 3);
  enc = frame_encoder_new();
  memset(&dec, 0, sizeof dec);
  frame_encode(enc, w, false, &buf, &len);
  CHECK("a chains-scene keyframe decodes", frame_decode(&dec, buf, len) == 0);
  grn_measurements m;
  grn_world_measurements(w, &m);
  enum { CAP = 20000 };
  grn_contact *want = malloc(sizeof *want * CAP), *got = malloc(sizeof *got * CAP);
  const int nw = grn_world_chains(w, m.value[GRN_M_CX], m.value[GRN_M_CZ], 0, 1, want, CAP);
  CHECK("the chains encode", frame_encode_chains(enc, want, nw, &buf, &len) == 0);
  const int ng = frame_decode_chains(&dec, buf, len, got, CAP);
  printf("force chains: %d pairs, %zu bytes\n", nw, len);
  CHECK_RANGE("chains in the slab", nw, 1, CAP - 1);
  CHECK_NEAR("chains decoded", ng, nw, 0);
  /* frame index k is the k-th alive grain in id order */
  grn_grains_view g;
  grn_world_grains(w, &g);
  uint32_t max_id = 0;
  for (int i = 0; i < g.count; i++) {
    max_id = g.alive[i] && g.id[i] > max_id ? g.id[i] : max_id;
  }
  uint32_t *id_of = malloc(sizeof *id_of * (max_id + 1));
  int k = 0;
  for (uint32_t id = 0; id <= max_id; id++) {
    for (int i = 0; i < g.count; i++) {
      if (g.alive[i] && g.id[i] == id) {
        id_of[k++] = id;
      }
    }
  }
  int same = 0;
  for (int c = 0; c < ng && c < nw; c++) {
    same += id_of[got[c].a] == want[c].a && id_of[got[c].b] == want[c].b && got[c].fn == want[c].fn;
  }
  CHECK_NEAR("chains equal to the engine's, pair by pair", same, nw, 0);
  frame_encode(enc, w, true, &buf, &len); /* a new keyframe the decoder has not seen */
  frame_encode_chains(enc, want, nw, &buf, &len);
  CHECK("chains for another keyframe are refused",
        frame_decode_chains(&dec, buf, len, got, CAP) < 0);
  free(id_of);
  free(want);
  free(got);
  frame_decoder_free(&dec);
  frame_encoder_free(enc);
  grn_world_destroy(w);
  CHECK_DONE();
}
