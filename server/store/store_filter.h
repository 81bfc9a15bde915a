/* The filter of GET /api/runs and the events page of GET /api/runs/{id} as typed values, and the
 * pure functions that read them from a request's query arguments (key/value strings: no HTTP
 * library types, so it is unit-tested on its own, tests/unit/test_store_filter.c). The store's
 * query takes the struct (store.h). */
#ifndef GRAINLAB_STORE_FILTER_H
#define GRAINLAB_STORE_FILTER_H

#include "store_error.h"

#include <stdbool.h>
#include <stddef.h>

#define STORE_FILTER_MAX_ARGS 24   /* query arguments one list request may carry */
#define STORE_FILTER_TEXT 64       /* scene, label, session, end_reason, class: 63 bytes at most */
#define STORE_FILTER_NAME 32       /* a parameter or result name: [a-z0-9_], 1 to 31 bytes */
#define STORE_PAGE_MAX 500         /* runs one page may hold (limit) */
#define STORE_EVENTS_PAGE_MAX 1000 /* events one GET /api/runs/{id} holds (events_limit) */

/* One query argument as the request carried it; value NULL reads as "". */
typedef struct store_query_arg {
  const char *key, *value;
} store_query_arg;

typedef enum store_sort {
  STORE_SORT_STARTED_AT,
  STORE_SORT_ID,
  STORE_SORT_PARAM, /* by a start parameter, sort_name */
  STORE_SORT_RESULT /* by a final result, sort_name */
} store_sort;

/* param.NAME.min/max or result.NAME.min/max, both bounds inclusive; min > max matches nothing. */
typedef struct store_range {
  bool result; /* a final result (run_results); otherwise a start parameter (run_params) */
  char name[STORE_FILTER_NAME];
  bool has_min, has_max;
  double min, max;
} store_range;

typedef struct store_runs_filter {
  bool has_scene, has_label, has_session, has_end_reason, has_class; /* each an exact match */
  char scene[STORE_FILTER_TEXT], label[STORE_FILTER_TEXT], session[STORE_FILTER_TEXT],
      end_reason[STORE_FILTER_TEXT], class_id[STORE_FILTER_TEXT];
  bool has_from, has_to;
  double from, to; /* started_at ≥ from, < to (Unix seconds) */
  store_range range[STORE_FILTER_MAX_ARGS];
  int nranges; /* in the order their first bound was given */
  store_sort sort;
  char sort_name[STORE_FILTER_NAME];
  bool descending; /* ties are broken by id, in the same direction */
  long limit, offset;
  bool csv; /* format=csv: the page as CSV (api_runs_csv) rather than JSON */
} store_runs_filter;

/* Everything, newest first, 50 a page. */
void store_filter_default(store_runs_filter *f);

/* The filter's exact matches, each with the runs column it compares (r.scene, ...), given or not:
 * the one list that the SQLite query and the cluster's PostgreSQL query are both written from. */
typedef struct store_text_match {
  bool on;
  const char *column, *value;
} store_text_match;
#define STORE_TEXT_MATCHES 5
void store_filter_texts(const store_runs_filter *f, store_text_match out[STORE_TEXT_MATCHES]);

/* The filter given by args (in request order), or STORE_E_BAD_FILTER with the rule in err->code:
 * duplicate_field (a key given twice; checked first, over every argument), too_many_filters (more
 * than STORE_FILTER_MAX_ARGS), unknown_field, too_long, unknown_scene, out_of_range, bad_time,
 * bad_sort, not_a_number. The first argument in order that breaks a rule is reported. An argument
 * whose key or value is not valid UTF-8 is passed over (as the API always did), though a later one
 * repeating the key of a taken argument is still a duplicate. */
store_status store_filter_parse(const store_query_arg *args, size_t n, store_runs_filter *out,
                                store_error *err);

/* GET /api/runs/{id}?events_after=ID&events_limit=N: the run's events with an id above `after`,
 * in order, at most `limit` of them. */
typedef struct store_events_page {
  long long after; /* 0: from the first */
  long limit;      /* 1..STORE_EVENTS_PAGE_MAX */
} store_events_page;

/* From the first event, a full page. */
void store_events_page_default(store_events_page *p);

/* The page given by args, or STORE_E_BAD_FILTER with the rule in err->code: duplicate_field,
 * unknown_field (anything but events_after and events_limit), out_of_range (events_after a whole
 * number in 0..10^18, events_limit in 1..STORE_EVENTS_PAGE_MAX). Arguments that are not UTF-8
 * are passed over, as for the filter. */
store_status store_events_page_parse(const store_query_arg *args, size_t n, store_events_page *out,
                                     store_error *err);

#endif
