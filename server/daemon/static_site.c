/* The web client's files (see static_site.h). Every check is made on the resolved path, which no
 * spelling of a URL ("/./", "//", "%2e", a link in node_modules/.bin) can dress up. */
#define _GNU_SOURCE
#include "static_site.h"

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILE (64 << 20) /* the largest file served or read for its imports */
#define MAX_NAMED 4096      /* files of node_modules a site may name: a loop stops here */

struct static_site {
  char root[PATH_MAX]; /* resolved; "" serves nothing */
  /* what the pages name of node_modules, as resolved paths below root ("/node_modules/..."):
   * single files, and folders (ending in '/') that an import map hands over whole */
  char **files, **trees;
  size_t nfiles, ntrees, capf, capt;
};

static const char NODE_MODULES[] = "/node_modules/";

/* The whole of a regular file (NUL-terminated), or NULL. */
static char *read_all(const char *path, size_t *len) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_FILE) {
    if (fd >= 0) {
      close(fd);
    }
    return NULL;
  }
  char *buf = malloc((size_t)st.st_size + 1);
  const ssize_t got = buf ? read(fd, buf, (size_t)st.st_size) : -1;
  close(fd);
  if (got != st.st_size) {
    free(buf);
    return NULL;
  }
  buf[got] = '\0';
  *len = (size_t)got;
  return buf;
}

static bool listed(char *const *list, size_t n, const char *rel) {
  for (size_t i = 0; i < n; i++) {
    if (strcmp(list[i], rel) == 0) {
      return true;
    }
  }
  return false;
}

static int push(char ***list, size_t *n, size_t *cap, const char *rel) {
  if (*n == *cap) {
    const size_t c = *cap ? 2 * *cap : 32;
    char **grown = realloc(*list, sizeof *grown * c);
    if (!grown) {
      return -1;
    }
    *list = grown;
    *cap = c;
  }
  char *copy = strdup(rel);
  if (!copy) {
    return -1;
  }
  (*list)[(*n)++] = copy;
  return 0;
}

/* The resolved path of URL path `url` below the root, into rel ("/..."); false when it does not
 * exist or lies outside. */
static bool resolve(const static_site *s, const char *url, char rel[PATH_MAX]) {
  char path[PATH_MAX], real[PATH_MAX];
  const size_t n = strlen(s->root);
  if (!s->root[0] || snprintf(path, sizeof path, "%s%s", s->root, url) >= (int)sizeof path ||
      !realpath(path, real) || strncmp(real, s->root, n) != 0 || real[n] != '/') {
    return false;
  }
  snprintf(rel, PATH_MAX, "%s", real + n);
  return true;
}

static int name_file(static_site *s, const char *url);

/* The modules a module imports by a relative specifier (`from "./x.js"`, `import "../y.js"`,
 * `import("./z.js")`): the page loads them too. A specifier that only looks like one names at
 * most another file of the same package, which is harmless. */
static int name_imports(static_site *s, const char *rel, const char *text) {
  const char *slash = strrchr(rel, '/');
  const int dir = (int)(slash - rel);
  for (const char *p = text; (p = strpbrk(p, "\"'")) != NULL; p++) {
    const char *b = p;
    while (b > text && (b[-1] == ' ' || b[-1] == '(')) {
      b--;
    }
    const bool from = b - text >= 4 && strncmp(b - 4, "from", 4) == 0;
    const bool import = b - text >= 6 && strncmp(b - 6, "import", 6) == 0;
    const char *end = strchr(p + 1, *p);
    if (!(from || import) || !end || end - p > 512 ||
        !(strncmp(p + 1, "./", 2) == 0 || strncmp(p + 1, "../", 3) == 0)) {
      continue;
    }
    char url[PATH_MAX];
    snprintf(url, sizeof url, "%.*s/%.*s", dir, rel, (int)(end - p - 1), p + 1);
    if (name_file(s, url) != 0) {
      return -1;
    }
    p = end;
  }
  return 0;
}

/* A file of node_modules a page names, with what it imports; anything else named is the client's
 * own (served anyway) or missing (a page's broken link, not this server's to refuse). */
static int name_file(static_site *s, const char *url) {
  char rel[PATH_MAX];
  if (!resolve(s, url, rel) || strncmp(rel, NODE_MODULES, sizeof NODE_MODULES - 1) != 0 ||
      listed(s->files, s->nfiles, rel) || s->nfiles >= MAX_NAMED) {
    return 0;
  }
  if (push(&s->files, &s->nfiles, &s->capf, rel) != 0) {
    return -1;
  }
  const char *dot = strrchr(rel, '.');
  if (!dot || (strcmp(dot, ".js") != 0 && strcmp(dot, ".mjs") != 0)) {
    return 0;
  }
  char path[PATH_MAX];
  size_t len;
  char *text = snprintf(path, sizeof path, "%s%s", s->root, rel) < (int)sizeof path
                   ? read_all(path, &len)
                   : NULL;
  const int rc = text ? name_imports(s, rel, text) : 0;
  free(text);
  return rc;
}

static int name_tree(static_site *s, const char *url) {
  char rel[PATH_MAX];
  struct stat st;
  char path[PATH_MAX];
  if (!resolve(s, url, rel) || strncmp(rel, NODE_MODULES, sizeof NODE_MODULES - 1) != 0 ||
      snprintf(path, sizeof path, "%s%s", s->root, rel) >= (int)sizeof path ||
      stat(path, &st) != 0 || !S_ISDIR(st.st_mode) || strlen(rel) + 2 > PATH_MAX) {
    return 0;
  }
  const size_t n = strlen(rel);
  rel[n] = '/';
  rel[n + 1] = '\0';
  return listed(s->trees, s->ntrees, rel) ? 0 : push(&s->trees, &s->ntrees, &s->capt, rel);
}

/* A page's import map: each bare name's module, or for a name ending in '/' its whole folder. */
static int name_import_map(static_site *s, const char *start, const char *end) {
  json_t *map = json_loadb(start, (size_t)(end - start), 0, NULL);
  const char *key;
  json_t *v;
  int rc = 0;
  json_object_foreach(json_object_get(map, "imports"), key, v) {
    const char *url = json_string_value(v);
    if (rc == 0 && url && url[0] == '/') {
      const size_t k = strlen(key);
      rc = k > 0 && key[k - 1] == '/' ? name_tree(s, url) : name_file(s, url);
    }
  }
  json_decref(map);
  return rc;
}

/* What one page names: its import map, and its stylesheets and scripts by src= or href=. */
static int name_page(static_site *s, const char *html) {
  static const char map_open[] = "<script type=\"importmap\">";
  for (const char *p = html; (p = strstr(p, map_open)) != NULL;) {
    p += sizeof map_open - 1;
    const char *end = strstr(p, "</script>");
    if (!end || name_import_map(s, p, end) != 0) {
      return end ? -1 : 0;
    }
  }
  static const char *const attrs[] = {"src=\"/", "href=\"/"};
  for (size_t a = 0; a < sizeof attrs / sizeof attrs[0]; a++) {
    for (const char *p = html; (p = strstr(p, attrs[a])) != NULL;) {
      p = strchr(p, '"') + 1;
      const char *end = strchr(p, '"');
      if (!end) {
        break;
      }
      char url[PATH_MAX];
      snprintf(url, sizeof url, "%.*s", (int)(end - p < PATH_MAX - 1 ? end - p : 0), p);
      if (name_file(s, url) != 0) {
        return -1;
      }
      p = end;
    }
  }
  return 0;
}

static_site *static_site_open(const char *dir, char *err, size_t errlen) {
  err[0] = '\0';
  static_site *s = calloc(1, sizeof *s);
  if (!s) {
    return NULL;
  }
  DIR *d = realpath(dir, s->root) ? opendir(s->root) : NULL;
  if (!d) {
    snprintf(err, errlen, "cannot read the web client's folder %s: no page is served", dir);
    s->root[0] = '\0';
    return s;
  }
  int rc = 0;
  for (const struct dirent *e; rc == 0 && (e = readdir(d)) != NULL;) {
    const char *dot = strrchr(e->d_name, '.');
    char path[PATH_MAX];
    size_t len;
    if (!dot || strcmp(dot, ".html") != 0 ||
        snprintf(path, sizeof path, "%s/%s", s->root, e->d_name) >= (int)sizeof path) {
      continue;
    }
    char *html = read_all(path, &len);
    rc = html ? name_page(s, html) : 0;
    free(html);
  }
  closedir(d);
  if (rc != 0) {
    static_site_free(s);
    return NULL;
  }
  return s;
}

void static_site_free(static_site *site) {
  if (!site) {
    return;
  }
  for (size_t i = 0; i < site->nfiles; i++) {
    free(site->files[i]);
  }
  for (size_t i = 0; i < site->ntrees; i++) {
    free(site->trees[i]);
  }
  free(site->files);
  free(site->trees);
  free(site);
}

/* Whether a resolved path below the root is served: of node_modules what the pages name; the
 * pages at the top; the client's own folders (js/, css/, i18n/) whole. The top's other files
 * (package.json, its lock) and hidden files are not the client's to hand out. */
static bool served(const static_site *s, const char *rel) {
  if (strncmp(rel, NODE_MODULES, sizeof NODE_MODULES - 1) == 0) {
    for (size_t i = 0; i < s->ntrees; i++) {
      if (strncmp(rel, s->trees[i], strlen(s->trees[i])) == 0) {
        return true;
      }
    }
    return listed(s->files, s->nfiles, rel);
  }
  if (strstr(rel, "/.")) {
    return false;
  }
  const char *dot = strrchr(rel, '.');
  return strchr(rel + 1, '/') != NULL || (dot && strcmp(dot, ".html") == 0);
}

static const char *mime(const char *path) {
  const char *dot = strrchr(path, '.');
  static const char *const map[][2] = {{".html", "text/html; charset=utf-8"},
                                       {".js", "text/javascript"},
                                       {".mjs", "text/javascript"},
                                       {".css", "text/css"},
                                       {".json", "application/json"},
                                       {".svg", "image/svg+xml"},
                                       {".png", "image/png"}};
  for (size_t i = 0; dot && i < sizeof map / sizeof map[0]; i++) {
    if (strcmp(dot, map[i][0]) == 0) {
      return map[i][1];
    }
  }
  return "application/octet-stream";
}

int static_site_read(const static_site *site, const char *url, char **body, size_t *len,
                     const char **type) {
  if (strstr(url, "..") || strchr(url, '\\')) {
    return 404;
  }
  /* the client's pages: /s/{id} is a session's (viewer or, with #control=TOKEN, controller);
   * /class/{id} is a class's (the teacher's with #teacher=TOKEN, else a student's); /join is
   * where students enter a class code, /teach where a teacher starts a class */
  const char *page = strcmp(url, "/") == 0             ? "/index.html"
                     : strncmp(url, "/s/", 3) == 0     ? "/session.html"
                     : strcmp(url, "/results") == 0    ? "/results.html"
                     : strncmp(url, "/class/", 7) == 0 ? "/class.html"
                     : strcmp(url, "/join") == 0       ? "/join.html"
                     : strcmp(url, "/teach") == 0      ? "/teach.html"
                                                       : url;
  char rel[PATH_MAX], path[PATH_MAX];
  struct stat st;
  if (!resolve(site, page, rel) || !served(site, rel) ||
      snprintf(path, sizeof path, "%s%s", site->root, rel) >= (int)sizeof path ||
      stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_FILE) {
    return 404;
  }
  *body = read_all(path, len);
  *type = mime(rel);
  return *body ? 0 : 500;
}
