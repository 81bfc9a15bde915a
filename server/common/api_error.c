/* Filling an api_error (see api_error.h), and the one table of what the API answers for each
 * kind of refusal. */
#include "api_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The length of the well-formed UTF-8 sequence at s (RFC 3629, table 3-7 of the Unicode
 * standard: no overlong forms, no surrogates, nothing above U+10FFFF), or 0. */
static size_t utf8_seq(const unsigned char *s) {
  unsigned char c = s[0];
  if (c < 0x80) {
    return 1;
  }
  size_t n;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    lo = c == 0xE0 ? 0xA0 : 0x80;
    hi = c == 0xED ? 0x9F : 0xBF;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    lo = c == 0xF0 ? 0x90 : 0x80;
    hi = c == 0xF4 ? 0x8F : 0xBF;
  } else {
    return 0;
  }
  if (s[1] < lo || s[1] > hi) {
    return 0;
  }
  for (size_t i = 2; i < n; i++) {
    if (s[i] < 0x80 || s[i] > 0xBF) { /* also stops at the terminating NUL */
      return 0;
    }
  }
  return n;
}

char *api_utf8_clean(char *s) {
  unsigned char *r = (unsigned char *)s;
  unsigned char *w = r;
  while (*r) {
    size_t n = utf8_seq(r);
    if (n == 0) {
      r++;
      continue;
    }
    memmove(w, r, n);
    w += n;
    r += n;
  }
  *w = 0;
  return s;
}

static const struct {
  const char *word;
  int status;
} codes[API_E_COUNT] = {
    [API_E_BAD_GROUP] = {"bad_group", 400},
    [API_E_BAD_JSON] = {"bad_json", 400},
    [API_E_BAD_MESSAGE] = {"bad_message", 400},
    [API_E_BAD_NAME] = {"bad_name", 400},
    [API_E_BAD_RATE] = {"bad_rate", 400},
    [API_E_BAD_TIME] = {"bad_time", 400},
    [API_E_DUPLICATE_SCENE] = {"duplicate_scene", 400},
    [API_E_MISSING_FIELD] = {"missing_field", 400},
    [API_E_READ_ONLY] = {"read_only", 400},
    [API_E_REST_ONLY] = {"rest_only", 400},
    [API_E_UNKNOWN_ACTION] = {"unknown_action", 400},
    [API_E_UNKNOWN_FIELD] = {"unknown_field", 400},
    [API_E_UNKNOWN_PARAMETER] = {"unknown_parameter", 400},
    [API_E_UNKNOWN_SCENE] = {"unknown_scene", 400},
    [API_E_UNKNOWN_TYPE] = {"unknown_type", 400},
    [API_E_WRONG_TYPE] = {"wrong_type", 400},
    [API_E_PRIVATE] = {"private", 403},
    [API_E_NO_CLASS] = {"no_class", 404},
    [API_E_NO_SUCH_GROUP] = {"unknown_group", 404},
    [API_E_NOT_FOUND] = {"not_found", 404},
    [API_E_STEPPING] = {"busy", 409},
    [API_E_CANCELLED] = {"cancelled", 409},
    [API_E_CLASS_ENDED] = {"class_ended", 409},
    [API_E_CLASS_FULL] = {"class_full", 409},
    [API_E_NEEDS_RESTART] = {"needs_restart", 409},
    [API_E_NOT_PAUSED] = {"not_paused", 409},
    [API_E_NO_SESSION] = {"no_session", 409},
    [API_E_RUN_OPEN] = {"not_replayable", 409},
    [API_E_NOTHING_TO_CANCEL] = {"nothing_to_cancel", 409},
    [API_E_OVER_CLASS_BUDGET] = {"over_grain_budget", 409},
    [API_E_SCENE_NOT_IN_CLASS] = {"scene_not_allowed", 409},
    [API_E_SESSION_FAILED] = {"session_failed", 409},
    [API_E_SETTLING] = {"settling", 409},
    [API_E_TOO_MANY_CHANGES] = {"too_many_changes", 409},
    [API_E_UNSUPPORTED_ACTION] = {"unsupported_action", 409},
    [API_E_WRONG_NODE] = {"wrong_node", 421},
    [API_E_NOT_REPLAYABLE] = {"not_replayable", 422},
    [API_E_OUT_OF_RANGE] = {"out_of_range", 422},
    [API_E_OVER_BUDGET] = {"over_budget", 422},
    [API_E_OVER_GRAIN_BUDGET] = {"over_grain_budget", 422},
    [API_E_REJECTED] = {"rejected", 422},
    [API_E_SCENE_NOT_ALLOWED] = {"scene_not_allowed", 422},
    [API_E_TOO_LONG] = {"too_long", 422},
    [API_E_TOO_MANY_GRAINS] = {"too_many_grains", 422},
    [API_E_UNKNOWN_GROUP] = {"unknown_group", 422},
    [API_E_BUSY] = {"busy", 429},
    [API_E_CLASS_CREATE_RATE_LIMITED] = {"class_create_rate_limited", 429},
    [API_E_CLIENT_SESSION_LIMIT] = {"client_session_limit", 429},
    [API_E_REPLAY_BUSY] = {"replay_busy", 429},
    [API_E_TOO_MANY_SESSIONS] = {"too_many_sessions", 429},
    [API_E_INTERNAL] = {"internal", 500},
    [API_E_REPLAY_DIVERGED] = {"replay_diverged", 500},
    [API_E_REPLAY_FAILED] = {"replay_failed", 500},
    [API_E_WORKER_FAILED] = {"worker_failed", 500},
    [API_E_NO_MEMORY] = {"no_memory", 503},
    [API_E_NO_STORE] = {"no_store", 503},
    [API_E_OUT_OF_MEMORY] = {"out_of_memory", 503},
};

const char *api_code_word(api_code kind) {
  return kind >= 0 && kind < API_E_COUNT ? codes[kind].word : "internal";
}

int api_code_status(api_code kind) {
  return kind >= 0 && kind < API_E_COUNT ? codes[kind].status : 500;
}

void api_fail(api_error *e, api_code kind, const char *field, const char *fmt, ...) {
  e->status = api_code_status(kind);
  e->code = api_code_word(kind);
  e->seconds_left = 0.0;
  snprintf(e->field, sizeof e->field, "%s", field ? field : "");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
  api_utf8_clean(e->field);
  api_utf8_clean(e->message);
}
