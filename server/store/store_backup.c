/* An online backup of the store (see store.h): SQLite's backup API copies every page in one read
 * transaction while grainlabd keeps writing. */
#define _GNU_SOURCE
#include "store_internal.h"

#include <stdio.h>

long store_backup(const char *db_path, const char *out_path, char *err, size_t errlen) {
  FILE *exists = fopen(out_path, "rb");
  if (exists) {
    fclose(exists);
    snprintf(err, errlen, "'%s' exists already", out_path);
    return -1;
  }
  sqlite3 *src = store__open_db(db_path, SQLITE_OPEN_READONLY, err, errlen);
  if (!src) {
    return -1;
  }
  sqlite3 *dst = store__open_db(out_path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, err, errlen);
  if (!dst) {
    sqlite3_close(src);
    return -1;
  }
  /* all pages in one step: one read transaction, so the copy is one moment of the database */
  sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
  int rc = b ? sqlite3_backup_step(b, -1) : SQLITE_ERROR;
  if (b) {
    sqlite3_backup_finish(b);
  }
  long runs = -1;
  if (rc == SQLITE_DONE) {
    int64_t n = 0;
    runs = store__int_query(dst, "SELECT count(*) FROM runs", &n) == 0 ? (long)n : -1;
  }
  if (runs < 0) {
    snprintf(err, errlen, "backup failed: %s", sqlite3_errmsg(dst));
  }
  sqlite3_close(dst);
  sqlite3_close(src);
  if (runs < 0) {
    remove(out_path);
  }
  return runs;
}
