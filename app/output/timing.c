/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/output/timing.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "app/output/csv_exact.h"
#include "app/output/manifest.h"

const char timing_header[] = "index,backend,compute_us,metrics_us,png_us,fits_us,total_us,note\n";

int timing_open(timing_writer *w, int dirfd, const char *dir, const char *name, char *const *keep,
                long long nkeep, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    return journal_create(&w->j, dirfd, dir, name, timing_header, keep, nkeep, err, errlen);
}

void timing_add(timing_writer *w, long long k, const char *backend, const image_timing *t)
{
    char m[40], total[40]; /* %.3f, as csv_fixed3 writes it */
    csv_fixed3(m, sizeof m, t->metrics_us);
    csv_fixed3(total, sizeof total, t->compute_us + t->metrics_us + t->png_us + t->fits_us);
    fprintf(journal_fp(&w->j), "%lld,%s,%s,%s,%s,%s,%s,\n", k, backend,
            csv_cell_text(&w->cells[0], t->compute_us, 1), m,
            csv_cell_text(&w->cells[1], t->png_us, 1), csv_cell_text(&w->cells[2], t->fits_us, 1),
            total);
}

void timing_summary(timing_writer *w, const char *name, double value_us, const char *note)
{
    char v[32] = "";
    if (!isnan(value_us)) snprintf(v, sizeof v, "%.3f", value_us); /* as the image rows */
    /* Notes are free text: quote them and double any quote, as RFC 4180 says. */
    fprintf(journal_fp(&w->j), "%s,,,,,,%s,\"", name, v);
    for (const char *c = note ? note : ""; *c; ++c) {
        if (*c == '"') fputc('"', journal_fp(&w->j));
        fputc(*c, journal_fp(&w->j));
    }
    fputs("\"\n", journal_fp(&w->j));
}

int timing_flush(timing_writer *w, char *err, size_t errlen)
{
    return journal_flush(&w->j, err, errlen);
}

int timing_close(timing_writer *w, char *err, size_t errlen)
{
    return journal_close(&w->j, err, errlen);
}
