/* The results database's URI (issue 20): checked before anything starts, named in logs without
 * its password, and libpq's messages made one line. */
#define _GNU_SOURCE
#include "log.h"
#include "store_internal.h"
#include "store_pg_sql.h"
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool has_prefix(const char *s, const char *p) {
  return strncmp(s, p, strlen(p)) == 0;
}

/* The URI without any password: the userinfo's ":password" and a "password=" query parameter
 * left out. Only for reading it again when libpq refuses the original (its message may quote the
 * part it refused). */
static void without_password(const char *uri, char *out, size_t size) {
  const char *start = strstr(uri, "://");
  start = start ? start + 3 : uri;
  size_t len = 0;
  const char *p = uri;
  /* libpq's userinfo ends at the first '@' before any '/' */
  const size_t span = strcspn(start, "@/");
  if (start[span] == '@') {
    const char *colon = memchr(start, ':', span);
    const char *user_end = colon ? colon : start + span;
    len = (size_t)snprintf(out, size, "%.*s", (int)(user_end - uri), uri);
    p = start + span;
  }
  /* the rest, each query parameter but the password */
  const char *query = strchr(p, '?');
  if (len < size) {
    len += (size_t)snprintf(out + len, size - len, "%.*s",
                            (int)(query ? (size_t)(query - p) : strlen(p)), p);
  }
  bool first = true;
  for (const char *q = query ? query + 1 : NULL; q && *q && len < size;) {
    const size_t n = strcspn(q, "&");
    if (!has_prefix(q, "password=") && n > 0) {
      len += (size_t)snprintf(out + len, size - len, "%c%.*s", first ? '?' : '&', (int)n, q);
      first = false;
    }
    q += n + (q[n] == '&');
  }
}

/* libpq's text in one line, without its trailing newline. */
void store__pg_one_line(const char *msg, char *out, size_t size) {
  size_t len = 0;
  bool space = false;
  for (const char *c = msg && *msg ? msg : "unknown reason"; *c && len + 1 < size; c++) {
    const bool blank = *c == '\n' || *c == '\r' || *c == '\t' || *c == ' ';
    if (blank) {
      space = len > 0;
    } else {
      if (space && len + 2 < size) {
        out[len++] = ' ';
      }
      out[len++] = *c;
      space = false;
    }
  }
  if (size > 0) {
    out[len < size ? len : size - 1] = '\0';
  }
}

int store_results_db_check(const char *uri, char *why, size_t whylen) {
  if (!has_prefix(uri, "postgresql://") && !has_prefix(uri, "postgres://")) {
    snprintf(why, whylen,
             "a postgresql:// or postgres:// URI is needed, e.g. "
             "postgresql://grainlab@db.example:5432/grainlab");
    return -1;
  }
  char *msg = NULL;
  PQconninfoOption *o = PQconninfoParse(uri, &msg);
  if (o) {
    /* libpq reads a port only when it connects: a wrong one is told now, not at every retry */
    const char *port = NULL;
    for (const PQconninfoOption *k = o; k->keyword; k++) {
      port = strcmp(k->keyword, "port") == 0 ? k->val : port;
    }
    bool ports_ok = true;
    for (const char *p = port; p && *p;) {
      const size_t n = strcspn(p, ",");
      const long v = n > 0 && n <= 5 && strspn(p, "0123456789") >= n ? strtol(p, NULL, 10) : 0;
      ports_ok = ports_ok && ((v >= 1 && v <= 65535) || n == 0);
      p += n + (p[n] == ',');
    }
    PQconninfoFree(o);
    if (!ports_ok) {
      snprintf(why, whylen, "its port is not a number in 1..65535");
      return -1;
    }
    return 0;
  }
  PQfreemem(msg);
  char bare[4096], reason[200];
  without_password(uri, bare, sizeof bare);
  msg = NULL;
  o = PQconninfoParse(bare, &msg);
  if (o) {
    snprintf(why, whylen, "libpq cannot read its password (percent-encode reserved characters)");
  } else {
    store__pg_one_line(msg, reason, sizeof reason);
    snprintf(why, whylen, "libpq cannot read it: %s", reason);
  }
  PQconninfoFree(o);
  PQfreemem(msg);
  return -1;
}

void store_results_db_name(const char *uri, char *out, size_t size) {
  char *msg = NULL;
  PQconninfoOption *o = PQconninfoParse(uri, &msg);
  PQfreemem(msg);
  const char *user = "", *host = "", *port = "", *db = "";
  for (const PQconninfoOption *k = o; k && k->keyword; k++) {
    const char *v = k->val ? k->val : "";
    if (strcmp(k->keyword, "user") == 0) {
      user = v;
    } else if (strcmp(k->keyword, "host") == 0) {
      host = v;
    } else if (strcmp(k->keyword, "port") == 0) {
      port = v;
    } else if (strcmp(k->keyword, "dbname") == 0) {
      db = v;
    }
  }
  if (!o) {
    snprintf(out, size, "(an unreadable URI)");
    return;
  }
  snprintf(out, size, "%s%s%s%s%s/%s", user, *user ? "@" : "", *host ? host : "(default host)",
           *port ? ":" : "", port, db);
  PQconninfoFree(o);
}
