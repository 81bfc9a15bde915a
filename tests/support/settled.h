/* Engine tests that start an experiment wait for the grains to settle first: the engine refuses
 * every action but reset while they settle (GRN_E_SETTLING). Public API only. */
#ifndef GRAINLAB_TEST_SETTLED_H
#define GRAINLAB_TEST_SETTLED_H

#include "grainlab/grainlab.h"

#include <stdio.h>
#include <stdlib.h>

/* Steps until the settle drag is over (at most a minute of simulated time, which no scene needs:
 * the tallest default lattice settles in under 20 s) and returns the time it took. */
static inline double settle_world(grn_world *w) {
  for (int k = 0; k < 240 && grn_world_settle_left(w) > 0.0; k++) {
    grn_world_step(w, 60);
  }
  if (grn_world_settle_left(w) > 0.0) {
    printf("the world still settles after %.1f s\n", grn_world_time(w));
    exit(1);
  }
  return grn_world_time(w);
}

/* Applies an action given as text ("tilt:35,90"), exiting with the engine's message if refused. */
static inline void act_or_exit(grn_world *w, const char *text) {
  grn_action a;
  grn_error e;
  if (grn_action_parse(text, &a, &e) != GRN_OK || grn_world_act(w, &a, &e) != GRN_OK) {
    printf("action %s failed: %s\n", text, e.message);
    exit(1);
  }
}

#endif
