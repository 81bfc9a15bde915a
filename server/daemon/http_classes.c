/* The classes' routes (issue 17): creating a class, the teacher's view and changes, pushes,
 * ending it, and a student's join by code. */
#define _GNU_SOURCE
#include "api_class.h"
#include "api_json.h"
#include "api_ops.h"
#include "http_internal.h"

#include <stdio.h>

static http_reply class_reply(int status, json_t *j, const api_error *e) {
  return j ? http_json_reply(status, j) : http_api_error(e);
}

http_reply h_classes_create(const http_call *k) {
  http_reply err;
  json_t *body = http_parse_object(k->c, k->rq, &err);
  if (!body) {
    return err;
  }
  api_class_create cmd;
  api_error e = {0}; /* status 0 until something refuses */
  const int rc =
      api_read_class_create(body, http_unix_now(), sess_max_grains(k->srv->reg), &cmd, &e);
  json_decref(body);
  if (rc != 0) {
    return http_api_error(&e);
  }
  /* a class and all its groups live on one node: it goes where its groups fit; a class is a
   * creation of its teacher's address, at the same rate as a session (the admin's are free) */
  char client[IPLIMIT_ADDR] = "";
  if (!http_admin_ok(k->srv, http_bearer(k->c))) {
    http_client_of(k->srv, k->c, client);
  }
  if (http_placed_elsewhere(k, cmd.max_groups, 0, "/api/classes", &err) ||
      !http_create_rate_ok(k, client, &err)) {
    json_decref(cmd.defaults);
    return err;
  }
  json_t *j = NULL;
  if (!http_store_refuses(k->srv, &err)) { /* a class nobody could find again after a restart */
    j = class_create(k->srv->classes, &cmd, &e);
  }
  json_decref(cmd.defaults);
  return j ? http_json_reply(201, j) : e.status ? http_api_error(&e) : err;
}

http_reply h_class_get(const http_call *k) {
  api_error e = {0};
  return class_reply(200, class_get(k->srv->classes, k->m->id, k->role, &e), &e);
}

http_reply h_class_patch(const http_call *k) {
  http_reply err;
  json_t *body = http_parse_object(k->c, k->rq, &err);
  if (!body) {
    return err;
  }
  api_class_patch cmd;
  api_error e = {0};
  json_t *j = api_read_class_patch(body, &cmd, &e) == 0
                  ? class_patch(k->srv->classes, k->m->id, &cmd, &e)
                  : NULL;
  json_decref(body);
  return class_reply(200, j, &e);
}

http_reply h_class_push(const http_call *k) {
  http_reply err;
  json_t *body = http_parse_object(k->c, k->rq, &err);
  if (!body) {
    return err;
  }
  api_class_push cmd;
  api_error e = {0};
  /* the parameters' names and the groups point into the body: released after the push */
  json_t *j = api_read_class_push(body, &cmd, &e) == 0
                  ? class_push(k->srv->classes, k->m->id, &cmd, &e)
                  : NULL;
  json_decref(body);
  return class_reply(200, j, &e);
}

http_reply h_class_end(const http_call *k) {
  api_error e = {0};
  return class_reply(200, class_end(k->srv->classes, k->m->id, &e), &e);
}

/* Class codes are guessed by trying, as session ids are: a client that misses too often is
 * refused, hit or miss alike. The seconds the client must wait (0: it may try); its address in
 * client. */
static int code_wait(const http_call *k, char client[IPLIMIT_ADDR]) {
  http_client_of(k->srv, k->c, client);
  return k->srv->guesses ? iplimit_take(k->srv->guesses, client, false) : 0;
}

static http_reply too_many_codes(int wait) {
  return http_too_many("too_many_guesses", wait,
                       "this client has tried too many class codes that do not exist");
}

/* A join that reached another node than its class's (the code names it): 307 to the class's
 * node through the cluster's router, which keeps the method and the body; a browser follows it
 * where it would not follow a 421 (issue 32). Anything else is left as it is. */
static http_reply join_reply(const char *code, const char *query, json_t *j, const api_error *e,
                             int status) {
  char home[NODE_ID_MAX + 1];
  if (!j && e->status == 421 && node_split(code, home) && *home &&
      node_name_ok(code, home, 6, SESS_CODE_ALPHABET)) { /* nothing else goes into Location */
    http_reply r = http_json_reply(307, api_moved_json(home, e->message));
    snprintf(r.location, sizeof r.location, "/n/%s/api/join%s%s", home, *query ? "?code=" : "",
             query);
    return r;
  }
  return j ? http_json_reply(status, j) : http_create_refused(e);
}

/* GET /api/join?code=CODE: the class a student is about to join. */
http_reply h_join_lookup(const http_call *k) {
  char client[IPLIMIT_ADDR];
  const int wait = code_wait(k, client);
  if (wait > 0) {
    return too_many_codes(wait);
  }
  const char *code = MHD_lookup_connection_value(k->c, MHD_GET_ARGUMENT_KIND, "code");
  if (!code) {
    return http_error(400, "missing_field", "code", "give the class code: /api/join?code=CODE");
  }
  api_error e = {0};
  json_t *j = class_lookup(k->srv->classes, code, &e);
  if (!j && e.status == 404 && k->srv->guesses) {
    iplimit_charge(k->srv->guesses, client);
  }
  return join_reply(code, code, j, &e, 200);
}

/* POST /api/join */
http_reply h_join(const http_call *k) {
  char client[IPLIMIT_ADDR];
  const int wait = code_wait(k, client);
  if (wait > 0) {
    return too_many_codes(wait);
  }
  http_reply err;
  json_t *body = http_parse_object(k->c, k->rq, &err);
  if (!body) {
    return err;
  }
  api_join cmd;
  api_error e = {0};
  const int rc = api_read_join(body, &cmd, &e);
  json_decref(body);
  if (rc != 0) {
    return http_api_error(&e);
  }
  if (http_store_refuses(k->srv, &err)) {
    return err;
  }
  bool created = false;
  json_t *j = class_join(k->srv->classes, &cmd, &created, &e);
  if (!j && e.status == 404 && k->srv->guesses) {
    iplimit_charge(k->srv->guesses, client);
  }
  return join_reply(cmd.code, "", j, &e, created ? 201 : 200);
}
