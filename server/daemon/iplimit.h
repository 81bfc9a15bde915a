/* Per-client (IP address) limits, shared by the HTTP and websocket servers: token buckets for
 * rates (sessions created, failed session lookups) and counts of what a client holds at once. */
#ifndef GRAINLAB_IPLIMIT_H
#define GRAINLAB_IPLIMIT_H

#include <stdbool.h>
#include <sys/socket.h>

#define IPLIMIT_ADDR 48 /* an IPv4 or IPv6 address as text, with its NUL */

typedef struct iplimit iplimit;

/* A limiter whose buckets hold `per_minute` tokens and refill at that rate (a burst of a whole
 * minute's worth, then steady). Thread-safe. NULL when memory runs out. */
iplimit *iplimit_new(double per_minute);
void iplimit_free(iplimit *l);
/* 0 when `ip` may go on, else the whole seconds until its next token (for Retry-After). `take`
 * uses the token; a peek does not. Past its bound on distinct clients the table refuses (60 s)
 * rather than forget a client that is being limited. */
int iplimit_take(iplimit *l, const char *ip, bool take);
/* Use one token whether or not one is left (a failed lookup counts even when refused). */
void iplimit_charge(iplimit *l, const char *ip);
/* What a client holds at once (connections): enter succeeds while it holds fewer than `max`;
 * every successful enter is matched by one leave. */
bool iplimit_enter(iplimit *l, const char *ip, int max);
void iplimit_leave(iplimit *l, const char *ip);

/* The address of a peer as text ("" when it is not IPv4 or IPv6). */
void iplimit_addr(const struct sockaddr *sa, char out[IPLIMIT_ADDR]);
/* The client an address counts as for the per-client limits: an IPv4 address itself; an IPv6
 * address by its first v6_bits bits ("2001:db8:1:2::/64"), since one home or school network
 * holds a whole /64 and may use any address in it. Anything else is left as it is. */
void iplimit_client(const char *ip, int v6_bits, char out[IPLIMIT_ADDR]);

#endif
