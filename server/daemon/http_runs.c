/* The record's routes under /api/runs: the filtered list, a run with its events, its samples,
 * its final snapshot, replays and forks, and run ids in paths. */
#define _GNU_SOURCE
#include "api_json.h"
#include "api_runs.h"
#include "http_internal.h"
#include "snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The query arguments in request order (MHD keeps the strings until the request ends). */
typedef struct query_args {
  store_query_arg *args;
  size_t n, cap;
  bool no_memory;
} query_args;

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value) {
  (void)kind;
  query_args *q = cls;
  if (q->n == q->cap) {
    const size_t cap = q->cap ? 2 * q->cap : 16;
    store_query_arg *grown = realloc(q->args, sizeof *grown * cap);
    if (!grown) {
      q->no_memory = true;
      return MHD_NO;
    }
    q->args = grown;
    q->cap = cap;
  }
  q->args[q->n++] = (store_query_arg){key, value};
  return MHD_YES;
}

/* Who reads the record: a private session's runs need its viewer or control token, or the
 * admin's (store.h); any other caller reads the public runs. */
static store_access run_access(const http_call *k) {
  store_access a;
  const char *t = http_bearer(k->c);
  store_access_init(&a, t, http_admin_ok(k->srv, t));
  return a;
}

/* The request's query arguments (the caller frees q->args), or a 500 when memory runs out. */
static bool read_args(const http_call *k, query_args *q, http_reply *err) {
  *q = (query_args){NULL, 0, 0, false};
  MHD_get_connection_values(k->c, MHD_GET_ARGUMENT_KIND, collect_arg, q);
  if (q->no_memory) {
    free(q->args);
    *err = http_error(500, "store_error", "", "out of memory");
    return false;
  }
  return true;
}

http_reply h_runs_list(const http_call *k) {
  query_args q;
  http_reply err;
  if (!read_args(k, &q, &err)) {
    return err;
  }
  store_runs_filter filter;
  store_error se;
  const store_status rc = store_filter_parse(q.args, q.n, &filter, &se);
  free(q.args);
  if (rc != STORE_OK) {
    return http_store_error(&se);
  }
  const store_access a = run_access(k);
  store_run_page page;
  if (store_list_runs(k->srv->store, &filter, &a, &page, &se) != STORE_OK) {
    return http_store_error(&se);
  }
  json_t *out = http_runs_json(k->srv, &page);
  store_run_page_free(&page);
  if (!filter.csv) {
    return http_json_reply(200, out);
  }
  char *text = NULL;
  size_t len = 0;
  const int failed = api_runs_csv(out, &text, &len);
  json_decref(out);
  if (failed) {
    return http_error(500, "store_error", "", "out of memory");
  }
  http_reply r = {200, text, "text/csv; charset=utf-8", "", "", len, 0, ""};
  /* a class id is a node id and hex (it named a class that exists): nothing else reaches the
   * header */
  char node[NODE_ID_MAX + 1];
  const char *hex = filter.has_class ? node_split(filter.class_id, node) : NULL;
  const bool named = hex && strlen(hex) == 16 && strspn(hex, "0123456789abcdef") == 16;
  snprintf(r.disposition, sizeof r.disposition, "attachment; filename=\"%s%s.csv\"",
           named ? "class-" : "runs", named ? filter.class_id : "");
  return r;
}

/* /api/runs/{id}?events_after=&events_limit=: the run and one page of its events */
http_reply h_run_get(const http_call *k) {
  query_args q;
  http_reply err;
  if (!read_args(k, &q, &err)) {
    return err;
  }
  store_events_page page;
  store_error se;
  const store_status rc = store_events_page_parse(q.args, q.n, &page, &se);
  free(q.args);
  if (rc != STORE_OK) {
    return http_store_error(&se);
  }
  store_run_detail run;
  const store_access a = run_access(k);
  if (store_get_run(k->srv->store, k->run, &a, &page, &run, &se) != STORE_OK) {
    return http_store_error(&se);
  }
  json_t *out = api_run_detail_json(&run);
  store_run_detail_free(&run);
  return http_json_reply(200, out);
}

http_reply h_run_samples(const http_call *k) {
  const char *format = MHD_lookup_connection_value(k->c, MHD_GET_ARGUMENT_KIND, "format");
  const char *accept = MHD_lookup_connection_value(k->c, MHD_HEADER_KIND, "Accept");
  if (format && strcmp(format, "csv") != 0 && strcmp(format, "json") != 0) {
    return http_error(400, "bad_format", "format", "format is csv or json");
  }
  const bool csv = format ? strcmp(format, "csv") == 0 : accept && strstr(accept, "text/csv");
  char *body = NULL;
  size_t len = 0;
  store_error se;
  const store_access a = run_access(k);
  if (api_samples_text(k->srv->store, k->run, &a, csv, &body, &len, &se) != STORE_OK) {
    return http_store_error(&se);
  }
  http_reply r = {200, body, csv ? "text/csv; charset=utf-8" : "application/json", "", "", 0,
                  0,   ""};
  if (csv) {
    const char *node = sess_node(k->srv->reg);
    snprintf(r.disposition, sizeof r.disposition, "attachment; filename=\"run-%s%s%lld.csv\"", node,
             *node ? "-" : "", k->run);
  }
  return r;
}

/* GET /api/runs/{id}/snapshot: who may read the run may have its final state. */
http_reply h_run_snapshot(const http_call *k) {
  const store_access a = run_access(k);
  store_error se;
  bool private_ = false;
  if (store_run_access(k->srv->store, k->run, &a, &private_, &se) != STORE_OK) {
    return http_store_error(&se);
  }
  return http_snapshot_reply(k, true);
}

/* POST /api/runs/{id}/replay {label?, private?} and /fork {params?, label?, private?}: a run the
 * caller may read; a private session's run makes a private session (asking for a public one is
 * refused, so what a viewer token reads is not republished to everyone). */
static http_reply from_run(const http_call *k, bool fork) {
  /* who may create first: without the create token nothing, not even whether the run exists, is
   * told (with one set, a private run is forked by the admin: one Authorization header carries
   * one token) */
  http_reply err;
  char client[IPLIMIT_ADDR];
  if (!http_may_create(k, client, &err)) {
    return err;
  }
  const store_access a = run_access(k);
  store_error se;
  bool source_private = false;
  if (store_run_access(k->srv->store, k->run, &a, &source_private, &se) != STORE_OK) {
    return http_store_error(&se);
  }
  json_t *body = http_parse_object(k->c, k->rq, &err);
  if (!body) {
    return err;
  }
  api_from_run cmd;
  api_error e;
  http_reply r;
  if (api_read_from_run(body, fork, &cmd, &e) != 0) {
    r = http_api_error(&e);
  } else if (source_private && json_is_false(json_object_get(body, "private"))) {
    r = http_error(422, "private_run", "private",
                   "run %lld is a private session's: its %s is private too", k->run,
                   fork ? "fork" : "replay");
  } else if (http_store_refuses(k->srv, &r) || !http_create_rate_ok(k, client, &r)) {
    /* r is the refusal */
  } else {
    cmd.private_ = cmd.private_ || source_private;
    char token[65], viewer_token[65];
    api_params params; /* a fork's new parameters (none given: none), checked by the session */
    api_params_read(cmd.params, &params);
    session *s =
        sess_create_from_run(k->srv->reg, k->run, fork ? &params : NULL, cmd.label, cmd.private_,
                             *client ? client : NULL, token, viewer_token, &e);
    r = s ? http_created(s, token, viewer_token) : http_create_refused(&e);
  }
  json_decref(body);
  return r;
}

http_reply h_run_replay(const http_call *k) {
  return from_run(k, false);
}

http_reply h_run_fork(const http_call *k) {
  return from_run(k, true);
}

/* A run id: whole, 1 to 19 digits. */
static bool run_digits(const char *id, long long *out) {
  const size_t n = strlen(id);
  if (n == 0 || n >= 20 || strspn(id, "0123456789") != n) {
    return false;
  }
  *out = strtoll(id, NULL, 10);
  return true;
}

static bool run_id(const api_match *m, long long *out) {
  return !m->id_truncated && run_digits(m->id, out);
}

/* A run in a path: its id, or NODE-ID as the cluster's listing names it ("node" and "id", issue
 * 20). This node's is its own run; another node's is the router's mistake (421), as for sessions;
 * a node part on a daemon without one names no run here. false with the refusal in err. */
bool http_run_ref(const char *node, const api_match *m, long long *out, http_reply *err) {
  char of[NODE_ID_MAX + 1];
  const char *id = m->id_truncated ? NULL : node_split(m->id, of);
  if (id && *of) {
    if (!run_digits(id, out)) {
      *err = http_error(404, "not_found", "id", "run ids are whole numbers, or NODE-ID");
      return false;
    }
    if (strcmp(of, node) != 0) {
      *err = *node ? http_error(421, "wrong_node", "id",
                                "run '%.40s' belongs to node '%s', this is '%s'", m->id, of, node)
                   : http_error(404, "not_found", "id",
                                "no run '%.40s': this daemon is not a cluster node", m->id);
      return false;
    }
  }
  if (!id || !run_digits(id, out)) {
    *err = http_error(404, "not_found", "id", "run ids are whole numbers");
    return false;
  }
  return true;
}

/* A path under /api/runs that no route has: answered as before the table, by the method its last
 * segment suggests, then its id. */
http_reply http_runs_unmatched(const char *method, const char *url, const api_match *m) {
  const char *tail = strrchr(url, '/');
  const bool post = tail && (strcmp(tail, "/replay") == 0 || strcmp(tail, "/fork") == 0) &&
                    strncmp(url, "/api/runs/", 10) == 0 && tail > url + 10;
  long long id;
  if (strcmp(method, post ? "POST" : "GET") != 0) {
    return http_method_not_allowed(method, post ? "POST" : "GET");
  }
  if (!run_id(m, &id)) {
    return http_error(404, "not_found", "id", "run ids are whole numbers");
  }
  return http_error(404, "not_found", "", "no such resource");
}
