/* GET /api/runs's filter as PostgreSQL SQL (server/store/store_pg_sql.c, issue 20): every value
 * is a $n parameter and none reaches the SQL text, numbers are printed so they read back exactly,
 * the count's parameters are the list's first ones, the orders say where NULLs go, and the
 * reader's scope (admin, or the answering node's sessions and classes a token opens) is three
 * parameters or none. tests/service/test_results_db.sh runs the same SQL against PostgreSQL. */
#include "../support/check.h"
#include "store_pg_sql.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static store_runs_filter parsed(const char *text) {
  static char buf[2048];
  snprintf(buf, sizeof buf, "%s", text);
  store_query_arg args[STORE_FILTER_MAX_ARGS + 1];
  size_t n = 0;
  char *save = NULL;
  for (char *tok = strtok_r(buf, "&", &save); tok && n < STORE_FILTER_MAX_ARGS + 1;
       tok = strtok_r(NULL, "&", &save)) {
    char *eq = strchr(tok, '=');
    if (eq) {
      *eq = '\0';
    }
    args[n++] = (store_query_arg){tok, eq ? eq + 1 : ""};
  }
  store_runs_filter f;
  store_error e;
  if (store_filter_parse(args, n, &f, &e) != STORE_OK) {
    printf("FAIL the filter '%s' is refused: %s\n", text, e.message);
    check_failures++;
  }
  return f;
}

/* The highest $n in the text, and whether every $1..$max appears. */
static int max_param(const char *sql, bool *all) {
  int max = 0;
  bool seen[STORE_PG_PARAMS + 2] = {false};
  for (const char *p = strchr(sql, '$'); p; p = strchr(p + 1, '$')) {
    const int k = (int)strtol(p + 1, NULL, 10);
    max = k > max ? k : max;
    if (k > 0 && k <= STORE_PG_PARAMS + 1) {
      seen[k] = true;
    }
  }
  *all = true;
  for (int k = 1; k <= max; k++) {
    *all = *all && seen[k];
  }
  return max;
}

static void well_formed(const char *what, const store_pg_query *q) {
  bool all_list = false, all_count = false;
  const int in_list = max_param(q->list, &all_list), in_count = max_param(q->count, &all_count);
  printf("%s %s: the list uses $1..$%d of %d parameters (all: %d), the count $1..$%d of %d "
         "(all: %d)\n",
         in_list == q->nlist && all_list && in_count == q->ncount && all_count ? "ok  " : "FAIL",
         what, in_list, q->nlist, all_list, in_count, q->ncount, all_count);
  check_failures += !(in_list == q->nlist && all_list && in_count == q->ncount && all_count);
  bool values = true;
  for (int k = 0; k < q->nlist; k++) {
    values = values && q->values[k];
  }
  CHECK("every parameter has a value", values);
}

int main(void) {
  const store_pg_scope admin = {true, "n0", "{}", "{}"};
  const store_pg_scope anyone = {false, "n0", "{\"n0-0123456789abcdef\"}", "{}"};
  store_pg_query *q = malloc(sizeof *q);

  puts("-- everything, newest first: the admin reads every run; no parameter but the page");
  store_runs_filter f = parsed("");
  CHECK("it fits", store_pg_runs_sql(&f, &admin, q) == 0);
  well_formed("default, admin", q);
  CHECK("the count has no parameter",
        q->ncount == 0 && strcmp(q->count, "SELECT count(*) FROM runs r WHERE TRUE") == 0);
  CHECK("newest first, ties by id then node, NULLs last as SQLite puts them descending",
        strstr(q->list, " ORDER BY r.started_at DESC NULLS LAST, r.id DESC, r.node DESC LIMIT "
                        "$1::bigint OFFSET $2::bigint") != NULL);
  CHECK("limit 50, offset 0",
        q->nlist == 2 && strcmp(q->values[0], "50") == 0 && strcmp(q->values[1], "0") == 0);

  puts(
      "-- anyone else: public sessions' runs, and the node's sessions and classes the token opens");
  CHECK("it fits", store_pg_runs_sql(&f, &anyone, q) == 0);
  well_formed("default, a token", q);
  CHECK("the scope is $1 (node), $2 (sessions), $3 (classes)",
        q->ncount == 3 && strcmp(q->values[0], "n0") == 0 &&
            strcmp(q->values[1], anyone.sessions) == 0 && strcmp(q->values[2], "{}") == 0);
  CHECK("a private session's run only by its id, on the answering node",
        strstr(q->list, "NOT s.private OR (s.node = $1::text AND s.id = ANY ($2::text[]))") &&
            strstr(q->list, "(r.node = $1::text AND r.class_id = ANY ($3::text[]))"));

  puts("-- values never reach the SQL text");
  f = parsed("label=x'); DROP TABLE runs;--&scene=pour&session=n0-1&end_reason=deleted&class=n1-"
             "'2&from=1700000000.25&to=2000000000");
  CHECK("it fits", store_pg_runs_sql(&f, &anyone, q) == 0);
  well_formed("every text filter", q);
  CHECK("no value in the SQL", !strstr(q->list, "DROP") && !strstr(q->list, "pour") &&
                                   !strstr(q->list, "n1-") && !strstr(q->list, "deleted") &&
                                   !strstr(q->list, "1700000000") && !strchr(q->list, '\''));
  bool found = false;
  for (int k = 0; k < q->nlist; k++) {
    found = found || strcmp(q->values[k], "x'); DROP TABLE runs;--") == 0;
  }
  CHECK("the label is a parameter, byte for byte", found);
  CHECK("the times are compared as float8", strstr(q->list, "r.started_at >= $9::float8") &&
                                                strstr(q->list, "r.started_at < $10::float8"));

  puts("-- ranges: numbers printed so PostgreSQL reads the same double");
  f = parsed("param.mu.min=0.1&param.mu.max=0.30000000000000004&result.angle.min=-1e-300&"
             "sort=-param.mu&limit=7&offset=3");
  CHECK("it fits", store_pg_runs_sql(&f, &admin, q) == 0);
  well_formed("ranges and a sort by a parameter", q);
  CHECK("mu's range is one EXISTS on run_params",
        strstr(q->list, "EXISTS (SELECT 1 FROM run_params p WHERE p.node = r.node AND p.run_id = "
                        "r.id AND p.name = $1::text AND p.value >= $2::float8 AND p.value <= "
                        "$3::float8)") != NULL);
  CHECK("0.1 reads back exactly", strtod(q->values[1], NULL) == 0.1);
  CHECK("0.1 + 0.2 reads back exactly", strtod(q->values[2], NULL) == 0.1 + 0.2);
  CHECK("-1e-300 reads back exactly", strtod(q->values[4], NULL) == -1e-300);
  CHECK("the result's range is on run_results",
        strstr(q->list, "FROM run_results p WHERE") != NULL);
  CHECK("sorted by mu descending, NULLs last, then id and node",
        strstr(q->list,
               "ORDER BY (SELECT value FROM run_params WHERE node = r.node AND run_id = "
               "r.id AND name = $6::text) DESC NULLS LAST, r.id DESC, r.node DESC") != NULL);
  CHECK("the sort's name, then limit and offset, after the count's parameters",
        q->ncount == 5 && q->nlist == 8 && strcmp(q->values[5], "mu") == 0 &&
            strcmp(q->values[6], "7") == 0 && strcmp(q->values[7], "3") == 0);
  f = parsed("sort=id");
  store_pg_runs_sql(&f, &admin, q);
  CHECK("sort=id: ascending, NULLs first as SQLite puts them",
        strstr(q->list, "ORDER BY r.id ASC NULLS FIRST, r.id ASC, r.node ASC") != NULL);

  puts("-- the largest filter the API takes fits");
  char big[2048] = "label=a";
  for (int k = 0; k < STORE_FILTER_MAX_ARGS - 1; k++) {
    char arg[64];
    snprintf(arg, sizeof arg, "&%s.n%d.%s=%d", k % 2 ? "result" : "param", k / 2,
             k % 4 < 2 ? "min" : "max", k);
    strncat(big, arg, sizeof big - strlen(big) - 1);
  }
  f = parsed(big);
  CHECK("it fits", store_pg_runs_sql(&f, &anyone, q) == 0);
  well_formed("24 arguments", q);

  puts("-- text[] literals: each element quoted, quotes and backslashes escaped");
  char lit[64];
  json_t *ids = json_pack("[s, s, s]", "n0-1", "a\"b", "c\\d");
  CHECK("three", store_pg_text_array(ids, lit, sizeof lit) == 0 &&
                     strcmp(lit, "{\"n0-1\",\"a\\\"b\",\"c\\\\d\"}") == 0);
  printf("     %s\n", lit);
  json_t *none = json_array();
  CHECK("none", store_pg_text_array(none, lit, sizeof lit) == 0 && strcmp(lit, "{}") == 0);
  CHECK("too long for the room: refused, not cut", store_pg_text_array(ids, lit, 12) == -1);
  json_decref(ids);
  json_decref(none);
  free(q);
  CHECK_DONE();
}
