/* grainlabd: the grainlab daemon. Hosts sessions (one sandboxed worker each), serves the REST API
 * and the web client, and prints "listening http=PORT ws=PORT" once it accepts connections. */
#define _GNU_SOURCE
#include "allow.h"
#include "classroom.h"
#include "http.h"
#include "log.h"
#include "settled.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <malloc.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define TEXT_MAX 1024 /* a list setting's characters */

typedef struct config {
  char bind[64], node[NODE_ID_MAX + 1];
  long http_port, ws_port;
  char data_dir[PATH_MAX], static_dir[PATH_MAX], admin_token_file[PATH_MAX],
      create_token_file[PATH_MAX], teacher_token_file[PATH_MAX];
  char results_db[PATH_MAX]; /* a postgresql:// URI; may hold a password: never printed */
  long max_sessions, max_grains, max_viewers, worker_memory_mb, worker_threads;
  long ws_public_port; /* what browsers connect to: -1 the ws port, 0 the page's own origin */
  long max_per_client, create_rate, guess_rate, max_connections, per_ip, http_timeout, ws_ping;
  long v6_bits;
  long idle_seconds;
  long replay_slots, snapshot_cache_mb, settled_cache_mb, held_reply_mb, class_keep_s;
  long teacher_link, classroom;
  double step_budget;
  char allowed_hosts[TEXT_MAX], allowed_origins[TEXT_MAX], trusted_proxies[TEXT_MAX];
  char peers[TEXT_MAX];
} config;

typedef enum setting_kind {
  SET_LONG,
  SET_DOUBLE,
  SET_PATH,
  SET_TEXT,
  SET_ADDR,
  SET_NODE,
  SET_PEERS,
  SET_DB,
  SET_LEVEL
} setting_kind;

/* Every setting, described once: the flags, the config file, --help and the defaults all read
 * this table (a default is applied like any value, so it passes the same checks). */
typedef struct setting {
  const char *name, *arg;
  setting_kind kind;
  double lo, hi; /* SET_LONG, SET_DOUBLE */
  const char *def;
  size_t at; /* where it goes in the config (unused for SET_LEVEL) */
  const char *help;
} setting;

#define AT(f) offsetof(config, f)
static const setting settings[] = {
    {"bind", "ADDR", SET_ADDR, 0, 0, "127.0.0.1", AT(bind), "IPv4 address to listen on"},
    {"node", "ID", SET_NODE, 0, 0, "", AT(node),
     "this node's id in a cluster (1-8 of a-z, 0-9; a letter first): it prefixes every session "
     "and class id and join code, so a router sends each request to its node"},
    {"peers", "LIST", SET_PEERS, 0, 0, "", AT(peers),
     "the cluster's nodes as http://HOST:PORT, comma-separated (this node's own may be among "
     "them): new sessions and classes go to the one with room and the least load (needs node)"},
    {"results-db", "URI", SET_DB, 0, 0, "", AT(results_db),
     "a cluster's results database, postgresql://user@host:port/dbname (needs --node; the "
     "password may also come from PGPASSWORD or ~/.pgpass): every run, its results, sessions and "
     "classes ship there through an outbox, and GET /api/runs lists the whole cluster's runs; "
     "empty: this node's runs only"},
    {"http-port", "N", SET_LONG, 0, 65535, "8080", AT(http_port), "HTTP port (0: any free)"},
    {"ws-port", "N", SET_LONG, 0, 65535, "8081", AT(ws_port), "websocket port (0: any free)"},
    {"ws-public-port", "N", SET_LONG, -1, 65535, "-1", AT(ws_public_port),
     "websocket port told to browsers (-1: ws-port; 0: the page's own origin, behind a proxy "
     "that forwards /ws/)"},
    {"data-dir", "DIR", SET_PATH, 0, 0, "./data", AT(data_dir), "the store and its backups"},
    {"static-dir", "DIR", SET_PATH, 0, 0, "web_client", AT(static_dir), "the web client's files"},
    {"admin-token-file", "FILE", SET_PATH, 0, 0, "", AT(admin_token_file),
     "admin token (16+ characters; empty: no admin)"},
    {"create-token-file", "FILE", SET_PATH, 0, 0, "", AT(create_token_file),
     "when set, creating a session (also a replay or fork) needs this token or the admin token "
     "(16+ characters; for public deployments)"},
    {"teacher-token-file", "FILE", SET_PATH, 0, 0, "", AT(teacher_token_file),
     "when set, this token (16+ characters) creates classes, as the admin token does; empty: "
     "see teacher-link"},
    {"teacher-link", "0|1", SET_LONG, 0, 1, "1", AT(teacher_link),
     "1: with no teacher-token-file and no admin-token-file, the teacher token is the one in "
     "DATA_DIR/teacher.token, made on first start and kept, and a link to /teach carrying it is "
     "printed; 0: only those files' tokens create classes"},
    {"classroom", "0|1", SET_LONG, 0, 1, "0", AT(classroom),
     "1: serve a class on this machine's network: bind 0.0.0.0, allowed-hosts this machine's "
     "addresses and name, and per-address limits for a class behind one address (sessions 64, "
     "creations 120 a minute, guesses 120, connections 512); settings given stand; the address "
     "students open is printed"},
    {"max-sessions", "N", SET_LONG, 1, 10000, "32", AT(max_sessions), "sessions at once"},
    {"max-sessions-per-client", "N", SET_LONG, 1, 10000, "4", AT(max_per_client),
     "live sessions one IP address may have created (admin: no limit)"},
    {"create-rate", "N", SET_LONG, 1, 100000, "10", AT(create_rate),
     "sessions one IP address may create per minute (admin: no limit)"},
    {"join-guess-rate", "N", SET_LONG, 1, 100000, "20", AT(guess_rate),
     "failed session lookups (ids, join codes) one IP address may make per minute"},
    {"max-grains", "N", SET_LONG, 1, GRN_MAX_GRAINS, "20000", AT(max_grains),
     "particles per session"},
    {"max-viewers", "N", SET_LONG, 1, 100000, "100", AT(max_viewers), "viewers per session"},
    {"worker-memory-mb", "N", SET_LONG, 64, 1 << 20, "1024", AT(worker_memory_mb),
     "address space of one session's worker"},
    {"worker-threads", "N", SET_LONG, 1, 64, "1", AT(worker_threads), "engine threads per worker"},
    {"step-budget", "N", SET_DOUBLE, 1e3, 1e12, "20000000", AT(step_budget),
     "grain-steps a single `step n` action may cost"},
    {"replay-slots", "N", SET_LONG, 1, 64, "2", AT(replay_slots),
     "stored runs replayed at once for their snapshots, one per IP address at a time (429 "
     "replay_busy past either)"},
    {"snapshot-cache-mb", "N", SET_LONG, 1, 1 << 20, "256", AT(snapshot_cache_mb),
     "finished runs' snapshots kept in the data directory, made once each (the oldest go past "
     "this)"},
    /* a default scene's settled state is about 1.2 MB (3000 grains, ~400 bytes each with their
     * contacts): 64 MB keeps ~30 definitions, a week of classes with their own defaults */
    {"settled-cache-mb", "N", SET_LONG, 0, 1 << 20, "64", AT(settled_cache_mb),
     "settled states kept in the data directory (settled/) and shared: a session whose scene, "
     "parameters and seed another has settled starts from its state, interactive at once (the "
     "least recently used go past this; 0: none kept, every session settles)"},
    {"max-held-reply-mb", "N", SET_LONG, 1, 1 << 20, "64", AT(held_reply_mb),
     "bytes of large replies (snapshots, exports) held for clients still reading them; past "
     "it, 503 server_busy with Retry-After"},
    {"class-memory", "S", SET_LONG, 1, 604800, "3600", AT(class_keep_s),
     "seconds an ended class stays in memory; the store keeps it and answers for it after"},
    {"idle-timeout", "S", SET_LONG, 0, 604800, "1800", AT(idle_seconds),
     "seconds without a controller's change and without viewers before a session ends, its run "
     "recorded as idle (0: never)"},
    {"allowed-hosts", "LIST", SET_TEXT, 0, 0, "", AT(allowed_hosts),
     "Host names the daemon answers, any port, against DNS rebinding (comma list; *: any; "
     "empty: localhost, 127.0.0.1, [::1] and the bind address)"},
    {"allowed-origins", "LIST", SET_TEXT, 0, 0, "", AT(allowed_origins),
     "origins (scheme://host[:port]) whose pages may open websockets (comma list; *: any; "
     "empty: those on an allowed host); clients that send no Origin pass"},
    {"trusted-proxies", "LIST", SET_TEXT, 0, 0, "", AT(trusted_proxies),
     "addresses of reverse proxies (e.g. 127.0.0.1 for nginx on the same host) whose "
     "X-Forwarded-For names the client for the per-client limits; they are exempt from "
     "max-connections-per-ip (comma list; empty: none)"},
    {"max-connections", "N", SET_LONG, 16, 60000, "2048", AT(max_connections),
     "HTTP connections at once (one thread each)"},
    /* a school behind one address: 30 browsers open ~6 HTTP connections each while a page loads
     * (1 once it polls), and a websocket each; 256 is an eighth of max-connections */
    {"max-connections-per-ip", "N", SET_LONG, 1, 60000, "256", AT(per_ip),
     "connections one IP address may hold, HTTP and websocket each"},
    {"ipv6-prefix", "BITS", SET_LONG, 16, 128, "64", AT(v6_bits),
     "an IPv6 client is its address's first BITS bits for the per-client limits (a home or "
     "school network holds a whole /64; 128: each address alone)"},
    {"http-timeout", "S", SET_LONG, 1, 3600, "15", AT(http_timeout),
     "seconds an HTTP connection may stay silent (header or body) and a request body may take; "
     "also the websocket handshake's"},
    {"ws-ping-seconds", "S", SET_LONG, 1, 3600, "20", AT(ws_ping),
     "websocket ping interval; a viewer silent for twice this (no pong) is dropped"},
    {"log-level", "LEVEL", SET_LEVEL, 0, 0, "info", 0, "debug, info, warn or error"},
};
#undef AT
#define SETTINGS (sizeof settings / sizeof settings[0])

static int usage_error(const char *fmt, const char *a, const char *b) {
  fprintf(stderr, "grainlabd: error: ");
  fprintf(stderr, fmt, a, b);
  fputc('\n', stderr);
  return 2;
}

/* One setting by name (flags and the config file share these names). */
static int apply(config *c, const char *name, const char *value) {
  const setting *s = NULL;
  for (size_t i = 0; i < SETTINGS && !s; i++) {
    s = strcmp(settings[i].name, name) == 0 ? &settings[i] : NULL;
  }
  if (!s) {
    return usage_error("unknown setting '%s'%s (see --help)", name, "");
  }
  char *at = (char *)c + s->at;
  char *end = NULL;
  char range[96];
  errno = 0;
  switch (s->kind) {
  case SET_LONG: {
    const long v = strtol(value, &end, 10);
    if (!*value || *end || errno || v < (long)s->lo || v > (long)s->hi) {
      snprintf(range, sizeof range, "%.0f..%.0f", s->lo, s->hi);
      return usage_error("%s needs a whole number in %s", name, range);
    }
    memcpy(at, &v, sizeof v);
    return 0;
  }
  case SET_DOUBLE: {
    const double v = strtod(value, &end);
    if (!*value || *end || errno || !(v >= s->lo && v <= s->hi)) {
      snprintf(range, sizeof range, "%g..%g", s->lo, s->hi);
      return usage_error("%s needs a number in %s", name, range);
    }
    memcpy(at, &v, sizeof v);
    return 0;
  }
  case SET_ADDR: {
    struct in_addr a;
    if (inet_pton(AF_INET, value, &a) != 1) {
      return usage_error("%s: '%s' is not an IPv4 address", name, value);
    }
    snprintf(at, sizeof c->bind, "%s", value);
    return 0;
  }
  case SET_NODE:
    if (*value && !node_id_ok(value)) {
      return usage_error("%s: '%s' is not 1-8 of a-z and 0-9 starting with a letter", name, value);
    }
    snprintf(at, sizeof c->node, "%s", value);
    return 0;
  case SET_PEERS:
    if (strlen(value) >= TEXT_MAX) {
      return usage_error("%s: list too long%s", name, "");
    }
    snprintf(at, TEXT_MAX, "%s", value); /* checked when placement starts, with the node known */
    return 0;
  case SET_DB: {
    char why[256];
    if (strlen(value) >= PATH_MAX) {
      return usage_error("%s: too long%s", name, "");
    }
    /* the message names what is wrong, never the value: it may hold a password */
    if (*value && store_results_db_check(value, why, sizeof why) != 0) {
      return usage_error("%s: %s", name, why);
    }
    snprintf(at, PATH_MAX, "%s", value);
    return 0;
  }
  case SET_LEVEL: {
    const int level = log_parse_level(value);
    if (level < 0) {
      return usage_error("%s: '%s' is not debug, info, warn or error", name, value);
    }
    log_set_level((log_level)level);
    return 0;
  }
  case SET_TEXT: {
    allow_list a;
    char why[160];
    if (strlen(value) >= TEXT_MAX || allow_parse(&a, value, why, sizeof why) != 0) {
      return usage_error("%s: %s", name, strlen(value) >= TEXT_MAX ? "list too long" : why);
    }
    snprintf(at, TEXT_MAX, "%s", value);
    return 0;
  }
  case SET_PATH:
    break;
  }
  if (strlen(value) >= PATH_MAX) {
    return usage_error("%s: path too long%s", name, "");
  }
  snprintf(at, PATH_MAX, "%s", value);
  return 0;
}

static void help(void) {
  puts("usage: grainlabd [--config FILE] [--SETTING VALUE]...\n"
       "A config file holds \"setting = value\" lines ('#' starts a comment); flags and files\n"
       "apply in order, the last one wins. Settings (default in brackets):");
  for (size_t i = 0; i < SETTINGS; i++) {
    const setting *s = &settings[i];
    char range[96] = "";
    if (s->kind == SET_LONG) {
      snprintf(range, sizeof range, ", %.0f..%.0f", s->lo, s->hi);
    } else if (s->kind == SET_DOUBLE) {
      snprintf(range, sizeof range, ", %g..%g", s->lo, s->hi);
    }
    printf("  --%s %s  [%s%s]\n      %s\n", s->name, s->arg, *s->def ? s->def : "none", range,
           s->help);
  }
}

/* What classroom mode sets where a flag or the config file has not (the class behind one NAT:
 * 30 groups and their browsers' connections from one address). */
static const struct {
  const char *name, *value;
} classroom_settings[] = {{"bind", "0.0.0.0"},
                          {"max-sessions-per-client", "64"},
                          {"create-rate", "120"},
                          {"join-guess-rate", "120"},
                          {"max-connections-per-ip", "512"}};

/* Which settings a flag or the config file gave (classroom mode leaves those alone). */
static bool given[SETTINGS];

static int apply_given(config *c, const char *name, const char *value) {
  const int rc = apply(c, name, value);
  for (size_t i = 0; rc == 0 && i < SETTINGS; i++) {
    given[i] = given[i] || strcmp(settings[i].name, name) == 0;
  }
  return rc;
}

static bool was_given(const char *name) {
  for (size_t i = 0; i < SETTINGS; i++) {
    if (strcmp(settings[i].name, name) == 0) {
      return given[i];
    }
  }
  return false;
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
      rc = apply_given(c, name, value);
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

/* A token from the first line of a file (16+ characters); 0, or an error message and 2. */
static int read_token(const char *file, const char *what, char *out, size_t size) {
  FILE *f = fopen(file, "r");
  if (!f || !fgets(out, (int)size, f)) {
    if (f) {
      fclose(f);
    }
    return usage_error("cannot read the %s token file '%s'", what, file);
  }
  fclose(f);
  out[strcspn(out, " \t\r\n")] = '\0';
  if (strlen(out) < 16) {
    return usage_error("the %s token must have at least 16 characters%s", what, "");
  }
  return 0;
}

/* Stops what a start began, in the order a stop ends it: a start that fails once threads run
 * (the store's writer and shipper, the registries' reapers, placement's poller) must not return
 * from main under them, where exit would tear down libraries they are still using. */
static int stop_started(http_server *srv, store *st, ws_server *ws, bool http_on) {
  __atomic_store_n(&srv->ready, false, __ATOMIC_RELEASE);
  if (http_on) {
    http_stop(srv);
  }
  place_stop(srv->place);
  if (ws) {
    ws_stop(ws);
  }
  if (srv->classes) {
    class_registry_stop(srv->classes); /* no class ends sessions from here on */
  }
  if (srv->reg) {
    sess_registry_free(srv->reg);
  }
  if (srv->classes) {
    class_registry_free(srv->classes); /* no session is left to read its class's lock */
  }
  if (ws) {
    ws_free(ws);
  }
  if (st) {
    store_close(st);
  }
  iplimit_free(srv->creates);
  iplimit_free(srv->guesses);
  iplimit_free(srv->conns);
  return 1;
}

int main(int argc, char **argv) {
  /* Every session's pacing thread, the request threads and the store's writer allocate, and
   * glibc gives threads arenas of their own, up to 8 per core, whose free space it keeps: under
   * the soak test's load (30 sessions, a Reset a few times a second) the daemon held 60-68 MB for
   * a live heap of ~10 MB, and growing; with 2 arenas per core, 37-40 MB, still growing by 2 MB
   * a minute as request threads came and went (a CI run failed its flat-RSS check on it); with
   * one per core (2 on its 2 cores), 30-32 MB, flat within 0.3 MB, and every viewer still at 60
   * frames/s. The operator's MALLOC_ARENA_MAX, if set, stands. */
  if (!getenv("MALLOC_ARENA_MAX")) {
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    mallopt(M_ARENA_MAX, cores > 0 ? (int)cores : 2);
  }
  static config c; /* large (paths): not on the stack */
  for (size_t i = 0; i < SETTINGS; i++) {
    if (apply(&c, settings[i].name, settings[i].def) != 0) {
      return 1; /* a bad default: our bug, reported like any bad value */
    }
  }
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0) {
      help();
      return 0;
    }
    if (strncmp(argv[i], "--", 2) != 0 || i + 1 >= argc) {
      return usage_error("unexpected argument '%s'%s", argv[i], i + 1 >= argc ? " (no value)" : "");
    }
    const int rc = strcmp(argv[i], "--config") == 0 ? read_config(&c, argv[i + 1])
                                                    : apply_given(&c, argv[i] + 2, argv[i + 1]);
    if (rc) {
      return rc;
    }
    i++;
  }
  if (c.classroom) {
    for (size_t k = 0; k < sizeof classroom_settings / sizeof classroom_settings[0]; k++) {
      if (!was_given(classroom_settings[k].name)) {
        apply(&c, classroom_settings[k].name, classroom_settings[k].value);
      }
    }
    if (!was_given("allowed-hosts")) {
      classroom_hosts(c.allowed_hosts, sizeof c.allowed_hosts);
    }
  }
  /* each connection is a descriptor: the usual soft limit of 1024 would refuse connections long
   * before max-connections (HTTP) plus the websockets; raised to the hard limit, within reason */
  struct rlimit files;
  const rlim_t want = (rlim_t)(2 * c.max_connections + 4096); /* HTTP, as many websockets, rest */
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < want) {
    files.rlim_cur =
        files.rlim_max != RLIM_INFINITY && files.rlim_max < want ? files.rlim_max : want;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  if (*c.results_db && !*c.node) {
    return usage_error("results-db needs --node: run ids are each node's own, the node's id tells "
                       "them apart in the results database%s",
                       "", "");
  }
  if (mkdir(c.data_dir, 0750) != 0 && errno != EEXIST) {
    fprintf(stderr, "grainlabd: error: cannot create data dir '%s': %s\n", c.data_dir,
            strerror(errno));
    return 1;
  }
  static http_server srv;
  if (*c.admin_token_file &&
      read_token(c.admin_token_file, "admin", srv.admin_token, sizeof srv.admin_token) != 0) {
    return 2;
  }
  if (*c.create_token_file &&
      read_token(c.create_token_file, "create", srv.create_token, sizeof srv.create_token) != 0) {
    return 2;
  }
  if (*c.teacher_token_file && read_token(c.teacher_token_file, "teacher", srv.teacher_token,
                                          sizeof srv.teacher_token) != 0) {
    return 2;
  }
  /* a teacher who edits nothing gets a link, as a notebook server does (issue 31) */
  const bool teacher_link = c.teacher_link && !*c.teacher_token_file && !*c.admin_token_file;
  if (teacher_link) {
    bool made = false;
    char why_token[300];
    if (classroom_teacher_token(c.data_dir, srv.teacher_token, sizeof srv.teacher_token, &made,
                                why_token, sizeof why_token) != 0) {
      fprintf(stderr, "grainlabd: error: the teacher token: %s\n", why_token);
      return 1;
    }
    if (made) {
      log_msg(LOG_INFO, "teacher_token", "made a teacher token in %s/teacher.token", c.data_dir);
    }
  }
  /* who may be talked to: the Host names (by default this machine's own) and, for websockets
   * from browsers, the origins (by default those on an allowed host) */
  static allow_list hosts, origins, proxies;
  char list[TEXT_MAX + 128], why_list[160];
  if (*c.allowed_hosts) {
    snprintf(list, sizeof list, "%s", c.allowed_hosts);
  } else {
    snprintf(list, sizeof list, "localhost,127.0.0.1,[::1]%s%s",
             strcmp(c.bind, "0.0.0.0") == 0 ? "" : ",",
             strcmp(c.bind, "0.0.0.0") == 0 ? "" : c.bind);
  }
  if (allow_parse(&hosts, list, why_list, sizeof why_list) != 0 ||
      allow_parse(&origins, c.allowed_origins, why_list, sizeof why_list) != 0 ||
      allow_parse(&proxies, c.trusted_proxies, why_list, sizeof why_list) != 0) {
    return usage_error("allowed hosts or origins: %s%s", why_list, "");
  }
  if (strcmp(c.bind, "0.0.0.0") == 0 && !*c.allowed_hosts) {
    log_msg(LOG_WARN, "allowed_hosts",
            "bound to every interface but allowed-hosts is not set: only requests for localhost "
            "are answered; set allowed-hosts to the names clients use");
  }
  srv.hosts = &hosts;
  srv.proxies = &proxies;
  srv.conns = iplimit_new(1.0); /* only its counts are used */
  srv.creates = iplimit_new((double)c.create_rate);
  srv.guesses = iplimit_new((double)c.guess_rate);
  if (!srv.creates || !srv.guesses || !srv.conns) {
    fprintf(stderr, "grainlabd: error: out of memory\n");
    return 1;
  }
  srv.max_connections = (unsigned)c.max_connections;
  srv.per_ip = (unsigned)c.per_ip;
  srv.v6_bits = (int)c.v6_bits;
  srv.timeout_s = (unsigned)c.http_timeout;
  snprintf(srv.static_dir, sizeof srv.static_dir, "%s", c.static_dir);
  snprintf(srv.data_dir, sizeof srv.data_dir, "%s", c.data_dir);
  char worker[PATH_MAX];
  sibling(worker, sizeof worker, "grainlab-worker");
  const sess_limits limits = {.max_sessions = (int)c.max_sessions,
                              .max_grains = (int)c.max_grains,
                              .worker_memory = (uint64_t)c.worker_memory_mb << 20,
                              .threads = (int)c.worker_threads,
                              .max_viewers = (int)c.max_viewers,
                              .max_per_client = (int)c.max_per_client,
                              .step_budget = c.step_budget,
                              .idle_timeout_s = (int)c.idle_seconds,
                              .replay_slots = (int)c.replay_slots};
  srv.held_max = (unsigned long long)c.held_reply_mb << 20;
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
  const store_options so = {.node = c.node, .results_db = c.results_db};
  store *st = store_open_with(dbpath, &so, why_db, sizeof why_db);
  if (!st) {
    fprintf(stderr, "grainlabd: error: store %s: %s\n", dbpath, why_db);
    return 1;
  }
  if (store_interrupted(st) > 0) {
    log_msg(LOG_WARN, "runs_interrupted",
            "%d run(s) left open by an earlier stop closed as interrupted", store_interrupted(st));
  }
  srv.store = st;
  srv.reg = sess_registry_new(&limits, c.node, worker, st);
  if (!srv.reg) {
    fprintf(stderr, "grainlabd: error: out of memory\n");
    return stop_started(&srv, st, NULL, false);
  }
  char snaps[PATH_MAX + 16];
  snprintf(snaps, sizeof snaps, "%s/snapshots", c.data_dir);
  snapcache *cache =
      snapcache_open(snaps, (uint64_t)c.snapshot_cache_mb << 20, why_db, sizeof why_db);
  if (!cache) {
    fprintf(stderr, "grainlabd: error: snapshot cache: %s\n", why_db);
    return stop_started(&srv, st, NULL, false);
  }
  sess_set_snapcache(srv.reg, cache);
  if (c.settled_cache_mb > 0) {
    char settled_dir[PATH_MAX + 16];
    snprintf(settled_dir, sizeof settled_dir, "%s/settled", c.data_dir);
    settled *kept =
        settled_open(settled_dir, (uint64_t)c.settled_cache_mb << 20, why_db, sizeof why_db);
    if (!kept) {
      fprintf(stderr, "grainlabd: error: settled states: %s\n", why_db);
      return stop_started(&srv, st, NULL, false);
    }
    sess_set_settled(srv.reg, kept);
  }
  srv.classes = class_registry_new(srv.reg, st, (double)c.create_rate, (double)c.class_keep_s,
                                   why_db, sizeof why_db);
  if (!srv.classes) {
    fprintf(stderr, "grainlabd: error: %s\n", why_db);
    return stop_started(&srv, st, NULL, false);
  }
  if (*c.peers && !*c.node) {
    stop_started(&srv, st, NULL, false);
    return usage_error("peers needs node: placement sends sessions to nodes by id%s%s", "", "");
  }
  if (*c.peers && !(srv.place = place_start(c.peers, c.node, why_db, sizeof why_db))) {
    stop_started(&srv, st, NULL, false);
    return usage_error("peers: %s%s", why_db, "");
  }

  struct sockaddr_in ha = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c.http_port)};
  inet_pton(AF_INET, c.bind, &ha.sin_addr);
  signal(SIGPIPE, SIG_IGN);
  char why[160];
  const ws_options wo = {.hosts = &hosts,
                         .origins = &origins,
                         .proxies = &proxies,
                         .guesses = srv.guesses,
                         .classes = srv.classes,
                         .per_ip = (int)c.per_ip,
                         .v6_bits = (int)c.v6_bits,
                         .ping_s = (int)c.ws_ping,
                         .timeout_s = (int)c.http_timeout};
  ws_server *ws = ws_start(srv.reg, c.bind, (int)c.ws_port, &wo, why, sizeof why);
  if (!ws) {
    fprintf(stderr, "grainlabd: error: %s\n", why);
    return stop_started(&srv, st, NULL, false);
  }
  srv.ws = ws;
  srv.ws_public_port = c.ws_public_port < 0 ? ws_port(ws) : (int)c.ws_public_port;
  if (http_start(&srv, (struct sockaddr *)&ha) != 0) {
    fprintf(stderr, "grainlabd: error: cannot serve HTTP on %s:%ld\n", c.bind, c.http_port);
    return stop_started(&srv, st, ws, false);
  }
  /* the addresses to open: a classroom's on its network, else this machine's own */
  char where[64];
  if (strcmp(c.bind, "0.0.0.0") == 0) {
    classroom_address(where, sizeof where);
  } else {
    snprintf(where, sizeof where, "%s", c.bind);
  }
  if (c.classroom) {
    snprintf(srv.students, sizeof srv.students, "http://%s:%u/join", where, srv.port);
  }
  __atomic_store_n(&srv.ready, true, __ATOMIC_RELEASE);
  printf("listening http=%u ws=%d\n", srv.port, ws_port(ws));
  if (teacher_link) {
    printf("teacher: http://%s:%u/teach#token=%s\n", where, srv.port, srv.teacher_token);
  }
  printf("students: http://%s:%u/join\n", where, srv.port);
  char results_name[256] = "";
  if (*c.results_db) {
    store_results_db_name(c.results_db, results_name, sizeof results_name);
  }
  log_msg(LOG_INFO, "listening", "http=%s:%u ws=%s:%d db=%s%s%s", c.bind, srv.port, c.bind,
          ws_port(ws), dbpath, *results_name ? " results_db=" : "", results_name);
  fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  log_msg(LOG_INFO, "stopping", "signal %d: ending every session", sig);
  /* stop accepting, then end every session cleanly */
  __atomic_store_n(&srv.ready, false, __ATOMIC_RELEASE);
  stop_started(&srv, st, ws, true);
  log_msg(LOG_INFO, "stopped", "every run closed and the store flushed");
  return 0;
}
