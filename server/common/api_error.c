/* Filling an api_error (see api_error.h). */
#include "api_error.h"

#include <stdarg.h>
#include <stdio.h>

void api_fail(api_error *e, int status, const char *code, const char *field, const char *fmt, ...) {
  e->status = status;
  e->code = code;
  snprintf(e->field, sizeof e->field, "%s", field ? field : "");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
}
