/* The daemon's client checks without a server (server/daemon/allow.c, iplimit.c): Host and
 * Origin allow-lists against DNS rebinding and cross-site websockets, the client behind a
 * trusted proxy, and the per-client token buckets and counts. */
#include "../support/check.h"
#include "allow.h"
#include "iplimit.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  allow_list hosts, origins, none, proxies;
  char err[160];
  CHECK("the default host list parses",
        allow_parse(&hosts, "localhost,127.0.0.1,[::1],lab.example.org", err, sizeof err) == 0);
  CHECK("an empty list parses", allow_parse(&none, "", err, sizeof err) == 0 && none.n == 0);
  CHECK("an empty entry is refused", allow_parse(&origins, "a,,b", err, sizeof err) != 0);
  CHECK("a trailing comma is refused", allow_parse(&origins, "a,", err, sizeof err) != 0);
  CHECK("a space is refused", allow_parse(&origins, "a b", err, sizeof err) != 0);
  /* Host: the name must be listed, any port, case-insensitive; nothing else */
  const char *yes[] = {"localhost", "localhost:8080",      "127.0.0.1:1", "[::1]:80",
                       "[::1]",     "LAB.example.ORG:443", NULL};
  const char *no[] = {"evil.example",
                      "localhost.evil.example",
                      "127.0.0.1.nip.io:80",
                      "localhost:",
                      "localhost:80x",
                      "::1",
                      "[::1]x",
                      "lab.example.org.",
                      "",
                      NULL};
  for (int i = 0; yes[i]; i++) {
    char name[96];
    snprintf(name, sizeof name, "Host '%s' allowed", yes[i]);
    CHECK(name, allow_host(&hosts, yes[i]));
  }
  for (int i = 0; no[i]; i++) {
    char name[96];
    snprintf(name, sizeof name, "Host '%s' refused", no[i]);
    CHECK(name, !allow_host(&hosts, no[i]));
  }
  CHECK("no Host (HTTP/1.0): allowed", allow_host(&hosts, NULL));
  /* Origin: by default the page's host must be an allowed host */
  CHECK("same-host origin", allow_origin(&none, &hosts, "http://localhost:8080"));
  CHECK("https same-host origin", allow_origin(&none, &hosts, "https://lab.example.org"));
  CHECK("another site's origin", !allow_origin(&none, &hosts, "http://evil.example"));
  CHECK("origin null", !allow_origin(&none, &hosts, "null"));
  CHECK("origin without scheme", !allow_origin(&none, &hosts, "localhost"));
  CHECK("origin with a path", !allow_origin(&none, &hosts, "http://localhost/x"));
  CHECK("no Origin (not a browser): allowed", allow_origin(&none, &hosts, NULL));
  CHECK("an explicit origin list",
        allow_parse(&origins, "https://lab.example.org", err, sizeof err) == 0 &&
            allow_origin(&origins, &hosts, "https://lab.example.org") &&
            !allow_origin(&origins, &hosts, "http://lab.example.org") &&
            !allow_origin(&origins, &hosts, "http://localhost"));
  /* the client behind a trusted proxy: the last X-Forwarded-For entry, and only then */
  char client[48];
  CHECK("proxies parse", allow_parse(&proxies, "127.0.0.1", err, sizeof err) == 0);
  allow_client(&proxies, "127.0.0.1", "6.6.6.6, 10.0.0.7", 64, client);
  CHECK("trusted proxy: the address it saw", strcmp(client, "10.0.0.7") == 0);
  allow_client(&proxies, "10.9.9.9", "10.0.0.7", 64, client);
  CHECK("untrusted peer: itself", strcmp(client, "10.9.9.9") == 0);
  allow_client(&proxies, "127.0.0.1", "10.0.0.7; drop", 64, client);
  CHECK("a forwarded entry that is no address: the peer", strcmp(client, "127.0.0.1") == 0);
  allow_client(&proxies, "127.0.0.1", NULL, 64, client);
  CHECK("trusted proxy without X-Forwarded-For: the peer", strcmp(client, "127.0.0.1") == 0);
  /* IPv6 clients by their /64 (a home or school network's whole prefix), IPv4 as they are */
  allow_client(&proxies, "127.0.0.1", "2001:db8:1:2:aaaa:bbbb:cccc:dddd", 64, client);
  CHECK("a forwarded IPv6 client is its /64", strcmp(client, "2001:db8:1:2::/64") == 0);
  char other[48];
  iplimit_client("2001:db8:1:2::7", 64, other);
  CHECK("two addresses of one /64 are one client", strcmp(client, other) == 0);
  iplimit_client("2001:db8:1:3::7", 64, other);
  CHECK("the next /64 is another client", strcmp(other, "2001:db8:1:3::/64") == 0);
  iplimit_client("2001:db8:1:2::7", 48, other);
  CHECK("ipv6-prefix 48", strcmp(other, "2001:db8:1::/48") == 0);
  iplimit_client("2001:db8:1:2::7", 128, other);
  CHECK("ipv6-prefix 128: each address alone", strcmp(other, "2001:db8:1:2::7") == 0);
  iplimit_client("::ffff:10.0.0.7", 64, other);
  CHECK("an IPv4-mapped address stays itself", strcmp(other, "::ffff:10.0.0.7") == 0);
  iplimit_client("10.0.0.7", 64, other);
  CHECK("IPv4 stays itself", strcmp(other, "10.0.0.7") == 0);

  /* token buckets: a whole minute's worth, then refused with a wait; per client */
  iplimit *l = iplimit_new(3.0);
  int allowed = 0;
  for (int i = 0; i < 5; i++) {
    allowed += iplimit_take(l, "10.0.0.1", true) == 0;
  }
  CHECK_NEAR("create-rate 3: takes allowed out of 5", allowed, 3, 0);
  CHECK_RANGE("the wait until the next token, s", iplimit_take(l, "10.0.0.1", true), 1, 20);
  CHECK("another client has its own bucket", iplimit_take(l, "10.0.0.2", true) == 0);
  CHECK("a peek takes nothing",
        iplimit_take(l, "10.0.0.3", false) == 0 && iplimit_take(l, "10.0.0.3", false) == 0);
  for (int i = 0; i < 5; i++) {
    iplimit_charge(l, "10.0.0.4");
  }
  CHECK_RANGE("charged past empty: a longer wait, s", iplimit_take(l, "10.0.0.4", false), 21, 60);
  /* counts: enter up to max, leave frees one */
  int in = 0;
  for (int i = 0; i < 4; i++) {
    in += iplimit_enter(l, "10.0.0.5", 3);
  }
  CHECK_NEAR("enter with max 3: admitted of 4", in, 3, 0);
  iplimit_leave(l, "10.0.0.5");
  CHECK("after a leave, one more", iplimit_enter(l, "10.0.0.5", 3));
  /* many distinct clients: the table sweeps the idle ones instead of refusing */
  int ok = 0;
  for (int i = 0; i < 70000; i++) {
    char ip[48];
    snprintf(ip, sizeof ip, "11.%d.%d.%d", (i >> 16) & 255, (i >> 8) & 255, i & 255);
    ok += iplimit_enter(l, ip, 1);
    iplimit_leave(l, ip);
  }
  CHECK_NEAR("70000 distinct clients that come and go: all admitted", ok, 70000, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET};
  inet_pton(AF_INET, "192.0.2.7", &sa.sin_addr);
  char text[IPLIMIT_ADDR];
  iplimit_addr((const struct sockaddr *)&sa, text);
  CHECK("an address as text", strcmp(text, "192.0.2.7") == 0);
  iplimit_free(l);
  CHECK_DONE();
}
