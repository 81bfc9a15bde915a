/* libFuzzer harness (issue 32): the client a connection counts as (server/daemon/allow.c's
 * allow_client, iplimit.c's iplimit_client), from a peer address and an X-Forwarded-For of any
 * length. Input: one byte for the IPv6 prefix length (16 + byte % 113: 16..128), the peer, a NUL,
 * the header (absent without a second NUL-free part). The proxies trusted are 127.0.0.1, ::1 and
 * 10.0.0.1. Checks that the client is always one of two things, never text of the header's
 * choosing: the peer's own bucket, or, for a trusted peer only, that of the header's last entry
 * when it is a plain address (the one the proxy saw); that it is NUL-terminated text of address
 * characters within its 48 bytes; and that the same input always gives the same client.
 * Seeds in corpus/forwarded/. */
#define _POSIX_C_SOURCE 200809L
#include "allow.h"
#include "iplimit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void address_text(const char *s) {
  const size_t n = strnlen(s, IPLIMIT_ADDR);
  if (n >= IPLIMIT_ADDR) {
    abort(); /* not terminated within its buffer */
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 16384) {
    return 0;
  }
  static allow_list proxies;
  static int ready;
  if (!ready) {
    char err[128];
    if (allow_parse(&proxies, "127.0.0.1,::1,10.0.0.1", err, sizeof err) != 0) {
      abort();
    }
    ready = 1;
  }
  const int bits = 16 + data[0] % 113;
  char *text = malloc(size);
  if (!text) {
    return 0;
  }
  memcpy(text, data + 1, size - 1);
  text[size - 1] = '\0';
  const char *peer = text;
  const size_t plen = strlen(peer);
  const char *forwarded = plen + 1 < size - 1 ? text + plen + 1 : NULL;
  char peer_short[IPLIMIT_ADDR]; /* a real peer is an address: at most 47 characters */
  memcpy(peer_short, peer, plen < IPLIMIT_ADDR ? plen + 1 : IPLIMIT_ADDR - 1);
  peer_short[IPLIMIT_ADDR - 1] = '\0';

  char out[IPLIMIT_ADDR], again[IPLIMIT_ADDR], own[IPLIMIT_ADDR];
  memset(out, 'x', sizeof out);
  allow_client(&proxies, peer_short, forwarded, bits, out);
  address_text(out);
  allow_client(&proxies, peer_short, forwarded, bits, again);
  if (strcmp(out, again) != 0) {
    abort(); /* the same connection counted twice as two clients */
  }
  iplimit_client(peer_short, bits, own);
  const bool trusted = allow_addr(&proxies, peer_short);
  if (strcmp(out, own) != 0) {
    /* not the peer: only a trusted proxy's header names another, and only by its last entry */
    if (!trusted || !forwarded) {
      abort();
    }
    const char *last = strrchr(forwarded, ',');
    last = last ? last + 1 : forwarded;
    last += strspn(last, " \t");
    char entry[IPLIMIT_ADDR], bucket[IPLIMIT_ADDR];
    const size_t n = strcspn(last, " \t");
    if (n == 0 || n >= IPLIMIT_ADDR || strspn(last, "0123456789abcdefABCDEF.:") != n) {
      abort(); /* an entry that is no address moved the client */
    }
    memcpy(entry, last, n);
    entry[n] = '\0';
    iplimit_client(entry, bits, bucket);
    if (strcmp(out, bucket) != 0) {
      abort();
    }
  }
  free(text);
  return 0;
}
