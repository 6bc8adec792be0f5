/* SPDX-License-Identifier: BSD-3-Clause */
/* The FFTW3 backend: psf_backend_cpu (backend/backend.h). One plan per set
 * (cpu/plan_cache.h), pupils cached per pupil pitch (cpu/pupil.h), each
 * image's components transformed and summed as intensities
 * (cpu/intensity.h); below N = 512 the images of a run are spread over
 * threads (one FFT buffer pair each), from 512 up FFTW's own threads share
 * each transform. The transform skips the zero padding: with the set's
 * pupil_samples known, only the rows a pupil can occupy get a first pass
 * (cpu_fft_plan_create_band, which takes the pupil transposed); a pupil
 * reaching past them (checked as it is built) gets the whole 2D plan. An
 * MFT set (psf_problem.mft) plans no FFT: its images are two matrix
 * products each (cpu/mft.h), with the transform matrices cached per
 * component. A problem with a detector stage (psf_detector) computes its
 * grid images into a scratch buffer and passes each through
 * cpu/detector.h into the caller's images. */
#include <fenv.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "backend/backend.h"
#include "backend/cpu_count.h"
#include "backend/bytes.h"
#include "backend/detector.h"
#include "backend/levels.h"
#include "cpu/band_image.h"
#include "cpu/detector.h"
#include "cpu/intensity.h"
#include "cpu/mft.h"
#include "cpu/plan_cache.h"
#include "cpu/pupil.h"

/* Grids from this size up use FFTW's threads inside one transform; below it
 * the threads' start-up costs more than they save. */
#define CPU_THREADED_MIN_NPIX 512
/* MFT matrices kept at once: one per component of a broadband image (a
 * monochromatic sweep with output.pixel_scale needs one for all images),
 * and at most PSF_MFT_TABLE_BYTES of them; past it the oldest is rebuilt
 * when needed again. */
#define CPU_MFT_TABLES PSF_MAX_COMPONENTS

/* Most threads one run() spreads its images over (FFT path, N < 512). */
#define CPU_MAX_LANES 64

/* One thread's FFT buffers for image-parallel runs; lane 0 is b->fft's. */
typedef struct {
    fftwf_complex *in, *out;
    fftwf_complex *block_in, *block_out; /* cpu/band_image.h's, with fft.block */
    int current;                         /* pupil whose samples are in `in`, -1 = none */
} cpu_lane;

/* How a run's images are handed to its lanes (cpu_run_fft). The default,
 * HAND_NEXT: each lane takes the next image of the run's order
 * (fault_order) not taken yet, so a lane that finishes early takes more
 * (the balance the 16-core host needs: 0.67-0.69 of 16x one thread against
 * the share's 0.42-0.47, bench/RESULTS.md run 50). Which lane computes an
 * image then depends on timing, and nothing else does: an image's bytes
 * are its own whatever the lane and what it computed before
 * (tests/cpu/test_cpu_lanes.c under every hand-out). The others are test
 * hooks (PSFSIM_TEST_CPU_HANDOUT, read at create: hand_out_from_env):
 * HAND_SHARE lane t taking the t-th, (t + T)-th, ... image, fixed before
 * the lanes start (the threads started per run had it before issue 27),
 * HAND_REVERSE the share over the order reversed, HAND_SHUFFLE over a
 * permutation drawn anew each run (a fixed seed: the same runs give the
 * same draws), HAND_LAST the run's last lane taking every image (a pool
 * thread sees every pupil change). */
typedef enum { HAND_SHARE, HAND_NEXT, HAND_REVERSE, HAND_SHUFFLE, HAND_LAST } cpu_hand_out;

/* One run's images for the lanes (lane_main). */
typedef struct {
    psf_backend *b;
    int nlanes, njobs;
    int call_done; /* 1: each job's done hook after its image (no detector stage) */
    int next_free; /* 1: HAND_NEXT (next); else lane t takes order[t], order[t + T], ... */
    int last_only; /* 1: HAND_LAST: lane nlanes - 1 takes every image */
    const psf_job *jobs;
    const int *pupil_index;
    const int *order; /* [njobs]: the run's images in the order they are handed out */
    float *images;
    fenv_t env; /* the caller's floating-point environment, the pool's threads' too */
#ifdef __SSE2__
    unsigned csr; /* its MXCSR (flush-to-zero, denormals-are-zero, rounding) */
#endif
    _Alignas(64) atomic_int next; /* HAND_NEXT: the next image to take: its own cache line */
    _Alignas(64) char pad;
} lane_task;

/* The image-parallel lanes' threads, started at the first run that needs
 * them and kept until the backend ends (lanes 1 .. started; lane 0 is the
 * caller's thread), where a run started and joined them (15 threads at
 * each run of 64 images: a quarter of a 16-thread run's time; issue 27).
 * A run: the caller fills task, raises gen (under mu), works as lane 0,
 * then waits for busy to reach 0. An idle thread polls gen for
 * CPU_POOL_SPIN_NS before it sleeps on go, so that the next batch, which
 * comes after the library's short hand-over, finds it awake. Each run's
 * threads take the caller's floating-point environment (task.env), as
 * threads started by the caller did: a kept thread would otherwise keep
 * the one of the run that started it. */
#define CPU_POOL_SPIN_NS 200000L
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t go, idle;
    atomic_uint gen; /* raised for each run (and for quit), under mu */
    int quit;        /* under mu */
    int busy;        /* threads still in the run, under mu */
    int started;     /* threads running, lanes 1 .. started */
    pid_t pid;       /* the process that started them (a fork's child has none) */
    pthread_t threads[CPU_MAX_LANES];
    lane_task task;
} cpu_pool;

struct psf_backend {
    psf_problem set;
    cpu_fft_plan fft;
    cpu_lane lanes[CPU_MAX_LANES]; /* [1 .. nlanes) own their buffers */
    int nlanes;                    /* image-parallel threads, 1 = none */
    cpu_pool *pool;                /* their threads (cpu_pool), NULL until needed */
    cpu_hand_out hand_out;         /* HAND_NEXT, or a test's (PSFSIM_TEST_CPU_HANDOUT) */
    unsigned long long draws;      /* HAND_SHUFFLE's generator state */
    cpu_pupil pupils[PSF_MAX_COMPONENTS];
    int pupil_full[PSF_MAX_COMPONENTS]; /* 1: samples outside fft.band: 2D plan */
    int npupils;
    int current; /* pupil whose samples are in fft.in (FFT) or mft_in (MFT), -1 = none */
    /* MFT sets only */
    cpu_mft_table tables[CPU_MFT_TABLES];
    int ntables, evict; /* tables in use; the next one to replace when full */
    cpu_mft_work work;
    int mft_threads;       /* threads one large transform may use */
    fftwf_complex *mft_in; /* the current pupil's compact box, rows x cols */
    size_t mft_in_cap;     /* complex values mft_in holds */
    /* The detector stage (cpu/detector.h), when the problem has one. */
    cpu_detector det;
    cpu_detector_work det_work;
    float *det_grid; /* [max_batch N^2]: the grid images before the stage */
};

static int cpu_threads(const psf_problem *set, const psf_backend_options *opt)
{
    if (set->npix < CPU_THREADED_MIN_NPIX) return 1;
    if (opt->threads > 0) return opt->threads;
    return psf_cpu_count();
}

/* Images of one run() computed in parallel, one FFT buffer pair per thread,
 * sharing the plan (fftwf_execute_dft is thread-safe, FFTW manual 5.4):
 * for grids below CPU_THREADED_MIN_NPIX, where FFTW's own threads do not pay. */
static int image_lanes(const psf_problem *set, const psf_backend_options *opt)
{
    if (set->mft || set->npix >= CPU_THREADED_MIN_NPIX) return 1;
    long n = opt->threads > 0 ? opt->threads : psf_cpu_count();
    if (n > CPU_MAX_LANES) n = CPU_MAX_LANES;
    if (n > set->max_batch) n = set->max_batch;
    return n > 1 ? (int)n : 1;
}

/* Rows from the axis row that the set's pupils can occupy, each way: with
 * n samples across D at the finest pitch, |i - N/2| <= n/2 (+ 1 for an
 * edge sample, + 1 spare); 0 = unknown (no pruning). */
static int pupil_band(const psf_problem *set)
{
    if (set->pupil_samples <= 0) return 0;
    int band = set->pupil_samples / 2 + 2;
    return band <= set->npix / 2 ? band : 0;
}

/* Whether pupil pp has samples outside the pruned plan's band of rows and
 * columns (the 2D plan is needed for it). */
static int outside_band(const cpu_pupil *pp, const cpu_fft_plan *fft)
{
    if (!fft->band) return 0;
    unsigned n = (unsigned)fft->npix, lo = (unsigned)fft->band, hi = n - lo;
    for (size_t k = 0; k < pp->nopen; ++k) {
        unsigned row = pp->dest[k] / n, col = pp->dest[k] % n;
        if ((row >= lo && row < hi) || (col >= lo && col < hi)) return 1;
    }
    return 0;
}

/* An open sample's new FFT-input index and its place in the list. */
typedef struct {
    unsigned dest, k;
} dest_index;

static int by_dest(const void *x, const void *y)
{
    unsigned a = ((const dest_index *)x)->dest, b = ((const dest_index *)y)->dest;
    return (a > b) - (a < b);
}

/* v[k] = v[order[k].k] for the nopen values of v (4-byte floats or
 * ints, by bytes: one function for both), through tmp. */
_Static_assert(sizeof(int) == 4 && sizeof(float) == 4, "samples' values are 4 bytes");
static void permute(void *v, const dest_index *order, size_t nopen, unsigned char *tmp)
{
    const unsigned char *src = v;
    for (size_t k = 0; k < nopen; ++k)
        memcpy(tmp + 4 * k, src + 4 * (size_t)order[k].k, 4);
    memcpy(v, tmp, 4 * nopen);
}

/* The pruned transform takes the pupil transposed (cpu/plan_cache.h):
 * sample (i, j) of the FFT input at j N + i; the samples are put in the
 * order of their new index, so that cpu_pupil_field writes in sequence (in
 * the grid's order it would write one cache line per sample). Returns 0,
 * or -1 with err (allocation). */
static int transpose_dest(cpu_pupil *pp, int nterms, int npix, char *err, size_t errlen)
{
    size_t nopen = pp->nopen;
    dest_index *order = malloc((nopen ? nopen : 1) * sizeof *order);
    unsigned char *tmp = malloc((nopen ? nopen : 1) * 4); /* one plane of 4-byte values */
    if (!order || !tmp) {
        free(order);
        free(tmp);
        snprintf(err, errlen, "cpu: cannot allocate the pupil's sample order");
        return -1;
    }
    unsigned n = (unsigned)npix;
    for (size_t k = 0; k < nopen; ++k)
        order[k] = (dest_index){pp->dest[k] % n * n + pp->dest[k] / n, (unsigned)k};
    qsort(order, nopen, sizeof *order, by_dest);
    for (size_t k = 0; k < nopen; ++k)
        pp->dest[k] = order[k].dest;
    permute(pp->amp, order, nopen, tmp);
    for (int t = 0; t < nterms; ++t)
        permute(pp->basis + (size_t)t * nopen, order, nopen, tmp);
    if (pp->opd) permute(pp->opd, order, nopen, tmp);
    for (int t = 0; t < pp->seg_nterms; ++t) /* segment terms: their basis and index too */
        permute(pp->seg_basis + (size_t)t * nopen, order, nopen, tmp);
    if (pp->seg) permute(pp->seg, order, nopen, tmp);
    free(order);
    free(tmp);
    return 0;
}

static void pool_end(cpu_pool *p);

static void cpu_destroy(psf_backend *b)
{
    if (!b) return;
    pool_end(b->pool); /* its threads use the lanes' buffers */
    for (int i = 1; i < CPU_MAX_LANES; ++i) {
        fftwf_free(b->lanes[i].in);
        fftwf_free(b->lanes[i].out);
        fftwf_free(b->lanes[i].block_in);
        fftwf_free(b->lanes[i].block_out);
    }
    for (int i = 0; i < b->npupils; ++i)
        cpu_pupil_free(&b->pupils[i]);
    cpu_fft_plan_destroy(&b->fft);
    for (int i = 0; i < b->ntables; ++i)
        cpu_mft_table_free(&b->tables[i]);
    cpu_mft_work_free(&b->work);
    free(b->mft_in);
    cpu_detector_work_free(&b->det_work);
    cpu_detector_destroy(&b->det);
    free(b->det_grid);
    free(b);
}

/* Grid images a run computes at once before the detector stage: its
 * batch, at most CPU_DETECTOR_FLOATS floats of them (at least one). */
#define CPU_DETECTOR_FLOATS ((size_t)32 << 20)

static int detector_batch(const psf_problem *set)
{
    size_t plane = (size_t)set->npix * set->npix, fit = CPU_DETECTOR_FLOATS / plane;
    int batch = set->max_batch > 0 ? set->max_batch : 1;
    return fit < 1 ? 1 : fit < (size_t)batch ? (int)fit : batch;
}

/* The detector stage and its buffers (cpu/detector.h), when the problem
 * has one. Returns 0, or -1 with err. */
static int detector_create(psf_backend *b, char *err, size_t errlen)
{
    if (!psf_detector_active(&b->set.detector)) return 0;
    if (cpu_detector_create(&b->det, &b->set, err, errlen) != 0) return -1;
    size_t plane = (size_t)b->set.npix * b->set.npix;
    int batch = detector_batch(&b->set);
    b->det_grid = malloc((size_t)batch * plane * sizeof *b->det_grid);
    if (!b->det_grid || (b->det.convolve && cpu_detector_work_alloc(&b->det, &b->det_work) != 0)) {
        snprintf(err, errlen, "cpu: cannot allocate the detector stage's %d images", batch);
        return -1;
    }
    return 0;
}

/* PSFSIM_TEST_CPU_HANDOUT (tests and bench/ only): "share", "reverse",
 * "shuffle" or "last" (cpu_hand_out); unset or anything else: the next
 * free image. */
static cpu_hand_out hand_out_from_env(void)
{
    const char *e = getenv("PSFSIM_TEST_CPU_HANDOUT");
    if (!e) return HAND_NEXT;
    return strcmp(e, "share") == 0     ? HAND_SHARE
           : strcmp(e, "reverse") == 0 ? HAND_REVERSE
           : strcmp(e, "shuffle") == 0 ? HAND_SHUFFLE
           : strcmp(e, "last") == 0    ? HAND_LAST
                                       : HAND_NEXT;
}

static int cpu_create(const psf_problem *set, const psf_backend_options *options, psf_backend **out,
                      char *err, size_t errlen)
{
    *out = NULL;
    psf_backend *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, errlen, "cpu: out of memory");
        return -1;
    }
    static const psf_backend_options defaults; /* all zero */
    const psf_backend_options *opt = options ? options : &defaults;
    b->set = *set;
    b->current = -1;
    if (set->mft) { /* no FFT to plan; matrices are made as components come */
        if (set->npix < 1 || set->pupil_npix < 1) {
            snprintf(err, errlen, "cpu: MFT grid %d x %d from a pupil grid of %d x %d", set->npix,
                     set->npix, set->pupil_npix, set->pupil_npix);
            free(b);
            return -1;
        }
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        b->mft_threads = opt->threads > 0 ? opt->threads : ncpu > 0 ? (int)ncpu : 1;
        if (detector_create(b, err, errlen) != 0) {
            cpu_destroy(b);
            return -1;
        }
        *out = b;
        return 0;
    }
    /* The plans are estimated whatever the set's size (cpu/plan_cache.h):
     * measured ones made the images depend on the machine's load and the
     * set's size. opt->measure_plans and cache_dir are not read. */
    if (cpu_fft_plan_create_band(&b->fft, set->npix, pupil_band(set), cpu_threads(set, opt), err,
                                 errlen) != 0) {
        free(b);
        return -1;
    }
    b->nlanes = image_lanes(set, opt);
    b->hand_out = hand_out_from_env();
    if (detector_create(b, err, errlen) != 0) {
        cpu_destroy(b);
        return -1;
    }
    *out = b;
    return 0;
}

/* The pupil for pitch dx_m, built on first use. */
static int pupil_for(psf_backend *b, double dx_m, char *err, size_t errlen)
{
    for (int i = 0; i < b->npupils; ++i)
        if (fabs(b->pupils[i].dx_m - dx_m) <= 1e-12 * dx_m) return i;
    if (b->npupils == PSF_MAX_COMPONENTS) {
        snprintf(err, errlen, "cpu: more than %d pupil pitches in one set", PSF_MAX_COMPONENTS);
        return -1;
    }
    cpu_pupil *pp = &b->pupils[b->npupils];
    int rc = b->set.mft ? cpu_pupil_build_compact(pp, &b->set, b->set.pupil_npix, dx_m, err, errlen)
                        : cpu_pupil_build(pp, &b->set, dx_m, err, errlen);
    if (rc != 0) return -1;
    b->pupil_full[b->npupils] = !b->set.mft && outside_band(pp, &b->fft);
    if (!b->set.mft && b->fft.band && !b->pupil_full[b->npupils] &&
        transpose_dest(pp, b->set.modes.nterms, b->set.npix, err, errlen) != 0) {
        cpu_pupil_free(pp);
        return -1;
    }
    if (b->pupil_full[b->npupils]) { /* planning zeroes fft.in: no pupil is there now */
        if (cpu_fft_plan_add_full(&b->fft, err, errlen) != 0) {
            cpu_pupil_free(pp);
            return -1;
        }
        b->current = -1;
    }
    return b->npupils++;
}

/* The MFT matrix for a = dx p / lambda covering pupil offsets j0 .. j0 +
 * nj - 1, built on first use (a depends on the pitch, the wavelength and
 * the output pixel only through their ratio, so a monochromatic sweep at a
 * fixed pixel in lambda/D shares one). NULL with err on failure. */
static const cpu_mft_table *table_for(psf_backend *b, double a, int j0, int nj, char *err,
                                      size_t errlen)
{
    int m = b->set.npix;
    double bytes = 0.0;
    for (int i = 0; i < b->ntables; ++i) {
        const cpu_mft_table *t = &b->tables[i];
        if (t->npix == m && fabs(t->a - a) <= 1e-12 * a && t->j0 <= j0 && t->j0 + t->nj >= j0 + nj)
            return t;
        bytes += (double)cpu_mft_table_bytes(t->npix, t->nj);
    }
    int slot = b->ntables;
    if (slot == CPU_MFT_TABLES ||
        (slot > 0 && bytes + (double)cpu_mft_table_bytes(m, nj) > (double)PSF_MFT_TABLE_BYTES)) {
        slot = b->evict;
        b->evict = (b->evict + 1) % b->ntables;
        cpu_mft_table_free(&b->tables[slot]);
    }
    int centre2 = 2 * (m / 2) - (b->set.half_pixel ? 1 : 0);
    if (cpu_mft_table_build_centred(&b->tables[slot], a, m, centre2, j0, nj, err, errlen) != 0) {
        if (slot < b->ntables) { /* keep the table list dense */
            b->tables[slot] = b->tables[b->ntables - 1];
            memset(&b->tables[--b->ntables], 0, sizeof b->tables[0]);
            b->evict = 0;
        }
        return NULL;
    }
    if (slot == b->ntables) b->ntables++;
    return &b->tables[slot];
}

/* image = sum_c scale_c |MFT{field_c}|^2 (backend/backend.h). */
static int cpu_run_one_mft(psf_backend *b, const psf_job *job, float *image, char *err,
                           size_t errlen)
{
    int m = b->set.npix;
    memset(image, 0, (size_t)m * m * sizeof *image);
    for (int c = 0; c < job->ncomp; ++c) {
        const psf_component *comp = &job->comp[c];
        if (!(comp->out_pixel_rad > 0.0) || !(comp->wavelength_m > 0.0) || !(comp->dx_m > 0.0)) {
            snprintf(err, errlen,
                     "cpu: MFT component %d without a positive pixel, wavelength "
                     "and pitch",
                     c);
            return -1;
        }
        int p = pupil_for(b, comp->dx_m, err, errlen);
        if (p < 0) return -1;
        const cpu_pupil *pp = &b->pupils[p];
        if (pp->rows == 0) continue; /* nothing open */
        size_t box = (size_t)pp->rows * (size_t)pp->cols;
        if (b->current != p) { /* a fresh, zeroed box for this pupil's samples */
            if (box > b->mft_in_cap) {
                free(b->mft_in);
                b->mft_in = malloc(box * sizeof *b->mft_in);
                b->mft_in_cap = b->mft_in ? box : 0;
                if (!b->mft_in) {
                    b->current = -1;
                    snprintf(err, errlen, "cpu: cannot allocate the %d x %d MFT pupil", pp->rows,
                             pp->cols);
                    return -1;
                }
            }
            memset(b->mft_in, 0, box * sizeof *b->mft_in);
            b->current = p;
        }
        cpu_pupil_field(pp, b->set.modes.nterms, comp->coeff_waves, comp->opd_to_waves, b->mft_in);
        int row_off = pp->row0 - pp->grid / 2, col_off = pp->col0 - pp->grid / 2;
        int j0 = row_off < col_off ? row_off : col_off;
        int j1 = row_off + pp->rows > col_off + pp->cols ? row_off + pp->rows : col_off + pp->cols;
        const cpu_mft_table *t = table_for(b, comp->dx_m * comp->out_pixel_rad / comp->wavelength_m,
                                           j0, j1 - j0, err, errlen);
        if (!t) return -1;
        if (cpu_mft_accumulate(t, (const float *)b->mft_in, pp->rows, pp->cols, row_off, col_off,
                               (float)comp->scale, b->mft_threads, &b->work, image, err,
                               errlen) != 0)
            return -1;
    }
    return 0;
}

/* One image through lane l (its pupils already built: pupil_index); with
 * scan, its peak and range taken as its last component is written, and a
 * one-component image streamed past the cache if the job allows
 * (psf_job.done, psf_job.stream). */
static void fft_image(psf_backend *b, cpu_lane *l, const psf_job *job, const int *pupil_index,
                      float *image, psf_image_scan *scan)
{
    int npix = b->set.npix;
    if (job->ncomp < 1) memset(image, 0, (size_t)npix * npix * sizeof *image);
    for (int c = 0; c < job->ncomp; ++c) {
        const psf_component *comp = &job->comp[c];
        int p = pupil_index[c], last = c == job->ncomp - 1;
        if (l->current >= 0 && l->current != p) cpu_pupil_clear(&b->pupils[l->current], l->in);
        l->current = p;
        cpu_pupil_field(&b->pupils[p], b->set.modes.nterms, comp->coeff_waves, comp->opd_to_waves,
                        l->in);
        /* the first component writes the image: no clearing pass */
        cpu_intensity_op op = {.scale = (float)comp->scale,
                               .first = c == 0,
                               .stream = scan && job->stream && job->ncomp == 1,
                               .scan = last ? scan : NULL};
        if (b->fft.block && !b->pupil_full[p]) {
            cpu_band_image(&b->fft, l->in, l->out, l->block_in, l->block_out, &op, image);
            continue;
        }
        cpu_fft_plan_execute_dft(&b->fft, l->in, l->out, b->pupil_full[p]);
        cpu_intensity_rows(l->out, npix, 0, npix, &op, image);
    }
    if (scan && job->stream && job->ncomp == 1) cpu_intensity_fence();
}

/* Build (serially: the planner and the caches are not thread-safe) every
 * pupil the jobs need; pupil_index[k * PSF_MAX_COMPONENTS + c]. */
static int build_pupils(psf_backend *b, const psf_job *jobs, int njobs, int *pupil_index, char *err,
                        size_t errlen)
{
    for (int k = 0; k < njobs; ++k)
        for (int c = 0; c < jobs[k].ncomp; ++c) {
            int p = pupil_for(b, jobs[k].comp[c].dx_m, err, errlen);
            if (p < 0) return -1;
            pupil_index[k * PSF_MAX_COMPONENTS + c] = p;
        }
    return 0;
}

/* Image k of the run through lane `lane`, then its done hook. */
static void lane_image(const lane_task *t, int lane, int k)
{
    size_t plane = (size_t)t->b->set.npix * t->b->set.npix;
    const psf_job *job = &t->jobs[k];
    float *image = t->images + (size_t)k * plane;
    int hook = t->call_done && job->done;
    psf_image_scan scan = {-INFINITY, 1}, *want = hook && job->ncomp > 0 ? &scan : NULL;
    fft_image(t->b, &t->b->lanes[lane], job, t->pupil_index + (size_t)k * PSF_MAX_COMPONENTS, image,
              want);
    if (hook) job->done(job->done_ctx, image, want);
}

/* Lane `lane`'s images of the run (cpu_hand_out): by default the next of
 * order[] not taken (one atomic counter), else a test hook's. Each image
 * is computed the same whatever the lane and whatever that lane computed
 * before (the pupil it holds is cleared first: fft_image), so the images
 * depend neither on the hand-out nor on the thread count
 * (tests/cpu/test_cpu_lanes.c, python/tests/test_repro.py). */
static void lane_main(lane_task *t, int lane)
{
    if (t->next_free) {
        for (int n; (n = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed)) < t->njobs;)
            lane_image(t, lane, t->order[n]);
        return;
    }
    if (t->last_only) {
        for (int n = 0; lane == t->nlanes - 1 && n < t->njobs; ++n)
            lane_image(t, lane, t->order[n]);
        return;
    }
    for (int n = lane; n < t->njobs; n += t->nlanes)
        lane_image(t, lane, t->order[n]);
}

static long elapsed_ns(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000000000L + (t.tv_nsec - t0->tv_nsec);
}

static void spin_pause(void)
{
#ifdef __SSE2__
    _mm_pause();
#endif
}

/* Wait until gen differs from seen: polled for CPU_POOL_SPIN_NS, then
 * asleep on go. Returns with mu held. */
static void pool_wait_gen(cpu_pool *p, unsigned seen)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; atomic_load_explicit(&p->gen, memory_order_acquire) == seen; ++i) {
        spin_pause();
        if (i % 64 == 63 && elapsed_ns(&t0) > CPU_POOL_SPIN_NS) break;
    }
    pthread_mutex_lock(&p->mu);
    while (atomic_load_explicit(&p->gen, memory_order_relaxed) == seen)
        pthread_cond_wait(&p->go, &p->mu);
}

typedef struct {
    cpu_pool *p;
    int lane;
} pool_arg;

static void *pool_main(void *arg)
{
    pool_arg a = *(pool_arg *)arg;
    free(arg);
    cpu_pool *p = a.p;
    unsigned seen = 0;
    for (;;) {
        pool_wait_gen(p, seen);
        seen = atomic_load_explicit(&p->gen, memory_order_relaxed);
        int quit = p->quit;
        pthread_mutex_unlock(&p->mu);
        if (quit) return NULL;
        if (a.lane < p->task.nlanes) {
            fesetenv(&p->task.env); /* the caller's rounding and exception modes */
#ifdef __SSE2__
            _mm_setcsr(p->task.csr); /* its flush-to-zero and denormals-are-zero too */
#endif
            lane_main(&p->task, a.lane);
        }
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0) pthread_cond_signal(&p->idle);
        pthread_mutex_unlock(&p->mu);
    }
}

/* End the pool's threads and free it. */
static void pool_end(cpu_pool *p)
{
    if (!p) return;
    if (p->pid == getpid()) { /* a fork's child has no threads to end */
        pthread_mutex_lock(&p->mu);
        p->quit = 1;
        atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
        pthread_cond_broadcast(&p->go);
        pthread_mutex_unlock(&p->mu);
        for (int t = 1; t <= p->started; ++t)
            pthread_join(p->threads[t], NULL);
        pthread_cond_destroy(&p->go);
        pthread_cond_destroy(&p->idle);
        pthread_mutex_destroy(&p->mu);
    }
    free(p);
}

/* b's pool with up to want - 1 threads (lanes 1 .. want - 1), started
 * here on first use (and again in a fork's child, which has none of its
 * parent's threads). NULL when none could be made: lane 0 then takes
 * every image. */
static cpu_pool *pool_for(psf_backend *b, int want)
{
    if (b->pool && b->pool->pid != getpid()) { /* the parent's: its threads are not here */
        free(b->pool);
        b->pool = NULL;
    }
    if (b->pool) return b->pool;
    size_t size = (sizeof(cpu_pool) + 63) / 64 * 64;       /* aligned_alloc's multiple */
    cpu_pool *p = aligned_alloc(_Alignof(cpu_pool), size); /* task.next's 64 bytes */
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p);
        return NULL;
    }
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->idle, NULL);
    atomic_init(&p->gen, 0);
    atomic_init(&p->task.next, 0);
    p->pid = getpid();
    for (int t = 1; t < want; ++t) {
        pool_arg *a = malloc(sizeof *a);
        if (!a) break;
        *a = (pool_arg){p, t};
        if (pthread_create(&p->threads[t], NULL, pool_main, a) != 0) {
            free(a);
            break;
        }
        p->started = t;
    }
    b->pool = p;
    return p;
}

/* Lane buffers beyond lane 0, zeroed (pupil samples are written, the rest
 * must stay zero). Returns how many lanes are usable. */
static int ready_lanes(psf_backend *b, int want)
{
    size_t n = (size_t)b->set.npix * b->set.npix;
    b->lanes[0] = (cpu_lane){.in = b->fft.in,
                             .out = b->fft.out,
                             .block_in = b->fft.block_in,
                             .block_out = b->fft.block_out,
                             .current = b->current};
    int got = 1;
    for (; got < want; ++got) {
        cpu_lane *l = &b->lanes[got];
        if (l->in) continue;
        l->in = fftwf_malloc(n * sizeof *l->in);
        l->out = fftwf_malloc(n * sizeof *l->out);
        if (!l->in || !l->out ||
            (b->fft.block && cpu_fft_block_alloc(&b->fft, &l->block_in, &l->block_out) != 0)) {
            fftwf_free(l->in);
            fftwf_free(l->out);
            l->in = l->out = NULL;
            break;
        }
        memset(l->in, 0, n * sizeof *l->in);
        l->current = -1;
    }
    return got;
}

/* The span of memory one page fault of a fresh buffer maps with
 * transparent huge pages (NumPy asks for them: madvise(MADV_HUGEPAGE)),
 * the x86-64 PMD's 2 MiB. */
#define CPU_FAULT_SPAN ((size_t)2 << 20)

/* order[0 .. njobs): the order the lanes take a run's images in: the
 * first image of each CPU_FAULT_SPAN of the output, then the second of
 * each, ..., so that threads taking images one after the other write into
 * different huge pages. In a fresh buffer the first write into a huge page
 * faults it in (the kernel zeroes its 2 MiB, ~0.2 ms) and every other
 * thread writing into the same page waits for that fault: in image order
 * the 16 threads' first images are in 2 pages (8 images of 256^2 a page).
 * Two threads writing 256^2 images into a fresh buffer took 48-51 us an
 * image adjacent, 40-41 in different pages (bench/RESULTS.md, issue 27). */
static void fault_order(int npix, int njobs, int *order)
{
    size_t bytes = (size_t)npix * npix * sizeof(float);
    int per = bytes < CPU_FAULT_SPAN ? (int)(CPU_FAULT_SPAN / bytes) : 1;
    int spans = (njobs + per - 1) / per, n = 0;
    for (int i = 0; i < per; ++i)
        for (int span = 0; span < spans; ++span)
            if (span * per + i < njobs) order[n++] = span * per + i;
}

/* order[0 .. njobs) as b's hand-out has it (cpu_hand_out): fault_order,
 * reversed, or shuffled (Fisher-Yates, splitmix64 draws from b->draws). */
static void hand_out_order(psf_backend *b, int njobs, int *order)
{
    fault_order(b->set.npix, njobs, order);
    if (b->hand_out == HAND_REVERSE)
        for (int i = 0, j = njobs - 1; i < j; ++i, --j) {
            int x = order[i];
            order[i] = order[j];
            order[j] = x;
        }
    if (b->hand_out == HAND_SHUFFLE)
        for (int i = njobs - 1; i > 0; --i) {
            unsigned long long z = (b->draws += 0x9e3779b97f4a7c15ULL);
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
            z ^= z >> 31;
            int j = (int)(z % (unsigned long long)(i + 1)), x = order[i];
            order[i] = order[j];
            order[j] = x;
        }
}

static int cpu_run_fft(psf_backend *b, const psf_job *jobs, int njobs, float *images, char *err,
                       size_t errlen)
{
    int *pupil_index = malloc((size_t)njobs * (PSF_MAX_COMPONENTS + 1) * sizeof *pupil_index);
    if (!pupil_index) {
        snprintf(err, errlen, "cpu: out of memory");
        return -1;
    }
    int *order = pupil_index + (size_t)njobs * PSF_MAX_COMPONENTS; /* [njobs] */
    hand_out_order(b, njobs, order);
    int rc = build_pupils(b, jobs, njobs, pupil_index, err, errlen);
    int nl = njobs < b->nlanes ? njobs : b->nlanes;
    if (rc == 0) nl = ready_lanes(b, nl);
    cpu_pool *p = rc == 0 && nl > 1 ? pool_for(b, b->nlanes) : NULL;
    if (rc == 0 && p) { /* the pool's threads 1 .. nl - 1 and this one as lane 0 */
        if (nl > p->started + 1) nl = p->started + 1;
        pthread_mutex_lock(&p->mu);
        p->task.b = b;
        p->task.nlanes = nl;
        p->task.njobs = njobs;
        p->task.call_done = !b->det_grid;
        p->task.next_free = b->hand_out == HAND_NEXT;
        p->task.last_only = b->hand_out == HAND_LAST;
        p->task.jobs = jobs;
        p->task.pupil_index = pupil_index;
        p->task.order = order;
        p->task.images = images;
        fegetenv(&p->task.env);
#ifdef __SSE2__
        p->task.csr = _mm_getcsr();
#endif
        atomic_store_explicit(&p->task.next, 0, memory_order_relaxed);
        p->busy = p->started;
        atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
        pthread_cond_broadcast(&p->go);
        pthread_mutex_unlock(&p->mu);
        lane_main(&p->task, 0);
        pthread_mutex_lock(&p->mu);
        while (p->busy > 0)
            pthread_cond_wait(&p->idle, &p->mu);
        pthread_mutex_unlock(&p->mu);
    } else if (rc == 0) {
        lane_task one = {.b = b,
                         .nlanes = 1,
                         .njobs = njobs,
                         .call_done = !b->det_grid,
                         .jobs = jobs,
                         .pupil_index = pupil_index,
                         .order = order,
                         .images = images};
        lane_main(&one, 0);
    }
    if (rc == 0) b->current = b->lanes[0].current;
    free(pupil_index);
    return rc;
}

/* The grid images (npix x npix each), before any detector stage. */
static int run_grids(psf_backend *b, const psf_job *jobs, int njobs, float *images, char *err,
                     size_t errlen)
{
    if (!b->set.mft) return cpu_run_fft(b, jobs, njobs, images, err, errlen);
    size_t plane = (size_t)b->set.npix * b->set.npix;
    for (int k = 0; k < njobs; ++k)
        if (cpu_run_one_mft(b, &jobs[k], images + (size_t)k * plane, err, errlen) != 0) return -1;
    return 0;
}

static int cpu_run(psf_backend *b, const psf_job *jobs, int njobs, float *images, char *err,
                   size_t errlen)
{
    if (!b->det_grid) return run_grids(b, jobs, njobs, images, err, errlen);
    size_t plane = (size_t)b->set.npix * b->set.npix;
    size_t out = (size_t)psf_detector_out_npix(&b->set) * (size_t)psf_detector_out_npix(&b->set);
    int per = detector_batch(&b->set);
    for (int k0 = 0; k0 < njobs; k0 += per) { /* the grids of `per` images at a time */
        int n = njobs - k0 < per ? njobs - k0 : per;
        if (run_grids(b, jobs + k0, n, b->det_grid, err, errlen) != 0) return -1;
        for (int k = 0; k < n; ++k)
            cpu_detector_apply(&b->det, &b->det_work, b->det_grid + (size_t)k * plane,
                               images + (size_t)(k0 + k) * out);
    }
    return 0;
}

/* Floats the levels path computes at a time (64 MiB): its scratch. */
#define CPU_LEVELS_FLOATS ((size_t)1 << 24)

/* psf_backend_ops.run_levels: run's floats, a scratch of up to
 * CPU_LEVELS_FLOATS at a time, then each image's measures (pixel order)
 * and levels (backend/levels.h). */
static int cpu_run_levels(psf_backend *b, const psf_job *jobs, int njobs, unsigned short *levels,
                          double *measures, char *err, size_t errlen)
{
    const psf_levels_out *lo = &b->set.levels;
    if (lo->bits == 0 || psf_detector_active(&b->set.detector)) {
        snprintf(err, errlen, "cpu: no levels output for this set (%s)",
                 lo->bits == 0 ? "levels.bits 0" : "a detector stage");
        return -1;
    }
    int npix = b->set.npix;
    size_t plane = (size_t)npix * npix, axis = (size_t)(npix / 2) * npix + npix / 2;
    int per = CPU_LEVELS_FLOATS / plane > 0 ? (int)(CPU_LEVELS_FLOATS / plane) : 1;
    per = per < njobs ? per : njobs;
    float *img = per > 0 ? malloc((size_t)per * plane * sizeof *img) : NULL;
    if (njobs > 0 && !img) {
        snprintf(err, errlen, "cpu: out of memory for %d %dx%d images", per, npix, npix);
        return -1;
    }
    psf_levels_map m = psf_levels_map_make(lo->bits, lo->stretch, lo->dynamic_range);
    int rc = 0;
    for (int k0 = 0; k0 < njobs && rc == 0; k0 += per) {
        int n = njobs - k0 < per ? njobs - k0 : per;
        rc = cpu_run(b, jobs + k0, n, img, err, errlen);
        for (int k = 0; k < n && rc == 0; ++k) {
            double *mk = measures + (size_t)(k0 + k) * PSF_MEASURES;
            psf_levels_measure(img + (size_t)k * plane, plane, axis, mk);
            psf_levels_image(&m, img + (size_t)k * plane, plane, mk[PSF_MEASURE_PEAK],
                             lo->rotate_180, levels + (size_t)(k0 + k) * plane);
        }
    }
    free(img);
    return rc;
}

static float *cpu_alloc_images(psf_backend *b, size_t nfloats)
{
    (void)b;
    return malloc(nfloats * sizeof(float));
}

static void cpu_free_images(psf_backend *b, float *images)
{
    (void)b;
    free(images);
}

static int cpu_device_count(char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    return 1; /* the CPU: one device, its cores shared by FFTW's threads */
}

/* psf_backend_ops.memory_need. With M the image size, P the pupil grid (M,
 * or the MFT's G), n the pupil samples and T the modes:
 *  - transform: the FFT's in and out buffers, 16 M^2 (cpu/plan_cache.c);
 *    or for the MFT the matrices, 8 P M each, one per distinct a up to
 *    PSF_MFT_TABLE_BYTES + one (table_for), the pupil box 8 P^2 and the
 *    products' scratch 8 P M + 8 M^2 (cpu/mft.c);
 *  - pupils: per pitch the open samples, at most min(P^2, (n + 2)^2),
 *    each with its index, transmission, OPD and T basis values, 4 bytes
 *    each (cpu/pupil.c);
 *  - scratch: while a pupil is built, its aperture grid and the resampled
 *    OPD map, 4 P^2 each (cpu/pupil.c);
 *  - with a detector stage, in transform: the grid images 4 M^2 each, of
 *    the batch up to CPU_DETECTOR_FLOATS floats, the transfer function and
 *    the stage's buffers (cpu/detector.h).
 * The image-parallel lanes' buffers (N < 512) are not counted: the figures
 * are the ones psfsim's limits were set with (app/run/set_limits.h). */
static int cpu_memory_need(const psf_problem *set, const psf_backend_options *options,
                           psf_memory_need *out, char *err, size_t errlen)
{
    (void)options;
    memset(out, 0, sizeof *out);
    if (set->npix < 1 || (set->mft && set->pupil_npix < 1)) {
        snprintf(err, errlen, "cpu: no memory need for a %d x %d grid (pupil grid %d)", set->npix,
                 set->npix, set->pupil_npix);
        return -1;
    }
    const unsigned long long m = (unsigned long long)set->npix;
    const unsigned long long p = set->mft ? (unsigned long long)set->pupil_npix : m;
    const unsigned long long plane = m * m, pgrid = p * p; /* <= 2^32 */
    if (set->mft) {
        unsigned long long table = 8ULL * p * m;
        unsigned long long nmat = set->mft_matrices > 0 ? (unsigned long long)set->mft_matrices : 1;
        unsigned long long tables =
            bytes_min(bytes_mul(table, nmat), bytes_add(PSF_MFT_TABLE_BYTES, table));
        out->transform =
            bytes_add(bytes_add(tables, 8ULL * pgrid), bytes_add(8ULL * p * m, 8ULL * plane));
    } else {
        out->transform = 16ULL * plane; /* 2 x N^2 complex float */
    }
    unsigned long long n = set->pupil_samples > 0 ? (unsigned long long)set->pupil_samples : 0;
    unsigned long long open = n > 0 ? bytes_min(pgrid, (n + 2) * (n + 2)) : pgrid;
    unsigned long long per_sample = 4ULL * (3ULL + (unsigned long long)set->modes.nterms);
    unsigned long long npitch = set->pupil_pitches > 0 ? (unsigned long long)set->pupil_pitches : 1;
    out->pupils = bytes_mul(bytes_mul(open, per_sample), npitch);
    out->scratch = 4ULL * pgrid * (set->opd_map ? 2ULL : 1ULL);
    if (psf_detector_active(&set->detector)) { /* cpu/detector.h: the grid images, table, lane */
        unsigned long long batch = (unsigned long long)detector_batch(set);
        unsigned long long stage =
            bytes_add(bytes_mul(batch, 4ULL * plane),
                      bytes_add(psf_detector_otf_bytes(set->npix),
                                4ULL * plane + psf_detector_otf_bytes(set->npix)));
        out->transform = bytes_add(out->transform, stage);
    }
    out->host = bytes_add(bytes_add(out->transform, out->pupils), out->scratch);
    return 0;
}

const psf_backend_ops psf_backend_cpu = {
    .name = "cpu",
    .create = cpu_create,
    .run = cpu_run,
    .destroy = cpu_destroy,
    .alloc_images = cpu_alloc_images,
    .free_images = cpu_free_images,
    .preferred_batch = 64,
    .device_count = cpu_device_count,
    .memory_need = cpu_memory_need,
    .run_levels = cpu_run_levels,
};
