/* Filling an api_error (see api_error.h). */
#include "api_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The length of the well-formed UTF-8 sequence at s (RFC 3629, table 3-7 of the Unicode
 * standard: no overlong forms, no surrogates, nothing above U+10FFFF), or 0. */
static size_t utf8_seq(const unsigned char *s) {
  unsigned char c = s[0];
  if (c < 0x80) {
    return 1;
  }
  size_t n;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    lo = c == 0xE0 ? 0xA0 : 0x80;
    hi = c == 0xED ? 0x9F : 0xBF;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    lo = c == 0xF0 ? 0x90 : 0x80;
    hi = c == 0xF4 ? 0x8F : 0xBF;
  } else {
    return 0;
  }
  if (s[1] < lo || s[1] > hi) {
    return 0;
  }
  for (size_t i = 2; i < n; i++) {
    if (s[i] < 0x80 || s[i] > 0xBF) { /* also stops at the terminating NUL */
      return 0;
    }
  }
  return n;
}

char *api_utf8_clean(char *s) {
  unsigned char *r = (unsigned char *)s;
  unsigned char *w = r;
  while (*r) {
    size_t n = utf8_seq(r);
    if (n == 0) {
      r++;
      continue;
    }
    memmove(w, r, n);
    w += n;
    r += n;
  }
  *w = 0;
  return s;
}

void api_fail(api_error *e, int status, const char *code, const char *field, const char *fmt, ...) {
  e->status = status;
  e->code = code;
  e->seconds_left = 0.0;
  snprintf(e->field, sizeof e->field, "%s", field ? field : "");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
  api_utf8_clean(e->field);
  api_utf8_clean(e->message);
}
