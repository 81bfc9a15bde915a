/* grainlabd's HTTP server: REST routes, static client files, health and metrics. */
#ifndef GRAINLAB_HTTP_H
#define GRAINLAB_HTTP_H

#include "allow.h"
#include "class.h"
#include "iplimit.h"
#include "place.h"
#include "sess.h"
#include "static_site.h"
#include "ws.h"

#include <microhttpd.h>
#include <stdbool.h>
#include <sys/socket.h>

typedef struct http_server {
  sess_registry *reg;
  class_registry *classes;
  const ws_server *ws; /* for its figures in /metrics */
  store *store;        /* the runs behind /api/runs */
  int ws_public_port;  /* told to browsers; 0: the page's own origin (a proxy forwards /ws/) */
  char static_dir[4096];
  static_site *site;         /* what of static_dir is served; made by http_start */
  char admin_token[129];     /* empty: no admin */
  char create_token[129];    /* empty: anyone may create sessions */
  char teacher_token[129];   /* creates classes (the admin token does too); empty: none */
  const allow_list *hosts;   /* Host names answered */
  const allow_list *proxies; /* trusted proxies: their X-Forwarded-For names the client */
  iplimit *conns;            /* HTTP connections per address (trusted proxies exempt) */
  iplimit *creates;          /* sessions created, per client */
  iplimit *guesses;          /* failed session lookups, per client (shared with ws) */
  place *place;              /* NULL: no peers, every creation stays here */
  unsigned max_connections, per_ip, timeout_s;
  int v6_bits;         /* an IPv6 client is its address's first v6_bits bits (iplimit_client) */
  char data_dir[4096]; /* backups go to its backups/ folder */
  char students[96];   /* classroom mode: the join address students open; empty: the page's own */
  bool ready;          /* read and written with __atomic builtins: request threads read it */
  /* bytes of replies held for clients still reading them (__atomic), and their bound (0: none) */
  unsigned long long held;
  unsigned long long held_max;
  unsigned long long requests;
  unsigned long long by_status[600]; /* __atomic: responses by HTTP status */
  struct MHD_Daemon *mhd;
  unsigned port; /* bound port, once started */
} http_server;

/* Serve on addr with the connection limits and timeout set in srv. */
int http_start(http_server *srv, const struct sockaddr *addr);
void http_stop(http_server *srv);

#endif
