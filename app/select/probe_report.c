/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/select/probe_report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "app/formats/atomic_file.h"
#include "app/base/log.h"
#include "app/base/make_dir.h"
#include "app/select/probe_cache.h"
#include "app/select/plot.h"

static double gpu_per_image(const probe_figures *f, int i, int big)
{
    return big ? f->gpu_bb_us[i] / f->big_batch[i] : f->gpu_b1_us[i];
}

double probe_crossover(const probe_figures *f, int big)
{
    if (!f->have_gpu) return 0.0;
    double prev = 0.0;
    for (int i = 0; i < f->nsizes; ++i) {
        double d = log(f->cpu_us[i] / gpu_per_image(f, i, big)); /* > 0: GPU wins */
        if (d > 0 && i == 0) return -1.0;
        if (d > 0) { /* sign change between i-1 and i: interpolate in log N */
            double t = -prev / (d - prev);
            return exp(log(f->npix[i - 1]) + t * log((double)f->npix[i] / f->npix[i - 1]));
        }
        prev = d;
    }
    return 0.0;
}

static const char *winner(const probe_figures *f, int i, int big)
{
    return f->have_gpu && gpu_per_image(f, i, big) < f->cpu_us[i] ? "gpu" : "cpu";
}

static void print_crossover(FILE *out, const char *label, double x)
{
    if (x < 0)
        fprintf(out, "crossover %s: the GPU wins at every probed size\n", label);
    else if (x == 0)
        fprintf(out, "crossover %s: the CPU wins at every probed size\n", label);
    else
        fprintf(out, "crossover %s: GPU faster from N ~ %.0f\n", label, x);
}

void probe_print_table(const probe_figures *f, FILE *out)
{
    fprintf(out, "CPU: FFTW3, %d thread(s) for N >= 512\n", f->cpu_threads);
    if (f->have_gpu)
        fprintf(out,
                "GPU: %s: start %.0f ms, launch round trip %.1f us, pinned copy %.1f us "
                "(to device) %.1f us (to host), %.1f GB/s to host\n",
                f->gpu_name, f->gpu_start_us * 1e-3, f->gpu_launch_us, f->gpu_h2d_us, f->gpu_d2h_us,
                f->gpu_d2h_gbs);
    else
        fputs("GPU: none usable\n", out);
    if (f->have_gpu && f->gpu_count > 1) { /* the figures below are device 0's */
        fprintf(out,
                "GPUs: %d visible; large-batch speed at %dx%d relative to GPU 0:", f->gpu_count,
                PROBE_REL_NPIX, PROBE_REL_NPIX);
        for (int d = 1; d < f->gpu_count && d < PROBE_MAX_GPUS; ++d)
            fprintf(out, " GPU %d %.2f%s", d, f->gpu_rel_speed[d],
                    f->gpu_rel_speed[d] > 0 ? "" : " (failed: left out)");
        fputc('\n', out);
    }
    fprintf(out, "%6s %12s %12s %6s %6s %12s %6s\n", "N", "cpu_us", "gpu_b1_us", "win_b1", "batch",
            "gpu_bb_us", "win_bb");
    for (int i = 0; i < f->nsizes; ++i) {
        if (f->have_gpu)
            fprintf(out, "%6d %12.1f %12.1f %6s %6d %12.2f %6s\n", f->npix[i], f->cpu_us[i],
                    f->gpu_b1_us[i], winner(f, i, 0), f->big_batch[i], gpu_per_image(f, i, 1),
                    winner(f, i, 1));
        else
            fprintf(out, "%6d %12.1f %12s %6s %6d %12s %6s\n", f->npix[i], f->cpu_us[i], "-", "cpu",
                    f->big_batch[i], "-", "cpu");
    }
    fputs("(times per image to host memory, medians; GPU start cost not included)\n", out);
    print_crossover(out, "at batch 1", probe_crossover(f, 0));
    print_crossover(out, "at the large batch", probe_crossover(f, 1));
    fprintf(out, "probe took %.0f ms\n", f->probe_us * 1e-3);
}

static int write_csv(const probe_figures *f, const char *path, char *err, size_t errlen)
{
    atomic_file af;
    if (atomic_open(&af, path, err, errlen) != 0) return -1;
    fputs("npix,cpu_us,gpu_b1_us,winner_b1,big_batch,gpu_bb_us_per_image,winner_bb,"
          "cpu_create_us,gpu_create_us\n",
          af.fp);
    for (int i = 0; i < f->nsizes; ++i) {
        if (f->have_gpu)
            fprintf(af.fp, "%d,%.3f,%.3f,%s,%d,%.3f,%s,%.3f,%.3f\n", f->npix[i], f->cpu_us[i],
                    f->gpu_b1_us[i], winner(f, i, 0), f->big_batch[i], gpu_per_image(f, i, 1),
                    winner(f, i, 1), f->cpu_create_us[i], f->gpu_create_us[i]);
        else
            fprintf(af.fp, "%d,%.3f,,cpu,%d,,cpu,%.3f,\n", f->npix[i], f->cpu_us[i],
                    f->big_batch[i], f->cpu_create_us[i]);
    }
    return atomic_commit(&af, err, errlen);
}

int probe_command(const char *dir)
{
    probe_figures f;
    char note[512], err[1024], cache[4096];
    if (make_dir(dir, err, sizeof err) != 0) { /* before the work, not after */
        log_error("%s", err);
        return 2;
    }
    if (probe_measure(&f, 1, probe_cache_dir_made(cache, sizeof cache), note, sizeof note, err,
                      sizeof err) != 0) {
        log_error("%s", err);
        return 3;
    }
    if (!f.have_gpu) log_warn("no usable GPU: %s", note);
    machine_key key;
    machine_key_read(&key);
    char cdir[4096];
    if (!probe_cache_dir(cdir, sizeof cdir) || probe_cache_store(cdir, &key, &f, err, sizeof err))
        log_warn("cannot cache the figures: %s", err);
    probe_print_table(&f, stdout);
    char csv[4200], png[4200];
    snprintf(csv, sizeof csv, "%s/psfsim_probe.csv", dir);
    snprintf(png, sizeof png, "%s/psfsim_probe.png", dir);
    if (write_csv(&f, csv, err, sizeof err) != 0) {
        log_error("%s", err);
        return 3;
    }
    printf("wrote %s\n", csv);
    double crossovers[2] = {0, 0};
    if (f.have_gpu) {
        crossovers[0] = probe_crossover(&f, 0);
        crossovers[1] = probe_crossover(&f, 1);
    }
    int rc = probe_plot(&f, crossovers, png, err, sizeof err);
    if (rc < 0) {
        log_error("%s", err);
        return 3;
    }
    if (rc == 0)
        printf("wrote %s\n", png);
    else
        printf("plot not written: %s\n", err);
    return 0;
}
