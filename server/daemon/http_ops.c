/* The operator's routes: health, readiness, the configuration pages read, /metrics and backups. */
#define _GNU_SOURCE
#include "api_ops.h"
#include "http_internal.h"
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

http_reply h_healthz(const http_call *k) {
  (void)k;
  return http_json_reply(200, api_health_json());
}

http_reply h_readyz(const http_call *k) {
  char why[160];
  if (!__atomic_load_n(&k->srv->ready, __ATOMIC_ACQUIRE)) {
    return http_error(503, "not_ready", "", "starting or stopping");
  }
  if (k->srv->store && !store_writable(k->srv->store, why, sizeof why)) {
    return http_error(503, "store_unavailable", "", "the store cannot write (%s)", why);
  }
  place_load fig = {.cores = 0};
  http_own_load(k->srv, &fig);
  return http_json_reply(200, api_ready_json(&fig));
}

http_reply h_config(const http_call *k) {
  /* a teacher on this machine (127.0.0.1) shows the class the address its network reaches;
   * written once before ready is set (its port is known only once serving) */
  const bool set = __atomic_load_n(&k->srv->ready, __ATOMIC_ACQUIRE) && *k->srv->students;
  return http_json_reply(200, api_config_json(k->srv->ws_public_port, set ? k->srv->students : NULL,
                                              sess_max_grains(k->srv->reg)));
}

http_reply h_metrics(const http_call *k) {
  http_server *srv = k->srv;
  sess_totals t;
  sess_get_totals(srv->reg, &t);
  ws_stats w;
  memset(&w, 0, sizeof w);
  if (srv->ws) {
    ws_get_stats(srv->ws, &w);
  }
  char *out = NULL;
  const int n = asprintf(
      &out,
      "# HELP grainlab_sessions Live sessions.\n# TYPE grainlab_sessions gauge\n"
      "grainlab_sessions %d\n"
      "# HELP grainlab_sessions_running Sessions running or asleep.\n"
      "# TYPE grainlab_sessions_running gauge\ngrainlab_sessions_running %d\n"
      "# HELP grainlab_sessions_failed Sessions whose worker ended.\n"
      "# TYPE grainlab_sessions_failed gauge\ngrainlab_sessions_failed %d\n"
      "# HELP grainlab_sessions_created_total Sessions created.\n"
      "# TYPE grainlab_sessions_created_total counter\n"
      "grainlab_sessions_created_total %llu\n"
      "# HELP grainlab_worker_failures_total Workers that crashed, hung or broke a limit.\n"
      "# TYPE grainlab_worker_failures_total counter\ngrainlab_worker_failures_total %llu\n"
      "# HELP grainlab_http_requests_total HTTP requests answered.\n"
      "# TYPE grainlab_http_requests_total counter\ngrainlab_http_requests_total %llu\n"
      "# HELP grainlab_viewers Websocket viewers connected to a session.\n"
      "# TYPE grainlab_viewers gauge\ngrainlab_viewers %d\n"
      "# HELP grainlab_ws_connections_total Websocket connections accepted.\n"
      "# TYPE grainlab_ws_connections_total counter\ngrainlab_ws_connections_total %llu\n"
      "# HELP grainlab_ws_refused_total Websocket handshakes refused (no such session, full).\n"
      "# TYPE grainlab_ws_refused_total counter\ngrainlab_ws_refused_total %llu\n"
      "# HELP grainlab_ws_frames_sent_total Binary frames sent to viewers.\n"
      "# TYPE grainlab_ws_frames_sent_total counter\ngrainlab_ws_frames_sent_total %llu\n"
      "# HELP grainlab_ws_frames_skipped_total Frames a slow viewer skipped for a newer one.\n"
      "# TYPE grainlab_ws_frames_skipped_total counter\ngrainlab_ws_frames_skipped_total %llu\n"
      "# HELP grainlab_ws_frames_held_total Frames a viewer did not get for the rate it asked.\n"
      "# TYPE grainlab_ws_frames_held_total counter\ngrainlab_ws_frames_held_total %llu\n"
      "# HELP grainlab_ws_texts_sent_total Text messages sent to viewers.\n"
      "# TYPE grainlab_ws_texts_sent_total counter\ngrainlab_ws_texts_sent_total %llu\n"
      "# HELP grainlab_ws_texts_skipped_total Text messages a stalled viewer lost.\n"
      "# TYPE grainlab_ws_texts_skipped_total counter\ngrainlab_ws_texts_skipped_total %llu\n"
      "# HELP grainlab_ws_bytes_sent_total Payload bytes sent to viewers.\n"
      "# TYPE grainlab_ws_bytes_sent_total counter\ngrainlab_ws_bytes_sent_total %llu\n"
      "# HELP grainlab_ws_messages_rejected_total Client messages rejected.\n"
      "# TYPE grainlab_ws_messages_rejected_total counter\n"
      "grainlab_ws_messages_rejected_total %llu\n",
      t.sessions, t.running, t.failed, (unsigned long long)t.created,
      (unsigned long long)t.worker_failures,
      (unsigned long long)__atomic_load_n(&srv->requests, __ATOMIC_RELAXED), t.viewers,
      (unsigned long long)w.connections, (unsigned long long)w.refused,
      (unsigned long long)w.frames_sent, (unsigned long long)w.frames_skipped,
      (unsigned long long)w.frames_held, (unsigned long long)w.texts_sent,
      (unsigned long long)w.texts_skipped, (unsigned long long)w.bytes_sent,
      (unsigned long long)w.messages_rejected);
  if (n < 0) {
    return http_error(500, "out_of_memory", "", "out of memory");
  }
  /* the rest, appended: workers, steps, per-session figures, responses by status, the store */
  char *more = NULL;
  size_t more_len = 0;
  FILE *f = open_memstream(&more, &more_len);
  fputs(out, f);
  free(out);
  fprintf(f,
          "# HELP grainlab_workers Session worker processes alive.\n# TYPE grainlab_workers gauge\n"
          "grainlab_workers %d\n"
          "# HELP grainlab_steps_total Simulation steps taken by every session (1/240 s each).\n"
          "# TYPE grainlab_steps_total counter\ngrainlab_steps_total %llu\n"
          "# HELP grainlab_http_held_bytes Bytes of large replies held for clients still reading.\n"
          "# TYPE grainlab_http_held_bytes gauge\ngrainlab_http_held_bytes %llu\n"
          "# HELP grainlab_snapshot_replays_total Stored runs replayed for their snapshots.\n"
          "# TYPE grainlab_snapshot_replays_total counter\ngrainlab_snapshot_replays_total %llu\n",
          t.workers, (unsigned long long)t.steps,
          (unsigned long long)__atomic_load_n(&srv->held, __ATOMIC_RELAXED),
          (unsigned long long)t.replays);
  sess_metrics(srv->reg, f);
  sess_settled_metrics(srv->reg, f);
  int classes_open = 0, class_groups = 0;
  int classes_held = 0;
  class_totals(srv->classes, &classes_open, &class_groups, &classes_held);
  fprintf(f,
          "# HELP grainlab_classes_open Classes not yet ended.\n"
          "# TYPE grainlab_classes_open gauge\ngrainlab_classes_open %d\n"
          "# HELP grainlab_class_groups Groups of the open classes.\n"
          "# TYPE grainlab_class_groups gauge\ngrainlab_class_groups %d\n"
          "# HELP grainlab_classes_in_memory Classes held in memory (open, and recently ended).\n"
          "# TYPE grainlab_classes_in_memory gauge\ngrainlab_classes_in_memory %d\n",
          classes_open, class_groups, classes_held);
  fputs("# HELP grainlab_http_responses_total HTTP responses by status.\n"
        "# TYPE grainlab_http_responses_total counter\n",
        f);
  for (int code = 100; code < 600; code++) {
    const unsigned long long k = __atomic_load_n(&srv->by_status[code], __ATOMIC_RELAXED);
    if (k > 0) {
      fprintf(f, "grainlab_http_responses_total{code=\"%d\"} %llu\n", code, k);
    }
  }
  if (srv->store) {
    store_stats ss;
    store_get_stats(srv->store, &ss);
    fprintf(f,
            "# HELP grainlab_store_queue_length Records waiting for the store's writer.\n"
            "# TYPE grainlab_store_queue_length gauge\ngrainlab_store_queue_length %llu\n"
            "# HELP grainlab_store_write_latency_seconds From queueing to commit, over every "
            "record.\n# TYPE grainlab_store_write_latency_seconds summary\n"
            "grainlab_store_write_latency_seconds_sum %.6f\n"
            "grainlab_store_write_latency_seconds_count %llu\n"
            "# HELP grainlab_store_write_latency_max_seconds The longest wait in the last batch.\n"
            "# TYPE grainlab_store_write_latency_max_seconds gauge\n"
            "grainlab_store_write_latency_max_seconds %.6f\n"
            "# HELP grainlab_store_batches_total Transactions the writer committed.\n"
            "# TYPE grainlab_store_batches_total counter\ngrainlab_store_batches_total %llu\n"
            "# HELP grainlab_store_writable 1 while the store commits, 0 while the disk refuses "
            "(records kept and retried).\n# TYPE grainlab_store_writable gauge\n"
            "grainlab_store_writable %d\n"
            "# HELP grainlab_store_write_failures_total Transactions the disk refused.\n"
            "# TYPE grainlab_store_write_failures_total counter\n"
            "grainlab_store_write_failures_total %llu\n"
            "# HELP grainlab_store_dropped_total Samples and events not recorded (the store's "
            "bounds).\n# TYPE grainlab_store_dropped_total counter\n"
            "grainlab_store_dropped_total %llu\n"
            "# HELP grainlab_store_memory_bytes Memory SQLite holds, its page caches included.\n"
            "# TYPE grainlab_store_memory_bytes gauge\ngrainlab_store_memory_bytes %llu\n"
            "# HELP grainlab_store_memory_peak_bytes The most memory SQLite has held.\n"
            "# TYPE grainlab_store_memory_peak_bytes gauge\n"
            "grainlab_store_memory_peak_bytes %llu\n",
            (unsigned long long)ss.queue_length, ss.latency_sum, (unsigned long long)ss.written,
            ss.latency_max, (unsigned long long)ss.batches, ss.writable ? 1 : 0,
            (unsigned long long)ss.write_failures, (unsigned long long)ss.dropped,
            (unsigned long long)ss.memory, (unsigned long long)ss.memory_peak);
    store_results_db_metrics(srv->store, f); /* the outbox and the results database, if any */
  }
  fclose(f);
  http_reply r = {200, more, "text/plain; version=0.0.4", "", "", 0, 0, ""};
  return r;
}

/* POST /api/admin/backup: a consistent copy of the database, made while sessions run */
http_reply h_backup(const http_call *k) {
  http_server *srv = k->srv;
  if (!srv->store) {
    return http_error(503, "no_store", "", "this server keeps no record");
  }
  char dir[4200], path[4300], when[32], err[300];
  snprintf(dir, sizeof dir, "%s/backups", srv->data_dir);
  if (mkdir(dir, 0750) != 0 && errno != EEXIST) {
    return http_error(500, "io_error", "", "cannot create %s: %s", dir, strerror(errno));
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  strftime(when, sizeof when, "%Y%m%dT%H%M%S", &tm);
  snprintf(path, sizeof path, "%s/grainlab-%s-%03ldZ.db", dir, when, ts.tv_nsec / 1000000);
  store_sync(srv->store, 2000); /* what was recorded before the request is in the copy */
  const long runs = store_backup(store_path(srv->store), path, err, sizeof err);
  if (runs < 0) {
    return http_error(500, "backup_failed", "", "%s", err);
  }
  struct stat st;
  const long long bytes = stat(path, &st) == 0 ? (long long)st.st_size : 0;
  log_msg(LOG_INFO, "backup", "path=%s runs=%ld bytes=%lld", path, runs, bytes);
  return http_json_reply(201, api_backup_json(path, runs, bytes));
}
