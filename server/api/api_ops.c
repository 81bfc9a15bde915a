/* The daemon's smaller documents (api_ops.h). */
#include "api_ops.h"

#include "api_class.h"

json_t *api_health_json(void) {
  return json_pack("{s:s}", "status", "ok");
}

static json_t *load_json(const api_node_load *fig) {
  return json_pack("{s:s, s:i, s:i, s:i, s:f}", "node", fig->node, "sessions", fig->sessions,
                   "max_sessions", fig->max_sessions, "cores", fig->cores, "load", fig->load);
}

json_t *api_ready_json(const api_node_load *self) {
  json_t *j = load_json(self);
  json_object_set_new(j, "ready", json_true());
  return j;
}

json_t *api_nodes_json(const api_node_load *self, const api_node_load *peers, int npeers) {
  json_t *list = json_array();
  json_t *own = load_json(self);
  json_object_set_new(own, "self", json_true());
  json_array_append_new(list, own);
  for (int i = 0; i < npeers; i++) {
    json_array_append_new(list, load_json(&peers[i]));
  }
  return json_pack("{s:o}", "nodes", list);
}

json_t *api_config_json(int ws_port, const char *students, int max_grains) {
  /* the limits a teacher's form checks before it sends (the same the class API refuses by) */
  return json_pack("{s:i, s:s, s:s, s:s?, s:i, s:i}", "ws_port", ws_port, "ws_path",
                   "/ws/sessions/", "ws_class_path", "/ws/classes/", "students", students,
                   "class_groups_max", API_CLASS_GROUPS_MAX, "max_grains", max_grains);
}

json_t *api_moved_json(const char *node, const char *reason) {
  return json_pack("{s:s, s:s}", "node", node, "reason", reason);
}

json_t *api_deleted_json(const char *id) {
  return json_pack("{s:s}", "deleted", id);
}

json_t *api_backup_json(const char *path, long runs, long long bytes) {
  return json_pack("{s:s, s:I, s:I}", "path", path, "runs", (json_int_t)runs, "bytes",
                   (json_int_t)bytes);
}

json_t *api_sessions_json(const api_session_view *views, int n) {
  json_t *list = json_array();
  for (int i = 0; i < n; i++) {
    json_array_append_new(list, api_session_json(&views[i]));
  }
  return json_pack("{s:o}", "sessions", list);
}

json_t *api_created_json(const api_session_view *v, const char *token, const char *viewer_token) {
  json_t *j = api_session_json(v);
  json_object_set_new(j, "control_token", json_string(token));
  if (*viewer_token) {
    json_object_set_new(j, "viewer_token", json_string(viewer_token));
  }
  return j;
}

json_t *api_ws_error_json(const char *code, const char *field, const char *message) {
  return json_pack("{s:s, s:o}", "type", "error", "error", api_error_object(code, field, message));
}

json_t *api_ws_hello_json(const api_session_view *v) {
  return json_pack("{s:s, s:o}", "type", "hello", "session", api_session_json(v));
}

json_t *api_ws_auth_json(const char *role) {
  return json_pack("{s:s, s:s}", "type", "auth", "role", role);
}

json_t *api_ws_rate_json(int fps) {
  return json_pack("{s:s, s:i}", "type", "rate", "fps", fps);
}
