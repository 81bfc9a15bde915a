/* The runs filter of GET /api/runs and the events page of GET /api/runs/{id}
 * (server/store/store_filter.c): every refusal the API makes (the code word and the offending
 * field), which argument wins when several are bad, and what a good query reads as. Each line
 * prints what the parser gave against what the API promises. */
#include "../support/check.h"
#include "store_filter.h"

#include <stdio.h>
#include <string.h>

#define MAX_ARGS 40

/* "k=v&k2=v2" split into arguments (no decoding: the tests write the bytes they mean); a key
 * without '=' gets a NULL value, as libmicrohttpd gives it. */
typedef struct query {
  char text[2048];
  store_query_arg arg[MAX_ARGS];
  size_t n;
} query;

static void split(query *q, const char *s) {
  snprintf(q->text, sizeof q->text, "%s", s);
  q->n = 0;
  char *save = NULL;
  for (char *tok = strtok_r(q->text, "&", &save); tok && q->n < MAX_ARGS;
       tok = strtok_r(NULL, "&", &save)) {
    char *eq = strchr(tok, '=');
    if (eq) {
      *eq = '\0';
    }
    q->arg[q->n++] = (store_query_arg){tok, eq ? eq + 1 : NULL};
  }
}

static store_status parse(const char *s, store_runs_filter *f, store_error *e) {
  static query q;
  split(&q, s);
  memset(e, 0, sizeof *e);
  return store_filter_parse(q.arg, q.n, f, e);
}

/* The query is refused with this code word, naming this field. */
static void refused(const char *s, const char *code, const char *field) {
  store_runs_filter f;
  store_error e;
  const store_status rc = parse(s, &f, &e);
  const int ok = rc == STORE_E_BAD_FILTER && e.code && strcmp(e.code, code) == 0 &&
                 strcmp(e.field, field) == 0 && e.message[0];
  printf("%s '%.70s': got status %d %s field '%s' (%s), want %d %s field '%s'\n",
         ok ? "ok  " : "FAIL", s, (int)rc, e.code ? e.code : "-", e.field, e.message,
         (int)STORE_E_BAD_FILTER, code, field);
  check_failures += !ok;
}

static store_runs_filter accepted(const char *s) {
  store_runs_filter f;
  store_error e;
  const store_status rc = parse(s, &f, &e);
  printf("%s '%.70s': got status %d (%s), want %d\n", rc == STORE_OK ? "ok  " : "FAIL", s, (int)rc,
         rc == STORE_OK ? "" : e.message, (int)STORE_OK);
  check_failures += rc != STORE_OK;
  return f;
}

/* The events page: refused with this code word and field, or read as after/limit. */
static void page_is(const char *s, const char *code, const char *field, long long after,
                    long limit) {
  static query q;
  split(&q, s);
  store_events_page p = {-1, -1};
  store_error e;
  memset(&e, 0, sizeof e);
  const store_status rc = store_events_page_parse(q.arg, q.n, &p, &e);
  const int ok = code ? rc == STORE_E_BAD_FILTER && e.code && strcmp(e.code, code) == 0 &&
                            strcmp(e.field, field) == 0 && e.message[0]
                      : rc == STORE_OK && p.after == after && p.limit == limit;
  printf("%s events page '%.60s': got status %d %s field '%s' after %lld limit %ld, want %s %s "
         "after %lld limit %ld\n",
         ok ? "ok  " : "FAIL", s, (int)rc, e.code ? e.code : "-", e.field, p.after, p.limit,
         code ? code : "ok", field ? field : "", after, limit);
  check_failures += !ok;
}

static void repeat(char *out, size_t size, const char *prefix, char c, int n, const char *suffix) {
  char run[200];
  memset(run, c, (size_t)n);
  run[n] = '\0';
  snprintf(out, size, "%s%s%s", prefix, run, suffix);
}

int main(void) {
  char q[2048];

  puts("-- unknown keys");
  refused("colour=red", "unknown_field", "colour");
  refused("Scene=pour", "unknown_field", "Scene");
  refused("=x", "unknown_field", "");
  refused("param.mu=0.5", "unknown_field", "param.mu");
  refused("param.mu.avg=0.5", "unknown_field", "param.mu.avg");
  refused("param..min=1", "unknown_field", "param..min");
  refused("param.MU.min=1", "unknown_field", "param.MU.min");
  refused("param.mu;DROP TABLE runs.min=1", "unknown_field", "param.mu;DROP TABLE runs.min");
  refused("result.x' OR 1--.max=1", "unknown_field", "result.x' OR 1--.max");
  repeat(q, sizeof q, "param.", 'a', 31, ".min=1");
  accepted(q); /* 31 bytes: the longest name */
  repeat(q, sizeof q, "param.", 'a', 32, ".min");
  {
    char full[sizeof q + 8];
    snprintf(full, sizeof full, "%s=1", q);
    refused(full, "unknown_field", q);
  }
  repeat(q, sizeof q, "result.", 'b', 45, ".max");
  {
    char full[sizeof q + 8];
    snprintf(full, sizeof full, "%s=1", q);
    refused(full, "unknown_field", q);
  }

  puts("-- numbers: limit, offset, ranges");
  refused("limit=0", "out_of_range", "limit");
  refused("limit=501", "out_of_range", "limit");
  refused("limit=1.5", "out_of_range", "limit");
  refused("limit=abc", "out_of_range", "limit");
  refused("limit=", "out_of_range", "limit");
  refused("limit", "out_of_range", "limit");
  refused("limit=nan", "out_of_range", "limit");
  refused("limit=inf", "out_of_range", "limit");
  refused("limit= 5", "out_of_range", "limit");
  refused("offset=-1", "out_of_range", "offset");
  refused("offset=1000000001", "out_of_range", "offset");
  refused("offset=1e999", "out_of_range", "offset");
  refused("param.mu.min=abc", "not_a_number", "param.mu.min");
  refused("param.mu.min=nan", "not_a_number", "param.mu.min");
  refused("param.mu.max=inf", "not_a_number", "param.mu.max");
  refused("param.mu.max=-inf", "not_a_number", "param.mu.max");
  refused("param.mu.min=1e999", "not_a_number", "param.mu.min");
  refused("result.angle.min=", "not_a_number", "result.angle.min");
  refused("result.angle.min=0x10", "not_a_number", "result.angle.min");
  refused("result.angle.min=1,5", "not_a_number", "result.angle.min");
  store_runs_filter f = accepted("limit=500&offset=1000000000");
  CHECK_NEAR("limit 500 read", (double)f.limit, 500, 0);
  CHECK_NEAR("offset 1e9 read", (double)f.offset, 1e9, 0);

  puts("-- inverted ranges are a query that matches nothing, not an error (as the API does)");
  f = accepted("param.mu.min=0.7&param.mu.max=0.5");
  CHECK_NEAR("one range for mu's two bounds", f.nranges, 1, 0);
  CHECK("min and max both set", f.range[0].has_min && f.range[0].has_max && !f.range[0].result);
  CHECK_NEAR("min", f.range[0].min, 0.7, 0);
  CHECK_NEAR("max", f.range[0].max, 0.5, 0);
  f = accepted("from=2000&to=1000");
  CHECK("inverted time range kept", f.has_from && f.has_to && f.from > f.to);
  f = accepted("param.mu.min=0.1&result.mu.min=2&param.hole.max=1");
  CHECK_NEAR("param.mu, result.mu and param.hole are three ranges", f.nranges, 3, 0);
  CHECK("the second is the result", f.range[1].result && strcmp(f.range[1].name, "mu") == 0);

  puts("-- text filters");
  refused("scene=nosuch", "unknown_scene", "scene");
  refused("scene=pour' OR '1'='1", "unknown_scene", "scene");
  refused("end_reason=gone", "out_of_range", "end_reason");
  refused("end_reason=", "out_of_range", "end_reason");
  repeat(q, sizeof q, "label=", 'x', 63, "");
  f = accepted(q);
  CHECK("a 63-byte label is kept whole", f.has_label && strlen(f.label) == 63);
  repeat(q, sizeof q, "label=", 'x', 64, "");
  refused(q, "too_long", "label");
  repeat(q, sizeof q, "scene=", 'x', 64, "");
  refused(q, "too_long", "scene"); /* length is checked before the scene is looked up */
  repeat(q, sizeof q, "session=", 'x', 64, "");
  refused(q, "too_long", "session");
  repeat(q, sizeof q, "end_reason=", 'x', 70, "");
  refused(q, "too_long", "end_reason");
  f = accepted("label=");
  CHECK("an empty label is a filter too", f.has_label && f.label[0] == '\0');
  f = accepted("label");
  CHECK("a label without '=' reads as empty", f.has_label && f.label[0] == '\0');

  puts("-- times");
  refused("from=yesterday", "bad_time", "from");
  refused("to=2026-12-02", "bad_time", "to");
  refused("to=2026-12-02T10:00:00+01:00", "bad_time", "to");
  refused("from=nan", "bad_time", "from");
  refused("from=", "bad_time", "from");
  f = accepted("from=2026-12-02T10:00:00Z&to=946684800");
  CHECK_NEAR("ISO 8601 UTC read as Unix seconds", f.from, 1796205600.0, 0);
  CHECK_NEAR("Unix seconds as given", f.to, 946684800.0, 0);

  puts("-- sort");
  refused("sort=name", "bad_sort", "sort");
  refused("sort=", "bad_sort", "sort");
  refused("sort=-", "bad_sort", "sort");
  refused("sort=param.", "bad_sort", "sort");
  refused("sort=param.Mu", "bad_sort", "sort");
  refused("sort=started_at;DROP TABLE runs", "bad_sort", "sort");
  refused("sort=--id", "bad_sort", "sort");
  f = accepted("sort=-param.mu");
  CHECK("sort=-param.mu",
        f.sort == STORE_SORT_PARAM && f.descending && strcmp(f.sort_name, "mu") == 0);
  f = accepted("sort=result.angle");
  CHECK("sort=result.angle",
        f.sort == STORE_SORT_RESULT && !f.descending && strcmp(f.sort_name, "angle") == 0);
  f = accepted("sort=id");
  CHECK("sort=id ascending", f.sort == STORE_SORT_ID && !f.descending);
  f = accepted("");
  CHECK("default: newest first, 50 a page, offset 0",
        f.sort == STORE_SORT_STARTED_AT && f.descending && f.limit == 50 && f.offset == 0 &&
            !f.has_scene && !f.has_label && f.nranges == 0);

  puts("-- repeated keys, too many keys, and which error wins");
  refused("label=a&label=b", "duplicate_field", "label");
  refused("label=a&label=a", "duplicate_field", "label");
  refused("a=1&b=1&b=2&a=2", "duplicate_field", "b");
  refused("colour=red&limit=1&limit=2", "duplicate_field", "limit"); /* checked first */
  refused("limit=0&colour=red", "out_of_range", "limit");            /* then in order */
  refused("colour=red&limit=0", "unknown_field", "colour");
  q[0] = '\0';
  for (int i = 0; i < 24; i++) {
    snprintf(q + strlen(q), sizeof q - strlen(q), "%sparam.p%d.min=1", i ? "&" : "", i);
  }
  f = accepted(q);
  CHECK_NEAR("24 arguments: 24 ranges", f.nranges, 24, 0);
  strcat(q, "&colour=red");
  refused(q, "too_many_filters", "colour");
  strcat(q, "&param.p3.min=2");
  refused(q, "duplicate_field", "param.p3.min"); /* even past the 24th */

  {
    /* a long query (URLs may carry thousands of arguments): the duplicate is still found, and
     * found in n log n */
    enum { N = 5000 };
    static store_query_arg many[N + 1];
    static char keys[N][24];
    for (int i = 0; i < N; i++) {
      snprintf(keys[i], sizeof keys[i], "param.p%d.min", i);
      many[i] = (store_query_arg){keys[i], "1"};
    }
    store_runs_filter g;
    store_error e;
    store_status rc = store_filter_parse(many, N, &g, &e);
    const int ok1 = rc == STORE_E_BAD_FILTER && strcmp(e.code, "too_many_filters") == 0 &&
                    strcmp(e.field, "param.p24.min") == 0;
    printf("%s 5000 distinct arguments: got %s field '%s', want too_many_filters field "
           "'param.p24.min'\n",
           ok1 ? "ok  " : "FAIL", e.code ? e.code : "-", e.field);
    check_failures += !ok1;
    many[N] = (store_query_arg){"param.p17.min", "2"};
    rc = store_filter_parse(many, N + 1, &g, &e);
    const int ok2 = rc == STORE_E_BAD_FILTER && strcmp(e.code, "duplicate_field") == 0 &&
                    strcmp(e.field, "param.p17.min") == 0;
    printf("%s 5000 arguments, param.p17.min again: got %s field '%s', want duplicate_field field "
           "'param.p17.min'\n",
           ok2 ? "ok  " : "FAIL", e.code ? e.code : "-", e.field);
    check_failures += !ok2;
  }

  puts("-- arguments that are not UTF-8 are passed over, as the API always did");
  f = accepted("label=\xff");
  CHECK("label=0xFF is not a filter", !f.has_label);
  f = accepted("label=\xc0\xaf&limit=3");
  CHECK("an overlong form is not UTF-8", !f.has_label && f.limit == 3);
  f = accepted("label=\xed\xa0\x80");
  CHECK("a surrogate is not UTF-8", !f.has_label);
  f = accepted("label=caf\xc3\xa9");
  CHECK("UTF-8 is kept", f.has_label && strcmp(f.label, "caf\xc3\xa9") == 0);
  f = accepted("label=\xff&label=b");
  CHECK("a passed-over argument does not make a duplicate",
        f.has_label && strcmp(f.label, "b") == 0);
  refused("label=a&label=\xff", "duplicate_field", "label");
  f = accepted("col\xffour=red");
  CHECK("a key that is not UTF-8 is passed over", !f.has_label && f.nranges == 0);

  puts("-- the events page of GET /api/runs/{id}");
  page_is("", NULL, NULL, 0, STORE_EVENTS_PAGE_MAX);
  page_is("events_after=41&events_limit=7", NULL, NULL, 41, 7);
  page_is("events_limit=1000", NULL, NULL, 0, 1000);
  page_is("events_after=1000000000000000000", NULL, NULL, 1000000000000000000LL, 1000);
  page_is("events_limit=0", "out_of_range", "events_limit", 0, 0);
  page_is("events_limit=1001", "out_of_range", "events_limit", 0, 0);
  page_is("events_limit=2.5", "out_of_range", "events_limit", 0, 0);
  page_is("events_limit=", "out_of_range", "events_limit", 0, 0);
  page_is("events_limit", "out_of_range", "events_limit", 0, 0);
  page_is("events_after=-1", "out_of_range", "events_after", 0, 0);
  page_is("events_after=1e19", "out_of_range", "events_after", 0, 0);
  page_is("events_after=nan", "out_of_range", "events_after", 0, 0);
  page_is("events_after=abc", "out_of_range", "events_after", 0, 0);
  page_is("limit=5", "unknown_field", "limit", 0, 0);
  page_is("events_limit=1&events_limit=2", "duplicate_field", "events_limit", 0, 0);
  page_is("colour=red&events_limit=0", "unknown_field", "colour", 0, 0);
  page_is("events_limit=\xff", NULL, NULL, 0, STORE_EVENTS_PAGE_MAX);

  CHECK_DONE();
}
