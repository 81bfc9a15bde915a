/* GET /api/runs's filter as PostgreSQL SQL (see store_pg_sql.h): the same selection, order and
 * paging as the SQLite query of store_query.c, over every node's runs. Where the two databases
 * differ the SQL says so: NULLs sort first ascending and last descending as in SQLite, and ties
 * are broken by id then node, in the sort's direction. */
#define _GNU_SOURCE
#include "store_pg_sql.h"

#include <stdio.h>
#include <string.h>

typedef struct buf {
  char *text;
  size_t size, len;
  bool overflow;
} buf;

static void add(buf *b, const char *fragment) {
  const size_t n = strlen(fragment);
  if (b->len + n + 1 > b->size) {
    b->overflow = true;
    return;
  }
  memcpy(b->text + b->len, fragment, n + 1);
  b->len += n;
}

/* "$n" of the next parameter, whose text is value; `cast` follows it ("::float8", or ""). */
static void param(buf *b, store_pg_query *q, const char *value, const char *cast) {
  char ref[32];
  q->values[q->nlist] = value;
  snprintf(ref, sizeof ref, "$%d%s", ++q->nlist, cast);
  add(b, ref);
}

/* A number as a parameter: %.17g reads back as the same double in PostgreSQL's float8. */
static void number(buf *b, store_pg_query *q, double x) {
  snprintf(q->text[q->nlist], sizeof q->text[0], "%.17g", x);
  param(b, q, q->text[q->nlist], "::float8");
}

int store_pg_runs_sql(const store_runs_filter *f, const store_pg_scope *s, store_pg_query *q) {
  memset(q, 0, sizeof *q);
  char where_text[6144];
  buf where = {where_text, sizeof where_text, 0, false};
  add(&where, " WHERE TRUE");
  if (!s->admin) {
    /* a public session's run, or one of the answering node's private sessions or classes the
     * token opens (store.h: the SQLite rule, with the hashes compared on that node) */
    add(&where, " AND (EXISTS (SELECT 1 FROM sessions s WHERE s.node = r.node AND "
                "s.id = r.session_id AND (NOT s.private OR (s.node = ");
    param(&where, q, s->node, "::text");
    char node_ref[64];
    snprintf(node_ref, sizeof node_ref, ")))) OR (r.node = $%d::text AND r.class_id = ANY (",
             q->nlist);
    add(&where, " AND s.id = ANY (");
    param(&where, q, s->sessions, "::text[]");
    add(&where, node_ref);
    param(&where, q, s->classes, "::text[]");
    add(&where, ")))");
  }
  store_text_match texts[STORE_TEXT_MATCHES];
  store_filter_texts(f, texts);
  for (size_t k = 0; k < STORE_TEXT_MATCHES; k++) {
    if (texts[k].on) {
      add(&where, " AND ");
      add(&where, texts[k].column);
      add(&where, " = ");
      param(&where, q, texts[k].value, "::text");
    }
  }
  if (f->has_from) {
    add(&where, " AND r.started_at >= ");
    number(&where, q, f->from);
  }
  if (f->has_to) {
    add(&where, " AND r.started_at < ");
    number(&where, q, f->to);
  }
  for (int k = 0; k < f->nranges; k++) {
    const store_range *r = &f->range[k];
    add(&where, r->result ? " AND EXISTS (SELECT 1 FROM run_results p WHERE p.node = r.node AND "
                            "p.run_id = r.id AND p.name = "
                          : " AND EXISTS (SELECT 1 FROM run_params p WHERE p.node = r.node AND "
                            "p.run_id = r.id AND p.name = ");
    param(&where, q, r->name, "::text");
    if (r->has_min) {
      add(&where, " AND p.value >= ");
      number(&where, q, r->min);
    }
    if (r->has_max) {
      add(&where, " AND p.value <= ");
      number(&where, q, r->max);
    }
    add(&where, ")");
  }
  q->ncount = q->nlist;
  buf count = {q->count, sizeof q->count, 0, false};
  add(&count, "SELECT count(*) FROM runs r");
  add(&count, where.text);
  buf list = {q->list, sizeof q->list, 0, false};
  char select[1024];
  if (store_run_select("r.node",
                       "(SELECT json_object_agg(p.name, p.value) FROM run_results p WHERE "
                       "p.node = r.node AND p.run_id = r.id)",
                       select, sizeof select) != 0) {
    return -1;
  }
  add(&list, select);
  add(&list, " FROM runs r");
  add(&list, where.text);
  /* a fixed set of orders: the client picks one by name, never supplies SQL */
  const char *dir = f->descending ? " DESC NULLS LAST" : " ASC NULLS FIRST";
  switch (f->sort) {
  case STORE_SORT_ID:
    add(&list, " ORDER BY r.id");
    break;
  case STORE_SORT_PARAM:
  case STORE_SORT_RESULT:
    add(&list, f->sort == STORE_SORT_PARAM
                   ? " ORDER BY (SELECT value FROM run_params WHERE node = r.node AND "
                     "run_id = r.id AND name = "
                   : " ORDER BY (SELECT value FROM run_results WHERE node = r.node AND "
                     "run_id = r.id AND name = ");
    param(&list, q, f->sort_name, "::text");
    add(&list, ")");
    break;
  default:
    add(&list, " ORDER BY r.started_at");
    break;
  }
  add(&list, dir);
  add(&list, f->descending ? ", r.id DESC, r.node DESC" : ", r.id ASC, r.node ASC");
  add(&list, " LIMIT ");
  snprintf(q->text[q->nlist], sizeof q->text[0], "%ld", f->limit);
  param(&list, q, q->text[q->nlist], "::bigint");
  add(&list, " OFFSET ");
  snprintf(q->text[q->nlist], sizeof q->text[0], "%ld", f->offset);
  param(&list, q, q->text[q->nlist], "::bigint");
  return where.overflow || count.overflow || list.overflow ? -1 : 0;
}

int store_pg_text_array(const json_t *strings, char *out, size_t size) {
  size_t len = 0;
  bool fits = size > 2;
  if (fits) {
    out[len++] = '{';
  }
  size_t i;
  const json_t *v;
  json_array_foreach(strings, i, v) {
    const char *s = json_string_value(v);
    if (!s || !fits) {
      fits = fits && s;
      continue;
    }
    /* a separator, the quotes, each character possibly escaped, the closing brace and NUL */
    fits = len + 2 * strlen(s) + 5 < size;
    if (!fits) {
      continue;
    }
    if (i > 0) {
      out[len++] = ',';
    }
    out[len++] = '"';
    for (const char *p = s; *p; p++) {
      if (*p == '"' || *p == '\\') {
        out[len++] = '\\';
      }
      out[len++] = *p;
    }
    out[len++] = '"';
  }
  if (!fits) {
    if (size > 0) {
      out[0] = '\0';
    }
    return -1;
  }
  out[len++] = '}';
  out[len] = '\0';
  return 0;
}
