/* Placement across a cluster's nodes (place.h): a thread asks each peer's /readyz once a second
 * with libcurl; a choice reads the figures last heard, none older than PLACE_STALE_S. */
#define _GNU_SOURCE
#include "place.h"
#include "log.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PLACE_URL_MAX 200
#define PLACE_POLL_S 1.0
#define PLACE_STALE_S 3.0 /* a peer not heard from this long is not chosen: it may be down */
#define PLACE_BODY_MAX 4096

/* A figure a peer sends may predate sessions placed there a moment ago (the client has yet to
 * follow the 307, or the answer was on its way): those placed within this long are counted on
 * top of every figure, once too often at worst, so that a burst of creations cannot fill a node
 * that looked as if it had room. */
#define PLACE_PENDING_S 2.0
#define PLACE_PENDING 32

typedef struct placed {
  double at; /* monotonic seconds; 0 none */
  int need;
  double work;
} placed;

typedef struct peer {
  char url[PLACE_URL_MAX + 16]; /* base + "/readyz" */
  place_load fig;
  double heard;               /* monotonic seconds of the last good answer; 0 never */
  bool self;                  /* it answered as this node */
  bool down;                  /* told in the log once per outage */
  placed sent[PLACE_PENDING]; /* the latest placements here, a ring */
  int next_sent;
} peer;

struct place {
  pthread_mutex_t lock;
  pthread_cond_t wake;
  pthread_t thread;
  bool stop;
  char self[NODE_ID_MAX + 1];
  peer peers[PLACE_PEERS_MAX];
  int n;
};

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* a node's load once it takes work grain-steps per second */
static double load_after(const place_load *a, double work) {
  return a->load + work / (a->cores > 0 ? a->cores : 1) / 1e6;
}

typedef struct body {
  char text[PLACE_BODY_MAX];
  size_t len;
} body;

static size_t collect(char *data, size_t size, size_t n, void *ctx) {
  body *b = ctx;
  const size_t k = size * n;
  if (b->len + k >= sizeof b->text) {
    return 0; /* a /readyz is small: a longer answer is not one, and the transfer stops */
  }
  memcpy(b->text + b->len, data, k);
  b->len += k;
  b->text[b->len] = '\0';
  return k;
}

/* One peer's figure; false when it does not answer, is not ready, or says something else. */
static bool ask(CURL *curl, const char *url, place_load *out) {
  body b = {.len = 0};
  curl_easy_setopt(curl, CURLOPT_URL, url);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 500L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 1000L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http");
  long status = 0;
  if (curl_easy_perform(curl) != CURLE_OK ||
      curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK || status != 200) {
    return false;
  }
  json_t *j = json_loadb(b.text, b.len, 0, NULL);
  const char *node = json_string_value(json_object_get(j, "node"));
  const json_t *sessions = json_object_get(j, "sessions"),
               *max_sessions = json_object_get(j, "max_sessions"),
               *load = json_object_get(j, "load"), *cores = json_object_get(j, "cores");
  const bool ok = node && node_id_ok(node) && json_is_integer(sessions) &&
                  json_is_integer(max_sessions) && json_is_number(load) && json_is_integer(cores) &&
                  json_integer_value(cores) >= 1 && json_integer_value(cores) <= 1 << 16;
  if (ok) {
    snprintf(out->node, sizeof out->node, "%s", node);
    out->sessions = (int)json_integer_value(sessions);
    out->max_sessions = (int)json_integer_value(max_sessions);
    out->load = json_number_value(load);
    out->cores = (int)json_integer_value(cores);
  }
  json_decref(j);
  return ok;
}

static void *poll_peers(void *arg) {
  place *p = arg;
  CURL *curl = curl_easy_init();
  pthread_mutex_lock(&p->lock);
  while (!p->stop) {
    for (int i = 0; i < p->n && !p->stop && curl; i++) {
      char url[sizeof p->peers[i].url];
      snprintf(url, sizeof url, "%s", p->peers[i].url);
      pthread_mutex_unlock(&p->lock); /* a slow peer must not hold up a choice */
      place_load fig;
      const bool ok = ask(curl, url, &fig);
      pthread_mutex_lock(&p->lock);
      peer *q = &p->peers[i];
      if (ok) {
        q->self = strcmp(fig.node, p->self) == 0;
        q->fig = fig;
        q->heard = mono();
        for (int k = 0; k < PLACE_PENDING; k++) {
          if (q->sent[k].at > 0.0 && q->heard - q->sent[k].at <= PLACE_PENDING_S) {
            q->fig.sessions += q->sent[k].need;
            q->fig.load = load_after(&q->fig, q->sent[k].work);
          }
        }
        if (q->down) {
          log_msg(LOG_INFO, "peer_up", "node %s at %s answers again", fig.node, url);
        }
        q->down = false;
      } else if (!q->down && q->heard > 0) {
        q->down = true;
        log_msg(LOG_WARN, "peer_down", "node %s at %s does not answer /readyz: not placing there",
                q->fig.node, url);
      }
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)PLACE_POLL_S;
    pthread_cond_timedwait(&p->wake, &p->lock, &until);
  }
  pthread_mutex_unlock(&p->lock);
  if (curl) {
    curl_easy_cleanup(curl);
  }
  return NULL;
}

place *place_start(const char *peers, const char *self, char *why, size_t whylen) {
  place *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(why, whylen, "out of memory");
    return NULL;
  }
  snprintf(p->self, sizeof p->self, "%s", self);
  const char *at = peers;
  while (*at) {
    const size_t len = strcspn(at, ",");
    if (p->n == PLACE_PEERS_MAX) {
      snprintf(why, whylen, "more than %d peers", PLACE_PEERS_MAX);
      free(p);
      return NULL;
    }
    /* http://host:port and nothing else: the list is the operator's, but a typo must show */
    char url[PLACE_URL_MAX + 1];
    snprintf(url, sizeof url, "%.*s", (int)(len < PLACE_URL_MAX ? len : PLACE_URL_MAX), at);
    const char *host = url + 7;
    if (len > PLACE_URL_MAX || strncmp(url, "http://", 7) != 0 || !*host ||
        strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]") !=
            strlen(host)) {
      snprintf(why, whylen, "peer '%.60s' is not http://HOST:PORT", url);
      free(p);
      return NULL;
    }
    snprintf(p->peers[p->n++].url, sizeof p->peers[0].url, "%s/readyz", url);
    at += len + (at[len] == ',');
  }
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
    snprintf(why, whylen, "libcurl did not start");
    free(p);
    return NULL;
  }
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->wake, NULL);
  if (pthread_create(&p->thread, NULL, poll_peers, p) != 0) {
    snprintf(why, whylen, "cannot start the placement thread");
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    free(p);
    return NULL;
  }
  return p;
}

void place_stop(place *p) {
  if (!p) {
    return;
  }
  pthread_mutex_lock(&p->lock);
  p->stop = true;
  pthread_cond_signal(&p->wake);
  pthread_mutex_unlock(&p->lock);
  pthread_join(p->thread, NULL);
  pthread_cond_destroy(&p->wake);
  pthread_mutex_destroy(&p->lock);
  curl_global_cleanup();
  free(p);
}

/* a before b: room for need first, then the lower load after, then more room */
static bool better(const place_load *a, const place_load *b, int need, double work) {
  const bool ra = a->max_sessions - a->sessions >= need, rb = b->max_sessions - b->sessions >= need;
  if (ra != rb) {
    return ra;
  }
  if (load_after(a, work) != load_after(b, work)) {
    return load_after(a, work) < load_after(b, work);
  }
  return a->max_sessions - a->sessions > b->max_sessions - b->sessions;
}

void place_choose(place *p, const place_load *self, int need, double work,
                  char out[NODE_ID_MAX + 1]) {
  snprintf(out, NODE_ID_MAX + 1, "%s", self->node);
  if (!p) {
    return;
  }
  pthread_mutex_lock(&p->lock);
  const double now = mono();
  const place_load *best = self;
  peer *chosen = NULL;
  for (int i = 0; i < p->n; i++) {
    peer *q = &p->peers[i];
    if (!q->self && q->heard > 0 && now - q->heard <= PLACE_STALE_S &&
        better(&q->fig, best, need, work)) {
      chosen = q;
      best = &q->fig;
    }
  }
  if (chosen) {
    snprintf(out, NODE_ID_MAX + 1, "%s", chosen->fig.node);
    chosen->fig.sessions += need;
    chosen->fig.load = load_after(&chosen->fig, work);
    chosen->sent[chosen->next_sent] = (placed){now, need, work};
    chosen->next_sent = (chosen->next_sent + 1) % PLACE_PENDING;
  }
  pthread_mutex_unlock(&p->lock);
}

int place_peers(place *p, place_load *out, int max) {
  int k = 0;
  if (!p) {
    return 0;
  }
  pthread_mutex_lock(&p->lock);
  const double now = mono();
  for (int i = 0; i < p->n && k < max; i++) {
    if (!p->peers[i].self && p->peers[i].heard > 0 && now - p->peers[i].heard <= PLACE_STALE_S) {
      out[k++] = p->peers[i].fig;
    }
  }
  pthread_mutex_unlock(&p->lock);
  return k;
}
