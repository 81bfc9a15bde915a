/* What a store call reports when it refuses or fails: the store's own codes, not HTTP statuses
 * (the daemon maps them, http.c). `code` is the stable word the API shows for the refusal. */
#ifndef GRAINLAB_STORE_ERROR_H
#define GRAINLAB_STORE_ERROR_H

typedef enum store_status {
  STORE_OK = 0,
  STORE_E_NOT_FOUND,   /* no such run */
  STORE_E_BAD_FILTER,  /* a runs filter is refused; `code` names the rule it breaks */
  STORE_E_IO,          /* SQLite failed */
  STORE_E_UNAVAILABLE, /* the store cannot write now (full or read-only disk): writes are kept
                        * queued and retried, and what a reader asks may not be there yet */
} store_status;

typedef struct store_error {
  store_status status;
  const char *code;  /* static: "not_found", "too_long", "bad_sort", "store_unavailable", ... */
  char field[64];    /* the offending query argument, "id", or "" */
  char message[256]; /* for people (as long as the API error it becomes) */
} store_error;

#endif
