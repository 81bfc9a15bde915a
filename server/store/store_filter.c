/* Reading GET /api/runs's query arguments into a store_runs_filter (see store_filter.h). Every
 * rule and message is the one the API has documented since the store's first version
 * (schema/openapi.yaml); tests/unit/test_store_filter.c walks each refusal. */
#define _GNU_SOURCE
#include "store_internal.h"
#include "utc.h"

#include "api_error.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void store__fail(store_error *err, store_status status, const char *code, const char *field,
                 const char *fmt, ...) {
  err->status = status;
  err->code = code;
  snprintf(err->field, sizeof err->field, "%s", field ? field : "");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  api_utf8_clean(err->field); /* keys and values come from the URL: any bytes, cut anywhere */
  api_utf8_clean(err->message);
}

void store_filter_default(store_runs_filter *f) {
  memset(f, 0, sizeof *f);
  f->sort = STORE_SORT_STARTED_AT;
  f->descending = true;
  f->limit = 50;
  f->offset = 0;
}

/* A strict decimal number (as the engine parses them), the whole string. */
static bool number_arg(const char *s, double *out) {
  return grn_parse_number(s, out) == GRN_OK;
}

/* A time bound: Unix seconds or an ISO 8601 UTC time "YYYY-MM-DDTHH:MM:SS[Z]". */
static bool time_arg(const char *s, double *out) {
  return number_arg(s, out) || utc_parse(s, out);
}

/* A name that may follow "param." or "result.": letters, digits and '_' only. */
static bool name_ok(const char *s) {
  const size_t n = strlen(s);
  return n > 0 && n < STORE_FILTER_NAME && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

/* Valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF), as jansson checks
 * it. */
static bool utf8_ok(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    const unsigned c = *p;
    int more;
    unsigned cp, lo;
    if (c < 0x80) {
      p++;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      more = 1, cp = c & 0x1f, lo = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
      more = 2, cp = c & 0x0f, lo = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
      more = 3, cp = c & 0x07, lo = 0x10000;
    } else {
      return false;
    }
    for (int k = 1; k <= more; k++) {
      if ((p[k] & 0xc0) != 0x80) {
        return false;
      }
      cp = cp << 6 | (p[k] & 0x3fu);
    }
    if (cp < lo || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    p += more + 1;
  }
  return true;
}

/* Whether an argument takes part: one whose key or value is not UTF-8 is passed over, as the API
 * has always done (it gathered the arguments in a JSON object, which cannot hold such text). */
static bool taken(const store_query_arg *a) {
  return utf8_ok(a->key) && utf8_ok(a->value ? a->value : "");
}

typedef struct keyed {
  const char *key;
  size_t at;
  bool taken;
} keyed;

static int by_key_then_place(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  const int c = strcmp(x->key, y->key);
  return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* The first argument, in request order, whose key an earlier taken argument already gave: sorted,
 * so a long query costs n log n, not n². NULL: none. */
static const char *first_duplicate(const store_query_arg *args, size_t n) {
  if (n < 2) {
    return NULL;
  }
  keyed *k = malloc(sizeof *k * n);
  if (!k) {
    /* without memory, the quadratic walk gives the same answer */
    for (size_t i = 1; i < n; i++) {
      for (size_t j = 0; j < i; j++) {
        if (strcmp(args[i].key, args[j].key) == 0 && taken(&args[j])) {
          return args[i].key;
        }
      }
    }
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    k[i] = (keyed){args[i].key, i, taken(&args[i])};
  }
  qsort(k, n, sizeof *k, by_key_then_place);
  size_t second = n;
  bool before = false; /* a taken argument came earlier in this run of equal keys */
  for (size_t i = 0; i < n; i++) {
    if (i > 0 && strcmp(k[i].key, k[i - 1].key) != 0) {
      before = false; /* a new run of equal keys starts */
    }
    if (before && k[i].at < second) {
      second = k[i].at;
    }
    before = before || k[i].taken;
  }
  free(k);
  return second < n ? args[second].key : NULL;
}

/* A query that names one argument twice is refused: which one would count is anyone's guess. */
static store_status refuse_duplicates(const store_query_arg *args, size_t n, store_error *err) {
  const char *dup = first_duplicate(args, n);
  if (dup) {
    store__fail(err, STORE_E_BAD_FILTER, "duplicate_field", dup, "'%.63s' is given twice", dup);
    return err->status;
  }
  return STORE_OK;
}

static const char *const end_reasons[] = {STORE_END_REASONS};
enum { END_REASONS = sizeof end_reasons / sizeof end_reasons[0] };

static bool is_end_reason(const char *s) {
  for (size_t i = 0; i < END_REASONS; i++) {
    if (strcmp(s, end_reasons[i]) == 0) {
      return true;
    }
  }
  return false;
}

/* scene, label, session, end_reason, class */
static store_status text_arg(store_runs_filter *f, const char *key, const char *val,
                             store_error *err) {
  if (strlen(val) >= STORE_FILTER_TEXT) {
    store__fail(err, STORE_E_BAD_FILTER, "too_long", key, "'%s' is limited to %d characters", key,
                STORE_FILTER_TEXT - 1);
    return err->status;
  }
  char *dst;
  if (strcmp(key, "scene") == 0) {
    if (!grn_scene_find(val)) {
      store__fail(err, STORE_E_BAD_FILTER, "unknown_scene", key,
                  "no scene '%.40s' (GET /api/scenes lists them)", val);
      return err->status;
    }
    f->has_scene = true;
    dst = f->scene;
  } else if (strcmp(key, "end_reason") == 0) {
    if (!is_end_reason(val)) {
      char list[160] = "";
      for (size_t i = 0; i < END_REASONS; i++) {
        strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, end_reasons[i], sizeof list - strlen(list) - 1);
      }
      store__fail(err, STORE_E_BAD_FILTER, "out_of_range", key, "end_reason is one of: %s", list);
      return err->status;
    }
    f->has_end_reason = true;
    dst = f->end_reason;
  } else if (strcmp(key, "label") == 0) {
    f->has_label = true;
    dst = f->label;
  } else if (strcmp(key, "class") == 0) {
    f->has_class = true;
    dst = f->class_id;
  } else {
    f->has_session = true;
    dst = f->session;
  }
  snprintf(dst, STORE_FILTER_TEXT, "%s", val);
  return STORE_OK;
}

/* sort=[-]started_at|id|param.NAME|result.NAME: a fixed set of orders, picked by name */
static store_status sort_arg(store_runs_filter *f, const char *val, store_error *err) {
  const bool desc = val[0] == '-';
  const char *by = desc ? val + 1 : val;
  if (strcmp(by, "started_at") == 0 || strcmp(by, "id") == 0) {
    f->sort = strcmp(by, "id") == 0 ? STORE_SORT_ID : STORE_SORT_STARTED_AT;
    f->sort_name[0] = '\0';
  } else if ((strncmp(by, "param.", 6) == 0 && name_ok(by + 6)) ||
             (strncmp(by, "result.", 7) == 0 && name_ok(by + 7))) {
    const bool param = by[0] == 'p';
    f->sort = param ? STORE_SORT_PARAM : STORE_SORT_RESULT;
    snprintf(f->sort_name, sizeof f->sort_name, "%s", param ? by + 6 : by + 7);
  } else {
    store__fail(err, STORE_E_BAD_FILTER, "bad_sort", "sort",
                "sort by started_at, id, param.NAME or result.NAME, with '-' for descending");
    return err->status;
  }
  f->descending = desc;
  return STORE_OK;
}

/* param.NAME.min / .max, result.NAME.min / .max */
static store_status range_arg(store_runs_filter *f, const char *key, const char *val,
                              store_error *err) {
  const bool param = key[0] == 'p';
  char name[40];
  const char *rest = key + (param ? 6 : 7), *dot = strrchr(rest, '.');
  const size_t n = dot ? (size_t)(dot - rest) : 0;
  if (!dot || n >= sizeof name || (strcmp(dot, ".min") != 0 && strcmp(dot, ".max") != 0)) {
    store__fail(err, STORE_E_BAD_FILTER, "unknown_field", key, "use %s.NAME.min or %s.NAME.max",
                param ? "param" : "result", param ? "param" : "result");
    return err->status;
  }
  memcpy(name, rest, n);
  name[n] = '\0';
  if (!name_ok(name)) {
    store__fail(err, STORE_E_BAD_FILTER, "unknown_field", key, "'%s' is not a %s name", name,
                param ? "parameter" : "result");
    return err->status;
  }
  double x = 0;
  if (!number_arg(val, &x)) {
    store__fail(err, STORE_E_BAD_FILTER, "not_a_number", key,
                "'%s' must be a finite decimal number", key);
    return err->status;
  }
  store_range *r = NULL;
  for (int i = 0; i < f->nranges && !r; i++) {
    if (f->range[i].result == !param && strcmp(f->range[i].name, name) == 0) {
      r = &f->range[i];
    }
  }
  if (!r) { /* at most one range per argument, and there are at most as many as the array holds */
    r = &f->range[f->nranges++];
    r->result = !param;
    snprintf(r->name, sizeof r->name, "%s", name);
  }
  if (strcmp(dot, ".min") == 0) {
    r->has_min = true;
    r->min = x;
  } else {
    r->has_max = true;
    r->max = x;
  }
  return STORE_OK;
}

store_status store_filter_parse(const store_query_arg *args, size_t n, store_runs_filter *out,
                                store_error *err) {
  store_filter_default(out);
  if (refuse_duplicates(args, n, err) != STORE_OK) {
    return err->status;
  }
  size_t count = 0;
  for (size_t i = 0; i < n; i++) {
    const char *key = args[i].key, *val = args[i].value ? args[i].value : "";
    if (!taken(&args[i])) {
      continue;
    }
    if (++count > STORE_FILTER_MAX_ARGS) {
      store__fail(err, STORE_E_BAD_FILTER, "too_many_filters", key, "at most %d query arguments",
                  STORE_FILTER_MAX_ARGS);
      return err->status;
    }
    store_status rc = STORE_OK;
    double x = 0;
    if (strcmp(key, "scene") == 0 || strcmp(key, "label") == 0 || strcmp(key, "end_reason") == 0 ||
        strcmp(key, "session") == 0 || strcmp(key, "class") == 0) {
      rc = text_arg(out, key, val, err);
    } else if (strcmp(key, "format") == 0) {
      if (strcmp(val, "json") != 0 && strcmp(val, "csv") != 0) {
        store__fail(err, STORE_E_BAD_FILTER, "bad_format", key, "format is json or csv");
        return err->status;
      }
      out->csv = strcmp(val, "csv") == 0;
    } else if (strcmp(key, "from") == 0 || strcmp(key, "to") == 0) {
      if (!time_arg(val, &x)) {
        store__fail(err, STORE_E_BAD_FILTER, "bad_time", key,
                    "'%s' must be Unix seconds or an ISO 8601 UTC time (2026-12-02T10:00:00Z)",
                    key);
        return err->status;
      }
      const bool from = strcmp(key, "from") == 0;
      *(from ? &out->has_from : &out->has_to) = true;
      *(from ? &out->from : &out->to) = x;
    } else if (strcmp(key, "limit") == 0 || strcmp(key, "offset") == 0) {
      const bool limit = strcmp(key, "limit") == 0;
      if (!number_arg(val, &x) || x != floor(x) || x < (limit ? 1 : 0) ||
          x > (limit ? STORE_PAGE_MAX : 1e9)) {
        store__fail(err, STORE_E_BAD_FILTER, "out_of_range", key,
                    "'%s' must be a whole number in %s", key, limit ? "1..500" : "0..1000000000");
        return err->status;
      }
      *(limit ? &out->limit : &out->offset) = (long)x;
    } else if (strcmp(key, "sort") == 0) {
      rc = sort_arg(out, val, err);
    } else if (strncmp(key, "param.", 6) == 0 || strncmp(key, "result.", 7) == 0) {
      rc = range_arg(out, key, val, err);
    } else {
      store__fail(err, STORE_E_BAD_FILTER, "unknown_field", key,
                  "unknown query argument '%.60s' (scene, label, session, end_reason, class, from, "
                  "to, param.NAME.min/max, result.NAME.min/max, sort, limit, offset, format)",
                  key);
      return err->status;
    }
    if (rc != STORE_OK) {
      return rc;
    }
  }
  return STORE_OK;
}

void store_events_page_default(store_events_page *p) {
  p->after = 0;
  p->limit = STORE_EVENTS_PAGE_MAX;
}

store_status store_events_page_parse(const store_query_arg *args, size_t n, store_events_page *out,
                                     store_error *err) {
  store_events_page_default(out);
  if (refuse_duplicates(args, n, err) != STORE_OK) {
    return err->status;
  }
  for (size_t i = 0; i < n; i++) {
    const char *key = args[i].key, *val = args[i].value ? args[i].value : "";
    if (!taken(&args[i])) {
      continue;
    }
    const bool after = strcmp(key, "events_after") == 0;
    if (!after && strcmp(key, "events_limit") != 0) {
      store__fail(err, STORE_E_BAD_FILTER, "unknown_field", key,
                  "unknown query argument '%.60s' (events_after, events_limit)", key);
      return err->status;
    }
    double x = 0;
    if (!number_arg(val, &x) || x != floor(x) || x < (after ? 0 : 1) ||
        x > (after ? 1e18 : STORE_EVENTS_PAGE_MAX)) {
      store__fail(err, STORE_E_BAD_FILTER, "out_of_range", key, "'%s' must be a whole number in %s",
                  key, after ? "0..1000000000000000000" : "1..1000");
      return err->status;
    }
    if (after) {
      out->after = (long long)x;
    } else {
      out->limit = (long)x;
    }
  }
  return STORE_OK;
}

void store_filter_texts(const store_runs_filter *f, store_text_match out[STORE_TEXT_MATCHES]) {
  out[0] = (store_text_match){f->has_scene, "r.scene", f->scene};
  out[1] = (store_text_match){f->has_label, "r.label", f->label};
  out[2] = (store_text_match){f->has_session, "r.session_id", f->session};
  out[3] = (store_text_match){f->has_end_reason, "r.end_reason", f->end_reason};
  out[4] = (store_text_match){f->has_class, "r.class_id", f->class_id};
}
