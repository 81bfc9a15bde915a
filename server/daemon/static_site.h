/* The web client's files as the HTTP server serves them: the pages, the client's own folders,
 * and of node_modules only what the pages name (import maps, stylesheets) and what that imports. */
#ifndef GRAINLAB_STATIC_SITE_H
#define GRAINLAB_STATIC_SITE_H

#include <stddef.h>

typedef struct static_site static_site;

/* Reads the pages in dir (its *.html) and everything they name, once, at start. A folder that
 * cannot be read gives a site that serves nothing, with the reason in err (a warning to log);
 * NULL only when memory runs out. */
static_site *static_site_open(const char *dir, char *err, size_t errlen);
void static_site_free(static_site *site);

/* The file a request's URL path names, when the site serves it: 0, with its bytes (malloc'd,
 * NUL-terminated, *len long) and its media type; else the HTTP status (404, or 500 when it
 * cannot be read). */
int static_site_read(const static_site *site, const char *url, char **body, size_t *len,
                     const char **mime);

#endif
