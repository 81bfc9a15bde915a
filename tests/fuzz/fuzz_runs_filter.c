/* libFuzzer harness (issue 16): the query of GET /api/runs (store_filter_parse). The input is a
 * query string: arguments split at '&', key and value at the first '=' (none: a NULL value, as
 * libmicrohttpd gives it), each percent-decoded as libmicrohttpd does (%00 ends the string there).
 * Checks that a refusal names a rule with a message in valid UTF-8 (it becomes a JSON body), and
 * that an accepted filter keeps store_filter.h's bounds. Built like fuzz_restore.c; seeds in
 * corpus/runs_filter/ (make_corpus). */
#include "api_error.h"
#include "store_filter.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int hex(int c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

/* in place; the result is never longer */
static void percent_decode(char *s) {
  char *w = s;
  for (const char *r = s; *r; r++) {
    if (*r == '%' && hex(r[1]) >= 0 && hex(r[2]) >= 0) {
      *w++ = (char)(hex(r[1]) * 16 + hex(r[2]));
      r += 2;
    } else {
      *w++ = *r == '+' ? ' ' : *r;
    }
  }
  *w = '\0';
}

/* the text must be what api_utf8_clean leaves alone: valid UTF-8 */
static void must_be_utf8(const char *s, size_t cap) {
  char copy[256];
  if (strlen(s) >= cap || strlen(s) >= sizeof copy) {
    abort();
  }
  memcpy(copy, s, strlen(s) + 1);
  if (strcmp(api_utf8_clean(copy), s) != 0) {
    abort();
  }
}

static void must_be_name(const char *s) {
  const size_t n = strlen(s);
  if (n == 0 || n >= STORE_FILTER_NAME || strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_") != n) {
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  store_query_arg *args = malloc(sizeof *args * (size / 2 + 1));
  if (!text || !args) {
    free(text);
    free(args);
    return 0;
  }
  memcpy(text, data, size);
  text[size] = '\0';
  size_t n = 0;
  for (char *at = text, *next; at; at = next) {
    char *amp = strchr(at, '&');
    next = amp ? amp + 1 : NULL;
    if (amp) {
      *amp = '\0';
    }
    if (!*at) {
      continue; /* "a=1&&b=2": libmicrohttpd skips the empty argument */
    }
    char *eq = strchr(at, '=');
    if (eq) {
      *eq = '\0';
      percent_decode(eq + 1);
    }
    percent_decode(at);
    args[n++] = (store_query_arg){at, eq ? eq + 1 : NULL};
  }
  store_runs_filter f;
  store_error e;
  memset(&e, 0, sizeof e);
  const store_status rc = store_filter_parse(args, n, &f, &e);
  if (rc != STORE_OK) {
    if (rc != STORE_E_BAD_FILTER || !e.code || !e.message[0]) {
      abort();
    }
    must_be_utf8(e.field, sizeof e.field);
    must_be_utf8(e.message, sizeof e.message);
  } else {
    if (f.limit < 1 || f.limit > STORE_PAGE_MAX || f.offset < 0 || f.offset > 1000000000 ||
        f.nranges < 0 || f.nranges > STORE_FILTER_MAX_ARGS || (f.has_from && !isfinite(f.from)) ||
        (f.has_to && !isfinite(f.to))) {
      abort();
    }
    for (int i = 0; i < f.nranges; i++) {
      const store_range *r = &f.range[i];
      must_be_name(r->name);
      if (!r->has_min && !r->has_max) {
        abort();
      }
      if ((r->has_min && !isfinite(r->min)) || (r->has_max && !isfinite(r->max))) {
        abort();
      }
    }
    if (f.sort == STORE_SORT_PARAM || f.sort == STORE_SORT_RESULT) {
      must_be_name(f.sort_name);
    }
    const char *texts[] = {f.scene, f.label, f.session, f.end_reason};
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
      must_be_utf8(texts[k], STORE_FILTER_TEXT);
    }
  }
  free(args);
  free(text);
  return 0;
}
