/* The engine's random numbers: xoshiro256** seeded by splitmix64, state in the world (saved),
 * so a run is the same for the same seed on any machine. */
#include "internal.h"

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void grn__rng_seed(uint64_t s[4], uint64_t seed) {
  for (int i = 0; i < 4; i++) {
    s[i] = splitmix64(&seed);
  }
}

static inline uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

double grn__rng_uniform(uint64_t s[4]) {
  const uint64_t r = rotl(s[1] * 5, 7) * 9;
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return (double)(r >> 11) * 0x1.0p-53;
}
