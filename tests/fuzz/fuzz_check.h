/* What every server-side fuzz harness asks of a refusal: a 4xx whose error body serializes (an
 * empty body would send the client nothing at all). */
#ifndef GRAINLAB_FUZZ_CHECK_H
#define GRAINLAB_FUZZ_CHECK_H

#include "api_json.h"

#include <stdlib.h>

static inline void fuzz_refusal_ok(const api_error *e) {
  json_t *j = api_error_json(e);
  char *text = j ? api_dumps(j) : NULL;
  if (!text || !e->code || e->status < 400 || e->status > 499) {
    abort();
  }
  free(text);
  json_decref(j);
}

#endif
