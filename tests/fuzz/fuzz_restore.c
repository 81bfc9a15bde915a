/* libFuzzer harness (issue 16): a saved state is outside input. Every byte string either is refused
 * by grn_world_restore or gives a world that saves back to the same bytes and steps. Built with
 * clang -fsanitize=fuzzer by bench/fuzz.sh, and by the normal build with replay_main.c, which
 * ctest runs over the seed corpus in corpus/restore/ (real saved states of every scene; make them
 * again with make_corpus). */
#include "grainlab/grainlab.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  grn_world *w = NULL;
  grn_error e;
  if (grn_world_restore(NULL, data, size, &w, &e) != GRN_OK) {
    return 0;
  }
  /* restore reads every byte it keeps: saving again gives the input back */
  const size_t n = grn_world_save_size(w);
  unsigned char *again = malloc(n > 0 ? n : 1);
  if (!again || n != size || grn_world_save(w, again, n, &e) != GRN_OK ||
      memcmp(again, data, size) != 0) {
    abort();
  }
  free(again);
  /* out of memory is a defined answer: grains piled on one spot make a pair list of n² */
  const int rc = grn_world_step(w, 3);
  if (rc != GRN_OK && rc != GRN_E_NOMEM) {
    abort();
  }
  grn_world_stats st;
  grn_world_get_stats(w, &st);
  grn_measurements m;
  grn_world_measurements(w, &m);
  (void)grn_world_digest(w);
  grn_world_destroy(w);
  return 0;
}
