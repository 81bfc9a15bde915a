/* Times as the API writes and reads them: ISO 8601 UTC ("2026-12-02T10:00:00Z"). One parser and
 * one printer for the runs filter, classes' end times and their replies. */
#ifndef GRAINLAB_UTC_H
#define GRAINLAB_UTC_H

#include <stdbool.h>
#include <stddef.h>

/* YYYY-MM-DDTHH:MM:SS with an optional Z, as Unix seconds; false for anything else. */
bool utc_parse(const char *s, double *out);
/* YYYY-MM-DDTHH:MM:SSZ, whole seconds (21 bytes with the NUL). */
void utc_format(double t, char out[24]);

#endif
