/* Classes (issue 17): a teacher's lab for many student groups, each group with its own session.
 * The registry keeps every class in memory (and in the store, which it loads at start), answers
 * the class routes of http.c, and ends each class at its end time. */
#ifndef GRAINLAB_CLASS_H
#define GRAINLAB_CLASS_H

#include "api_class.h"
#include "sess.h"
#include "store.h"

typedef struct class_registry class_registry;

/* Loads every recorded class from `st` (may be NULL: nothing kept); NULL with err when the store
 * cannot be read. Its ticker thread ends classes at their end time.
 *
 * Joins are creations, counted against the class rather than the joining address: a class often
 * sits behind one school address, whose own limits (max-sessions-per-client, create-rate) would
 * refuse its fifth group. Each class has an allowance instead: at most max_groups live sessions
 * (one per group), and creations from a bucket of max_groups that refills at
 * `creates_per_minute` (the server's create-rate), so that a group deleting its session and
 * joining again cannot start sessions faster than one address may.
 *
 * Memory holds the open classes and those ended less than keep_s ago (seconds); older ones are
 * read back from the store when asked for (their page, their code), so memory does not grow with
 * every class a server has had. */
class_registry *class_registry_new(sess_registry *reg, store *st, double creates_per_minute,
                                   double keep_s, char *err, size_t errlen);
/* Stops the ticker (before the sessions registry is freed: it ends sessions); then, once no
 * session is left (they read their class's lock), class_registry_free frees the classes. */
void class_registry_stop(class_registry *cr);
void class_registry_free(class_registry *cr);

/* Who asks about a class, from the token presented: its teacher (or the admin), a member (a
 * token of one of its groups' sessions), or anyone. */
typedef enum class_role { CLASS_ANYONE = 0, CLASS_MEMBER, CLASS_TEACHER } class_role;

/* Each returns a new JSON reply, or NULL with err. `id` is a class id from the path. */
json_t *class_create(class_registry *cr, const api_class_create *cmd, api_error *err);
/* The role of `token` (NULL: none) in class `id`; -1 with 404 no_class when there is none. */
int class_role_of(class_registry *cr, const char *id, const char *token, bool admin,
                  class_role *role, api_error *err);
/* The class as `role` sees it (contract: /work/notes → schema/openapi.yaml, Class). A private
 * class refuses anyone but its members and teacher (403 private). */
json_t *class_get(class_registry *cr, const char *id, class_role role, api_error *err);
json_t *class_patch(class_registry *cr, const char *id, const api_class_patch *cmd, api_error *err);
json_t *class_push(class_registry *cr, const char *id, const api_class_push *cmd, api_error *err);
json_t *class_end(class_registry *cr, const char *id, api_error *err);
/* A student joins: *created tells whether a new session was made (201) or the group's own was
 * found (200). A wrong code is 404 no_class. */
json_t *class_join(class_registry *cr, const api_join *cmd, bool *created, api_error *err);
/* What a join page shows before its student joins: the class of a code, {name, scenes, state}
 * (no id, no groups); 404 no_class or 421 wrong_node as class_join answers. */
json_t *class_lookup(class_registry *cr, const char *code, api_error *err);

/* The group sessions of class `id`, for its teacher's dashboard stream (ws.c): their number (at
 * most max, ids in ids), -1 when there is no such class, -2 when `token` (NULL: none) is not its
 * teacher's. */
int class_sessions(class_registry *cr, const char *id, const char *token,
                   char (*ids)[NODE_NAME_SIZE], int max);

/* For /metrics: classes open, groups with a live session in them, and classes in memory. */
void class_totals(class_registry *cr, int *open, int *groups, int *held);

#endif
