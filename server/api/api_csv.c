/* The record as CSV (RFC 4180): a run's samples' cells and the runs list with one column per
 * parameter and result any of its runs has, for a spreadsheet. */
#define _GNU_SOURCE
#include "api_runs.h"
#include "utc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compare_names(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* 0.9, not 0.90000000000000002 */
void api_csv_number(FILE *f, double x) {
  char text[32];
  for (int digits = 15; digits <= 17; digits++) {
    snprintf(text, sizeof text, "%.*g", digits, x);
    if (strtod(text, NULL) == x) {
      break;
    }
  }
  fputs(text, f);
}

/* A CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180); a text that a
 * spreadsheet would run as a formula gets a leading apostrophe, since labels and group names come
 * from the network. */
void api_csv_field(FILE *f, const json_t *v) {
  if (json_is_string(v)) {
    const char *s = json_string_value(v);
    const bool formula = s[0] && strchr("=+-@\t\r", s[0]);
    if (formula || strpbrk(s, ",\"\r\n")) {
      fputc('"', f);
      if (formula) {
        fputc('\'', f);
      }
      for (const char *p = s; *p; p++) {
        if (*p == '"') {
          fputc('"', f);
        }
        fputc(*p, f);
      }
      fputc('"', f);
    } else {
      fputs(s, f);
    }
  } else if (json_is_integer(v)) {
    fprintf(f, "%lld", (long long)json_integer_value(v));
  } else if (json_is_real(v)) {
    api_csv_number(f, json_real_value(v));
  }
}

/* The names of one object member (params or results) over every row, sorted, in `names`. */
static json_t *union_names(const json_t *rows, const char *member) {
  json_t *seen = json_object();
  size_t i;
  const json_t *row;
  json_array_foreach(rows, i, row) {
    const char *name;
    json_t *v;
    json_object_foreach(json_object_get(row, member), name, v) {
      json_object_set_new(seen, name, json_true());
    }
  }
  return seen;
}

/* What changed at a stretch's start, as "name=value name=value" (empty for the first). */
static json_t *changed_text(const json_t *changed) {
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  if (!f) {
    return json_string("");
  }
  const char *name;
  json_t *v;
  bool first = true;
  json_object_foreach((json_t *)changed, name, v) {
    fprintf(f, "%s%s=", first ? "" : " ", name);
    if (json_is_number(v)) {
      api_csv_number(f, json_number_value(v));
    }
    first = false;
  }
  fclose(f);
  json_t *j = json_string(text ? text : "");
  free(text);
  return j;
}

/* The CSV's rows: a run's stretches of constant parameters each (its segments), with the
 * parameters in force and the results measured in it; a run recorded before there were stretches
 * (schema/migrations/010) as one row of its start parameters and final results. */
static json_t *csv_rows(const json_t *runs) {
  static const char *const run_keys[] = {"id",         "node",     "class",      "group",
                                         "scene",      "label",    "started_at", "ended_at",
                                         "end_reason", "reset_of", NULL};
  json_t *rows = json_array();
  size_t r;
  const json_t *run;
  json_array_foreach(runs, r, run) {
    const json_t *segs = json_object_get(run, "segments");
    const size_t n = json_is_array(segs) && json_array_size(segs) > 0 ? json_array_size(segs) : 1;
    for (size_t k = 0; k < n; k++) {
      const json_t *seg = json_is_array(segs) ? json_array_get(segs, k) : NULL;
      json_t *row = json_object();
      for (int c = 0; run_keys[c]; c++) {
        json_t *v = json_object_get(run, run_keys[c]);
        json_object_set_new(row, run_keys[c], v ? json_deep_copy(v) : json_null());
      }
      /* a spreadsheet's reader wants dates, not Unix seconds: ISO 8601 in UTC */
      for (int c = 0; c < 2; c++) {
        const char *key = c ? "ended_at" : "started_at";
        const json_t *v = json_object_get(run, key);
        if (json_is_number(v)) {
          char text[24];
          utc_format(json_number_value(v), text);
          json_object_set_new(row, key, json_string(text));
        }
      }
      if (seg) {
        json_object_set_new(row, "segment", json_integer((json_int_t)k + 1));
        json_object_set_new(row, "from_t", json_deep_copy(json_object_get(seg, "from_t")));
        /* an open stretch runs to where the run is now, which this list does not know */
        json_object_set_new(row, "to_t", json_deep_copy(json_object_get(seg, "to_t")));
        json_object_set_new(row, "changed", changed_text(json_object_get(seg, "changed")));
        json_object_set_new(row, "params", json_deep_copy(json_object_get(seg, "params")));
        json_object_set_new(row, "results", json_deep_copy(json_object_get(seg, "results")));
      } else {
        json_object_set_new(row, "to_t", json_deep_copy(json_object_get(run, "end_t")));
        json_object_set_new(row, "params", json_deep_copy(json_object_get(run, "params")));
        json_object_set_new(row, "results", json_deep_copy(json_object_get(run, "results")));
      }
      json_array_append_new(rows, row);
    }
  }
  return rows;
}

int api_runs_csv(const json_t *list, char **out, size_t *len) {
  /* "node" is left out below when no run has one (a lone daemon's list, as before) */
  static const char *const fixed[] = {"id",      "node",       "class",    "group",      "scene",
                                      "label",   "started_at", "ended_at", "end_reason", "reset_of",
                                      "segment", "from_t",     "to_t",     "changed"};
  json_t *rows = csv_rows(json_object_get(list, "runs"));
  bool nodes = false;
  size_t r;
  const json_t *each;
  json_array_foreach(rows, r, each) {
    nodes = nodes || json_is_string(json_object_get(each, "node"));
  }
  json_t *params = union_names(rows, "params"), *results = union_names(rows, "results");
  FILE *f = open_memstream(out, len);
  if (!f) {
    json_decref(rows);
    json_decref(params);
    json_decref(results);
    return -1;
  }
  fputs("run", f);
  for (size_t k = nodes ? 1 : 2; k < sizeof fixed / sizeof fixed[0]; k++) {
    fprintf(f, ",%s", fixed[k]);
  }
  /* json_object_foreach walks in insertion order; the key lists are sorted for stable columns */
  const json_t *sets[2] = {params, results};
  const char *const prefix[2] = {"param.", "result."};
  const char **names[2] = {NULL, NULL};
  size_t counts[2] = {0, 0};
  for (int s = 0; s < 2; s++) {
    names[s] = calloc(json_object_size(sets[s]) + 1, sizeof *names[s]);
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)sets[s], name, v) {
      if (names[s]) {
        names[s][counts[s]++] = name;
      }
    }
    qsort(names[s], counts[s], sizeof *names[s], compare_names);
    for (size_t k = 0; k < counts[s]; k++) {
      fprintf(f, ",%s%s", prefix[s], names[s][k]);
    }
  }
  fputs("\r\n", f);
  size_t i;
  const json_t *row;
  json_array_foreach(rows, i, row) {
    for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++) {
      if (k == 1 && !nodes) {
        continue;
      }
      if (k) {
        fputc(',', f);
      }
      api_csv_field(f, json_object_get(row, fixed[k]));
    }
    const char *const member[2] = {"params", "results"};
    for (int s = 0; s < 2; s++) {
      for (size_t k = 0; k < counts[s]; k++) {
        fputc(',', f);
        api_csv_field(f, json_object_get(json_object_get(row, member[s]), names[s][k]));
      }
    }
    fputs("\r\n", f);
  }
  const bool failed = !names[0] || !names[1];
  free(names[0]);
  free(names[1]);
  json_decref(params);
  json_decref(results);
  json_decref(rows);
  if (fclose(f) != 0 || failed) {
    free(*out);
    *out = NULL;
    return -1;
  }
  return 0;
}
