/* The heap policy of a process that holds one world (the worker, the CLI): large arrays mapped
 * on their own, so that a world's grown or dropped arrays go back to the system. */
#pragma once

#include <malloc.h>
#include <stdlib.h>

/* glibc maps an allocation of 128 KiB or more on its own, but once one such is freed it raises
 * that threshold to the freed size, and later arrays of a growing world come from the heap,
 * which keeps what they leave: a 100 000-grain bed on two engine threads peaked 15 MB above what
 * its engine held (bench/README, "Memory at 100 000 grains"). A fixed threshold of 1 MiB keeps
 * every large array mapped; small worlds never reach it. The operator's MALLOC_MMAP_THRESHOLD_
 * stands. */
static inline void heap_map_large_arrays(void) {
  if (!getenv("MALLOC_MMAP_THRESHOLD_")) {
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
  }
}
