/* SPDX-License-Identifier: BSD-3-Clause */
/* The cost of building a set's pupil (issue 15): an ELT-like aperture of
 * exactly 798 hexagonal segments sampled at 1024 samples across D on the
 * FFT grid of N = 2048 (padding 2), built by each backend's own pupil code
 * (CPU: cpu_pupil_build, cpu/pupil.c; GPU: gpu_pupil_build, the module's
 * kernels in gpu/pupil.cu), against one image of that set on the same
 * backend (its run() of one job: the pupil field, the 2048 x 2048 FFT and
 * the intensity). Median of repeats, after warm-up runs.
 *
 * The aperture (ESO's ELT primary: 798 segments, 1.45 m corner to corner
 * (flat to flat 1.45 sqrt(3)/2 = 1.2557 m), gaps of 4 mm, 39.3 m across:
 * ESO, "The ELT in numbers", eso.org/public/teles-instr/elt/elt_num/; UK
 * ELT project, eelt.org.uk/industry/optomechanics/; ESO image caption
 * "Rendering of the 39-metre mirror", eso.org/public/images/
 * telescope-prefocal-banner4/): the segments of 17 rings whose centres lie
 * more than 4.0 m and at most 19.04 m from the axis, which leaves exactly
 * 798 (six sectors of 133), 39.5 m corner to corner, and a central hole
 * of ~7.3 m between the innermost segments' inner corners; ESO's own layout,
 * with its spiders and the secondary's shadow, is not reproduced. The
 * pupil holds ELT_TERMS Zernike terms (a set with that many modes: the
 * basis is part of the pupil's cost).
 *
 * Prints CSV: backend,stage,segments,pupil_samples,npix,nterms,nopen,reps,
 * median_ms,min_ms,pupil_over_image (the last on the pupil row: its median
 * over the image's). The GPU rows need a CUDA build and a device; without
 * either "gpu,skipped,..." says why.
 * Usage: psfsim_pupil_bench [cpu|gpu|all] [NTERMS]   (default all, 11)
 *        psfsim_pupil_bench --config   (prints configs/elt_segments.cfg) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "cpu/pupil.h"
#include "optics/aperture.h"
#include "optics/zernike.h"

#ifdef PSFSIM_HAVE_CUDA
#include "backend/gpu_abi.h"
#include "gpu/pupil.h"
#endif

#define ELT_F2F_M (1.45 * 0.8660254037844386) /* 1.45 m corner to corner */
#define ELT_GAP_M 0.004
#define ELT_RINGS 17
#define ELT_HOLE_M 4.0    /* centres this near the axis are left out: the central hole */
#define ELT_OUTER_M 19.04 /* centres farther out are left out */
#define ELT_SEGMENTS 798
#define SAMPLES 1024 /* across D */
#define NPIX 2048    /* the FFT, padding 2 */
#define MAX_REPS 21

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The ELT-like aperture (above); D = the diameter holding every present
 * segment. Returns the number of present segments. */
static int elt_aperture(psf_aperture *a)
{
    memset(a, 0, sizeof *a);
    a->shape = APERTURE_SEGMENTED;
    a->seg.flat_to_flat_m = ELT_F2F_M;
    a->seg.gap_m = ELT_GAP_M;
    a->seg.rings = ELT_RINGS;
    int present = 0;
    for (int k = 0; k < aperture_segment_count(ELT_RINGS); ++k) {
        double x, y;
        aperture_segment_center(&a->seg, k, &x, &y);
        double r = hypot(x, y);
        if (r <= ELT_HOLE_M || r > ELT_OUTER_M)
            a->seg.missing[k / 64] |= 1ULL << (k % 64);
        else
            ++present;
    }
    a->diameter_m = 2.0 * aperture_segments_radius(&a->seg);
    return present;
}

/* configs/elt_segments.cfg: the same aperture as a psfsim config. */
static void print_config(const psf_aperture *a)
{
    printf("# SPDX-License-Identifier: BSD-3-Clause\n"
           "# An ELT-like segmented primary: 798 hexagonal segments of 1.45 m corner\n"
           "# to corner (1.2557 m flat to flat) with 4 mm gaps, about 39.5 m across\n"
           "# (ESO, \"The ELT in numbers\", eso.org/public/teles-instr/elt/elt_num/:\n"
           "# 798 segments, 39 m; eelt.org.uk/industry/optomechanics/: 39.3 m,\n"
           "# 1.45 m segments; ESO's caption of \"Rendering of the 39-metre mirror\":\n"
           "# 4 mm between segments). The 17-ring lattice is cut to the segments whose\n"
           "# centres lie more than %.2f m and at most %.2f m from the axis (798, six\n"
           "# sectors of 133; a ~7.3 m central hole); ESO's own layout, its six\n"
           "# spiders and the secondary's shadow are not reproduced. Written by\n"
           "# psfsim_pupil_bench --config (bench/pupil_bench.c), which times this\n"
           "# pupil at 1024 samples. In the K band (2.2 um) at f/17.7.\n"
           "name = \"elt_segments\";\n\n"
           "optics: {\n"
           "  wavelength_nm = 2200.0;\n"
           "  f_number = 17.7;\n"
           "  aperture: {\n"
           "    shape = \"segmented\";\n"
           "    segments: {\n"
           "      flat_to_flat_m = %.6f; gap_m = %.3f; rings = %d;\n"
           "      missing = [",
           ELT_HOLE_M, ELT_OUTER_M, ELT_F2F_M, ELT_GAP_M, ELT_RINGS);
    int first = 1, col = 17;
    for (int k = 0; k < aperture_segment_count(ELT_RINGS); ++k) {
        if (!((a->seg.missing[k / 64] >> (k % 64)) & 1ULL)) continue;
        char s[16];
        int n = snprintf(s, sizeof s, "%s%d", first ? "" : ", ", k);
        if (col + n > 96) {
            printf(",\n        %d", k);
            col = 8 + snprintf(s, sizeof s, "%d", k);
        } else {
            printf("%s", s);
            col += n;
        }
        first = 0;
    }
    printf("];\n    };\n  };\n};\n\n"
           "sampling: { pupil_samples = 512; padding = 2.0; };\n\n"
           "output: { png: { stretch = \"log\"; dynamic_range = 1.0e6; }; };\n");
}

/* Zernike modes Noll 2 .. nterms + 1 of the set. */
static void set_modes(int nterms, int *n, int *m, psf_modes *modes)
{
    for (int t = 0; t < nterms; ++t)
        zernike_noll_to_nm(t + 2, &n[t], &m[t]);
    *modes = (psf_modes){.nterms = nterms, .n = n, .m = m};
}

/* One CSV row of sorted times t[reps]. */
static void row(const char *be, const char *stage, int nterms, size_t nopen, int reps,
                const double *t, double ratio)
{
    printf("%s,%s,%d,%d,%d,%d,%zu,%d,%.3f,%.3f,", be, stage, ELT_SEGMENTS, SAMPLES, NPIX, nterms,
           nopen, reps, t[reps / 2], t[0]);
    if (ratio > 0)
        printf("%.4f\n", ratio);
    else
        printf("\n");
}

/* The pupil's and the image's rows, times sorted; the pupil's row with
 * its median over the image's. */
static void report(const char *be, int nterms, size_t nopen, int reps, double *tp, double *ti)
{
    qsort(tp, (size_t)reps, sizeof *tp, cmp);
    qsort(ti, (size_t)reps, sizeof *ti, cmp);
    row(be, "pupil_build", nterms, nopen, reps, tp, tp[reps / 2] / ti[reps / 2]);
    row(be, "image_fft", nterms, nopen, reps, ti, 0);
}

/* One image of the set through the backend's run(): times[reps]. */
static int time_image(const psf_backend_ops *ops, const psf_problem *d, const double *coeff,
                      int reps, double *times)
{
    char err[1024];
    psf_backend *b = NULL;
    if (ops->create(d, NULL, &b, err, sizeof err) != 0) {
        fprintf(stderr, "%s: create: %s\n", ops->name, err);
        return -1;
    }
    psf_job job = {.ncomp = 1};
    job.comp[0] = (psf_component){.wavelength_m = 2.2e-6,
                                  .dx_m = d->aperture.diameter_m / SAMPLES,
                                  .scale = 1.0,
                                  .coeff_waves = coeff};
    float *img = ops->alloc_images(b, (size_t)NPIX * NPIX);
    int rc = img ? 0 : -1;
    for (int r = -3; r < reps && rc == 0; ++r) {
        double t0 = now_ms();
        rc = ops->run(b, &job, 1, img, err, sizeof err);
        if (r >= 0) times[r] = now_ms() - t0;
    }
    if (rc) fprintf(stderr, "%s: run: %s\n", ops->name, err);
    if (img) ops->free_images(b, img);
    ops->destroy(b);
    return rc;
}

static int bench_cpu(const psf_problem *d, const double *coeff, int reps)
{
    double tp[MAX_REPS], ti[MAX_REPS];
    char err[1024];
    size_t nopen = 0;
    for (int r = -1; r < reps; ++r) {
        cpu_pupil pp;
        double t0 = now_ms();
        if (cpu_pupil_build(&pp, d, d->aperture.diameter_m / SAMPLES, err, sizeof err) != 0) {
            fprintf(stderr, "cpu: pupil: %s\n", err);
            return -1;
        }
        if (r >= 0) tp[r] = now_ms() - t0;
        nopen = pp.nopen;
        cpu_pupil_free(&pp);
    }
    if (time_image(&psf_backend_cpu, d, coeff, reps, ti)) return -1;
    report("cpu", d->modes.nterms, nopen, reps, tp, ti);
    return 0;
}

#ifdef PSFSIM_HAVE_CUDA
/* The GPU pupil's set, as gpu/set_data.cu's upload_set makes it for an FFT
 * set without maps; modes on the device. */
static int gpu_set(const psf_problem *d, gpu_pupil_set *ps, int **dmodes, gpu_check *chk)
{
    memset(ps, 0, sizeof *ps);
    ps->npix = d->npix;
    ps->radius_m = 0.5 * d->aperture.diameter_m;
    aperture_geom_init(&d->aperture, &ps->geom);
    ps->map_width_m = ps->map_height_m = d->aperture.diameter_m;
    ps->opd_width_m = ps->opd_height_m = d->aperture.diameter_m;
    ps->nterms = d->modes.nterms;
    ps->basis_max_bytes = GPU_PUPIL_BASIS_MAX_BYTES;
    int nm[64];
    for (int t = 0; t < d->modes.nterms; ++t)
        nm[t] = d->modes.n[t], nm[d->modes.nterms + t] = d->modes.m[t];
    size_t bytes = (size_t)(2 * d->modes.nterms + 1) * sizeof *nm;
    if (GPU_CUDA(chk, cudaMalloc((void **)dmodes, bytes)) ||
        GPU_CUDA(chk, cudaMemcpy(*dmodes, nm, bytes, cudaMemcpyHostToDevice)))
        return -1;
    ps->modes = *dmodes;
    return 0;
}

static int bench_gpu(const psf_problem *d, const double *coeff, int reps)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        printf("gpu,skipped,%d,%d,%d,%d,,,,,no CUDA device\n", ELT_SEGMENTS, SAMPLES, NPIX,
               d->modes.nterms);
        return 0;
    }
    char err[1024];
    gpu_check chk;
    gpu_check_init(&chk, 0, err, sizeof err);
    cudaStream_t s;
    int *dmodes = NULL;
    gpu_pupil_set ps;
    if (GPU_CUDA(&chk, cudaStreamCreate(&s)) || gpu_set(d, &ps, &dmodes, &chk) ||
        gpu_pupil_load_kernels(&chk)) {
        fprintf(stderr, "gpu: %s\n", err);
        return -1;
    }
    double tp[MAX_REPS], ti[MAX_REPS];
    size_t nopen = 0;
    int rc = 0;
    for (int r = -3; r < reps && rc == 0; ++r) {
        gpu_pupil pp;
        double t0 = now_ms();
        rc = gpu_pupil_build(&pp, &ps, d->aperture.diameter_m / SAMPLES, s, &chk) ||
             GPU_CUDA(&chk, cudaStreamSynchronize(s));
        if (rc) break;
        if (r >= 0) tp[r] = now_ms() - t0;
        nopen = pp.nopen;
        gpu_pupil_free(&pp);
    }
    if (rc) fprintf(stderr, "gpu: pupil: %s\n", err);
    if (GPU_CUDA(&chk, cudaFree(dmodes)) || GPU_CUDA(&chk, cudaStreamDestroy(s))) {
        fprintf(stderr, "gpu: %s\n", err);
        rc = -1;
    }
    if (rc || time_image(psf_gpu_module_entry.backend, d, coeff, reps, ti)) return -1;
    report("gpu", d->modes.nterms, nopen, reps, tp, ti);
    return 0;
}
#endif

int main(int argc, char **argv)
{
    psf_aperture a;
    int present = elt_aperture(&a);
    if (present != ELT_SEGMENTS) {
        fprintf(stderr, "the ELT-like aperture has %d segments, not %d\n", present, ELT_SEGMENTS);
        return 1;
    }
    if (argc > 1 && !strcmp(argv[1], "--config")) {
        print_config(&a);
        return 0;
    }
    const char *which = argc > 1 ? argv[1] : "all";
    int nterms = argc > 2 ? atoi(argv[2]) : 11;
    if (strcmp(which, "cpu") && strcmp(which, "gpu") && strcmp(which, "all")) {
        fprintf(stderr, "usage: psfsim_pupil_bench [cpu|gpu|all] [NTERMS 0..31] | --config\n");
        return 2;
    }
    if (nterms < 0 || nterms > 31) nterms = 11;
    int n[31], m[31];
    double coeff[31];
    psf_problem d = {.npix = NPIX, .max_batch = 1, .nimages = 1, .aperture = a};
    set_modes(nterms, n, m, &d.modes);
    for (int t = 0; t < nterms; ++t)
        coeff[t] = 0.02 * (t + 1);
    char err[512];
    if (aperture_check(&a, err, sizeof err)) {
        fprintf(stderr, "aperture: %s\n", err);
        return 1;
    }
    const int reps = 11;
    printf("backend,stage,segments,pupil_samples,npix,nterms,nopen,reps,median_ms,min_ms,"
           "pupil_over_image\n");
    int rc = 0;
    if (strcmp(which, "gpu")) rc |= bench_cpu(&d, coeff, reps);
    if (strcmp(which, "cpu")) {
#ifdef PSFSIM_HAVE_CUDA
        rc |= bench_gpu(&d, coeff, reps);
#else
        printf("gpu,skipped,%d,%d,%d,%d,,,,,built without CUDA\n", ELT_SEGMENTS, SAMPLES, NPIX,
               nterms);
#endif
    }
    return rc ? 1 : 0;
}
