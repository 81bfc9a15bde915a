/* The timeline runner shared by the CLI's run and replay and the daemon's replays and forks. */
#include "timeline.h"

#include <stdlib.h>

int timeline_add(timeline *t, const timeline_event *ev) {
  if (t->count > 0 && ev->step < t->events[t->count - 1].step) {
    return -1;
  }
  if (t->count == t->cap) {
    const int cap = t->cap ? 2 * t->cap : 16;
    timeline_event *grown = realloc(t->events, (size_t)cap * sizeof *grown);
    if (!grown) {
      return -1;
    }
    t->events = grown;
    t->cap = cap;
  }
  t->events[t->count++] = *ev;
  return 0;
}

void timeline_free(timeline *t) {
  free(t->events);
  t->events = NULL;
  t->count = t->cap = t->next = 0;
}

const timeline_event *timeline_due(timeline *t, uint64_t now) {
  if (t->next < t->count && t->events[t->next].step <= now) {
    return &t->events[t->next++];
  }
  return NULL;
}

uint64_t timeline_room(const timeline *t, uint64_t now, uint64_t want) {
  uint64_t stop = t->next < t->count ? t->events[t->next].step : t->end;
  stop = stop < t->end ? stop : t->end;
  const uint64_t room = stop > now ? stop - now : 0;
  return want < room ? want : room;
}

bool timeline_done(const timeline *t, uint64_t now) {
  return now >= t->end; /* an event recorded past the end never falls due */
}

int timeline_apply(grn_world *w, const timeline_event *ev, grn_error *err) {
  return ev->is_action ? grn_world_act(w, &ev->action, err)
                       : grn_world_set_param_at(w, ev->param_index, ev->value, err);
}
