/* The pair list against a brute-force all-pairs search at every rebuild of a 2000-grain pour and
 * of a flowing silo (whose fast grains get a wider slack), its layout (cell order, owners,
 * reference lists), contact history carried across rebuilds and re-listings (relist.c), and
 * between them: no pair within reach is ever missing from the list while every grain keeps within
 * its slack, nor from the near list while every grain keeps within its allowance. */
#include "../support/check.h"
#include "../support/settled.h"
#include "internal.h"

#include <string.h>

/* A pair's listing distance: both grains' radii, the reach gap and both slacks. */
static double listing_reach(const grn_world *w, int i, int j) {
  return w->rad[i] + w->rad[j] + grn__reach_gap(w) + w->pairs.slack[i] + w->pairs.slack[j];
}

/* Alive pairs (not both fixed) closer than a reach that the list does not hold, under their
 * larger grain: the listing distance (a relative 1e-12 inside it: the engine sums the same terms
 * in its own order), or, with slack false, the reach itself (touching, or a liquid bridge's gap
 * apart), which no step may ever find unlisted. *want counts the pairs closer than it. */
static int missing_within(const grn_world *w, bool slack, int *want) {
  int bad = 0;
  for (int i = 0; i < w->pairs.nl; i++) {
    for (int j = i + 1; j < w->pairs.nl; j++) {
      if (!(w->flags[i] & w->flags[j] & GRN_F_ALIVE) ||
          ((w->flags[i] & GRN_F_FIXED) && (w->flags[j] & GRN_F_FIXED))) {
        continue;
      }
      /* listed by where the list found them (a re-listing moves only some of them) */
      const grn_vec3 *at = slack ? w->pairs.ref : w->pos;
      const double dx = at[j].x - at[i].x, dy = at[j].y - at[i].y, dz = at[j].z - at[i].z,
                   rr = slack ? listing_reach(w, i, j) * (1.0 - 1e-12)
                              : w->rad[i] + w->rad[j] + grn__reach_gap(w);
      if (dx * dx + dy * dy + dz * dz >= rr * rr) {
        continue;
      }
      *want += 1;
      const bool i_owns = w->rad[i] > w->rad[j] || (w->rad[i] == w->rad[j] && w->id[i] > w->id[j]);
      const int a = i_owns ? i : j, b = i_owns ? j : i;
      bool found = false;
      for (int p = w->pairs.pstart[a]; p < w->pairs.pstart[a + 1] && !found; p++) {
        found = w->pairs.pb[p] == b;
      }
      bad += !found;
    }
  }
  return bad;
}

/* While the near list is in use: grains farther from where its refresh found them than their
 * allowance (what keeps a left-out pair apart), and listed pairs within reach (or active) that it
 * leaves out (the fused step would skip a pair that touches). */
static int near_missing(const grn_world *w) {
  if (!w->gran.near.valid || grn__near_stale(w) || grn__must_rebuild(w)) {
    return 0;
  }
  int bad = 0;
  for (int i = 0; i < w->pairs.nl; i++) {
    const double dx = w->pos[i].x - w->gran.near.ref[i].x, dy = w->pos[i].y - w->gran.near.ref[i].y,
                 dz = w->pos[i].z - w->gran.near.ref[i].z, u = w->gran.near.nu[i];
    bad += (w->flags[i] & GRN_F_ALIVE) && dx * dx + dy * dy + dz * dz >= u * u;
  }
  for (int a = 0; a < w->pairs.nl; a++) {
    for (int p = w->pairs.pstart[a]; p < w->pairs.pstart[a + 1]; p++) {
      const int b = w->pairs.pb[p];
      const double dx = w->pos[b].x - w->pos[a].x, dy = w->pos[b].y - w->pos[a].y,
                   dz = w->pos[b].z - w->pos[a].z, rr = w->rad[a] + w->rad[b] + grn__reach_gap(w);
      if (w->pairs.pfn[p] == 0.0f && dx * dx + dy * dy + dz * dz >= rr * rr) {
        continue;
      }
      bool found = false;
      for (int q = w->gran.near.start[a]; q < w->gran.near.start[a + 1] && !found; q++) {
        found = w->gran.near.p[q] == p;
      }
      bad += !found;
    }
  }
  return bad;
}

/* The near list made again by the AVX2 pass and by the scalar one, from the same state: both must
 * keep the same pairs in the same places (the AVX2 one's lanes are packed, not tested one by
 * one). Returns the entries that differ, or 0 without AVX2. */
static int near_simd_mismatches(grn_world *w) {
  if (!w->opt.simd) {
    return 0;
  }
  grn__near_refresh(w);
  const int m = w->gran.near.m, n = w->n;
  int32_t *keep = malloc(sizeof(int32_t) * (size_t)(3 * m + n + 2));
  memcpy(keep, w->gran.near.b, sizeof(int32_t) * (size_t)m);
  memcpy(keep + m, w->gran.near.p, sizeof(int32_t) * (size_t)m);
  memcpy(keep + 2 * m, w->gran.near.a, sizeof(int32_t) * (size_t)m);
  memcpy(keep + 3 * m, w->gran.near.start, sizeof(int32_t) * (size_t)(n + 1));
  keep[3 * m + n + 1] = w->gran.near.span;
  w->opt.simd = false;
  grn__near_refresh(w);
  w->opt.simd = true;
  int bad = abs(w->gran.near.m - m) + (w->gran.near.span != keep[3 * m + n + 1]);
  for (int q = 0; q < m && q < w->gran.near.m; q++) {
    bad += (w->gran.near.b[q] != keep[q]) + (w->gran.near.p[q] != keep[m + q]) +
           (w->gran.near.a[q] != keep[2 * m + q]);
  }
  for (int i = 0; i <= n; i++) {
    bad += w->gran.near.start[i] != keep[3 * m + i];
  }
  free(keep);
  (void)grn__plan_fused(w);
  grn__near_refs(w);
  return bad;
}

/* Every alive pair closer than its listing distance (not both fixed) must be listed exactly once,
 * under its larger grain, and nothing farther may be listed (a relative 1e-12 either side: the
 * engine sums the same terms in its own order). Returns the number of mismatches. */
static int brute_force_mismatches(const grn_world *w, int *listed_out, int *want_out) {
  const int n = w->n;
  int bad = 0, want = 0;
  /* mark listed partners per owner */
  for (int a = 0; a < n; a++) {
    for (int p = w->pairs.pstart[a]; p < w->pairs.pstart[a + 1]; p++) {
      const int b = w->pairs.pb[p];
      const bool larger = w->rad[a] > w->rad[b] || (w->rad[a] == w->rad[b] && w->id[a] > w->id[b]);
      const double dx = w->pos[b].x - w->pos[a].x, dy = w->pos[b].y - w->pos[a].y,
                   dz = w->pos[b].z - w->pos[a].z, rr = listing_reach(w, a, b) * (1.0 + 1e-12);
      bad += !larger || dx * dx + dy * dy + dz * dz >= rr * rr;
      for (int q = w->pairs.pstart[a]; q < p; q++) {
        bad += w->pairs.pb[q] == b; /* listed twice */
      }
    }
  }
  bad += missing_within(w, true, &want);
  *listed_out = w->pairs.m;
  *want_out = want;
  return bad;
}

/* Each pair appears once in its partner's reference list, in increasing pair order, and each
 * owner's partners are in increasing order (each once). */
static int ref_errors(grn_world *w) {
  grn__pair_refs(w); /* made when first read */
  int bad = 0;
  for (int a = 0; a < w->n; a++) {
    for (int p = w->pairs.pstart[a] + 1; p < w->pairs.pstart[a + 1]; p++) {
      bad += w->pairs.pb[p] <= w->pairs.pb[p - 1];
    }
  }
  int refs = 0;
  for (int i = 0; i < w->n; i++) {
    for (int q = w->pairs.rstart[i]; q < w->pairs.rstart[i + 1]; q++) {
      bad += w->pairs.pb[w->pairs.rref[q]] != i;
      bad += q > w->pairs.rstart[i] && w->pairs.rref[q] <= w->pairs.rref[q - 1];
      refs++;
    }
  }
  bad += refs != w->pairs.m;
  return bad;
}

/* After a rebuild, grains are in cell order, larger first within a cell. */
static int layout_errors(grn_world *w) {
  int bad = ref_errors(w);
  for (int i = 1; i < w->n; i++) {
    bad += w->pairs.scr.cell[i] < w->pairs.scr.cell[i - 1];
    bad += w->pairs.scr.cell[i] == w->pairs.scr.cell[i - 1] && w->rad[i] > w->rad[i - 1];
  }
  return bad;
}

/* Pairs under a grain that does not own them. */
static int owner_errors(const grn_world *w) {
  int bad = 0;
  for (int a = 0; a < w->n; a++) {
    for (int p = w->pairs.pstart[a]; p < w->pairs.pstart[a + 1]; p++) {
      const int b = w->pairs.pb[p];
      bad += !(w->rad[a] > w->rad[b] || (w->rad[a] == w->rad[b] && w->id[a] > w->id[b]));
    }
  }
  return bad;
}

typedef struct contact_rec {
  uint32_t a, b;
  grn_hist h;
  float fn;
} contact_rec;

static int snapshot(const grn_world *w, contact_rec *out) {
  int k = 0;
  for (int a = 0; a < w->n; a++) {
    for (int p = w->pairs.pstart[a]; p < w->pairs.pstart[a + 1]; p++) {
      if (w->pairs.pfn[p] > 0.0f) {
        out[k].a = w->id[a];
        out[k].b = w->id[w->pairs.pb[p]];
        out[k].h = w->pairs.hist[p];
        out[k].fn = w->pairs.pfn[p];
        k++;
      }
    }
  }
  return k;
}

/* Contacts of `before` not found in `after` with the same grains, springs and normal force. */
static int lost_history(const contact_rec *before, int kb, const contact_rec *after, int ka) {
  int lost = 0;
  for (int i = 0; i < kb; i++) {
    bool found = false;
    for (int j = 0; j < ka && !found; j++) {
      found = before[i].a == after[j].a && before[i].b == after[j].b &&
              memcmp(&before[i].h, &after[j].h, sizeof(grn_hist)) == 0 &&
              before[i].fn == after[j].fn;
    }
    lost += !found;
  }
  return lost;
}

int main(void) {
  grn_world_def d;
  grn_error e;
  grn_world_def_default(&d, "pour", &e);
  d.grains = 2000;
  grn_world_def_set(&d, "rate", 600, &e);
  grn_world *w;
  CHECK("create a 2000-grain pour", grn_world_create(&d, &w, &e) == GRN_OK);
  int checked = 0, mismatches = 0, layout = 0, listed = 0, want = 0;
  for (int s = 0; s < 10 * 240; s++) {
    /* rebuild exactly when the step would, and look at the list before anything moves */
    if (grn__must_rebuild(w)) {
      grn__rebuild(w);
      mismatches += brute_force_mismatches(w, &listed, &want);
      layout += layout_errors(w);
      checked++;
    }
    grn_world_step(w, 1);
  }
  printf("rebuilds checked: %d, last list %d pairs (brute force %d), %d alive\n", checked, listed,
         want, w->fig.alive);
  CHECK_RANGE("rebuilds checked", checked, 50, 1e9);
  CHECK_NEAR("pairs missing from or wrongly in the list, all rebuilds", mismatches, 0, 0);
  CHECK_NEAR("cell order / reference list errors, all rebuilds", layout, 0, 0);

  /* a silo drains: its grains fall through the hole at up to ~7 m/s, with slacks of their own */
  {
    grn_world_def ds;
    grn_world_def_default(&ds, "silo", &e);
    ds.grains = 1200;
    grn_world *s = NULL;
    CHECK("create a 1200-grain silo", grn_world_create(&ds, &s, &e) == GRN_OK);
    settle_world(s);
    /* the grains re-listed while the silo settled are back in cell order once it has (made again
     * by the next step, if the settle ended on the last) */
    if (grn__must_rebuild(s)) {
      grn__update_pairs(s);
    }
    printf("silo: %llu re-listings while it settled\n", (unsigned long long)s->pairs.relists);
    CHECK_RANGE("re-listings while the silo settled", (double)s->pairs.relists, 1, 1e9);
    CHECK_NEAR("re-listings since the last rebuild, settled", s->pairs.since, 0, 0);
    CHECK_NEAR("cell order / reference list errors, settled", layout_errors(s), 0, 0);
    act_or_exit(s, "open_hole");
    int sc = 0, smis = 0, slay = 0, swide = 0, looked = 0, missing = 0, nmiss = 0, nlooked = 0;
    int rl = 0, rmis = 0, rlay = 0, rlost = 0, rtouch = 0, simd_near = 0, simd_looked = 0;
    const uint64_t r0 = s->gran.near.refreshes;
    contact_rec *cb = malloc(sizeof(contact_rec) * 20000),
                *ca = malloc(sizeof(contact_rec) * 20000);
    for (int k = 0; k < 5 * 240; k++) {
      /* made valid as the step would (re-listed or rebuilt), and looked at before anything moves */
      if (grn__must_rebuild(s)) {
        const uint64_t rb = s->pairs.rebuilds, rs = s->pairs.relists;
        const int kb = s->pairs.m < 20000 ? snapshot(s, cb) : 0;
        grn__update_pairs(s);
        if (s->pairs.relists > rs) {
          /* a re-listing: nothing in reach left out, each pair once under its owner, and every
           * touching pair's history where it was */
          int near = 0;
          rmis += missing_within(s, true, &near);
          rlay += ref_errors(s) + owner_errors(s);
          const int ka = s->pairs.m < 20000 ? snapshot(s, ca) : 0;
          rlost += lost_history(cb, kb, ca, ka) + (ka != kb);
          rtouch += kb;
          rl++;
        }
        if (s->pairs.rebuilds > rb) {
          smis += brute_force_mismatches(s, &listed, &want);
          slay += layout_errors(s);
          for (int i = 0; i < s->n; i++) {
            swide += s->pairs.slack[i] > 0.5 * GRN_SKIN;
          }
          sc++;
        }
      }
      grn_world_step(s, 1);
      nlooked += s->gran.near.valid && !grn__near_stale(s) && s->gran.near.m < s->pairs.m;
      nmiss += near_missing(s);
      if (k % 3 == 0 && !grn__must_rebuild(s)) {
        int near = 0;
        missing += missing_within(s, false, &near);
        looked++;
      }
      if (k % 40 == 20 && !grn__must_rebuild(s)) {
        simd_near += near_simd_mismatches(s);
        simd_looked++;
      }
    }
    printf("silo: %d rebuilds, %d grains with a wider slack in all, %d steps looked at\n", sc,
           swide, looked);
    printf("silo: %d re-listings, %d touching pairs across them\n", rl, rtouch);
    CHECK_RANGE("silo re-listings checked", rl, 20, 1e9);
    CHECK_NEAR("silo: pairs in listing reach left out by a re-listing", rmis, 0, 0);
    CHECK_NEAR("silo: owner / partner order / reference list errors after a re-listing", rlay, 0,
               0);
    CHECK_NEAR("silo: touching pairs whose history a re-listing lost or moved", rlost, 0, 0);
    free(cb);
    free(ca);
    CHECK_RANGE("silo rebuilds checked", sc, 10, 1e9);
    CHECK_RANGE("fast grains given a wider slack", swide, 50, 1e9);
    CHECK_NEAR("silo: pairs missing from or wrongly in the list, all rebuilds", smis, 0, 0);
    CHECK_NEAR("silo: cell order / reference list errors", slay, 0, 0);
    CHECK_NEAR("silo: pairs within reach but not listed, between rebuilds", missing, 0, 0);
    printf("silo: %llu near-list refreshes, %d steps with pairs left out of it\n",
           (unsigned long long)(s->gran.near.refreshes - r0), nlooked);
    CHECK_RANGE("silo: steps whose near list left pairs out", nlooked, 100, 1e9);
    CHECK_NEAR("silo: grains past their near allowance, pairs in reach not near, any step", nmiss,
               0, 0);
    printf("silo: near list made by both passes at %d steps (AVX2: %s)\n", simd_looked,
           s->opt.simd ? "yes" : "no");
    CHECK_NEAR("silo: near-list entries where the AVX2 and scalar passes differ", simd_near, 0, 0);
    grn_world_destroy(s);
  }

  /* history: a forced rebuild keeps every touching pair's springs and normal force */
  contact_rec *before = malloc(sizeof(contact_rec) * (size_t)w->pairs.m);
  contact_rec *after = malloc(sizeof(contact_rec) * (size_t)w->pairs.m);
  const int kb = snapshot(w, before);
  w->pairs.dirty = true;
  grn__rebuild(w);
  const int ka = snapshot(w, after);
  int lost = lost_history(before, kb, after, ka);
  CHECK_RANGE("touching pairs before the forced rebuild", kb, 1000, 1e9);
  CHECK_NEAR("touching pairs after", ka, kb, 0);
  CHECK_NEAR("contacts whose history changed in the rebuild", lost, 0, 0);

  /* the same when the list outgrows its arrays: the rebuild's scan lays its planes and segments
   * in the old history, which the arrays' growth drops, so they must be moved out first (a wider
   * skin lists several times the pairs) */
  const int mcap0 = w->pairs.mcap;
  w->pairs.skin = 3.0 * GRN_SKIN;
  w->pairs.dirty = true;
  grn__rebuild(w);
  printf("list grown from room for %d pairs to %d pairs\n", mcap0, w->pairs.m);
  CHECK_RANGE("pairs listed with the wider skin, over the room the list had", w->pairs.m, mcap0 + 1,
              1e9);
  contact_rec *grown = malloc(sizeof(contact_rec) * (size_t)w->pairs.m);
  const int kg = snapshot(w, grown);
  lost = lost_history(before, kb, grown, kg);
  CHECK_NEAR("touching pairs after the list grew", kg, kb, 0);
  CHECK_NEAR("contacts whose history changed as the list grew", lost, 0, 0);
  CHECK_NEAR("pairs missing from or wrongly in the grown list",
             brute_force_mismatches(w, &listed, &want), 0, 0);
  CHECK_NEAR("cell order / reference list errors in the grown list", layout_errors(w), 0, 0);
  free(before);
  free(after);
  free(grown);
  grn_world_destroy(w);
  CHECK_DONE();
}
