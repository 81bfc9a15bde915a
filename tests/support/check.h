/* Minimal test assertions: every check prints what it measured, what it expected and the
 * tolerance, so a failure in CI explains itself. One process per test program. */
#ifndef GRAINLAB_TEST_CHECK_H
#define GRAINLAB_TEST_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int check_failures;

#define CHECK(name, cond)                                                                          \
  do {                                                                                             \
    const int ok_ = (cond);                                                                        \
    printf("%s %s (%s)\n", ok_ ? "ok  " : "FAIL", (name), #cond);                                  \
    check_failures += !ok_;                                                                        \
  } while (0)

/* |got − want| ≤ tol */
#define CHECK_NEAR(name, got, want, tol)                                                           \
  do {                                                                                             \
    const double g_ = (got), w_ = (want), t_ = (tol);                                              \
    const int ok_ = fabs(g_ - w_) <= t_;                                                           \
    printf("%s %s: got %.9g, want %.9g ± %.3g\n", ok_ ? "ok  " : "FAIL", (name), g_, w_, t_);      \
    check_failures += !ok_;                                                                        \
  } while (0)

/* lo ≤ got ≤ hi */
#define CHECK_RANGE(name, got, lo, hi)                                                             \
  do {                                                                                             \
    const double g_ = (got), l_ = (lo), h_ = (hi);                                                 \
    const int ok_ = g_ >= l_ && g_ <= h_;                                                          \
    printf("%s %s: got %.9g, want %.9g..%.9g\n", ok_ ? "ok  " : "FAIL", (name), g_, l_, h_);       \
    check_failures += !ok_;                                                                        \
  } while (0)

#define CHECK_DONE()                                                                               \
  do {                                                                                             \
    printf("%d check(s) failed\n", check_failures);                                                \
    return check_failures ? EXIT_FAILURE : EXIT_SUCCESS;                                           \
  } while (0)

#endif
