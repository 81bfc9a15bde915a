/* The timeline runner: events come due in order and at their step, no step passes an event or the
 * end, out-of-order events are refused, and a world played along a timeline ends on the same
 * digest as the same changes applied by hand. */
#include "../support/check.h"
#include "timeline.h"

#include <stdint.h>
#include <string.h>

static timeline_event at(uint64_t step, const char *param, double value) {
  timeline_event ev = {.step = step, .value = value};
  snprintf(ev.param, sizeof ev.param, "%s", param);
  return ev;
}

static void ordering(void) {
  timeline t = {.end = 100};
  timeline_event a = at(10, "mu", 0.6), b = at(10, "mu", 0.7), c = at(40, "mur", 0.2);
  CHECK("events in order are taken",
        timeline_add(&t, &a) == 0 && timeline_add(&t, &b) == 0 && timeline_add(&t, &c) == 0);
  timeline_event early = at(5, "mu", 0.1);
  CHECK("an event before the last is refused", timeline_add(&t, &early) == -1 && t.count == 3);
  CHECK("nothing is due before step 10", timeline_due(&t, 9) == NULL);
  CHECK_NEAR("steps from 0 stop at the first event", (double)timeline_room(&t, 0, 1000), 10, 0);
  CHECK_NEAR("and at what was asked for", (double)timeline_room(&t, 0, 4), 4, 0);
  const timeline_event *x = timeline_due(&t, 10), *y = timeline_due(&t, 10);
  CHECK("both events at step 10 come due, in the order they were added",
        x && y && x->value == 0.6 && y->value == 0.7 && timeline_due(&t, 10) == NULL);
  CHECK_NEAR("then steps stop at the next event", (double)timeline_room(&t, 10, 1000), 30, 0);
  CHECK("the next one comes due at 40", timeline_due(&t, 40) != NULL);
  CHECK_NEAR("after the last event, steps stop at the end", (double)timeline_room(&t, 40, 1000), 60,
             0);
  CHECK("not done before the end", !timeline_done(&t, 99));
  CHECK("done at the end", timeline_done(&t, 100));
  timeline_free(&t);
  timeline late = {.end = 50};
  timeline_event past = at(80, "mu", 0.6);
  timeline_add(&late, &past);
  CHECK_NEAR("an event past the end does not move the end", (double)timeline_room(&late, 0, 1000),
             50, 0);
  CHECK("and the timeline is done there", timeline_done(&late, 50));
  timeline_free(&late);
}

static grn_world *pour(void) {
  grn_world_def d;
  grn_error e;
  grn_world_def_default(&d, "pour", &e);
  grn_world_def_set(&d, "quality", 0, &e);
  grn_world *w = NULL;
  grn_world_create(&d, &w, &e);
  return w;
}

static void played_equals_by_hand(void) {
  timeline t = {.end = 300};
  timeline_event spout = {.step = 60, .is_action = true};
  grn_error e;
  grn_action_parse("spout:0.5,0.2", &spout.action, &e);
  timeline_event mu = at(150, "mu", 0.9);
  timeline_add(&t, &spout);
  timeline_add(&t, &mu);
  grn_world *a = pour(), *b = pour();
  int rc = GRN_OK;
  for (uint64_t now = 0; !timeline_done(&t, now) && rc == GRN_OK;) {
    const timeline_event *ev;
    while ((ev = timeline_due(&t, now)) != NULL && rc == GRN_OK) {
      rc = timeline_apply(a, ev, &e);
    }
    const uint64_t k = timeline_room(&t, now, 1000);
    rc = rc == GRN_OK ? grn_world_step(a, (int)k) : rc;
    now += k;
  }
  grn_world_step(b, 60);
  grn_world_act(b, &spout.action, &e);
  grn_world_step(b, 90);
  grn_world_set_param(b, "mu", 0.9, &e);
  grn_world_step(b, 150);
  CHECK("played along the timeline: the same digest as by hand",
        rc == GRN_OK && grn_world_digest(a) == grn_world_digest(b));
  timeline_event bad = at(0, "mu", 9.0);
  CHECK("an event the engine refuses comes back refused",
        timeline_apply(a, &bad, &e) == GRN_E_RANGE && strcmp(e.field, "mu") == 0);
  grn_world_destroy(a);
  grn_world_destroy(b);
  timeline_free(&t);
}

int main(void) {
  ordering();
  played_equals_by_hand();
  CHECK_DONE();
}
