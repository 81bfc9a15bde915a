/* grainlabd: the grainlab daemon. Hosts sessions (one sandboxed worker each), serves the REST API
 * and the web client, and prints "listening http=PORT ws=PORT" once it accepts connections. */
#define _GNU_SOURCE
#include "http.h"
#include "log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct config {
  char bind[64];
  long http_port, ws_port;
  char data_dir[PATH_MAX], static_dir[PATH_MAX], admin_token_file[PATH_MAX];
  long max_sessions, max_grains, max_viewers, worker_memory_mb, worker_threads;
  long ws_public_port; /* what browsers connect to: -1 the ws port, 0 the page's own origin */
} config;

static int usage_error(const char *fmt, const char *a, const char *b) {
  fprintf(stderr, "grainlabd: error: ");
  fprintf(stderr, fmt, a, b);
  fputc('\n', stderr);
  return 2;
}

static int set_long(const char *name, const char *value, long lo, long hi, long *out) {
  char *end = NULL;
  errno = 0;
  const long v = strtol(value, &end, 10);
  if (!*value || *end || errno || v < lo || v > hi) {
    char range[64];
    snprintf(range, sizeof range, "%ld..%ld", lo, hi);
    return usage_error("%s needs a whole number in %s", name, range);
  }
  *out = v;
  return 0;
}

/* One setting by name (flags and the config file share these names). */
static int apply(config *c, const char *name, const char *value) {
  if (strcmp(name, "bind") == 0) {
    struct in_addr a;
    if (inet_pton(AF_INET, value, &a) != 1) {
      return usage_error("bind: '%s' is not an IPv4 address%s", value, "");
    }
    snprintf(c->bind, sizeof c->bind, "%s", value);
    return 0;
  }
  if (strcmp(name, "http-port") == 0) {
    return set_long(name, value, 0, 65535, &c->http_port);
  }
  if (strcmp(name, "ws-port") == 0) {
    return set_long(name, value, 0, 65535, &c->ws_port);
  }
  if (strcmp(name, "ws-public-port") == 0) {
    return set_long(name, value, -1, 65535, &c->ws_public_port);
  }
  if (strcmp(name, "max-sessions") == 0) {
    return set_long(name, value, 1, 10000, &c->max_sessions);
  }
  if (strcmp(name, "max-grains") == 0) {
    return set_long(name, value, 1, GRN_MAX_GRAINS, &c->max_grains);
  }
  if (strcmp(name, "max-viewers") == 0) {
    return set_long(name, value, 1, 100000, &c->max_viewers);
  }
  if (strcmp(name, "worker-memory-mb") == 0) {
    return set_long(name, value, 64, 1 << 20, &c->worker_memory_mb);
  }
  if (strcmp(name, "log-level") == 0) {
    const int level = log_parse_level(value);
    if (level < 0) {
      return usage_error("log-level: '%s' is not debug, info, warn or error%s", value, "");
    }
    log_set_level((log_level)level);
    return 0;
  }
  if (strcmp(name, "worker-threads") == 0) {
    return set_long(name, value, 1, 64, &c->worker_threads);
  }
  char *dst = strcmp(name, "data-dir") == 0           ? c->data_dir
              : strcmp(name, "static-dir") == 0       ? c->static_dir
              : strcmp(name, "admin-token-file") == 0 ? c->admin_token_file
                                                      : NULL;
  if (!dst) {
    return usage_error("unknown setting '%s'%s", name, "");
  }
  if (strlen(value) >= PATH_MAX) {
    return usage_error("%s: path too long%s", name, "");
  }
  snprintf(dst, PATH_MAX, "%s", value);
  return 0;
}

/* "name = value" lines; '#' starts a comment. */
static int read_config(config *c, const char *file) {
  FILE *f = fopen(file, "r");
  if (!f) {
    return usage_error("cannot read config '%s': %s", file, strerror(errno));
  }
  char line[PATH_MAX + 64];
  int rc = 0;
  while (rc == 0 && fgets(line, sizeof line, f)) {
    char *hash = strchr(line, '#');
    if (hash) {
      *hash = '\0';
    }
    char name[64], value[PATH_MAX];
    if (sscanf(line, " %63[a-z-] = %4095s", name, value) == 2) {
      rc = apply(c, name, value);
    } else if (strspn(line, " \t\r\n") != strlen(line)) {
      rc = usage_error("config '%s': cannot read line '%s'", file, line);
    }
  }
  fclose(f);
  return rc;
}

/* The worker executable sits next to this one. */
static void sibling(char *out, size_t size, const char *name) {
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  self[n > 0 ? n : 0] = '\0';
  snprintf(out, size, "%s/%s", dirname(self), name);
}

int main(int argc, char **argv) {
  config c = {"127.0.0.1", 8080, 8081, "./data", "web_client", "", 32, 20000, 100, 1024, 1, -1};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0) {
      puts("usage: grainlabd [--config FILE] [--bind ADDR] [--http-port N] [--ws-port N]\n"
           "                 [--data-dir DIR] [--static-dir DIR] [--admin-token-file FILE]\n"
           "                 [--max-sessions N] [--max-grains N] [--max-viewers N]\n"
           "                 [--worker-memory-mb N] [--worker-threads N] [--log-level LEVEL]\n"
           "                 [--ws-public-port N]   (port 0: any free; ws-public-port 0: the\n"
           "                 page's own origin, behind a proxy that forwards /ws/)");
      return 0;
    }
    if (strncmp(argv[i], "--", 2) != 0 || i + 1 >= argc) {
      return usage_error("unexpected argument '%s'%s", argv[i], i + 1 >= argc ? " (no value)" : "");
    }
    const int rc = strcmp(argv[i], "--config") == 0 ? read_config(&c, argv[i + 1])
                                                    : apply(&c, argv[i] + 2, argv[i + 1]);
    if (rc) {
      return rc;
    }
    i++;
  }
  if (mkdir(c.data_dir, 0750) != 0 && errno != EEXIST) {
    fprintf(stderr, "grainlabd: error: cannot create data dir '%s': %s\n", c.data_dir,
            strerror(errno));
    return 1;
  }
  http_server srv;
  memset(&srv, 0, sizeof srv);
  if (*c.admin_token_file) {
    FILE *f = fopen(c.admin_token_file, "r");
    if (!f || !fgets(srv.admin_token, sizeof srv.admin_token, f)) {
      fprintf(stderr, "grainlabd: error: cannot read the admin token file\n");
      return 2;
    }
    fclose(f);
    srv.admin_token[strcspn(srv.admin_token, " \t\r\n")] = '\0';
    if (strlen(srv.admin_token) < 16) {
      fprintf(stderr, "grainlabd: error: the admin token must have at least 16 characters\n");
      return 2;
    }
  }
  snprintf(srv.static_dir, sizeof srv.static_dir, "%s", c.static_dir);
  snprintf(srv.data_dir, sizeof srv.data_dir, "%s", c.data_dir);
  char worker[PATH_MAX];
  sibling(worker, sizeof worker, "grainlab-worker");
  const sess_limits limits = {(int)c.max_sessions,
                              (int)c.max_grains,
                              (uint64_t)c.worker_memory_mb << 20,
                              (int)c.worker_threads,
                              (int)c.max_viewers,
                              0,
                              2e7,
                              1800};
  char dbpath[PATH_MAX + 16], why_db[300];
  snprintf(dbpath, sizeof dbpath, "%s/grainlab.db", c.data_dir);
  /* SIGTERM and SIGINT are taken by sigwait below: blocked before any thread starts (the store's
   * writer is the first), so that every thread inherits the mask. A thread that left them
   * unblocked would take a second SIGTERM, which arrives while main no longer waits, and its
   * default action would end the daemon mid-shutdown with runs still open. */
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);
  store *st = store_open(dbpath, why_db, sizeof why_db);
  if (!st) {
    fprintf(stderr, "grainlabd: error: store %s: %s\n", dbpath, why_db);
    return 1;
  }
  if (store_interrupted(st) > 0) {
    log_msg(LOG_WARN, "runs_interrupted",
            "%d run(s) left open by an earlier stop closed as interrupted", store_interrupted(st));
  }
  srv.store = st;
  srv.reg = sess_registry_new(&limits, worker, st);

  struct sockaddr_in ha = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c.http_port)};
  inet_pton(AF_INET, c.bind, &ha.sin_addr);
  signal(SIGPIPE, SIG_IGN);
  char why[160];
  ws_server *ws = ws_start(srv.reg, c.bind, (int)c.ws_port, why, sizeof why);
  if (!ws) {
    fprintf(stderr, "grainlabd: error: %s\n", why);
    return 1;
  }
  srv.ws = ws;
  srv.ws_public_port = c.ws_public_port < 0 ? ws_port(ws) : (int)c.ws_public_port;
  if (http_start(&srv, (struct sockaddr *)&ha, 256) != 0) {
    fprintf(stderr, "grainlabd: error: cannot serve HTTP on %s:%ld\n", c.bind, c.http_port);
    return 1;
  }
  __atomic_store_n(&srv.ready, true, __ATOMIC_RELEASE);
  printf("listening http=%u ws=%d\n", srv.port, ws_port(ws));
  log_msg(LOG_INFO, "listening", "http=%s:%u ws=%s:%d db=%s", c.bind, srv.port, c.bind, ws_port(ws),
          dbpath);
  fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  log_msg(LOG_INFO, "stopping", "signal %d: ending every session", sig);
  /* stop accepting, then end every session cleanly */
  __atomic_store_n(&srv.ready, false, __ATOMIC_RELEASE);
  http_stop(&srv);
  ws_stop(ws);
  sess_registry_free(srv.reg);
  ws_free(ws);
  store_close(st);
  log_msg(LOG_INFO, "stopped", "every run closed and the store flushed");
  return 0;
}
