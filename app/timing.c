#include "timing.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "manifest.h"

int timing_open(timing_writer *w, const char *path, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    if (atomic_open(&w->af, path, err, errlen) != 0) return -1;
    fputs("index,backend,compute_us,metrics_us,png_us,fits_us,total_us,note\n", w->af.fp);
    return 0;
}

void timing_add(timing_writer *w, long long k, const char *backend, const image_timing *t)
{
    fprintf(w->af.fp, "%lld,%s,%.3f,%.3f,%.3f,%.3f,%.3f,\n", k, backend, t->compute_us,
            t->metrics_us, t->png_us, t->fits_us,
            t->compute_us + t->metrics_us + t->png_us + t->fits_us);
}

void timing_summary(timing_writer *w, const char *name, double value_us, const char *note)
{
    char v[32];
    csv_number(v, sizeof v, value_us);
    /* Notes are free text: quote them and double any quote, as RFC 4180 says. */
    fprintf(w->af.fp, "%s,,,,,,%s,\"", name, v);
    for (const char *c = note ? note : ""; *c; ++c) {
        if (*c == '"') fputc('"', w->af.fp);
        fputc(*c, w->af.fp);
    }
    fputs("\"\n", w->af.fp);
}

int timing_close(timing_writer *w, char *err, size_t errlen)
{
    return atomic_commit(&w->af, err, errlen);
}
