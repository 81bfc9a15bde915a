/* A world's particles and contacts as a file a student takes away (issue 19): CSV, one row per
 * particle, or legacy VTK polydata for ParaView. Written by the worker (a session's snapshot) and
 * by the CLI (`grainlab run --snapshot`), so both give the same bytes for the same state. */
#ifndef GRAINLAB_SNAPSHOT_H
#define GRAINLAB_SNAPSHOT_H

#include "grainlab/grainlab.h"

#include <stddef.h>

typedef enum snapshot_format { SNAPSHOT_CSV = 1, SNAPSHOT_VTK = 2 } snapshot_format;

/* "csv" or "vtk" (exactly, lower case): 0, or -1 for anything else. */
int snapshot_format_parse(const char *name, snapshot_format *out);
const char *snapshot_format_name(snapshot_format f);
const char *snapshot_content_type(snapshot_format f);

/* Where the text goes, in pieces of at most SNAPSHOT_PIECE bytes: 0 to go on, non-zero to stop. */
#define SNAPSHOT_PIECE 60000
typedef int (*snapshot_sink)(void *ctx, const char *data, size_t len);

/* The most bytes a snapshot of `alive` particles may take (each row and each particle's share of
 * its contacts, at full precision): what a reader of one need accept, and no more. */
size_t snapshot_max_bytes(int alive);

/* Write every alive particle in storage order (the order grn_world_digest hashes them, so a
 * reader can check the file against the digest), with its stable id, position, radius,
 * velocity and spin at full precision (%.17g reads back to the same double), and the touching
 * pairs: VTK lines with their normal force as cell data, CSV a count per particle. `title`: one
 * line (VTK's header; newlines become spaces). Returns 0, -1 when the sink stopped, -2 out of
 * memory, -3 when the world has more touching pairs than snapshot_max_bytes allows for (nothing
 * written). */
int snapshot_write(const grn_world *w, snapshot_format f, const char *title, snapshot_sink sink,
                   void *ctx);

#endif
