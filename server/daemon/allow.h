/* Which Host names and which browser origins the daemon answers (against DNS rebinding and
 * cross-site websockets), from comma lists of the settings allowed-hosts and allowed-origins. */
#ifndef GRAINLAB_ALLOW_H
#define GRAINLAB_ALLOW_H

#include <stdbool.h>
#include <stddef.h>

#define ALLOW_MAX 32
#define ALLOW_NAME 256

typedef struct allow_list {
  bool any; /* "*" */
  int n;
  char name[ALLOW_MAX][ALLOW_NAME]; /* lower case */
} allow_list;

/* Parse "a,b,c" (host names, addresses, "[v6]", or origins "scheme://host[:port]"; "*" allows
 * anything); 0, or -1 with why in err. */
int allow_parse(allow_list *a, const char *list, char *err, size_t errlen);
/* A Host header ("name" or "name:port", "[v6]:port"): its name must be listed, any port. A
 * request without one (HTTP/1.0, non-browser clients) passes. */
bool allow_host(const allow_list *hosts, const char *host);
/* An Origin header: listed in origins, or, when origins is empty, its host is an allowed host
 * (same origin). No Origin (non-browser clients) passes; "null" does not. */
bool allow_origin(const allow_list *origins, const allow_list *hosts, const char *origin);

/* Whether `ip` (an address as text) is listed: exact, no "*". */
bool allow_addr(const allow_list *a, const char *ip);
/* The client behind a connection from `peer`: when the peer is a trusted proxy and sent
 * X-Forwarded-For, the last address there (the one that proxy saw); otherwise the peer. An
 * entry that is not an address leaves the peer. An IPv6 client is its first v6_bits bits
 * (iplimit_client). `out` holds 48 bytes. */
void allow_client(const allow_list *proxies, const char *peer, const char *forwarded, int v6_bits,
                  char *out);

#endif
