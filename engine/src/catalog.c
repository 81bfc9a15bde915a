/* Status names, strict number parsing, parameters and measurements found in a scene's catalogue
 * entry, parameter validation and action parsing. The scenes themselves (with their parameter
 * tables) are in scenes/, listed once in scenes/registry.c. */
#include "internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

const char *grn_status_name(int status) {
  switch (status) {
#define GRN_X_NAME(name, value, msg)                                                               \
  case value:                                                                                      \
    return #name;
    GRN_STATUS_TABLE(GRN_X_NAME)
#undef GRN_X_NAME
  default:
    return "GRN_E_UNKNOWN";
  }
}

const char *grn_status_message(int status) {
  switch (status) {
#define GRN_X_MSG(name, value, msg)                                                                \
  case value:                                                                                      \
    return msg;
    GRN_STATUS_TABLE(GRN_X_MSG)
#undef GRN_X_MSG
  default:
    return "unknown status";
  }
}

int grn__fail(grn_error *err, int code, const char *field, const char *fmt, ...) {
  if (err) {
    err->code = code;
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
  }
  return code;
}

int grn_parse_number(const char *text, double *out) {
  if (!text || !*text) {
    return GRN_E_NOT_NUMBER;
  }
  /* strtod accepts leading blanks, hex floats, "inf" and "nan": none is a parameter value */
  for (const char *c = text; *c; c++) {
    if (!strchr("0123456789+-.eE", *c)) {
      return GRN_E_NOT_NUMBER;
    }
  }
  char *end = NULL;
  errno = 0;
  const double v = strtod(text, &end);
  if (end == text || *end != '\0' || errno == ERANGE || !isfinite(v)) {
    return GRN_E_NOT_NUMBER;
  }
  *out = v;
  return GRN_OK;
}

int grn__no_act(grn_world *w, const grn_action *a, grn_error *err) {
  (void)w;
  return grn__fail(err, GRN_E_UNSUPPORTED, grn_action_name(a->kind),
                   "this scene has no action '%s'", grn_action_name(a->kind));
}

int grn_scene_param_index(const grn_scene_info *scene, const char *name) {
  for (int i = 0; scene && name && i < scene->param_count; i++) {
    if (strcmp(scene->params[i].name, name) == 0) {
      return i;
    }
  }
  return -1;
}

int grn_scene_measure_index(const grn_scene_info *scene, const char *name) {
  for (int i = 0; scene && name && i < scene->measure_count; i++) {
    if (strcmp(scene->measures[i].name, name) == 0) {
      return i;
    }
  }
  return -1;
}

int grn__unknown_param(const grn_scene_info *scene, const char *name, grn_error *err) {
  return grn__fail(err, GRN_E_UNKNOWN_PARAM, name ? name : "",
                   "unknown parameter '%s' for scene '%s'", name ? name : "(null)",
                   scene ? scene->name : "(none)");
}

/* Shared by the definition, live changes and restore: whether the scene's parameter `index` may
 * take the value. */
int grn__check_param(const grn_scene_info *scene, int index, double value, grn_error *err) {
  if (!scene || index < 0 || index >= scene->param_count) {
    return grn__fail(err, GRN_E_UNKNOWN_PARAM, "", "no parameter %d for scene '%s'", index,
                     scene ? scene->name : "(none)");
  }
  const grn_param_info *pi = &scene->params[index];
  if (!isfinite(value)) {
    return grn__fail(err, GRN_E_NOT_NUMBER, pi->name, "parameter '%s' must be a finite number",
                     pi->name);
  }
  if (value < pi->min || value > pi->max) {
    return grn__fail(err, GRN_E_RANGE, pi->name, "parameter '%s' = %g is outside %g..%g%s%s",
                     pi->name, value, pi->min, pi->max, *pi->unit ? " " : "", pi->unit);
  }
  if (pi->integer && value != floor(value)) {
    return grn__fail(err, GRN_E_RANGE, pi->name, "parameter '%s' = %g must be a whole number",
                     pi->name, value);
  }
  return GRN_OK;
}

/* ---- actions ------------------------------------------------------------------------------ */
/* Tool positions reach well past any scene's walls (a tool parked outside does nothing); its
 * velocity is bounded by the grain speed limit so a swept tool cannot launch grains past it. */
static const grn_action_arg spout_args[] = {
    {"x", "m", -5.0, 5.0, true, false, "spout position across the table"},
    {"z", "m", -5.0, 5.0, true, false, "spout position along the table"}};
static const grn_action_arg pour_args[] = {
    {"on", "", 0.0, 1.0, true, true, "pour from the spout (true) or stop (false)"}};
static const grn_action_arg tool_args[] = {
    {"x", "m", -100.0, 100.0, true, false, "tool centre"},
    {"y", "m", -100.0, 100.0, true, false, "tool centre"},
    {"z", "m", -100.0, 100.0, true, false, "tool centre"},
    {"vx", "m/s", -GRN_VMAX, GRN_VMAX, false, false, "tool velocity"},
    {"vy", "m/s", -GRN_VMAX, GRN_VMAX, false, false, "tool velocity"},
    {"vz", "m/s", -GRN_VMAX, GRN_VMAX, false, false, "tool velocity"}};
static const grn_action_arg pull_dam_args[] = {
    {"speed", "m/s", 0.05, 10.0, false, false, "how fast the dam rises (default 1.5)"}};
static const grn_action_arg tilt_args[] = {
    {"angle", "deg", -60.0, 60.0, true, false, "tilt to reach"},
    {"rate", "deg/s", 0.1, 90.0, false, false, "turning speed (default: the tilt_rate parameter)"}};

#define ARGS(a) LEN(a), a
static const grn_action_info actions[GRN_ACTION_COUNT] = {
    {"spout", GRN_A_SPOUT, ARGS(spout_args), false, "move the spout"},
    {"pour", GRN_A_POUR, ARGS(pour_args), false, "start or stop pouring"},
    {"tool", GRN_A_TOOL, ARGS(tool_args), true,
     "place a spherical tool in the grains, moving with the velocity given"},
    {"tool_off", GRN_A_TOOL_OFF, 0, NULL, false, "take the tool away"},
    {"pull_dam", GRN_A_PULL_DAM, ARGS(pull_dam_args), false, "pull the dam up"},
    {"tilt", GRN_A_TILT, ARGS(tilt_args), false, "tilt the box about its bottom axis"},
    {"open_hole", GRN_A_OPEN_HOLE, 0, NULL, false, "pull the plug out of the silo's hole"},
    {"plug_hole", GRN_A_PLUG_HOLE, 0, NULL, false, "plug the silo's hole"},
    {"reset", GRN_A_RESET, 0, NULL, false, "start the scene over, same parameters and seed"}};

const grn_action_info *grn_action_info_of(grn_action_kind kind) {
  return (int)kind >= 0 && kind < GRN_ACTION_COUNT ? &actions[kind] : NULL;
}

const grn_action_info *grn_action_find(const char *name) {
  for (int k = 0; name && k < GRN_ACTION_COUNT; k++) {
    if (strcmp(actions[k].name, name) == 0) {
      return &actions[k];
    }
  }
  return NULL;
}

const char *grn_action_name(grn_action_kind kind) {
  const grn_action_info *info = grn_action_info_of(kind);
  return info ? info->name : "";
}

/* A boolean argument in text: on/off. */
static bool parse_switch(const char *text, double *out) {
  if (strcmp(text, "on") == 0 || strcmp(text, "off") == 0) {
    *out = text[1] == 'n' ? 1.0 : 0.0;
    return true;
  }
  return false;
}

int grn_action_parse(const char *text, grn_action *out, grn_error *err) {
  if (!text) {
    return grn__fail(err, GRN_E_INVALID, "action", "no action given");
  }
  if (strcmp(text, "tool:off") == 0) { /* the spelling of engine 0.1, kept for stored runs */
    text = "tool_off";
  }
  char name[32];
  const char *colon = strchr(text, ':');
  const size_t len = colon ? (size_t)(colon - text) : strlen(text);
  if (len == 0 || len >= sizeof name) {
    return grn__fail(err, GRN_E_UNKNOWN_ACTION, "action", "unknown action '%.40s'", text);
  }
  memcpy(name, text, len);
  name[len] = '\0';
  const grn_action_info *info = grn_action_find(name);
  if (!info) {
    return grn__fail(err, GRN_E_UNKNOWN_ACTION, name, "unknown action '%s'", name);
  }
  grn_action a = {.kind = info->kind};
  const char *args = colon ? colon + 1 : NULL;
  if (colon && *args == '\0') {
    return grn__fail(err, GRN_E_INVALID, name, "action '%s' has an empty argument list", name);
  }
  while (args) {
    if (a.nargs == 6) {
      return grn__fail(err, GRN_E_INVALID, name, "action '%s' has too many arguments", name);
    }
    const char *comma = strchr(args, ',');
    const size_t alen = comma ? (size_t)(comma - args) : strlen(args);
    char num[64];
    if (alen == 0 || alen >= sizeof num) {
      return grn__fail(err, GRN_E_NOT_NUMBER, name, "action '%s': argument %d is not a number",
                       name, a.nargs + 1);
    }
    memcpy(num, args, alen);
    num[alen] = '\0';
    const bool boolean = a.nargs < info->arg_count && info->args[a.nargs].boolean;
    if (boolean ? !parse_switch(num, &a.args[a.nargs])
                : grn_parse_number(num, &a.args[a.nargs]) != GRN_OK) {
      if (boolean) {
        return grn__fail(err, GRN_E_INVALID, name, "action '%s' takes 'on' or 'off', not '%s'",
                         name, num);
      }
      return grn__fail(err, GRN_E_NOT_NUMBER, name,
                       "action '%s': argument %d '%s' is not a finite number", name, a.nargs + 1,
                       num);
    }
    a.nargs++;
    args = comma ? comma + 1 : NULL;
  }
  *out = a;
  return GRN_OK;
}

int grn_action_format(const grn_action *a, char *buf, size_t size) {
  const grn_action_info *info = a ? grn_action_info_of(a->kind) : NULL;
  if (!info || a->nargs < 0 || a->nargs > 6 || !buf || size == 0) {
    return GRN_E_INVALID;
  }
  size_t at = (size_t)snprintf(buf, size, "%s", info->name);
  for (int i = 0; i < a->nargs && at < size; i++) {
    const char sep = i ? ',' : ':';
    if (i < info->arg_count && info->args[i].boolean) {
      at += (size_t)snprintf(buf + at, size - at, "%c%s", sep, a->args[i] != 0.0 ? "on" : "off");
    } else {
      at += (size_t)snprintf(buf + at, size - at, "%c%.17g", sep, a->args[i]);
    }
  }
  return at < size ? (int)at : GRN_E_BUFFER;
}

int grn_action_check(const grn_scene_info *scene, const grn_action *a, grn_error *err) {
  const grn_action_info *info = a ? grn_action_info_of(a->kind) : NULL;
  if (!scene || !info) {
    return grn__fail(err, GRN_E_INVALID, "action", "invalid action");
  }
  const char *nm = info->name;
  bool ok = false;
  for (int i = 0; i < scene->action_count; i++) {
    ok = ok || strcmp(scene->actions[i], nm) == 0;
  }
  if (!ok) {
    return grn__fail(err, GRN_E_UNSUPPORTED, nm, "scene '%s' has no action '%s'", scene->name, nm);
  }
  int required = 0;
  while (required < info->arg_count && info->args[required].required) {
    required++;
  }
  const bool partial = info->optional_together && a->nargs > required && a->nargs < info->arg_count;
  if (a->nargs < required || a->nargs > info->arg_count || partial) {
    if (partial) {
      return grn__fail(err, GRN_E_INVALID, nm,
                       "action '%s' takes %d arguments, or all %d with '%s', got %d", nm, required,
                       info->arg_count, info->args[required].name, a->nargs);
    }
    if (required == info->arg_count) {
      return grn__fail(err, GRN_E_INVALID, nm, "action '%s' takes %d argument%s, got %d", nm,
                       required, required == 1 ? "" : "s", a->nargs);
    }
    return grn__fail(err, GRN_E_INVALID, nm, "action '%s' takes %d to %d arguments, got %d", nm,
                     required, info->arg_count, a->nargs);
  }
  for (int k = 0; k < a->nargs; k++) {
    const grn_action_arg *arg = &info->args[k];
    if (!isfinite(a->args[k])) {
      return grn__fail(err, GRN_E_NOT_NUMBER, arg->name, "action '%s': %s must be a finite number",
                       nm, arg->name);
    }
    if (arg->boolean ? a->args[k] != 0.0 && a->args[k] != 1.0
                     : a->args[k] < arg->min || a->args[k] > arg->max) {
      return grn__fail(err, GRN_E_RANGE, arg->name, "action '%s': %s = %g is outside %g..%g%s%s",
                       nm, arg->name, a->args[k], arg->min, arg->max, *arg->unit ? " " : "",
                       arg->unit);
    }
  }
  return GRN_OK;
}
