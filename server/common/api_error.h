/* A refused request, as the REST API reports it: its kind (which names its code word and HTTP
 * status, in one table), a message and the offending field. Filled by the API's parsers, the
 * session and class registries (the store has its own codes, mapped in http_reply.c); turned
 * into JSON by server/api/api_json.c. */
#ifndef GRAINLAB_API_ERROR_H
#define GRAINLAB_API_ERROR_H

/* Every kind of refusal. A module says what went wrong; the table in api_error.c says what the
 * API answers for it, so no module chooses an HTTP status. */
typedef enum api_code {
  API_E_BAD_GROUP,                 /* 400 bad_group */
  API_E_BAD_JSON,                  /* 400 bad_json */
  API_E_BAD_MESSAGE,               /* 400 bad_message */
  API_E_BAD_NAME,                  /* 400 bad_name */
  API_E_BAD_RATE,                  /* 400 bad_rate */
  API_E_BAD_TIME,                  /* 400 bad_time */
  API_E_DUPLICATE_SCENE,           /* 400 duplicate_scene */
  API_E_MISSING_FIELD,             /* 400 missing_field */
  API_E_READ_ONLY,                 /* 400 read_only */
  API_E_REST_ONLY,                 /* 400 rest_only */
  API_E_UNKNOWN_ACTION,            /* 400 unknown_action */
  API_E_UNKNOWN_FIELD,             /* 400 unknown_field */
  API_E_UNKNOWN_PARAMETER,         /* 400 unknown_parameter */
  API_E_UNKNOWN_SCENE,             /* 400 unknown_scene */
  API_E_UNKNOWN_TYPE,              /* 400 unknown_type */
  API_E_WRONG_TYPE,                /* 400 wrong_type */
  API_E_PRIVATE,                   /* 403 private */
  API_E_NO_CLASS,                  /* 404 no_class */
  API_E_NO_SUCH_GROUP,             /* 404 unknown_group */
  API_E_NOT_FOUND,                 /* 404 not_found */
  API_E_STEPPING,                  /* 409 busy */
  API_E_CANCELLED,                 /* 409 cancelled */
  API_E_CLASS_ENDED,               /* 409 class_ended */
  API_E_CLASS_FULL,                /* 409 class_full */
  API_E_NEEDS_RESTART,             /* 409 needs_restart */
  API_E_NOT_PAUSED,                /* 409 not_paused */
  API_E_NO_SESSION,                /* 409 no_session */
  API_E_RUN_OPEN,                  /* 409 not_replayable */
  API_E_NOTHING_TO_CANCEL,         /* 409 nothing_to_cancel */
  API_E_OVER_CLASS_BUDGET,         /* 409 over_grain_budget */
  API_E_SCENE_NOT_IN_CLASS,        /* 409 scene_not_allowed */
  API_E_SESSION_FAILED,            /* 409 session_failed */
  API_E_SETTLING,                  /* 409 settling */
  API_E_TOO_MANY_CHANGES,          /* 409 too_many_changes */
  API_E_UNSUPPORTED_ACTION,        /* 409 unsupported_action */
  API_E_WRONG_NODE,                /* 421 wrong_node */
  API_E_NOT_REPLAYABLE,            /* 422 not_replayable */
  API_E_OUT_OF_RANGE,              /* 422 out_of_range */
  API_E_OVER_BUDGET,               /* 422 over_budget */
  API_E_OVER_GRAIN_BUDGET,         /* 422 over_grain_budget */
  API_E_REJECTED,                  /* 422 rejected */
  API_E_SCENE_NOT_ALLOWED,         /* 422 scene_not_allowed */
  API_E_TOO_LONG,                  /* 422 too_long */
  API_E_TOO_MANY_GRAINS,           /* 422 too_many_grains */
  API_E_UNKNOWN_GROUP,             /* 422 unknown_group */
  API_E_BUSY,                      /* 429 busy */
  API_E_CLASS_CREATE_RATE_LIMITED, /* 429 class_create_rate_limited */
  API_E_CLIENT_SESSION_LIMIT,      /* 429 client_session_limit */
  API_E_REPLAY_BUSY,               /* 429 replay_busy */
  API_E_TOO_MANY_SESSIONS,         /* 429 too_many_sessions */
  API_E_INTERNAL,                  /* 500 internal */
  API_E_REPLAY_DIVERGED,           /* 500 replay_diverged */
  API_E_REPLAY_FAILED,             /* 500 replay_failed */
  API_E_WORKER_FAILED,             /* 500 worker_failed */
  API_E_NO_MEMORY,                 /* 503 no_memory */
  API_E_NO_STORE,                  /* 503 no_store */
  API_E_OUT_OF_MEMORY,             /* 503 out_of_memory */
  API_E_COUNT
} api_code;

typedef struct api_error {
  int status;        /* from the kind, by the table (or the HTTP layer's own refusals) */
  const char *code;  /* the code word */
  char message[256]; /* room for a JSON parse error quoting jansson's 160-byte text */
  char field[64];
  /* a refusal that lifts by itself (grains still settling): seconds of simulated time it may
   * still take, at most; 0: none. The body's seconds_left, and Retry-After at speed 1. */
  double seconds_left;
} api_error;

/* Make s valid UTF-8 in place: drop every byte that does not belong to a well-formed sequence
 * (jansson refuses invalid UTF-8, and a refused string would leave an error body empty). Every
 * truncation of user text (snprintf into a fixed buffer, "%.60s") may split a character; so may
 * text decoded from a URL. Returns s. */
char *api_utf8_clean(char *s);

/* The refusal of `kind` on `field` ("" for none), its message made from fmt. */
void api_fail(api_error *e, api_code kind, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The code word and HTTP status the API answers for a kind. */
const char *api_code_word(api_code kind);
int api_code_status(api_code kind);

#endif
