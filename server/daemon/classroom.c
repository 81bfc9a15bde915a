/* A class out of the box (see classroom.h): the teacher token of the data directory, and this
 * machine's addresses for a class on its network. */
#define _GNU_SOURCE
#include "classroom.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

int classroom_teacher_token(const char *data_dir, char *token, size_t size, bool *made, char *why,
                            size_t whylen) {
  char path[4200];
  snprintf(path, sizeof path, "%s/teacher.token", data_dir);
  *made = false;
  FILE *f = fopen(path, "r");
  if (f) {
    const bool got = fgets(token, (int)size, f) != NULL;
    fclose(f);
    token[got ? strcspn(token, " \t\r\n") : 0] = '\0';
    if (strlen(token) < 16) {
      snprintf(why, whylen, "'%s' holds no token of 16+ characters: remove it to make one anew",
               path);
      return -1;
    }
    return 0;
  }
  unsigned char bytes[16];
  if (size < 2 * sizeof bytes + 1 || getrandom(bytes, sizeof bytes, 0) != (ssize_t)sizeof bytes) {
    snprintf(why, whylen, "no random bytes for a teacher token");
    return -1;
  }
  for (size_t k = 0; k < sizeof bytes; k++) {
    snprintf(token + 2 * k, 3, "%02x", bytes[k]);
  }
  /* only this user reads it: it creates classes */
  const int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    snprintf(why, whylen, "cannot write '%s': %s", path, strerror(errno));
    return -1;
  }
  char line[64];
  const int n = snprintf(line, sizeof line, "%s\n", token);
  const bool ok = write(fd, line, (size_t)n) == n;
  if (close(fd) != 0 || !ok) {
    snprintf(why, whylen, "cannot write '%s'", path);
    unlink(path);
    return -1;
  }
  *made = true;
  return 0;
}

static void add_name(char *out, size_t size, const char *name) {
  const size_t len = strlen(out);
  if (*name && len + strlen(name) + 2 < size) {
    snprintf(out + len, size - len, "%s%s", len ? "," : "", name);
  }
}

/* Each IPv4 address of an interface that is up, loopback or not, in turn. */
static void each_address(bool loopback, void (*fn)(const char *, bool, void *), void *ctx) {
  struct ifaddrs *all = NULL;
  if (getifaddrs(&all) != 0) {
    return;
  }
  for (const struct ifaddrs *a = all; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || !(a->ifa_flags & IFF_UP) ||
        (!loopback && (a->ifa_flags & IFF_LOOPBACK))) {
      continue;
    }
    char text[INET_ADDRSTRLEN];
    const struct in_addr in = ((const struct sockaddr_in *)(const void *)a->ifa_addr)->sin_addr;
    if (inet_ntop(AF_INET, &in, text, sizeof text)) {
      const uint32_t h = ntohl(in.s_addr);
      /* 10/8, 172.16/12, 192.168/16: a school's network */
      const bool lan = (h >> 24) == 10 || (h >> 20) == 0xac1 || (h >> 16) == 0xc0a8;
      fn(text, lan, ctx);
    }
  }
  freeifaddrs(all);
}

typedef struct list_ctx {
  char *out;
  size_t size;
} list_ctx;

static void list_one(const char *address, bool lan, void *ctx) {
  (void)lan;
  const list_ctx *l = ctx;
  add_name(l->out, l->size, address);
}

void classroom_hosts(char *out, size_t size) {
  out[0] = '\0';
  add_name(out, size, "localhost");
  list_ctx l = {out, size};
  each_address(true, list_one, &l);
  char host[256] = "";
  if (gethostname(host, sizeof host - 1) == 0 && host[0]) {
    host[sizeof host - 1] = '\0';
    add_name(out, size, host);
    if (!strchr(host, '.')) {
      char local[sizeof host + 8];
      snprintf(local, sizeof local, "%s.local", host);
      add_name(out, size, local);
    }
  }
}

typedef struct pick_ctx {
  char any[INET_ADDRSTRLEN], lan[INET_ADDRSTRLEN];
} pick_ctx;

static void pick_one(const char *address, bool lan, void *ctx) {
  pick_ctx *p = ctx;
  char *slot = lan ? p->lan : p->any;
  if (!slot[0]) {
    snprintf(slot, INET_ADDRSTRLEN, "%s", address);
  }
}

void classroom_address(char *out, size_t size) {
  pick_ctx p = {"", ""};
  each_address(false, pick_one, &p);
  snprintf(out, size, "%s", p.lan[0] ? p.lan : p.any[0] ? p.any : "127.0.0.1");
}
