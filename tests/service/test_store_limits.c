/* The store's bounds and its behaviour while it cannot write (server/store, issue 16), on a real
 * database file and writer thread: a run keeps at most STORE_RUN_EVENTS_MAX events, ends with an
 * events_truncated marker, counts what it lost and is refused for replay; a replay finds each
 * change's parameter in the run's scene once, and refuses a name the scene does not take; a writer
 * whose transactions are refused (another connection holds the write lock, as a full or read-only
 * disk would refuse them) reports itself unavailable, keeps every queued record, drops new samples
 * and events past STORE_QUEUE_MAX (counted in their run's record), and commits everything it kept
 * once writes succeed again. */
#define _GNU_SOURCE
#include "../support/check.h"
#include "store.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double multiplier(void) {
  const char *m = getenv("GRAINLAB_TIMEOUT_MULTIPLIER");
  return m && atof(m) >= 1 ? atof(m) : 1.0;
}

static int64_t db_int(sqlite3 *db, const char *sql) {
  sqlite3_stmt *q = NULL;
  int64_t v = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW) {
    v = sqlite3_column_int64(q, 0);
  }
  sqlite3_finalize(q);
  return v;
}

static void start_run(store *st, const char *session, int64_t run) {
  grn_world_def def;
  grn_error e;
  grn_world_def_default(&def, "pour", &e);
  store_session(st, session, "ABCDEF", "limits", false,
                "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "");
  store_run_start(st, run, session, "limits", &def, grn_world_def_grains(&def), NULL, NULL, 0);
}

static void sample(store *st, int64_t run, uint64_t k) {
  grn_measurements m;
  memset(&m, 0, sizeof m);
  m.count = 1;
  m.value[GRN_MEASURE_T] = (double)k * GRN_SAMPLE_STEPS * GRN_STEP_SECONDS;
  store_sample(st, run, k * GRN_SAMPLE_STEPS, m.value[GRN_MEASURE_T], grn_scene_find("pour"), &m);
}

int main(void) {
  char dir[] = "/tmp/grainlab-limits-XXXXXX", path[128], err[256], sql[256];
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(path, sizeof path, "%s/grainlab.db", dir);
  store *st = store_open(path, err, sizeof err);
  if (!st) {
    printf("FAIL store_open: %s\n", err);
    return 1;
  }
  sqlite3 *db = NULL;
  sqlite3_open(path, &db);
  sqlite3_busy_timeout(db, 10000);
  store_access admin = {.admin = true, .token_sha256 = ""};

  puts("-- a run's events are bounded: the last kept is events_truncated, the rest counted");
  const int64_t r1 = store_next_run_id(st);
  start_run(st, "s1", r1);
  const int extra = 500;
  for (int i = 0; i < STORE_RUN_EVENTS_MAX + extra; i++) {
    store_event(st, r1, (uint64_t)i, i * GRN_STEP_SECONDS, "state", "{\"state\":\"running\"}");
    if (i % 10000 == 9999) { /* paced, so the queue's own bound never comes into it */
      store_sync(st, (int)(60000 * multiplier()));
    }
  }
  const uint64_t d1 = 0x1234, d2 = 0x99;
  store_run_end(st, r1, "finished", STORE_RUN_EVENTS_MAX + extra, 1.0, &d1, json_object());
  CHECK("everything committed", store_sync(st, (int)(60000 * multiplier())) == STORE_OK);
  snprintf(sql, sizeof sql, "SELECT count(*) FROM events WHERE run_id = %lld", (long long)r1);
  const int64_t kept = db_int(db, sql);
  printf("%s events kept: got %lld, want STORE_RUN_EVENTS_MAX = %d\n",
         kept == STORE_RUN_EVENTS_MAX ? "ok  " : "FAIL", (long long)kept, STORE_RUN_EVENTS_MAX);
  check_failures += kept != STORE_RUN_EVENTS_MAX;
  snprintf(sql, sizeof sql,
           "SELECT kind = 'events_truncated' AND json_extract(detail, '$.limit') = %d FROM events "
           "WHERE run_id = %lld ORDER BY id DESC LIMIT 1",
           STORE_RUN_EVENTS_MAX, (long long)r1);
  CHECK("the last event kept is events_truncated {limit}", db_int(db, sql) == 1);
  snprintf(sql, sizeof sql, "SELECT events_dropped FROM runs WHERE id = %lld", (long long)r1);
  const int64_t dropped = db_int(db, sql);
  printf("%s the run's events_dropped: got %lld, want %d (the marker's place and the %d after)\n",
         dropped == extra + 1 ? "ok  " : "FAIL", (long long)dropped, extra + 1, extra);
  check_failures += dropped != extra + 1;
  store_replay r;
  const int rc = store_load_replay(path, r1, &r, err, sizeof err);
  printf("%s a truncated run cannot be replayed: rc %d '%s'\n",
         rc != 0 && strstr(err, "cannot be replayed") ? "ok  " : "FAIL", rc, err);
  check_failures += !(rc != 0 && strstr(err, "cannot be replayed"));
  if (rc == 0) {
    store_replay_free(&r);
  }

  puts("-- a replay resolves each change's parameter once, when the run is read back");
  const int64_t r3 = r1 + 10; /* clear of r2 below */
  start_run(st, "s3", r3);
  store_event(st, r3, 40, 0.1, "parameter_changed", "{\"params\":{\"mu\":0.7}}");
  store_run_end(st, r3, "finished", 80, 0.2, &d2, json_object());
  const int64_t r4 = r3 + 1;
  start_run(st, "s4", r4);
  store_event(st, r4, 40, 0.1, "parameter_changed", "{\"params\":{\"rpm\":3}}");
  store_run_end(st, r4, "finished", 80, 0.2, &d2, json_object());
  CHECK("both committed", store_sync(st, (int)(60000 * multiplier())) == STORE_OK);
  if (store_load_replay(path, r3, &r, err, sizeof err) == 0) {
    const timeline_event *ev = r.events.count == 1 ? &r.events.events[0] : NULL;
    CHECK("mu's change is found in pour's list",
          ev && !ev->is_action && ev->step == 40 && ev->value == 0.7 &&
              ev->param_index == grn_scene_param_index(grn_scene_find("pour"), "mu") &&
              ev->param_index >= 0);
    store_replay_free(&r);
  } else {
    printf("FAIL store_load_replay: %s\n", err);
    check_failures++;
  }
  const int rc4 = store_load_replay(path, r4, &r, err, sizeof err);
  printf("%s a change of a parameter pour does not take (rpm) is refused: rc %d '%s'\n",
         rc4 != 0 && strstr(err, "does not take") ? "ok  " : "FAIL", rc4, err);
  check_failures += !(rc4 != 0 && strstr(err, "'rpm'"));
  if (rc4 == 0) {
    store_replay_free(&r);
  }

  puts("-- GET /api/runs/{id} returns one page of them");
  store_events_page page;
  store_events_page_default(&page);
  store_run_detail run;
  store_error se;
  if (store_get_run(st, r1, &admin, &page, &run, &se) == STORE_OK) {
    const long long next = run.more ? (long long)run.events[run.nevents - 1].id : -1;
    printf("%s first page: %zu events, events_total %lld, next page after %lld\n",
           run.nevents == STORE_EVENTS_PAGE_MAX ? "ok  " : "FAIL", run.nevents,
           (long long)run.events_total, next);
    check_failures += run.nevents != STORE_EVENTS_PAGE_MAX;
    CHECK("events_total counts them all", run.events_total == STORE_RUN_EVENTS_MAX);
    CHECK("another page follows", run.more);
    CHECK("the run says what it dropped", !run.run.f[STORE_RUN_EVENTS_DROPPED].null &&
                                              run.run.f[STORE_RUN_EVENTS_DROPPED].i == extra + 1);
    store_run_detail_free(&run);
  } else {
    printf("FAIL store_get_run: %s\n", se.message);
    check_failures++;
  }

  puts("-- a writer whose transactions are refused: unavailable, bounded, nothing committed lost");
  const int64_t r2 = store_next_run_id(st) + 1;
  start_run(st, "s2", r2);
  for (uint64_t k = 0; k < 10; k++) {
    sample(st, r2, k);
  }
  CHECK("before: writable and synced",
        store_sync(st, 10000) == STORE_OK && store_writable(st, NULL, 0));
  snprintf(sql, sizeof sql, "SELECT count(*) FROM samples WHERE run_id = %lld", (long long)r2);
  CHECK("before: the 10 samples are committed", db_int(db, sql) == 10);
  /* another connection takes the write lock: every BEGIN IMMEDIATE of the writer is refused
   * (SQLITE_BUSY after its busy timeout), as a full disk refuses its writes */
  CHECK("the lock is taken", sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK);
  sample(st, r2, 10);
  bool down = false;
  for (int i = 0; i < 600 * multiplier() && !down; i++) {
    down = !store_writable(st, err, sizeof err);
    usleep(100000);
  }
  printf("%s the store reports itself unavailable: '%s'\n", down ? "ok  " : "FAIL", err);
  check_failures += !down;
  CHECK("store_sync answers STORE_E_UNAVAILABLE", store_sync(st, 2000) == STORE_E_UNAVAILABLE);
  store_runs_filter f;
  store_filter_default(&f);
  store_run_page list;
  CHECK("a read that needs what is queued: STORE_E_UNAVAILABLE",
        store_list_runs(st, &f, &admin, &list, &se) == STORE_E_UNAVAILABLE &&
            strcmp(se.code, "store_unavailable") == 0 && list.count == 0);
  store_stats s0;
  store_get_stats(st, &s0);
  const uint64_t room = STORE_QUEUE_MAX - s0.queue_length, pushed = STORE_QUEUE_MAX + 1000;
  for (uint64_t k = 11; k < 11 + pushed; k++) {
    sample(st, r2, k);
  }
  store_event(st, r2, 99, 1.0, "state", "{}"); /* no room: dropped too */
  store_stats s1;
  store_get_stats(st, &s1);
  printf("%s the queue holds STORE_QUEUE_MAX: got %llu, want %d\n",
         s1.queue_length == STORE_QUEUE_MAX ? "ok  " : "FAIL", (unsigned long long)s1.queue_length,
         STORE_QUEUE_MAX);
  check_failures += s1.queue_length != STORE_QUEUE_MAX;
  printf("%s dropped: got %llu, want %llu (the samples past the bound and the event)\n",
         s1.dropped - s0.dropped == pushed - room + 1 ? "ok  " : "FAIL",
         (unsigned long long)(s1.dropped - s0.dropped), (unsigned long long)(pushed - room + 1));
  check_failures += s1.dropped - s0.dropped != pushed - room + 1;
  CHECK("write failures counted", s1.write_failures >= 1 && !s1.writable);
  store_run_end(st, r2, "finished", 1000, 1.0, &d2, json_object()); /* kept past the bound */
  sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
  /* the writer retries by itself (at most RETRY_MAX_MS apart); a sync answers at once while the
   * store is down, so wait for it to come back first */
  bool up = false;
  for (int i = 0; i < 600 * multiplier() && !up; i++) {
    up = store_writable(st, NULL, 0);
    usleep(100000);
  }
  CHECK("after the lock is given back: writable again by itself", up);
  CHECK("and everything kept commits", store_sync(st, (int)(120000 * multiplier())) == STORE_OK);
  const int64_t want_samples = 11 + (int64_t)room;
  const int64_t got_samples = db_int(db, sql);
  printf("%s samples committed: got %lld, want %lld (10 before, then all that were queued)\n",
         got_samples == want_samples ? "ok  " : "FAIL", (long long)got_samples,
         (long long)want_samples);
  check_failures += got_samples != want_samples;
  snprintf(sql, sizeof sql,
           "SELECT end_reason = 'finished' AND samples_dropped = %llu AND events_dropped = 1 FROM "
           "runs WHERE id = %lld",
           (unsigned long long)(pushed - room), (long long)r2);
  CHECK("the run's record: ended, with its dropped samples and event counted",
        db_int(db, sql) == 1);
  CHECK("the first run is intact",
        db_int(db, "SELECT count(*) FROM events WHERE run_id = 1") == STORE_RUN_EVENTS_MAX);
  CHECK("integrity_check", db_int(db, "SELECT count(*) FROM pragma_integrity_check WHERE "
                                      "integrity_check != 'ok'") == 0);

  /* stopping while the store cannot write: the queue cannot outlive the process, so what is left
   * is dropped (and logged as store_lost) instead of waiting forever */
  sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
  sample(st, r2, 100000);
  const time_t t0 = time(NULL);
  store_close(st);
  printf("ok   store_close returns while the store cannot write (%lld s)\n",
         (long long)(time(NULL) - t0));
  sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
  sqlite3_close(db);
  char cmd[160];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) {
    printf("could not remove %s\n", dir);
  }
  CHECK_DONE();
}
