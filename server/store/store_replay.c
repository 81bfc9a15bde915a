/* A stored run read back as an event script (see store.h): its definition, then its parameter
 * changes and actions in order, read from a database file directly (the CLI's and the daemon's
 * replays). */
#define _GNU_SOURCE
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void store_replay_free(store_replay *r) {
  timeline_free(&r->events);
  memset(r, 0, sizeof *r);
}

static int replay_fail(sqlite3 *db, sqlite3_stmt *q, store_replay *r, char *err, size_t errlen,
                       const char *msg) {
  snprintf(err, errlen, "%s", msg);
  sqlite3_finalize(q);
  sqlite3_close(db);
  store_replay_free(r);
  return -1;
}

int store_load_replay(const char *db_path, int64_t run, store_replay *out, char *err,
                      size_t errlen) {
  memset(out, 0, sizeof *out);
  sqlite3 *db = store__open_db(db_path, SQLITE_OPEN_READONLY, err, errlen);
  if (!db) {
    return -1;
  }
  sqlite3_stmt *q = NULL;
  /* a file not yet migrated to version 5 (the CLI reads files directly) has dropped nothing, and
   * one before version 10 kept no state version */
  if (sqlite3_prepare_v2(db,
                         "SELECT scene, seed, grains, params, end_steps, digest, end_reason, "
                         "events_dropped, state_version FROM runs WHERE id = ?",
                         -1, &q, NULL) != SQLITE_OK &&
      sqlite3_prepare_v2(db,
                         "SELECT scene, seed, grains, params, end_steps, digest, end_reason, "
                         "events_dropped, NULL FROM runs WHERE id = ?",
                         -1, &q, NULL) != SQLITE_OK &&
      sqlite3_prepare_v2(db,
                         "SELECT scene, seed, grains, params, end_steps, digest, end_reason, 0, "
                         "NULL FROM runs WHERE id = ?",
                         -1, &q, NULL) != SQLITE_OK) {
    return replay_fail(db, q, out, err, errlen, "not a grainlab database");
  }
  sqlite3_bind_int64(q, 1, run);
  if (sqlite3_step(q) != SQLITE_ROW) {
    return replay_fail(db, q, out, err, errlen, "no such run");
  }
  if (sqlite3_column_int64(q, 7) > 0) {
    char why[160];
    snprintf(why, sizeof why,
             "%lld of its events were not recorded (the record's bounds), so it cannot be "
             "replayed faithfully",
             (long long)sqlite3_column_int64(q, 7));
    return replay_fail(db, q, out, err, errlen, why);
  }
  /* another state version moves grains otherwise (grainlab.h): the replay would not reach the
   * recorded end, so it is not tried */
  if (sqlite3_column_int64(q, 8) != (sqlite3_int64)GRN_ENGINE_STATE_VERSION) {
    char why[200];
    if (sqlite3_column_type(q, 8) == SQLITE_NULL) {
      snprintf(why, sizeof why,
               "it was recorded before runs kept their engine's state version, and this engine "
               "(state version %u) may move its grains otherwise",
               GRN_ENGINE_STATE_VERSION);
    } else {
      snprintf(why, sizeof why,
               "it was recorded by engine state version %lld, which moves grains otherwise than "
               "this engine (state version %u)",
               (long long)sqlite3_column_int64(q, 8), GRN_ENGINE_STATE_VERSION);
    }
    return replay_fail(db, q, out, err, errlen, why);
  }
  grn_error e;
  if (grn_world_def_default(&out->def, (const char *)sqlite3_column_text(q, 0), &e) != GRN_OK) {
    return replay_fail(db, q, out, err, errlen, "the run's scene is unknown to this engine");
  }
  out->def.seed = (uint64_t)sqlite3_column_int64(q, 1);
  json_t *params = json_loads((const char *)sqlite3_column_text(q, 3), 0, NULL);
  const char *name;
  json_t *v;
  bool bad = !params;
  json_object_foreach(params, name, v) {
    bad = bad || grn_world_def_set(&out->def, name, json_number_value(v), &e) != GRN_OK;
  }
  json_decref(params);
  if (bad) {
    return replay_fail(db, q, out, err, errlen, "the run's parameters do not fit this engine");
  }
  out->ended = sqlite3_column_type(q, 4) != SQLITE_NULL;
  out->end_steps = (uint64_t)sqlite3_column_int64(q, 4);
  out->events.end = out->ended ? out->end_steps : UINT64_MAX;
  snprintf(out->digest, sizeof out->digest, "%s",
           sqlite3_column_text(q, 5) ? (const char *)sqlite3_column_text(q, 5) : "");
  snprintf(out->end_reason, sizeof out->end_reason, "%s",
           sqlite3_column_text(q, 6) ? (const char *)sqlite3_column_text(q, 6) : "");
  sqlite3_finalize(q);
  q = NULL;
  if (sqlite3_prepare_v2(db,
                         "SELECT steps, kind, detail FROM events WHERE run_id = ? AND kind IN "
                         "('parameter_changed', 'action') ORDER BY id",
                         -1, &q, NULL) != SQLITE_OK) {
    return replay_fail(db, q, out, err, errlen, "not a grainlab database");
  }
  sqlite3_bind_int64(q, 1, run);
  while (sqlite3_step(q) == SQLITE_ROW) {
    json_t *detail = json_loads((const char *)sqlite3_column_text(q, 2), 0, NULL);
    const bool action = strcmp((const char *)sqlite3_column_text(q, 1), "action") == 0;
    /* actions carry the engine's own form; daemon-only ones (pause, step, ...) have none */
    json_t *items = action ? json_object_get(detail, "engine") : json_object_get(detail, "params");
    const char *pname;
    json_t *pv;
    json_t *one = action && json_is_string(items) ? json_pack("{s:O}", "a", items) : NULL;
    const char *why = NULL;
    char unknown[96];
    json_object_foreach(action ? one : items, pname, pv) {
      timeline_event ev = {.step = (uint64_t)sqlite3_column_int64(q, 0), .is_action = action};
      if (action ? grn_action_parse(json_string_value(pv), &ev.action, &e) != GRN_OK
                 : !json_is_number(pv)) {
        why = "a recorded event cannot be replayed";
        break;
      }
      if (action && ev.action.kind == GRN_A_RESET) {
        why = "it holds a Reset, recorded before a Reset started a new run: its steps start over "
              "there";
        break;
      }
      snprintf(ev.param, sizeof ev.param, "%s", action ? "" : pname);
      ev.param_index = action ? -1 : grn_scene_param_index(out->def.scene, pname);
      if (!action && ev.param_index < 0) {
        snprintf(unknown, sizeof unknown, "it changes '%.31s', which its scene does not take",
                 pname);
        why = unknown;
        break;
      }
      ev.value = action ? 0.0 : json_number_value(pv);
      if (timeline_add(&out->events, &ev) != 0) {
        why = "the recorded events are out of order (or memory ran out)";
        break;
      }
    }
    json_decref(one);
    json_decref(detail);
    if (why) {
      return replay_fail(db, q, out, err, errlen, why);
    }
  }
  sqlite3_finalize(q);
  sqlite3_close(db);
  return 0;
}
