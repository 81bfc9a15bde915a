/* The sessions' routes: the catalogue, creating, listing, reading, changing and deleting a
 * session, its actions, its scene and its snapshot. */
#define _GNU_SOURCE
#include "api_json.h"
#include "api_ops.h"
#include "http_internal.h"
#include "snapshot.h"

#include <stdio.h>
#include <stdlib.h>

http_reply h_scenes(const http_call *k) {
  (void)k;
  return http_json_reply(200, api_scenes_json());
}

static json_t *session_json(session *s) {
  api_session_view v;
  sess_view(s, &v);
  return api_session_json(&v);
}

/* The reply to a session's creation: the session with its tokens (shown this once). */
http_reply http_created(session *s, const char *token, const char *viewer_token) {
  api_session_view v;
  sess_view(s, &v);
  sess_release(s);
  return http_json_reply(201, api_created_json(&v, token, viewer_token));
}

http_reply h_sessions_list(const http_call *k) {
  /* private sessions are listed for the admin only */
  int n = 0;
  api_session_view *views = sess_list(k->srv->reg, http_admin_ok(k->srv, http_bearer(k->c)), &n);
  json_t *list = api_sessions_json(views, n);
  free(views);
  return http_json_reply(200, list);
}

/* Whether the caller may create sessions (the create token, when one is set; the admin always
 * may); false with the refusal. `client` is what a new session counts against: the caller's
 * address, or "" for the admin, who is held to no per-client limit. */
bool http_may_create(const http_call *k, char client[IPLIMIT_ADDR], http_reply *err) {
  const http_server *srv = k->srv;
  const char *t = http_bearer(k->c);
  http_client_of(srv, k->c, client);
  if (http_admin_ok(srv, t)) {
    client[0] = '\0';
    return true;
  }
  if (*srv->create_token) {
    if (!http_token_is(srv->create_token, t)) {
      *err = http_error(t ? 403 : 401, t ? "forbidden" : "unauthorized", "",
                        "creating sessions on this server needs \"Authorization: Bearer <create "
                        "token>\" (or the admin token)");
      return false;
    }
  }
  return true;
}

/* The client's creation rate, taken once its request is valid (a typo costs nothing); false
 * with the refusal. */
bool http_create_rate_ok(const http_call *k, const char *client, http_reply *err) {
  const int wait = *client ? iplimit_take(k->srv->creates, client, true) : 0;
  if (wait > 0) {
    *err = http_too_many("create_rate_limited", wait,
                         "this client has created sessions as fast as this server allows");
    return false;
  }
  return true;
}

/* A refused creation: a 429 says when to try again. */
http_reply http_create_refused(const api_error *e) {
  http_reply r = http_api_error(e);
  if (e->status == 429 && r.retry_after == 0) {
    r.retry_after = 60;
  }
  return r;
}

http_reply h_sessions_create(const http_call *k) {
  http_reply err;
  char client[IPLIMIT_ADDR];
  if (!http_may_create(k, client, &err)) {
    return err;
  }
  json_t *body = http_parse_object(k->c, k->rq, &err);
  if (!body) {
    return err;
  }
  api_create cmd;
  api_error e;
  if (api_read_create(body, &cmd, &e) != 0) {
    json_decref(body);
    return http_api_error(&e);
  }
  json_decref(body);
  const double work = grn_world_def_grains(&cmd.def) / GRN_STEP_SECONDS;
  if (http_placed_elsewhere(k, 1, work, "/api/sessions", &err) ||
      http_store_refuses(k->srv, &err) || !http_create_rate_ok(k, client, &err)) {
    return err;
  }
  char token[65], viewer_token[65];
  session *s = sess_create(k->srv->reg, &cmd.def, cmd.label, cmd.private_, *client ? client : NULL,
                           token, viewer_token, &e);
  return s ? http_created(s, token, viewer_token) : http_create_refused(&e);
}

http_reply h_session_get(const http_call *k) {
  return http_json_reply(200, session_json(k->s));
}

http_reply h_session_delete(const http_call *k) {
  sess_delete(k->srv->reg, k->s);
  return http_json_reply(200, api_deleted_json(k->m->id));
}

http_reply h_session_patch(const http_call *k) {
  http_reply err;
  json_t *body = http_parse_object(k->c, k->rq, &err);
  if (!body) {
    return err;
  }
  api_session_patch cmd;
  api_error e;
  const int rc = api_read_session_patch(body, &cmd, &e);
  json_decref(body);
  if (rc != 0 || (cmd.has_speed && sess_set_speed(k->s, cmd.speed, &e) != 0)) {
    return http_api_error(&e);
  }
  return http_json_reply(200, session_json(k->s));
}

http_reply h_session_params(const http_call *k) {
  http_reply err;
  json_t *body = http_parse_object(k->c, k->rq, &err);
  if (!body) {
    return err;
  }
  api_params cmd;
  api_params_read(body, &cmd); /* the names point into body, released after the change */
  api_error e;
  const http_reply r = sess_set_params(k->s, &cmd, &e) == 0
                           ? http_json_reply(200, session_json(k->s))
                           : http_api_error(&e);
  json_decref(body);
  return r;
}

http_reply h_session_action(const http_call *k) {
  http_reply err;
  json_t *body = http_parse_object(k->c, k->rq, &err);
  if (!body) {
    return err;
  }
  api_error e;
  api_action a;
  const http_reply r = api_read_action(body, &a, &e) == 0 && sess_action(k->s, &a, &e) == 0
                           ? http_json_reply(200, session_json(k->s))
                           : http_api_error(&e);
  json_decref(body);
  return r;
}

/* GET .../snapshot?format=csv|vtk (csv when absent) of a session (its particles now) or of a
 * stored run (its final state, replayed): a download named after it and the step it is of. */
http_reply http_snapshot_reply(const http_call *k, bool run) {
  const char *name = MHD_lookup_connection_value(k->c, MHD_GET_ARGUMENT_KIND, "format");
  snapshot_format f = SNAPSHOT_CSV;
  if (name && snapshot_format_parse(name, &f) != 0) {
    return http_error(400, "bad_format", "format", "format is csv or vtk");
  }
  if (http_held_full(k->srv)) {
    return http_server_busy();
  }
  char *text;
  size_t len;
  uint64_t steps;
  api_error e;
  char client[IPLIMIT_ADDR] = ""; /* a replay's: one at a time each (the admin's: the pool's) */
  if (run && !http_admin_ok(k->srv, http_bearer(k->c))) {
    http_client_of(k->srv, k->c, client);
  }
  const int rc =
      run ? sess_run_snapshot(k->srv->reg, k->run, (int)f, client, &text, &len, &steps, &e)
          : sess_snapshot(k->s, (int)f, &text, &len, &steps, &e);
  if (rc != 0) {
    return http_api_error(&e);
  }
  http_reply r = {200, text, snapshot_content_type(f), "", "", len, 0, ""};
  /* a run's number, or the session's own id (16 letters and digits): nothing else reaches the
   * header */
  char who[40];
  if (run) {
    snprintf(who, sizeof who, "run-%lld", k->run);
  } else {
    snprintf(who, sizeof who, "session-%.16s", k->m->id);
  }
  snprintf(r.disposition, sizeof r.disposition, "attachment; filename=\"%s-step-%llu.%s\"", who,
           (unsigned long long)steps, snapshot_format_name(f));
  return r;
}

http_reply h_session_snapshot(const http_call *k) {
  return http_snapshot_reply(k, false);
}

http_reply h_session_scene(const http_call *k) {
  http_reply err;
  json_t *body = http_parse_object(k->c, k->rq, &err);
  if (!body) {
    return err;
  }
  grn_world_def d;
  api_error e;
  const int rc = api_read_scene(body, &d, &e);
  json_decref(body);
  if (rc != 0) {
    return http_api_error(&e);
  }
  if (http_store_refuses(k->srv, &err)) { /* a new run would start unrecorded */
    return err;
  }
  if (sess_switch_scene(k->srv->reg, k->s, &d, &e) != 0) {
    return http_api_error(&e);
  }
  return http_json_reply(200, session_json(k->s));
}
