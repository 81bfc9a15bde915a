/* A websocket message put together from the pieces libwebsockets hands a test client (ws_probe,
 * ws_load): one buffer per connection, grown as needed. */
#ifndef GRAINLAB_WS_MESSAGE_H
#define GRAINLAB_WS_MESSAGE_H

#include <libwebsockets.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct ws_message {
  uint8_t *bytes;
  size_t len, cap;
} ws_message;

/* Add a received piece: 1 when the message is whole (bytes and len hold it; the caller sets len
 * to 0 once done with it), 0 while more is to come, -1 when memory runs out. */
static inline int ws_message_add(ws_message *m, struct lws *wsi, const void *in, size_t len) {
  if (m->len + len > m->cap) {
    const size_t cap = (m->len + len) * 2;
    uint8_t *b = realloc(m->bytes, cap);
    if (!b) {
      return -1;
    }
    m->bytes = b;
    m->cap = cap;
  }
  memcpy(m->bytes + m->len, in, len);
  m->len += len;
  return lws_is_final_fragment(wsi) && lws_remaining_packet_payload(wsi) == 0;
}

#endif
