/* Classes in the store (class.h): the row a class is kept as, and a class read back from it
 * when it is no longer in memory. */
#define _GNU_SOURCE
#include "class_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *class__text_or(const json_t *v, const char *fallback) {
  return json_is_string(v) ? json_string_value(v) : fallback;
}

/* The row the store keeps (store_class_columns). */
static json_t *row_of(const klass *c) {
  json_t *scenes = json_array();
  for (int i = 0; i < c->nscenes; i++) {
    json_array_append_new(scenes, json_string(c->scenes[i]->name));
  }
  json_t *row =
      json_pack("{s:s, s:s, s:s, s:o, s:i, s:i, s:O, s:b, s:s, s:b, s:o, s:s, s:f, s:f, s:o}", "id",
                c->id, "code", c->code, "name", c->name, "scenes", scenes, "max_groups",
                c->max_groups, "grain_budget", c->grain_budget, "defaults", c->defaults, "private",
                c->private_, "second_join", c->second_controller ? "controller" : "viewer",
                "locked", __atomic_load_n(&c->locked, __ATOMIC_ACQUIRE) != 0, "spotlight",
                c->spotlight[0] ? json_string(c->spotlight) : json_null(), "teacher_hash",
                c->teacher_hash, "created_at", c->created_at, "ends_at", c->ends_at, "ended_at",
                c->ended_at > 0 ? json_real(c->ended_at) : json_null());
  json_object_set_new(row, "seeds", json_string(c->own_seeds ? "own" : "shared"));
  return row;
}

/* Under the registry lock: the class's record, written by the store's writer later. */
void class__record(class_registry *cr, const klass *c) {
  if (cr->st) {
    json_t *row = row_of(c);
    store_class(cr->st, row);
    json_decref(row);
  }
}

/* A class that has left memory (ended a while ago), read back from the store for one request:
 * taken (class__put() frees it), or NULL when the store has none by that id or code. */
klass *class__stored(class_registry *cr, const char *key, bool by_code) {
  json_t *rows = NULL;
  store_error se;
  if (!cr->st || store_load_classes(cr->st, by_code ? STORE_CLASS_CODE : STORE_CLASS_ID, key, 0,
                                    &rows, &se) != STORE_OK) {
    return NULL;
  }
  klass *c = json_array_size(rows) > 0 ? class__from_row(json_array_get(rows, 0)) : NULL;
  json_decref(rows);
  if (c) {
    c->refs = 1;
    c->dropped = true;
  }
  return c;
}

/* A class from the store's row; NULL when the row is not one this grainlabd can use. */
klass *class__from_row(const json_t *row) {
  klass *c = calloc(1, sizeof *c);
  if (!c) {
    return NULL;
  }
  pthread_mutex_init(&c->join_lock, NULL);
  snprintf(c->id, sizeof c->id, "%s", class__text_or(json_object_get(row, "id"), ""));
  snprintf(c->code, sizeof c->code, "%s", class__text_or(json_object_get(row, "code"), ""));
  snprintf(c->name, sizeof c->name, "%s", class__text_or(json_object_get(row, "name"), ""));
  size_t i;
  const json_t *v;
  json_array_foreach(json_object_get(row, "scenes"), i, v) {
    const grn_scene_info *s = grn_scene_find(class__text_or(v, ""));
    if (s && c->nscenes < API_CLASS_SCENES_MAX) {
      c->scenes[c->nscenes++] = s;
    }
  }
  c->max_groups = (int)json_integer_value(json_object_get(row, "max_groups"));
  c->tokens = c->max_groups;
  c->stamp = class__now_mono();
  c->grain_budget = (int)json_integer_value(json_object_get(row, "grain_budget"));
  c->defaults = json_incref(json_object_get(row, "defaults"));
  c->private_ = json_is_true(json_object_get(row, "private"));
  c->second_controller =
      strcmp(class__text_or(json_object_get(row, "second_join"), ""), "controller") == 0;
  /* rows of older builds have none: their groups shared the seed */
  c->own_seeds = strcmp(class__text_or(json_object_get(row, "seeds"), ""), "own") == 0;
  c->locked = json_is_true(json_object_get(row, "locked"));
  snprintf(c->spotlight, sizeof c->spotlight, "%s",
           class__text_or(json_object_get(row, "spotlight"), ""));
  snprintf(c->teacher_hash, sizeof c->teacher_hash, "%s",
           class__text_or(json_object_get(row, "teacher_hash"), ""));
  c->created_at = json_number_value(json_object_get(row, "created_at"));
  c->ends_at = json_number_value(json_object_get(row, "ends_at"));
  c->ended_at = json_number_value(json_object_get(row, "ended_at"));
  /* groups as {name, joined_at}; a bare name (rows of older builds) joined when its class began */
  json_array_foreach(json_object_get(row, "groups"), i, v) {
    const char *name =
        json_is_string(v) ? json_string_value(v) : json_string_value(json_object_get(v, "name"));
    const json_t *at = json_object_get(v, "joined_at");
    if (name &&
        !class__add_group(c, name, json_is_number(at) ? json_number_value(at) : c->created_at)) {
      class__free_class(c);
      return NULL;
    }
  }
  if (!c->defaults || c->nscenes == 0) { /* a scene this engine no longer has: kept stored only */
    class__free_class(c);
    return NULL;
  }
  return c;
}
