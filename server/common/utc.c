/* ISO 8601 UTC times and Unix seconds (see utc.h). */
#define _GNU_SOURCE
#include "utc.h"

#include <math.h>
#include <string.h>
#include <time.h>

bool utc_parse(const char *s, double *out) {
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  const char *rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
  if (!rest || (*rest && strcmp(rest, "Z") != 0)) {
    return false;
  }
  *out = (double)timegm(&tm);
  return true;
}

void utc_format(double t, char out[24]) {
  const time_t secs = (time_t)floor(t);
  struct tm tm;
  gmtime_r(&secs, &tm);
  strftime(out, 24, "%Y-%m-%dT%H:%M:%SZ", &tm);
}
