/* grainlabd's websocket server (libwebsockets): viewers of /ws/sessions/{id} receive the
 * session's stream; its controller, once it shows its token, may steer over the same socket. A
 * class's teacher watches every group at once over /ws/classes/{id} (schema/stream.md). */
#ifndef GRAINLAB_WS_H
#define GRAINLAB_WS_H

#include "allow.h"
#include "iplimit.h"
#include "sess.h"

#include <stddef.h>
#include <stdint.h>

/* frames_skipped: a slow viewer's, for a newer frame; frames_held: a rated viewer's (a client
 * that asked for fewer frames a second), which cost nothing but the count. */
typedef struct ws_stats {
  uint64_t connections, refused, frames_sent, texts_sent, bytes_sent, frames_skipped, texts_skipped,
      messages_rejected, frames_held;
} ws_stats;

typedef struct ws_server ws_server;

/* Who may connect, and how long a silent one stays. */
typedef struct ws_options {
  const allow_list *hosts, *origins; /* Host and Origin allow-lists (allow.h) */
  const allow_list *proxies;         /* trusted proxies: X-Forwarded-For names the client */
  iplimit *guesses;                  /* failed session lookups per client, shared with HTTP */
  struct class_registry *classes;    /* whose dashboards have a stream (class.h); NULL: none */
  int per_ip;                        /* websocket connections one IP address may hold */
  int v6_bits;                       /* an IPv6 client is its first v6_bits bits (iplimit.h) */
  int ping_s;    /* ping a viewer this often; one silent for twice as long is dropped */
  int timeout_s; /* for the handshake */
} ws_options;

/* Listen on bind:port (0: any free port) and serve from a thread of its own. NULL on failure
 * (why in err). */
ws_server *ws_start(sess_registry *reg, const char *bind, int port, const ws_options *opt,
                    char *err, size_t errlen);
int ws_port(const ws_server *ws);
void ws_get_stats(const ws_server *ws, ws_stats *out);
/* Close every connection and stop serving; sessions may still notify afterwards (a no-op). */
void ws_stop(ws_server *ws);
/* Free, once no session can notify any more (after the registry is freed). */
void ws_free(ws_server *ws);

#endif
