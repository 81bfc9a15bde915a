/* Per-client limits (see iplimit.h): one mutex-guarded hash of clients, each with a token bucket
 * and a count of what it holds. Entries that are back to a full bucket and hold nothing are the
 * same as absent ones, so they are swept out when the table fills. */
#define _GNU_SOURCE
#include "iplimit.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUCKETS 4096
#define MAX_CLIENTS 65536 /* distinct addresses remembered at once: a few MB at most */

typedef struct client {
  char ip[IPLIMIT_ADDR];
  double tokens, stamp; /* tokens as of stamp (monotonic seconds) */
  int held;
  int next; /* in its hash chain, or in the free list; -1 ends */
} client;

struct iplimit {
  pthread_mutex_t lock;
  double rate, cap; /* tokens per second, and the bucket's size */
  int head[BUCKETS];
  client *c;
  int used, free_head, count;
};

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static unsigned hash(const char *ip) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (const unsigned char *p = (const unsigned char *)ip; *p; p++) {
    h = (h ^ *p) * 16777619u;
  }
  return h % BUCKETS;
}

iplimit *iplimit_new(double per_minute) {
  iplimit *l = calloc(1, sizeof *l);
  if (!l) {
    return NULL;
  }
  pthread_mutex_init(&l->lock, NULL);
  l->rate = per_minute / 60.0;
  l->cap = per_minute;
  for (int i = 0; i < BUCKETS; i++) {
    l->head[i] = -1;
  }
  l->free_head = -1;
  return l;
}

void iplimit_free(iplimit *l) {
  if (l) {
    pthread_mutex_destroy(&l->lock);
    free(l->c);
    free(l);
  }
}

static void refill(const iplimit *l, client *e, double t) {
  e->tokens = fmin(l->cap, e->tokens + (t - e->stamp) * l->rate);
  e->stamp = t;
}

/* Drop every entry that is as good as absent; the number dropped. */
static int sweep(iplimit *l, double t) {
  int dropped = 0;
  for (int b = 0; b < BUCKETS; b++) {
    for (int *at = &l->head[b]; *at >= 0;) {
      client *e = &l->c[*at];
      refill(l, e, t);
      if (e->held == 0 && e->tokens >= l->cap) {
        const int i = *at;
        *at = e->next;
        e->next = l->free_head;
        l->free_head = i;
        l->count--;
        dropped++;
      } else {
        at = &e->next;
      }
    }
  }
  return dropped;
}

/* The client's entry, made when it has none; NULL when the table is full. Under the lock. */
static client *find(iplimit *l, const char *ip, double t) {
  const unsigned b = hash(ip);
  for (int i = l->head[b]; i >= 0; i = l->c[i].next) {
    if (strcmp(l->c[i].ip, ip) == 0) {
      refill(l, &l->c[i], t);
      return &l->c[i];
    }
  }
  if (l->free_head < 0 && l->used == MAX_CLIENTS && sweep(l, t) == 0) {
    return NULL;
  }
  int i;
  if (l->free_head >= 0) {
    i = l->free_head;
    l->free_head = l->c[i].next;
  } else {
    if (!l->c) {
      l->c = malloc(sizeof(client) * MAX_CLIENTS);
      if (!l->c) {
        return NULL;
      }
    }
    i = l->used++;
  }
  client *e = &l->c[i];
  snprintf(e->ip, sizeof e->ip, "%s", ip);
  e->tokens = l->cap;
  e->stamp = t;
  e->held = 0;
  e->next = l->head[b];
  l->head[b] = i;
  l->count++;
  return e;
}

int iplimit_take(iplimit *l, const char *ip, bool take) {
  pthread_mutex_lock(&l->lock);
  client *e = find(l, ip, now());
  int wait = 60;
  if (e && e->tokens >= 1.0) {
    e->tokens -= take ? 1.0 : 0.0;
    wait = 0;
  } else if (e) {
    wait = (int)ceil((1.0 - e->tokens) / l->rate);
    wait = wait < 1 ? 1 : wait;
  }
  pthread_mutex_unlock(&l->lock);
  return wait;
}

void iplimit_charge(iplimit *l, const char *ip) {
  pthread_mutex_lock(&l->lock);
  client *e = find(l, ip, now());
  if (e) {
    e->tokens = fmax(e->tokens - 1.0, -l->cap); /* a client that goes on waits longer */
  }
  pthread_mutex_unlock(&l->lock);
}

bool iplimit_enter(iplimit *l, const char *ip, int max) {
  pthread_mutex_lock(&l->lock);
  client *e = find(l, ip, now());
  const bool ok = e && e->held < max;
  if (ok) {
    e->held++;
  }
  pthread_mutex_unlock(&l->lock);
  return ok;
}

void iplimit_leave(iplimit *l, const char *ip) {
  pthread_mutex_lock(&l->lock);
  client *e = find(l, ip, now());
  if (e && e->held > 0) {
    e->held--;
  }
  pthread_mutex_unlock(&l->lock);
}

void iplimit_client(const char *ip, int v6_bits, char out[IPLIMIT_ADDR]) {
  struct in6_addr a;
  if (v6_bits >= 128 || inet_pton(AF_INET6, ip, &a) != 1 || IN6_IS_ADDR_V4MAPPED(&a)) {
    snprintf(out, IPLIMIT_ADDR, "%s", ip);
    return;
  }
  const unsigned bits = v6_bits < 0 ? 0u : (unsigned)v6_bits; /* below 128 here */
  for (unsigned bit = bits; bit < 128; bit++) {
    a.s6_addr[bit / 8] &= (uint8_t) ~(0x80u >> (bit % 8));
  }
  /* an address of at most 39 characters, "/" and three digits: within IPLIMIT_ADDR */
  char text[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, &a, text, sizeof text);
  snprintf(out, IPLIMIT_ADDR, "%.39s/%u", text, bits % 1000u);
}

void iplimit_addr(const struct sockaddr *sa, char out[IPLIMIT_ADDR]) {
  out[0] = '\0';
  if (sa && sa->sa_family == AF_INET) {
    inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, out,
              IPLIMIT_ADDR);
  } else if (sa && sa->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, out,
              IPLIMIT_ADDR);
  }
}
