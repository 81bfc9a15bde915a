/* A refused request, as the REST API reports it: an HTTP status, a code word, a message and the
 * offending field. Filled by the API's parsers and the session registry (the store has its own
 * codes, mapped in http.c); turned into JSON by server/api/api_json.c. */
#ifndef GRAINLAB_API_ERROR_H
#define GRAINLAB_API_ERROR_H

typedef struct api_error {
  int status;
  const char *code;
  char message[256]; /* room for a JSON parse error quoting jansson's 160-byte text */
  char field[64];
  /* a refusal that lifts by itself (grains still settling): seconds of simulated time it may
   * still take, at most; 0: none. The body's seconds_left, and Retry-After at speed 1. */
  double seconds_left;
} api_error;

/* Make s valid UTF-8 in place: drop every byte that does not belong to a well-formed sequence
 * (jansson refuses invalid UTF-8, and a refused string would leave an error body empty). Every
 * truncation of user text (snprintf into a fixed buffer, "%.60s") may split a character; so may
 * text decoded from a URL. Returns s. */
char *api_utf8_clean(char *s);

void api_fail(api_error *e, int status, const char *code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
