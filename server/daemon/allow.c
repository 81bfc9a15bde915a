/* Host and Origin allow-lists (see allow.h). */
#define _GNU_SOURCE
#include "allow.h"
#include "iplimit.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char host_chars[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]";

int allow_parse(allow_list *a, const char *list, char *err, size_t errlen) {
  memset(a, 0, sizeof *a);
  const char *p = list;
  while (*p) {
    const size_t n = strcspn(p, ",");
    if (n == 0 || n >= ALLOW_NAME) {
      snprintf(err, errlen, "entries are 1 to %d characters, separated by single commas",
               ALLOW_NAME - 1);
      return -1;
    }
    if (n == 1 && *p == '*') {
      a->any = true;
    } else if (a->n == ALLOW_MAX) {
      snprintf(err, errlen, "at most %d entries", ALLOW_MAX);
      return -1;
    } else {
      char *dst = a->name[a->n++];
      for (size_t i = 0; i < n; i++) {
        const char ch = p[i];
        if (!strchr(host_chars, ch) && ch != '/') {
          snprintf(err, errlen, "'%.*s' is not a host name, address or origin", (int)n, p);
          return -1;
        }
        dst[i] = (char)(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
      }
      dst[n] = '\0';
    }
    p += n;
    if (*p == ',') {
      p++;
      if (!*p) {
        snprintf(err, errlen, "a list may not end with a comma");
        return -1;
      }
    }
  }
  return 0;
}

static bool listed(const allow_list *a, const char *name, size_t n) {
  for (int i = 0; i < a->n; i++) {
    if (strlen(a->name[i]) == n && strncasecmp(a->name[i], name, n) == 0) {
      return true;
    }
  }
  return false;
}

bool allow_host(const allow_list *hosts, const char *host) {
  if (!host || hosts->any) {
    return true;
  }
  size_t n;
  if (host[0] == '[') {
    const char *close = strchr(host, ']');
    if (!close || (close[1] && close[1] != ':')) {
      return false;
    }
    n = (size_t)(close - host) + 1;
  } else {
    n = strcspn(host, ":");
    if (host[n] && strchr(host + n + 1, ':')) {
      return false; /* a bare IPv6 address is not a valid Host */
    }
  }
  const char *port = host + n;
  if (*port && (port[1] == '\0' || strspn(port + 1, "0123456789") != strlen(port + 1))) {
    return false;
  }
  return n > 0 && listed(hosts, host, n);
}

bool allow_origin(const allow_list *origins, const allow_list *hosts, const char *origin) {
  if (!origin) {
    return true;
  }
  if (origins->any) {
    return true;
  }
  if (origins->n > 0) {
    return listed(origins, origin, strlen(origin));
  }
  const char *rest = strncasecmp(origin, "http://", 7) == 0    ? origin + 7
                     : strncasecmp(origin, "https://", 8) == 0 ? origin + 8
                                                               : NULL;
  return rest && *rest && !strchr(rest, '/') && allow_host(hosts, rest);
}

bool allow_addr(const allow_list *a, const char *ip) {
  return ip && *ip && listed(a, ip, strlen(ip));
}

void allow_client(const allow_list *proxies, const char *peer, const char *forwarded, int v6_bits,
                  char *out) {
  char who[48];
  snprintf(who, sizeof who, "%s", peer);
  if (forwarded && proxies && allow_addr(proxies, peer)) {
    const char *last = strrchr(forwarded, ',');
    last = last ? last + 1 : forwarded;
    last += strspn(last, " \t");
    const size_t n = strcspn(last, " \t");
    if (n > 0 && n < 48 && strspn(last, "0123456789abcdefABCDEF.:") == n) {
      snprintf(who, sizeof who, "%.*s", (int)n, last);
    }
  }
  iplimit_client(who, v6_bits, out);
}
