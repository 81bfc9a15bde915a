/* grainlabd's REST routes, one row each: method, pattern, who may use it, and the handler that
 * answers it. schema/openapi.yaml documents the same routes; tests/service/test_daemon.sh checks
 * that they agree, and tests/unit/test_api_route.c matches paths against this table. */
#include "http_internal.h"

const api_route http_routes[] = {
    {"GET", "/healthz", API_AUTH_NONE, h_healthz},
    {"GET", "/readyz", API_AUTH_NONE, h_readyz},
    {"GET", "/metrics", API_AUTH_NONE, h_metrics},
    {"GET", "/api/config", API_AUTH_NONE, h_config},
    {"GET", "/api/nodes", API_AUTH_NONE, h_nodes},
    {"GET", "/api/scenes", API_AUTH_NONE, h_scenes},
    /* private sessions are listed for the admin only */
    {"GET", "/api/sessions", API_AUTH_NONE, h_sessions_list},
    {"POST", "/api/sessions", API_AUTH_NONE, h_sessions_create},
    {"GET", "/api/sessions/{id}", API_AUTH_NONE, h_session_get},
    {"PATCH", "/api/sessions/{id}", API_AUTH_CONTROL, h_session_patch},
    {"DELETE", "/api/sessions/{id}", API_AUTH_CONTROL_OR_ADMIN, h_session_delete},
    {"PATCH", "/api/sessions/{id}/params", API_AUTH_CONTROL, h_session_params},
    {"POST", "/api/sessions/{id}/actions", API_AUTH_CONTROL, h_session_action},
    {"POST", "/api/sessions/{id}/scene", API_AUTH_CONTROL, h_session_scene},
    /* whoever may watch a session may take its particles away */
    {"GET", "/api/sessions/{id}/snapshot", API_AUTH_NONE, h_session_snapshot},
    {"POST", "/api/admin/backup", API_AUTH_ADMIN, h_backup},
    {"GET", "/api/runs", API_AUTH_NONE, h_runs_list},
    {"GET", "/api/runs/{run}", API_AUTH_NONE, h_run_get},
    {"GET", "/api/runs/{run}/samples", API_AUTH_NONE, h_run_samples},
    {"GET", "/api/runs/{run}/snapshot", API_AUTH_NONE, h_run_snapshot},
    {"POST", "/api/runs/{run}/replay", API_AUTH_NONE, h_run_replay},
    {"POST", "/api/runs/{run}/fork", API_AUTH_NONE, h_run_fork},
    /* classes (issue 17): a private class is shown to its teacher and its groups only */
    {"POST", "/api/classes", API_AUTH_CLASS_CREATE, h_classes_create},
    {"GET", "/api/classes/{id}", API_AUTH_NONE, h_class_get},
    {"PATCH", "/api/classes/{id}", API_AUTH_TEACHER, h_class_patch},
    {"POST", "/api/classes/{id}/push", API_AUTH_TEACHER, h_class_push},
    {"POST", "/api/classes/{id}/end", API_AUTH_TEACHER, h_class_end},
    /* a code's class before joining it (its name and scenes): a wrong code counts as a guess */
    {"GET", "/api/join", API_AUTH_NONE, h_join_lookup},
    {"POST", "/api/join", API_AUTH_NONE, h_join},
};
const size_t http_route_count = sizeof http_routes / sizeof http_routes[0];
