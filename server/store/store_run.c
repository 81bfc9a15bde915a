/* The run's fields (store_run.h): their table, the list queries' select, and freeing what the
 * backends filled. Pure: no database. */
#include "store_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STORE_RUN_ROW(id, key, kind, column) [STORE_RUN_##id] = {key, kind, column},
const store_field store_run_fields[STORE_RUN_FIELD_COUNT] = {STORE_RUN_FIELDS(STORE_RUN_ROW)};
#undef STORE_RUN_ROW

int store_run_select(const char *node, const char *results, char *out, size_t size) {
  size_t len = 0;
  for (int k = 0; k < STORE_RUN_FIELD_COUNT; k++) {
    const char *expr = store_run_fields[k].column;
    if (!expr) {
      expr = k == STORE_RUN_NODE ? node : results;
    }
    const int n = snprintf(out + len, size - len, "%s%s", k ? ", " : "SELECT ", expr);
    if (n < 0 || (size_t)n >= size - len) {
      return -1;
    }
    len += (size_t)n;
  }
  return 0;
}

void store_run_free(store_run *r) {
  for (int k = 0; k < STORE_RUN_FIELD_COUNT; k++) {
    free(r->f[k].text);
    r->f[k].text = NULL;
  }
}

void store_run_page_free(store_run_page *p) {
  for (size_t k = 0; k < p->count; k++) {
    store_run_free(&p->runs[k]);
  }
  free(p->runs);
  p->runs = NULL;
  p->count = 0;
}

void store_run_detail_free(store_run_detail *d) {
  store_run_free(&d->run);
  for (size_t k = 0; k < d->nevents; k++) {
    free(d->events[k].kind);
    free(d->events[k].detail);
  }
  free(d->events);
  d->events = NULL;
  d->nevents = 0;
}
