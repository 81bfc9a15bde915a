/* A run's timeline: engine actions and parameter changes at given steps, up to an optional end.
 * One runner for `grainlab run` (timed actions), `grainlab replay` and the daemon's replays and
 * forks: it says which events are due and how far the world may step before the next one. */
#ifndef GRAINLAB_TIMELINE_H
#define GRAINLAB_TIMELINE_H

#include "grainlab/grainlab.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct timeline_event {
  uint64_t step;
  bool is_action;
  grn_action action; /* is_action */
  char param[32];    /* otherwise: one parameter change, by name (for messages) */
  int param_index;   /* and its index in the run's scene's list, found once when it is read */
  double value;
} timeline_event;

typedef struct timeline {
  timeline_event *events; /* in step order; events at one step in the order they happened */
  int count, cap;
  int next;     /* the first event not yet taken */
  uint64_t end; /* the step the run ends at; UINT64_MAX: it runs on */
} timeline;

/* Append an event (events must come in step order: out of order returns -1 and adds nothing);
 * -1 also when memory runs out. */
int timeline_add(timeline *t, const timeline_event *ev);
void timeline_free(timeline *t);

/* The next event due at `now` (its step ≤ now), taken; NULL when none is due. */
const timeline_event *timeline_due(timeline *t, uint64_t now);
/* How many steps the world at `now` may take, at most `want`, without passing the next event or
 * the end. */
uint64_t timeline_room(const timeline *t, uint64_t now, uint64_t want);
/* The end reached (every event before it taken: nothing steps past one). */
bool timeline_done(const timeline *t, uint64_t now);

/* Apply one event to an in-process world; GRN_OK or the engine's refusal in `err`. */
int timeline_apply(grn_world *w, const timeline_event *ev, grn_error *err);

#endif
