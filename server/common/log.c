/* grainlabd's structured logs (see log.h). */
#define _GNU_SOURCE
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int min_level = LOG_INFO; /* __atomic */

void log_set_level(log_level level) {
  __atomic_store_n(&min_level, (int)level, __ATOMIC_RELAXED);
}

int log_parse_level(const char *name) {
  static const char *const names[] = {"debug", "info", "warn", "error"};
  for (int i = 0; i < 4; i++) {
    if (strcmp(name, names[i]) == 0) {
      return i;
    }
  }
  return -1;
}

void log_msg(log_level level, const char *event, const char *fmt, ...) {
  if ((int)level < __atomic_load_n(&min_level, __ATOMIC_RELAXED)) {
    return;
  }
  static const char *const names[] = {"debug", "info", "warn", "error"};
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* one line whatever the message holds: quotes and line breaks escaped */
  char quoted[1600];
  size_t q = 0;
  for (const char *c = msg; *c && q + 3 < sizeof quoted; c++) {
    if (*c == '"' || *c == '\\') {
      quoted[q++] = '\\';
      quoted[q++] = *c;
    } else if (*c == '\n' || *c == '\r') {
      quoted[q++] = ' ';
    } else {
      quoted[q++] = *c;
    }
  }
  quoted[q] = '\0';
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char when[32];
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  /* one fprintf: stdio locks the stream, so lines from threads never interleave */
  fprintf(stderr, "ts=%s.%03ldZ level=%s event=%s msg=\"%s\"\n", when, ts.tv_nsec / 1000000,
          names[level], event, quoted);
}
