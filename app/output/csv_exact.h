/* SPDX-License-Identifier: BSD-3-Clause */
/* The CSV cells written in full precision, fast (csv_exact.c): the
 * manifest's label columns (app/output/manifest.h) and the timing log's
 * microseconds (app/output/timing.h). */
#ifndef PSFSIM_CSV_EXACT_H
#define PSFSIM_CSV_EXACT_H

#include <stddef.h>

/* Format v in the fewest of %.15g, %.16g, %.17g digits that read back as
 * v (strtod), so labels round-trip; "" for NaN. out: at least 32 bytes. */
void csv_exact(char *out, size_t outlen, double v);

/* Format v with %.3f (the timing log's microseconds), byte for byte, in
 * integer arithmetic for 0 < v < 2^40; printf itself otherwise. out: at
 * least 24 bytes for the fast path. */
void csv_fixed3(char *out, size_t outlen, double v);

#endif
