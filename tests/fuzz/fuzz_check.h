/* What every server-side fuzz harness asks of a refusal: a 4xx whose error body serializes (an
 * empty body would send the client nothing at all). */
#ifndef GRAINLAB_FUZZ_CHECK_H
#define GRAINLAB_FUZZ_CHECK_H

#include "api_json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline void fuzz_refusal_ok(const api_error *e) {
  json_t *j = api_error_json(e);
  char *text = j ? api_dumps(j) : NULL;
  if (!text || !e->code || e->status < 400 || e->status > 499) {
    abort();
  }
  free(text);
  json_decref(j);
}

/* A REST body harness's input: a selector byte, then the body, parsed as the daemon parses every
 * body. NULL when there is no body or it is refused (the refusal checked). */
static inline json_t *fuzz_body(const uint8_t *data, size_t size, api_error *e) {
  memset(e, 0, sizeof *e);
  if (size < 1) {
    return NULL;
  }
  json_t *body = api_parse_object((const char *)data + 1, size - 1, e);
  if (!body) {
    fuzz_refusal_ok(e);
  }
  return body;
}

/* After a reader ran on the body: its refusal (rc != 0) checked, the body released. */
static inline void fuzz_body_done(json_t *body, int rc, const api_error *e) {
  if (rc != 0) {
    fuzz_refusal_ok(e);
  }
  json_decref(body);
}

#endif
