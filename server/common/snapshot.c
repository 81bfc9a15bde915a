/* Snapshots as CSV or legacy VTK polydata (see snapshot.h). The text is made in pieces into a
 * fixed buffer, so a worker under its memory limit formats any world it could step. */
#include "snapshot.h"

#include <assert.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of one particle's rows at most (CSV: id, 10 numbers of ≤ 24 characters and a count;
 * VTK: its point, radius, id, velocity and spin lines), and of one contact (VTK: its line and
 * its force; CSV: nothing of its own). */
#define ROW_MAX 320
#define CONTACT_MAX 48
/* Touching pairs per particle a snapshot carries at most: far more than a packing holds (12 for
 * equal spheres); a world beyond it is refused, not cut. */
#define CONTACTS_PER 16
#define HEADER_MAX 4096

int snapshot_format_parse(const char *name, snapshot_format *out) {
  if (name && strcmp(name, "csv") == 0) {
    *out = SNAPSHOT_CSV;
    return 0;
  }
  if (name && strcmp(name, "vtk") == 0) {
    *out = SNAPSHOT_VTK;
    return 0;
  }
  return -1;
}

const char *snapshot_format_name(snapshot_format f) {
  return f == SNAPSHOT_VTK ? "vtk" : "csv";
}

const char *snapshot_content_type(snapshot_format f) {
  return f == SNAPSHOT_VTK ? "application/octet-stream" : "text/csv; charset=utf-8";
}

size_t snapshot_max_bytes(int alive) {
  const size_t n = alive > 0 ? (size_t)alive : 0;
  return HEADER_MAX + n * (ROW_MAX + (size_t)CONTACTS_PER * CONTACT_MAX);
}

typedef struct out {
  snapshot_sink sink;
  void *ctx;
  size_t len;
  int failed;
  char buf[SNAPSHOT_PIECE];
} out;

static void flush(out *o) {
  if (o->len > 0 && !o->failed && o->sink(o->ctx, o->buf, o->len) != 0) {
    o->failed = -1;
  }
  o->len = 0;
}

/* One row or line (shorter than ROW_MAX by construction). */
__attribute__((format(printf, 2, 3))) static void put(out *o, const char *fmt, ...) {
  if (SNAPSHOT_PIECE - o->len < ROW_MAX) {
    flush(o);
  }
  va_list ap;
  va_start(ap, fmt);
  const int n = vsnprintf(o->buf + o->len, SNAPSHOT_PIECE - o->len, fmt, ap);
  va_end(ap);
  o->len += n > 0 ? (size_t)n : 0;
}

typedef struct id_row {
  uint32_t id;
  int row;
} id_row;

/* Heapsort by id, not qsort: glibc's qsort asks the kernel for the machine's memory size, a
 * system call the worker's sandbox does not allow. */
static void sift(id_row *a, int at, int n) {
  for (int child; (child = 2 * at + 1) < n; at = child) {
    child += child + 1 < n && a[child + 1].id > a[child].id;
    if (a[at].id >= a[child].id) {
      return;
    }
    const id_row t = a[at];
    a[at] = a[child];
    a[child] = t;
  }
}

static void sort_by_id(id_row *a, int n) {
  for (int i = n / 2 - 1; i >= 0; i--) {
    sift(a, i, n);
  }
  for (int end = n - 1; end > 0; end--) {
    const id_row t = a[0];
    a[0] = a[end];
    a[end] = t;
    sift(a, 0, end);
  }
}

static int row_of(const id_row *rows, int n, uint32_t id) {
  int lo = 0, hi = n - 1;
  while (lo <= hi) {
    const int mid = lo + (hi - lo) / 2;
    if (rows[mid].id == id) {
      return rows[mid].row;
    }
    if (rows[mid].id < id) {
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return -1;
}

static void vectors(out *o, const char *name, const double *v, const grn_grains_view *g) {
  put(o, "VECTORS %s double\n", name);
  for (int i = 0; i < g->count; i++) {
    if (g->alive[i]) {
      put(o, "%.17g %.17g %.17g\n", v[3 * i], v[3 * i + 1], v[3 * i + 2]);
    }
  }
}

static void write_vtk(out *o, const char *title, const grn_grains_view *g, int n,
                      const grn_contact *c, const int (*ends)[2], int m) {
  put(o, "# vtk DataFile Version 3.0\n");
  char line[256];
  snprintf(line, sizeof line, "%s", title);
  for (char *p = line; *p; p++) {
    *p = *p == '\n' || *p == '\r' ? ' ' : *p;
  }
  put(o, "%s\nASCII\nDATASET POLYDATA\nPOINTS %d double\n", line, n);
  for (int i = 0; i < g->count; i++) {
    if (g->alive[i]) {
      put(o, "%.17g %.17g %.17g\n", g->pos[3 * i], g->pos[3 * i + 1], g->pos[3 * i + 2]);
    }
  }
  /* contacts as two-point lines, their normal force as the lines' data; none: no cells at all
   * (a LINES 0 0 section is not read back by every reader) */
  if (m > 0) {
    put(o, "LINES %d %d\n", m, 3 * m);
    for (int k = 0; k < m; k++) {
      put(o, "2 %d %d\n", ends[k][0], ends[k][1]);
    }
  }
  put(o, "POINT_DATA %d\nSCALARS radius double 1\nLOOKUP_TABLE default\n", n);
  for (int i = 0; i < g->count; i++) {
    if (g->alive[i]) {
      put(o, "%.17g\n", g->radius[i]);
    }
  }
  put(o, "SCALARS id unsigned_int 1\nLOOKUP_TABLE default\n");
  for (int i = 0; i < g->count; i++) {
    if (g->alive[i]) {
      put(o, "%u\n", g->id[i]);
    }
  }
  vectors(o, "velocity", g->vel, g);
  vectors(o, "spin", g->spin, g);
  if (m > 0) {
    put(o, "CELL_DATA %d\nSCALARS normal_force double 1\nLOOKUP_TABLE default\n", m);
    for (int k = 0; k < m; k++) {
      put(o, "%.9g\n", (double)c[k].fn);
    }
  }
}

static void write_csv(out *o, const grn_grains_view *g, const int *touching) {
  put(o, "id,x_m,y_m,z_m,radius_m,vx_m_s,vy_m_s,vz_m_s,wx_rad_s,wy_rad_s,wz_rad_s,contacts\n");
  for (int i = 0, row = 0; i < g->count; i++) {
    if (!g->alive[i]) {
      continue;
    }
    const double *p = g->pos + 3 * i, *v = g->vel + 3 * i, *w = g->spin + 3 * i;
    put(o, "%u,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%d\n", g->id[i], p[0],
        p[1], p[2], g->radius[i], v[0], v[1], v[2], w[0], w[1], w[2], touching[row]);
    row++;
  }
}

int snapshot_write(const grn_world *w, snapshot_format f, const char *title, snapshot_sink sink,
                   void *ctx) {
  grn_grains_view g;
  grn_world_grains(w, &g);
  int n = 0;
  for (int i = 0; i < g.count; i++) {
    n += g.alive[i] != 0;
  }
  const int m = grn_world_contacts(w, NULL, 0);
  if (m < 0 || (size_t)m > (size_t)CONTACTS_PER * (size_t)n) {
    return -3;
  }
  out *o = malloc(sizeof *o);
  id_row *rows = malloc(sizeof *rows * (size_t)(n > 0 ? n : 1));
  grn_contact *c = malloc(sizeof *c * (size_t)(m > 0 ? m : 1));
  int(*ends)[2] = malloc(sizeof *ends * (size_t)(m > 0 ? m : 1));
  int *touching = calloc((size_t)(n > 0 ? n : 1), sizeof *touching);
  int rc = -2;
  if (o && rows && c && ends && touching) {
    o->sink = sink;
    o->ctx = ctx;
    o->len = 0;
    o->failed = 0;
    for (int i = 0, row = 0; i < g.count; i++) {
      if (g.alive[i]) {
        rows[row] = (id_row){g.id[i], row};
        row++;
      }
    }
    sort_by_id(rows, n);
    grn_world_contacts(w, c, m);
    for (int k = 0; k < m; k++) {
      ends[k][0] = row_of(rows, n, c[k].a);
      ends[k][1] = row_of(rows, n, c[k].b);
      /* the engine lists alive pairs only: an id it does not show is its bug */
      assert(ends[k][0] >= 0 && ends[k][1] >= 0);
      touching[ends[k][0]]++;
      touching[ends[k][1]]++;
    }
    if (f == SNAPSHOT_VTK) {
      write_vtk(o, title, &g, n, c, (const int(*)[2])ends, m);
    } else {
      write_csv(o, &g, touching);
    }
    flush(o);
    rc = o->failed;
  }
  free(touching);
  free(ends);
  free(c);
  free(rows);
  free(o);
  return rc;
}
