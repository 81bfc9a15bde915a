/* libFuzzer harness (issue 16): a websocket client message (schema/stream.md), as the daemon reads
 * it before it looks at the connection (api_read_client_message, called by ws.c). The input is the
 * message's text. Checks that a refusal has an error object that serializes (the client hears
 * it), that an accepted message is an auth, a rate in its range or a well-formed action, and that
 * an action reads back bit for bit from the text the store records of it (api_action_json, 17
 * digits), which a replay plays. Built like fuzz_restore.c; seeds in corpus/ws_message/
 * (make_corpus). */
#include "api_json.h"
#include "fuzz_check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  api_client_message m;
  api_error e;
  memset(&e, 0, sizeof e);
  const int rc = api_read_client_message((const char *)data, size, &m, &e);
  if (rc != 0) {
    fuzz_refusal_ok(&e);
    return 0;
  }
  if (m.kind == API_MSG_AUTH) {
    if (m.has_token && strlen(m.token) > API_TOKEN_MAX) {
      abort();
    }
    return 0;
  }
  if (m.kind == API_MSG_RATE) {
    if (m.fps < API_RATE_MIN || m.fps > API_RATE_MAX) {
      abort();
    }
    return 0;
  }
  if (m.kind != API_MSG_ACTION || !m.action.info || m.action.action.nargs < 0 ||
      m.action.action.nargs > m.action.info->arg_count) {
    abort();
  }
  json_t *j = api_action_json(&m.action);
  char *text = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
  json_t *again = text ? json_loads(text, 0, NULL) : NULL;
  api_action b;
  if (!again || api_read_action(again, &b, &e) != 0 || b.info != m.action.info ||
      b.own != m.action.own || b.action.kind != m.action.action.kind ||
      b.action.nargs != m.action.action.nargs ||
      memcmp(b.action.args, m.action.action.args, sizeof(double) * (size_t)m.action.action.nargs) !=
          0) {
    abort();
  }
  json_decref(again);
  free(text);
  json_decref(j);
  return 0;
}
