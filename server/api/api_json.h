/* The REST API's JSON, in one place for grainlabd (http.c, ws.c, sess.c) and the CLI: request
 * bodies into typed commands, the one engine-error → HTTP mapping, the error object, and the
 * scene catalogue. Pure: no I/O, no libmicrohttpd; tested by tests/unit/test_api_json.c. */
#ifndef GRAINLAB_API_JSON_H
#define GRAINLAB_API_JSON_H

#include "api_error.h"
#include "grainlab/grainlab.h"
#include "node.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* ---- output ------------------------------------------------------------------------------- */

/* The one text form of every JSON the API and the CLI print: compact, 15 significant digits (0.1
 * reads as 0.1, and nothing a double carries is lost to a reader). malloc'd; NULL if out of
 * memory. `j` is not released. */
char *api_dumps(const json_t *j);

/* The catalogue, GET /api/scenes and `grainlab scenes` alike: {"scenes": [{name, model,
 * description, params: [{name, unit, min, max, default, integer, restart, description}],
 * actions: [names], measurements: [keys], plots: [{title, series: [{key, axis, reference}]}]}],
 * "actions": [{name, description, session, args: [{name, unit, min, max, required, type,
 * description}]}], "models": [{name, particles, settles, si}], "measurements": [{name, unit,
 * label}], step_seconds, sample_steps}. Every scene's action and measurement is described once, at
 * the top. A new reference. */
json_t *api_scenes_json(void);

/* ---- sessions -------------------------------------------------------------------------------- */

/* {name: value} of a definition's scene parameters, and {key: value or null} of the measurements
 * a sample reports. New references. */
json_t *api_params_json(const grn_world_def *def);
json_t *api_measurements_json(const grn_scene_info *scene, const grn_measurements *m);

/* What a session shows: a copy taken under its lock, rendered without it. */
typedef struct api_session_view {
  char id[NODE_NAME_SIZE], join_code[NODE_CODE_SIZE], label[64];
  bool private_;
  grn_world_def def;
  const char *state; /* running, paused, asleep, failed, ended */
  char reason[200];  /* why it failed ("" otherwise) */
  double t, rt_factor, speed;
  double settle_left; /* seconds of simulated time the grains may still settle; 0: settled */
  bool settle_wait;   /* another session settles the same grains: this one starts from them */
  int viewers;
  uint64_t run_id, steps, digest;
  bool digest_known; /* the digest is of the state at steps */
  grn_measurements meas;
  const char *script; /* "replay" or "fork" while one plays; NULL otherwise */
  int64_t script_run;
  uint64_t script_end_steps;
  bool in_class; /* a class's group's session: its class, group, and whether the class is locked */
  bool class_locked;
  char class_id[NODE_NAME_SIZE], group[321];
} api_session_view;
/* The session object of GET /api/sessions/{id} (and of the websocket's hello). */
json_t *api_session_json(const api_session_view *v);

/* ---- actions -------------------------------------------------------------------------------- */

/* Which of the daemon's own actions an action is; API_ACT_ENGINE: the engine's (grn_action). */
typedef enum api_own_action {
  API_ACT_ENGINE = 0,
  API_ACT_PAUSE,
  API_ACT_RESUME,
  API_ACT_STEP,
  API_ACT_FINISH,
  API_ACT_CANCEL,
  API_ACT_TEST /* test builds only: a worker command that breaks a limit on purpose */
} api_own_action;

/* The daemon's own actions (pause, resume, step, finish), described in the engine catalogue's
 * form (`kind` unused) so that one reader takes both and the catalogue lists both alike. */
const grn_action_info *api_session_actions(int *count);

/* An action body {type, ARG: value, ...} read against its catalogue entry: the arguments in the
 * catalogue's order, booleans as 1 or 0. The scene's own limits are checked later
 * (grn_action_check). */
typedef struct api_action {
  const grn_action_info *info;
  api_own_action own;
  grn_action action;
} api_action;
int api_read_action(const json_t *body, api_action *out, api_error *err);
/* The action as a body again ({type, ARG: value, ...}), as events record it. A new reference. */
json_t *api_action_json(const api_action *a);

/* ---- errors ------------------------------------------------------------------------------- */

/* {"code", "message", "field"?}: the error object of a REST reply and of a websocket "error"
 * message. `field` may be NULL or empty (then left out). A new reference. */
json_t *api_error_object(const char *code, const char *field, const char *message);
/* {"error": {...}}: a refused request's whole reply body. A new reference. */
json_t *api_error_json(const api_error *e);

/* Where the engine refused something: the same engine status means different things there. */
typedef enum api_engine_ctx {
  API_ON_PARAM = 0,  /* a parameter value checked against its scene (create, switch, live, fork) */
  API_ON_ACTION,     /* an action checked against its scene */
  API_ON_WORKER_SET, /* the worker refused a live parameter change */
  API_ON_WORKER,     /* the worker refused any other command */
  API_ON_COUNT
} api_engine_ctx;

/* The HTTP status and code word for an engine status in a context (never fails: every status has
 * an answer in every context). */
void api_engine_status(api_engine_ctx ctx, int grn_code, int *http_status, const char **code);
/* An engine refusal as the API's error: the mapped status and word, the engine's field and
 * message. */
void api_engine_error(api_error *out, api_engine_ctx ctx, const grn_error *e);

/* ---- typed commands from request bodies ---------------------------------------------------- */

/* A request body as a JSON object (duplicate keys refused), or NULL with 400 bad_json. */
json_t *api_parse_object(const char *body, size_t len, api_error *err);

/* Every key of `obj` is one of `allowed` (NULL-terminated), or 400 unknown_field. */
int api_only_keys(const json_t *obj, const char *const *allowed, api_error *err);

/* Scenes have fewer parameters than this; a longer list has an unknown name among its first
 * API_MAX_PARAMS, which is refused before the list would end. */
#define API_MAX_PARAMS 48

/* One parameter of a change, in the body's order. `name` points into the body it was read from,
 * which must outlive the command. `integer`: written as an integer (events record it as one). */
typedef struct api_param {
  const char *name;
  double value;
  bool integer;
  int index; /* in the scene's list, once api_params_apply has found the name (the one lookup) */
} api_param;

/* {name: number, ...} as a list. The first value that is not a number ends the list: it is
 * refused (400 wrong_type) once the names before it have been checked, in the body's order. */
typedef struct api_params {
  int count;
  api_param at[API_MAX_PARAMS];
  const char *not_number; /* NULL: every value was a number */
} api_params;

/* Reads an object's members (NULL: none). Never fails: refusals wait for api_params_apply. */
void api_params_read(const json_t *obj, api_params *out);

/* What a parameter change is for, which decides whether restart-only parameters may change. */
typedef enum api_params_use {
  API_PARAMS_DEFINE = 0, /* a new scene (create, switch): every parameter may be set */
  API_PARAMS_LIVE,       /* a running session: restart-only ones are 409 needs_restart */
  API_PARAMS_FORK        /* a fork of a run, going on from its end: the same */
} api_params_use;

/* Checks every parameter in order (a number, known to the scene and in range, may change for
 * `use`), sets it in `def` and notes its index in the scene's list. A parameter fixed when the
 * engine builds the world (the catalogue marks it `restart`: the particle count, an orbit's
 * initial speed) is refused for a live change or a fork before any value reaches the worker, so a
 * request naming one changes nothing. On error `def` may be partly changed: pass a copy. */
int api_params_apply(api_params *p, grn_world_def *def, api_params_use use, api_error *err);

/* {scene, params?, seed?} (POST /api/sessions/{id}/scene; keys other than those: 400
 * unknown_field) into a validated definition. */
int api_read_scene(const json_t *body, grn_world_def *def, api_error *err);

/* POST /api/sessions {scene, params?, seed?, label?, private?}. */
typedef struct api_create {
  grn_world_def def;
  char label[64]; /* empty: none given */
  bool private_;
} api_create;
int api_read_create(const json_t *body, api_create *out, api_error *err);

/* PATCH /api/sessions/{id} {speed?} (a label is read-only). The speed's range is the session's. */
typedef struct api_session_patch {
  bool has_speed;
  double speed;
} api_session_patch;
int api_read_session_patch(const json_t *body, api_session_patch *out, api_error *err);

/* POST /api/runs/{run}/replay {label?, private?} and /fork {params?, label?, private?}. `params`
 * points into the body (an object; NULL when none was given). */
typedef struct api_from_run {
  char label[64];
  bool private_;
  const json_t *params;
} api_from_run;
int api_read_from_run(const json_t *body, bool fork, api_from_run *out, api_error *err);

/* ---- websocket client messages (schema/stream.md) ----------------------------------------- */

/* What a client message is, as far as its text tells (API_MSG_NONE: not even a JSON object with a
 * "type" string). */
typedef enum api_msg_kind {
  API_MSG_NONE = 0,
  API_MSG_AUTH,
  API_MSG_ACTION,
  API_MSG_RATE,   /* frames per second this connection wants at most */
  API_MSG_UNKNOWN /* a "type" the server does not take */
} api_msg_kind;

#define API_TOKEN_MAX 64 /* bytes of a session token (sess.c makes them) */
/* A rate's range, frames per second: a tile of a class dashboard wants a few, and the stream
 * itself brings at most one frame per step of the pacing (60 a second at real time). */
#define API_RATE_MIN 1
#define API_RATE_MAX 60

/* One client message read and checked, without any session: whether the sender may do it is the
 * caller's to decide (ws.c). `kind` is set as soon as the type is known, also on a refusal, so
 * that the caller can put its own checks (authentication, control) before the message's. */
typedef struct api_client_message {
  api_msg_kind kind;
  /* auth: the token, when it was a string of at most API_TOKEN_MAX bytes (anything else matches
   * no session's token, and is refused as such by the caller) */
  bool has_token;
  char token[API_TOKEN_MAX + 1];
  api_action action; /* action: read against the catalogue (api_read_action) */
  int fps;           /* rate: API_RATE_MIN..API_RATE_MAX */
} api_client_message;

/* {"type":"auth","token":...}, {"type":"action","action":{...}} or {"type":"rate","fps":N} from
 * len bytes of text (not NUL-terminated). 0, or −1 with err: 400 bad_message (not a JSON object
 * with a "type" string, or an action that is no object), unknown_type, unknown_field, bad_rate
 * (fps missing, not an integer, or out of range), or api_read_action's refusals. */
int api_read_client_message(const char *text, size_t len, api_client_message *out, api_error *err);

#endif
