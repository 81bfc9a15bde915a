/* The engine's counted allocation: every byte a world holds goes through the caller's allocator
 * (grn_world_def.alloc) or malloc, and is counted in the world's grn_mem. The bottom floor: it
 * calls nothing else of the engine. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static void *default_alloc(size_t size, void *ctx) {
  (void)ctx;
  return malloc(size);
}
static void default_free(void *p, size_t size, void *ctx) {
  (void)ctx;
  (void)size;
  free(p);
}

void *grn__alloc(grn_world *w, size_t bytes) {
  if (bytes == 0) {
    return NULL;
  }
  void *p = w->mem.alloc(bytes, w->mem.ctx);
  if (p) {
    w->mem.live += bytes;
  }
  return p;
}

void grn__free(grn_world *w, void *p, size_t bytes) {
  if (p) {
    w->mem.free(p, bytes, w->mem.ctx);
    w->mem.live -= bytes;
  }
}

/* Grow an array to hold `need` elements (contents kept); cap is in elements. */
int grn__grow(grn_world *w, void **p, size_t elem, int *cap, int need) {
  if (need <= *cap) {
    return GRN_OK;
  }
  int nc = *cap > 0 ? *cap : 16;
  while (nc < need) {
    nc = nc + nc / 2 + 1;
  }
  void *q = grn__alloc(w, elem * (size_t)nc);
  if (!q) {
    return GRN_E_NOMEM;
  }
  if (*p) {
    memcpy(q, *p, elem * (size_t)*cap);
    grn__free(w, *p, elem * (size_t)*cap);
  }
  *p = q;
  *cap = nc;
  return GRN_OK;
}

/* Arrays sized together, made room for `need` elements (a quarter more, and 64) with their old
 * contents dropped: all or none, and on failure all are NULL and *cap 0. */
int grn__regrow(grn_world *w, void **const arrays[], const size_t each[], int count, int *cap,
                int need) {
  if (need <= *cap) {
    return GRN_OK;
  }
  const size_t old = (size_t)*cap, want = (size_t)need + (size_t)need / 4 + 64;
  bool ok = true;
  for (int k = 0; k < count; k++) {
    grn__free(w, *arrays[k], each[k] * old);
    *arrays[k] = grn__alloc(w, each[k] * want);
    ok = ok && *arrays[k];
  }
  *cap = (int)want;
  if (!ok) {
    for (int k = 0; k < count; k++) {
      grn__free(w, *arrays[k], each[k] * want);
      *arrays[k] = NULL;
    }
    *cap = 0;
    return GRN_E_NOMEM;
  }
  return GRN_OK;
}

/* The same, with the first `keep` elements of each array kept: all or none (on failure the old
 * arrays stay as they were). */
int grn__regrow_keep(grn_world *w, void **const arrays[], const size_t each[], int count, int *cap,
                     int keep, int need) {
  if (need <= *cap) {
    return GRN_OK;
  }
  enum { MOST = 8 };
  void *fresh[MOST] = {NULL};
  const size_t old = (size_t)*cap, want = (size_t)need + (size_t)need / 4 + 64;
  bool ok = count <= MOST;
  for (int k = 0; k < count && ok; k++) {
    fresh[k] = grn__alloc(w, each[k] * want);
    ok = fresh[k] != NULL;
  }
  for (int k = 0; k < count && k < MOST; k++) {
    if (!ok) {
      grn__free(w, fresh[k], each[k] * want);
      continue;
    }
    memcpy(fresh[k], *arrays[k], each[k] * (size_t)keep);
    grn__free(w, *arrays[k], each[k] * old);
    *arrays[k] = fresh[k];
  }
  if (!ok) {
    return GRN_E_NOMEM;
  }
  *cap = (int)want;
  return GRN_OK;
}

void grn__mem_init(grn_mem *m, const grn_world_def *def) {
  const bool own = def && def->alloc;
  m->alloc = own ? def->alloc : default_alloc;
  m->free = own ? def->free : default_free;
  m->ctx = def ? def->alloc_ctx : NULL;
  m->live = 0;
}
