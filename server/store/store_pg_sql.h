/* GET /api/runs's filter (store_filter.h) as PostgreSQL SQL for the cluster's results database
 * (schema/postgres): pure functions, no libpq, unit tested on their own
 * (tests/unit/test_store_pg_sql.c). Every value is a $n parameter; the SQL is fixed fragments. */
#ifndef GRAINLAB_STORE_PG_SQL_H
#define GRAINLAB_STORE_PG_SQL_H

#include "store_filter.h"
#include "store_run.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* visibility (3), texts (5), times (2), ranges (name, min, max each), sort name, limit, offset */
#define STORE_PG_PARAMS (3 + 5 + 2 + 3 * STORE_FILTER_MAX_ARGS + 3)

/* Who reads: the admin reads every run; anyone else the runs of public sessions, and of the
 * answering node's private sessions and classes that the reader's token opens there (found in
 * that node's own store: tokens and their hashes never leave it). */
typedef struct store_pg_scope {
  bool admin;
  const char *node;     /* the answering node */
  const char *sessions; /* a text[] literal (store_pg_text_array): those private sessions' ids */
  const char *classes;  /* and those classes' ids */
} store_pg_scope;

typedef struct store_pg_query {
  char list[8192];                     /* the page: store_run_fields, in order */
  char count[6144];                    /* how many the filter selects */
  int nlist, ncount;                   /* parameters of each; count's are list's first ncount */
  const char *values[STORE_PG_PARAMS]; /* text form; into the filter, the scope or `text` */
  char text[STORE_PG_PARAMS][32];      /* numbers, printed exactly (%.17g) */
} store_pg_query;

/* 0, or -1 when it does not fit (never within the filter's bounds). */
int store_pg_runs_sql(const store_runs_filter *f, const store_pg_scope *s, store_pg_query *q);

/* A PostgreSQL array literal of the strings of a JSON array, each quoted with " and \ escaped
 * (so no element can end the literal or add one); 0, or -1 when it does not fit. */
int store_pg_text_array(const json_t *strings, char *out, size_t size);

#endif
