/* What reaches a class's groups (class.h): a student's join by code (a group's session made
 * or shared, one join at a time per class) and the teacher's pushes to every group. */
#define _GNU_SOURCE
#include "class_internal.h"
#include "node.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parameters pushed to one group's session: live ones change live; one fixed when the scene is
 * built (the grains' quality, a column's aspect) restarts the group's scene with the change and
 * its other parameters and seed as they are, as the session page's own slider does. */
static int push_params(class_registry *cr, session *s, const api_class_push *cmd, sess_error *e) {
  api_session_view v;
  sess_view(s, &v);
  api_params p = cmd->params;
  grn_world_def def = v.def;
  if (api_params_apply(&p, &def, API_PARAMS_DEFINE, e) != 0) {
    return -1;
  }
  bool restart = false;
  for (int i = 0; i < p.count; i++) {
    restart = restart || def.scene->params[p.at[i].index].restart;
  }
  /* a live change checks them again against the session's scene as it then is */
  return restart ? sess_switch_scene(cr->reg, s, &def, e) : sess_set_params(s, &p, e);
}

json_t *class_push(class_registry *cr, const char *id, const api_class_push *cmd, api_error *err) {
  class_copy k;
  if (class__snapshot(cr, id, &k, err) != 0) {
    return NULL;
  }
  if (class__open_class(&k.c, err) != 0) {
    class__free_copy(&k);
    return NULL;
  }
  /* the groups named (each once, in the order given), or every group */
  const size_t named = cmd->groups ? json_array_size(cmd->groups) : (size_t)k.c.ngroups;
  api_push_result *res = calloc(named + 1, sizeof *res);
  api_error *why = calloc(named + 1, sizeof *why);
  if (!res || !why) {
    free(res);
    free(why);
    class__free_copy(&k);
    api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
    return NULL;
  }
  int n = 0;
  for (size_t i = 0; i < named; i++) {
    const char *name =
        cmd->groups ? json_string_value(json_array_get(cmd->groups, i)) : k.groups[i].name;
    bool repeated = false;
    for (size_t j = 0; cmd->groups && j < i; j++) {
      repeated =
          repeated || class__same_group(json_string_value(json_array_get(cmd->groups, j)), name);
    }
    if (repeated) {
      continue;
    }
    const class_group *g = NULL;
    for (int j = 0; j < k.c.ngroups && !g; j++) {
      g = class__same_group(k.groups[j].name, name) ? &k.groups[j] : NULL;
    }
    session *s = g ? class__live_session(cr, g) : NULL;
    api_error *e = &why[n];
    res[n] = (api_push_result){name, e};
    if (!g) {
      api_fail(e, API_E_NO_SUCH_GROUP, "", "no such group");
    } else if (!s) {
      api_fail(e, API_E_NO_SESSION, "", "the group has no live session");
    } else {
      /* each group's session checks the whole change before any of it applies */
      const int rc = cmd->is_action ? sess_action(s, &cmd->action, e) : push_params(cr, s, cmd, e);
      sess_release(s);
      res[n].refused = rc == 0 ? NULL : e;
    }
    n++;
  }
  json_t *j = api_push_json(res, n);
  free(res);
  free(why);
  class__free_copy(&k);
  return j;
}

/* The session's label: the class and the group, cut to fit on a character's boundary. */
static void label_of(const klass *c, const char *group, char out[64]) {
  char full[2 * API_CLASS_TEXT + 8];
  snprintf(full, sizeof full, "%s · %s", c->name, group);
  memcpy(out, full, 63);
  out[63] = '\0';
  api_utf8_clean(out);
}

/* The class of a join code, taken (class__put() it), or NULL with 404 no_class or 421 wrong_node.
 */
static klass *by_code(class_registry *cr, const char *code, api_error *err) {
  klass *c = node_name_ok(code, sess_node(cr->reg), 6, SESS_CODE_ALPHABET)
                 ? class__take_class(cr, code, true)
                 : NULL;
  char home[NODE_ID_MAX + 1];
  if (!c && node_split(code, home) && *home && strcmp(home, sess_node(cr->reg)) != 0) {
    /* the cluster's router sends a join to the code's node (/n/{node}/api/join): one that
     * reached another node is told where, not that the code is wrong */
    api_fail(err, API_E_WRONG_NODE, "code",
             "the class '%.16s' is on node '%s': join at /n/%s/api/join", code, home, home);
    return NULL;
  }
  if (!c) {
    api_fail(err, API_E_NO_CLASS, "code", "no class has the code '%.16s'", code);
  }
  return c;
}

json_t *class_lookup(class_registry *cr, const char *code, api_error *err) {
  klass *c = by_code(cr, code, err);
  if (!c) {
    return NULL;
  }
  pthread_mutex_lock(&cr->lock);
  api_class_view v = {.name = c->name, .nscenes = c->nscenes, .ended_at = c->ended_at};
  for (int i = 0; i < c->nscenes; i++) {
    v.scenes[i] = c->scenes[i]->name;
  }
  json_t *j = api_class_lookup_json(&v);
  pthread_mutex_unlock(&cr->lock);
  class__put(cr, c);
  return j;
}

json_t *class_join(class_registry *cr, const api_join *cmd, bool *created, api_error *err) {
  *created = false;
  klass *c = by_code(cr, cmd->code, err);
  if (!c) {
    return NULL;
  }
  /* c is taken: valid without the lock until put */
  pthread_mutex_lock(&c->join_lock);
  pthread_mutex_lock(&cr->lock);
  int rc = class__open_class(c, err);
  class_group *g = rc == 0 ? class__group_of(c, cmd->group) : NULL;
  const grn_scene_info *scene = cmd->scene ? cmd->scene : c->scenes[0];
  class_group found = {0};
  if (g) {
    found = *g;
  }
  /* the group as its first student spelt it, however a later one types it */
  char name[API_CLASS_TEXT];
  snprintf(name, sizeof name, "%s", g ? found.name : cmd->group);
  sess_class_link link;
  memset(&link, 0, sizeof link);
  char label[64];
  json_t *defaults = json_deep_copy(c->defaults); /* see copy_class */
  const bool private_ = c->private_, second_controller = c->second_controller;
  /* the group's number in joining order, from 1: its seed when the class gives each its own */
  const uint64_t own_seed = c->own_seeds ? (uint64_t)(g ? g - c->groups : c->ngroups) + 1 : 0;
  if (rc == 0 && !defaults) {
    api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
    rc = -1;
  }
  if (rc == 0) {
    snprintf(link.class_id, sizeof link.class_id, "%s", c->id);
    snprintf(link.group, sizeof link.group, "%s", name);
    link.grain_budget = c->grain_budget;
    for (int i = 0; i < c->nscenes; i++) {
      link.scenes[i] = c->scenes[i];
    }
    link.nscenes = c->nscenes;
    link.locked = &c->locked;
    label_of(c, name, label);
    if (!g && c->ngroups >= c->max_groups) {
      api_fail(err, API_E_CLASS_FULL, "group",
               "the class has its %d groups already: join one of them", c->max_groups);
      rc = -1;
    }
  }
  pthread_mutex_unlock(&cr->lock);
  session *s = rc == 0 && g ? class__live_session(cr, &found) : NULL;
  json_t *out = NULL;
  const char *control = NULL, *viewer = NULL;
  char token[65] = "", viewer_token[65] = "";
  if (s) { /* the group's session: a later student of the group */
    control = second_controller ? found.control_token : NULL;
    viewer = found.viewer_token[0] ? found.viewer_token : NULL;
  } else if (rc == 0) { /* the group's first student, or its session has gone */
    grn_world_def def;
    rc = api_class_definition(defaults, scene, &def, err);
    if (own_seed > 0) {
      def.seed = own_seed;
    }
    double wait = 0.0;
    if (rc == 0) {
      pthread_mutex_lock(&cr->lock);
      wait = class__take_creation(cr, c);
      pthread_mutex_unlock(&cr->lock);
    }
    if (wait > 0.0) {
      api_fail(err, API_E_CLASS_CREATE_RATE_LIMITED, "",
               "the class has started new sessions as fast as it may: try again in %.0f s",
               ceil(wait));
      err->seconds_left = wait;
      rc = -1;
    }
    s = rc == 0
            ? sess_create_in_class(cr->reg, &def, label, private_, &link, token, viewer_token, err)
            : NULL;
    if (!s && rc == 0) { /* refused (a scene the class does not use, ...): it cost nothing */
      pthread_mutex_lock(&cr->lock);
      c->tokens += 1.0;
      pthread_mutex_unlock(&cr->lock);
    }
    if (s) {
      *created = true;
      control = token;
      viewer = viewer_token[0] ? viewer_token : NULL;
      pthread_mutex_lock(&cr->lock);
      class_group *mine = class__group_of(c, name);
      const bool fresh = !mine;
      mine = mine ? mine : class__add_group(c, name, class__now_unix());
      if (mine) {
        snprintf(mine->session, sizeof mine->session, "%s", sess_id(s));
        memcpy(mine->control_token, token, sizeof token);
        memcpy(mine->viewer_token, viewer_token, sizeof viewer_token);
        if (fresh && cr->st) {
          store_group(cr->st, c->id, name);
        }
      }
      pthread_mutex_unlock(&cr->lock);
      if (!mine) {
        sess_delete(cr->reg, s);
        sess_release(s);
        s = NULL;
        api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
      }
    }
  }
  pthread_mutex_unlock(&c->join_lock);
  json_decref(defaults);
  if (s) {
    api_session_view sv;
    sess_view(s, &sv);
    sess_release(s);
    json_t *cj = class__view(cr, c->id, CLASS_MEMBER, NULL, err);
    out = api_join_json(name, api_session_json(&sv), control, viewer, cj);
  }
  class__put(cr, c);
  return out;
}
