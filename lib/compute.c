/* SPDX-License-Identifier: BSD-3-Clause */
/* Computing images into the caller's buffer (lib/psfsim.h): the
 * library's sink of the engine's batch loop (lib/engine/batch.h,
 * engine_run): each batch's jobs (image_set_job) in a lane's slot, its
 * images finished and measured (image_set_measure), as the command's sink
 * does (app/run/run_sink.c), with the PNG's stretch for the grey levels,
 * into the caller's buffer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "app/formats/png_io.h"
#include "app/select/gpu.h"
#include "backend/cpu_count.h"
#include "backend/fork_join.h"
#include "app/set/measure.h"
#include "backend/levels.h"
#include "lib/engine/batch.h"
#include "lib/set_priv.h"

/* finish's threads: at most one per CPU and FINISH_MAX_THREADS, each with
 * FINISH_MIN_IMAGES images or more (a thread's start, ~20 us, is then
 * small against its images' work). */
#define FINISH_MAX_THREADS 8
#define FINISH_MIN_IMAGES 16

/* A caller's buffer of at least this many bytes is pre-faulted while a GPU
 * starts (prefault_start): 64 MiB takes ~10 ms to fault on one thread. */
#define PREFAULT_MIN_BYTES ((size_t)64 << 20)

typedef struct lane_state lane_state;

/* One compute call: the images still to hand out, shared by the lanes. */
typedef struct {
    psfsim_set *s;
    long long first, count;
    long long done;     /* under mu */
    engine_queue queue; /* [first, first + count), under mu */
    lane_state *ls;     /* [s->nlanes]: each lane's part */
    float *images;      /* the caller's floats, or NULL (levels) */
    uint16_t *levels;   /* the caller's grey levels, or NULL */
    psfsim_metrics *metrics;
    /* Device outputs (psfsim_compute_device): images or levels are memory
     * of CUDA device dev_id, written by a GPU lane's copies straight
     * (direct_out) or uploaded by mem->copy from the host; NULL: host. */
    const gpu_memory_ops *mem;
    int dev_id;
    /* Host floats of a set whose images the GPU may measure (gpu_measures):
     * a GPU lane's run_measured gives their measures, so that no image is
     * read back to measure it; pinned: the caller's floats or levels are
     * pinned host memory, which those lanes' copies fill straight
     * (direct_out). */
    int gpu_meas, pinned;
    int finishers; /* threads that finish a batch (finish) */
    pthread_mutex_t mu;
    atomic_int stop; /* a lane failed: the others stop too */
    int rc;          /* the first failure (under mu) */
    char err[LIB_ERRLEN];
} work;

/* A done hook's context (hook_finish, below). */
typedef struct image_hook image_hook;

/* The part of lane ln's batch arrays (jobs, infos, storage, measures,
 * scratch, hooks) one run() call uses. A GPU lane's arrays are two slots
 * of half a batch each: the host finishes one slot's images (measures
 * them, copies them into the caller's buffer) while the GPU computes the
 * next slot's (lane_loop), where one batch at a time left the GPU idle
 * while the host copied (10,000 images of 256^2 on the H200: 0.22 -> 0.18
 * s into a buffer written before, 0.28 -> 0.24 s into a fresh one;
 * bench/RESULTS.md, run 26). A CPU lane's threads write the caller's
 * buffer themselves; its two slots let it make one slot's jobs while the
 * other computes (sink_ahead), and it has one (the whole batch) when a
 * slot would hold fewer than LIB_CPU_SLOT_IMAGES a thread. */
typedef struct {
    int first; /* the slot's first index into the lane's arrays */
    int cap;   /* images at most */
} lane_slot;

static void fail(work *w, int rc, const char *why)
{
    pthread_mutex_lock(&w->mu);
    if (w->rc == PSFSIM_OK) {
        w->rc = rc;
        snprintf(w->err, sizeof w->err, "%s", why);
    }
    pthread_mutex_unlock(&w->mu);
    atomic_store(&w->stop, 1);
}

/* Whether lane ln computes w's batches as levels (run_levels into its
 * scratch, measures into ln->measures): psfsim_compute_u16 on a lane that
 * takes them (psfsim_set.levels_lanes). */
static int on_levels(const work *w, const lib_lane *ln)
{
    return w->levels && engine_lane_on_levels(&ln->eng, w->s->levels_lanes);
}

/* Whether lane ln computes w's floats with their measures
 * (run_measured): host floats of a gpu_meas set on a backend that has it. */
static int on_measured(const work *w, const lib_lane *ln)
{
    return w->gpu_meas && w->images && !w->mem && ln->eng.ops->run_measured != NULL;
}

/* Whether lane ln's backend writes the caller's buffer itself: a GPU's
 * copies land in the caller's device memory (floats, or levels when it
 * computes them), or in the caller's pinned host floats with their
 * measures or pinned host levels it computes, with no host stop. */
static int direct_out(const work *w, const lib_lane *ln)
{
    if (ln->eng.ops == &psf_backend_cpu) return 0;
    if (!w->mem) return w->pinned && (w->levels ? on_levels(w, ln) : on_measured(w, ln));
    if (on_levels(w, ln)) return 1; /* the levels kernel finishes them (the turn included) */
    /* Floats the host finishes (image_set_measure_scanned: an MFT set's
     * sum normalisation, the "poppy" turn) come through the host. */
    const image_set *set = &w->s->e.set;
    return w->images && !(set->mft && set->cfg->normalization == NORM_SUM) &&
           set->cfg->orientation != ORIENT_POPPY;
}

/* Where lane ln's backend writes a batch in slot sl: a device output's
 * memory at k0 when the lane writes it (direct_out); its own buffer for
 * the levels' path, for a GPU (alloc_images' pinned memory: a
 * device-to-host copy into the caller's pageable memory is staged and
 * slow) and for a device output the host makes, else straight into the
 * caller's floats at k0. */
static int batch_buffer(work *w, lib_lane *ln, const lane_slot *sl, long long k0, float **out,
                        char *err, size_t errlen)
{
    size_t plane = (size_t)w->s->e.set.samp.npix * w->s->e.set.samp.npix;
    if (direct_out(w, ln)) {
        size_t at = (size_t)(k0 - w->first) * plane;
        *out = w->images ? w->images + at : (float *)(w->levels + at);
        return PSFSIM_OK;
    }
    if (!w->levels && !w->mem && ln->eng.ops == &psf_backend_cpu) {
        *out = w->images + (size_t)(k0 - w->first) * plane;
        return PSFSIM_OK;
    }
    int rc = lib_lane_scratch(w->s, ln, err, errlen);
    /* slot sl's part at its first image: in levels when the lane computes
     * levels, else in floats (psfsim_compute_u16's levels then stretched
     * from them) */
    size_t at = (size_t)sl->first * plane;
    *out = on_levels(w, ln) ? (float *)((uint16_t *)ln->scratch + at) : ln->scratch + at;
    return rc;
}

/* Image i of a batch at k0 after the backend, the lane's record
 * ln->infos[slot + i]: finish, measure, stretch (the levels' path). */
static void finish_image(work *w, lib_lane *ln, int slot, long long k0, int i, float *img,
                         const psf_image_scan *scan)
{
    const image_set *set = &w->s->e.set;
    const psf_config *cfg = &w->s->e.cfg;
    size_t plane = (size_t)set->samp.npix * set->samp.npix;
    psfsim_metrics m = {.backend = ln->eng.ops->name};
    image_set_measure_scanned(set, &ln->infos[slot + i], img, scan, &m.strehl, &m.axial_intensity);
    long long at = k0 + i - w->first;
    if (w->metrics) w->metrics[at] = m;
    if (w->levels)
        psf_png_stretch_levels(img, set->samp.npix, cfg->png_bits, cfg->png_stretch,
                               cfg->png_dynamic_range, w->levels + (size_t)at * plane);
}

/* A job's done hook (psf_job.done): its image finished by the backend's
 * thread that computed it, while in that thread's cache (the measure
 * re-read a batch of 64 256^2 images, 16 MiB, from memory), or with the
 * backend's scan of it (psf_image_scan) not read again at all. */
struct image_hook {
    work *w;
    lib_lane *ln;
    int slot; /* the slot's first index (lane_slot.first) */
    long long k0;
    int i;
    int finished; /* finish_image ran: finish_part skips it */
};

static void hook_finish(void *ctx, float *img, const psf_image_scan *scan)
{
    image_hook *h = ctx;
    finish_image(h->w, h->ln, h->slot, h->k0, h->i, img, scan);
    h->finished = 1;
}

/* Images [i0, i1) of a batch after the backend: those no hook finished,
 * and one copy of the part from the lane's buffer. */
typedef struct {
    work *w;
    lib_lane *ln;
    int slot; /* the slot's first index into the lane's arrays */
    long long k0;
    int i0, i1;
    float *out;
    const image_hook *hooks; /* [the slot's images] or NULL */
    int levels;              /* out holds levels, the lane's measures their measures */
    int measured;            /* out holds floats, the lane's measures theirs (on_measured) */
    int direct;              /* out is the caller's buffer (direct_out) */
} batch_part;

/* finish_part for a levels batch: metrics from the backend's measures,
 * the levels (already turned for "poppy") copied into the caller's. */
static void finish_levels(const batch_part *p)
{
    work *w = p->w;
    const image_set *set = &w->s->e.set;
    size_t plane = (size_t)set->samp.npix * set->samp.npix;
    for (int i = p->i0; i < p->i1 && w->metrics; ++i) {
        psfsim_metrics m = {.backend = p->ln->eng.ops->name};
        size_t j = (size_t)(p->slot + i);
        image_set_measure_levels(set, &p->ln->infos[j], p->ln->measures + j * PSF_MEASURES,
                                 &m.strehl, &m.axial_intensity);
        w->metrics[p->k0 + i - w->first] = m;
    }
    if (p->direct) return; /* the lane wrote the caller's pinned levels */
    const unsigned short *src = (const unsigned short *)p->out + (size_t)p->i0 * plane;
    memcpy(w->levels + (size_t)(p->k0 + p->i0 - w->first) * plane, src,
           (size_t)(p->i1 - p->i0) * plane * sizeof *src);
}

/* finish_part for a device output (metrics are refused there: the
 * images need not come to the host): what the lane wrote on the host
 * uploaded, floats as they are, or levels (the lane's, or stretched here
 * from its floats into a host buffer of the part). */
static void finish_device(const batch_part *p)
{
    work *w = p->w;
    if (p->direct) return;
    const psf_config *cfg = &w->s->e.cfg;
    int npix = w->s->e.set.samp.npix;
    size_t plane = (size_t)npix * npix, n = (size_t)(p->i1 - p->i0) * plane,
           at = (size_t)(p->k0 + p->i0 - w->first) * plane;
    const void *src = p->out + (size_t)p->i0 * plane;
    void *dst = w->images ? (void *)(w->images + at) : (void *)(w->levels + at);
    size_t bytes = n * (w->images ? sizeof(float) : sizeof(uint16_t));
    uint16_t *lev = NULL;
    double strehl, axial;                             /* unused: no metrics for device outputs */
    for (int i = p->i0; i < p->i1 && !p->levels; ++i) /* finished as psfsim_compute's */
        image_set_measure_scanned(&w->s->e.set, &p->ln->infos[p->slot + i],
                                  p->out + (size_t)i * plane, NULL, &strehl, &axial);
    if (p->levels)
        src = (const uint16_t *)p->out + (size_t)p->i0 * plane;
    else if (w->levels) {
        lev = malloc(bytes);
        if (!lev) {
            fail(w, PSFSIM_ERR_MEMORY, "out of memory for a batch's grey levels");
            return;
        }
        for (int i = p->i0; i < p->i1; ++i)
            psf_png_stretch_levels(p->out + (size_t)i * plane, npix, cfg->png_bits,
                                   cfg->png_stretch, cfg->png_dynamic_range,
                                   lev + (size_t)(i - p->i0) * plane);
        src = lev;
    }
    char why[LIB_ERRLEN];
    if (w->mem->copy(w->dev_id, dst, src, bytes, why, sizeof why) != 0)
        fail(w, PSFSIM_ERR_COMPUTE, why);
    free(lev);
}

/* finish_part for floats the backend measured (on_measured): metrics
 * from the measures, the floats copied unless the backend wrote them in
 * the caller's buffer. */
static void finish_measured(const batch_part *p)
{
    work *w = p->w;
    const image_set *set = &w->s->e.set;
    size_t plane = (size_t)set->samp.npix * set->samp.npix;
    for (int i = p->i0; i < p->i1; ++i) {
        size_t j = (size_t)(p->slot + i);
        psfsim_metrics m = {.backend = p->ln->eng.ops->name};
        image_set_measure_levels(set, &p->ln->infos[j], p->ln->measures + j * PSF_MEASURES,
                                 &m.strehl, &m.axial_intensity);
        if (w->metrics) w->metrics[p->k0 + i - w->first] = m;
    }
    if (p->direct) return;
    memcpy(w->images + (size_t)(p->k0 + p->i0 - w->first) * plane, p->out + (size_t)p->i0 * plane,
           (size_t)(p->i1 - p->i0) * plane * sizeof *p->out);
}

static void *finish_part(void *arg)
{
    const batch_part *p = arg;
    work *w = p->w;
    if (w->mem) {
        finish_device(p);
        return NULL;
    }
    if (p->measured) {
        finish_measured(p);
        return NULL;
    }
    if (p->levels) {
        finish_levels(p);
        return NULL;
    }
    size_t plane = (size_t)w->s->e.set.samp.npix * w->s->e.set.samp.npix;
    for (int i = p->i0; i < p->i1; ++i)
        if (!p->hooks || !p->hooks[i].finished)
            finish_image(w, p->ln, p->slot, p->k0, i, p->out + (size_t)i * plane, NULL);
    float *dst = w->images ? w->images + (size_t)(p->k0 + p->i0 - w->first) * plane : NULL;
    float *src = p->out + (size_t)p->i0 * plane;
    if (dst && dst != src) memcpy(dst, src, (size_t)(p->i1 - p->i0) * plane * sizeof *src);
    return NULL;
}

/* After the backend: batch b (its images [0, b->i1)) finished on up to
 * w->finishers threads (each image's work is its own: info, metrics and
 * levels at its index), since at a GPU's rate one thread measuring and
 * copying is the bottleneck. A thread that cannot start: this one does its
 * part. */
static void finish(const batch_part *b)
{
    int nb = b->i1, left = 0; /* images no hook finished */
    for (int i = 0; i < nb; ++i)
        left += !b->hooks || !b->hooks[i].finished;
    int fin = b->w->finishers, nt = left / FINISH_MIN_IMAGES < fin ? left / FINISH_MIN_IMAGES : fin;
    if (nt < 1) nt = 1;
    batch_part parts[FINISH_MAX_THREADS];
    for (int t = 0; t < nt; ++t) {
        parts[t] = *b;
        parts[t].i0 = (int)((long long)nb * t / nt);
        parts[t].i1 = (int)((long long)nb * (t + 1) / nt);
    }
    psf_fork_join(finish_part, parts, sizeof parts[0], nt);
}

/* Each job of slot `slot`'s batch at k0 gets its done hook (hooks: [nb]). */
static void set_hooks(work *w, lib_lane *ln, int slot, long long k0, int nb, image_hook *hooks)
{
    /* float images are not read again here (levels are stretched from them) */
    size_t plane = (size_t)w->s->e.set.samp.npix * w->s->e.set.samp.npix;
    int stream = !w->levels && lib_resident(w->images + (size_t)(k0 - w->first) * plane,
                                            (size_t)nb * plane * sizeof *w->images);
    for (int i = 0; i < nb; ++i) {
        hooks[i] = (image_hook){w, ln, slot, k0, i, 0};
        ln->jobs[slot + i].done = hook_finish;
        ln->jobs[slot + i].done_ctx = &hooks[i];
        ln->jobs[slot + i].stream = stream;
    }
}

/* The batch is done: count it, tell the progress callback (one at a time). */
static void count_done(work *w, int nb)
{
    psfsim_set *s = w->s;
    pthread_mutex_lock(&w->mu);
    w->done += nb;
    if (s->progress && s->progress(w->done, w->count, s->progress_user) != 0)
        atomic_store(&s->cancel, 1);
    pthread_mutex_unlock(&w->mu);
}

/* A slot's batch (its images [0, batch.i1)) being finished (finish) on
 * its own thread while the lane computes the next. */
typedef struct {
    batch_part batch;
    pthread_t thread;
    int active, started;
} pending;

static void *pending_run(void *arg)
{
    finish(&((pending *)arg)->batch);
    return NULL;
}

/* Finish *p's batch: on its own thread when on_thread (here when none
 * starts), else here. */
static void pending_start(pending *p, int on_thread)
{
    p->active = 1;
    p->started = on_thread && pthread_create(&p->thread, NULL, pending_run, p) == 0;
    if (!p->started) pending_run(p);
}

/* Wait for *p's batch (if any) and count it done. */
static void pending_join(pending *p)
{
    if (!p->active) return;
    if (p->started) pthread_join(p->thread, NULL);
    p->active = 0;
    count_done(p->batch.w, p->batch.i1);
}

/* The lane's slots (lane_slot): two halves of the batch, or one
 * (PSFSIM_TEST_OVERLAP=off, for bench/ and the tests; a CPU batch whose
 * half holds fewer than LIB_CPU_SLOT_IMAGES a thread: a large image's,
 * a small set's, where the wait for a slot's last image would cost more
 * than the jobs). Returns their number: with 2 a GPU lane finishes one
 * while computing the other, a CPU lane makes one's jobs (sink_ahead). */
static int lane_slots(const psfsim_set *s, const lib_lane *ln, lane_slot sl[2])
{
    const char *test = getenv("PSFSIM_TEST_OVERLAP");
    int few = ln->eng.ops == &psf_backend_cpu &&
              s->batch / 2 < LIB_CPU_SLOT_IMAGES * (long long)lib_cpu_threads(s);
    if ((test && strcmp(test, "off") == 0) || s->batch < 2 || few) {
        sl[0] = (lane_slot){0, s->batch};
        return 1;
    }
    int half = s->batch / 2;
    sl[0] = (lane_slot){0, half};
    sl[1] = (lane_slot){half, s->batch - half};
    return 2;
}

/* The done hooks of slot sl's batch at k0 (its part of hooks), or NULL:
 * a levels batch has none, its images finished from the measures (a CPU's
 * run_levels would call them on its floats). */
static image_hook *slot_hooks(work *w, lib_lane *ln, const lane_slot *sl, long long k0, int nb,
                              image_hook *hooks)
{
    for (int i = sl->first; i < sl->first + nb; ++i) {
        ln->jobs[i].done = NULL;
        ln->jobs[i].stream = 0;
    }
    if (!hooks || on_levels(w, ln) || on_measured(w, ln) || w->mem) return NULL;
    set_hooks(w, ln, sl->first, k0, nb, hooks + sl->first);
    return hooks + sl->first;
}

/* A lane's part of a compute call: the library's sink's state of lane l
 * (engine_run, lib/engine/batch.h). */
struct lane_state {
    lib_lane *ln;
    lane_slot slots[2];
    int nslots;
    int ahead;         /* the next slot's batch taken while one runs (sink_ahead) */
    image_hook *hooks; /* [batch], or NULL: finish does all */
    image_hook *sh;    /* the batch's hooks now (slot_hooks), or NULL */
    float *out;        /* where the batch now went (batch_buffer) */
    pending prev;      /* the batch being finished */
};

static int sink_slots(void *user, int l)
{
    return ((work *)user)->ls[l].nslots;
}

/* engine_sink.ahead: lane l's ahead (run_lanes: a CPU lane with two
 * slots). Its threads compute the whole batch, so the jobs of the next
 * (1-2 us an image on the calling thread) would otherwise leave them
 * waiting: at 16 threads about a tenth of their time (bench/RESULTS.md,
 * runs 71-74). Its batches are finished here, not on a thread (sink_done):
 * the next slot's jobs overwrite what a finish reads. */
static int sink_ahead(void *user, int l)
{
    return ((work *)user)->ls[l].ahead;
}

/* engine_sink.next: a slot's images at most. */
static int sink_next(void *user, int l, int q, int *cap, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    *cap = ((work *)user)->ls[l].slots[q].cap;
    return PSFSIM_OK;
}

/* engine_sink.stop: a lane failed, or psfsim_cancel. */
static int sink_stop(void *user)
{
    work *w = user;
    return atomic_load(&w->stop) || atomic_load(&w->s->cancel);
}

/* engine_sink.job: image k's job at slot q's index i of lane l's arrays. */
static int sink_job(void *user, int l, int q, int i, long long k, char *err, size_t errlen)
{
    work *w = user;
    lib_lane *ln = w->ls[l].ln;
    size_t j = (size_t)(w->ls[l].slots[q].first + i), per = image_set_storage(&w->s->e.set);
    return image_set_job(&w->s->e.set, k, ln->storage + j * per, &ln->jobs[j], &ln->infos[j], err,
                         errlen) != 0
               ? PSFSIM_ERR_CONFIG
               : PSFSIM_OK;
}

static void sink_taken(void *user, int l, int q, long long k0, int n)
{
    work *w = user;
    lane_state *st = &w->ls[l];
    st->sh = slot_hooks(w, st->ln, &st->slots[q], k0, n, st->hooks);
}

/* engine_sink.buffer: the batch into st->out (batch_buffer): floats, or
 * levels and their measures. */
static int sink_buffer(void *user, int l, int q, long long k0, engine_batch *b, char *err,
                       size_t errlen)
{
    work *w = user;
    lane_state *st = &w->ls[l];
    const lane_slot *sl = &st->slots[q];
    int rc = batch_buffer(w, st->ln, sl, k0, &st->out, err, errlen);
    if (rc != PSFSIM_OK) return rc;
    b->jobs = st->ln->jobs + sl->first;
    b->on_levels = on_levels(w, st->ln);
    b->measured = !b->on_levels && on_measured(w, st->ln);
    b->images = st->out;
    b->levels = (unsigned short *)st->out;
    b->measures = st->ln->measures + (size_t)sl->first * PSF_MEASURES;
    return PSFSIM_OK;
}

/* engine_sink.fall_back: once the pending batch, which reads the GPU's
 * buffer, is done, the CPU in the lane's place (and st->out then the
 * CPU's buffer). */
static int sink_fall_back(void *user, int l, int q, const char *why, char *err, size_t errlen)
{
    (void)q;
    work *w = user;
    pending_join(&w->ls[l].prev);
    return lib_lane_fall_back(w->s, w->ls[l].ln, why, err, errlen);
}

/* engine_sink.done: the other slot's batch, finished meanwhile, counted;
 * this one finished on its own thread (a GPU lane's two slots) or here. */
static int sink_done(void *user, int l, int q, long long k0, int nb, double run_us, double us,
                     char *err, size_t errlen)
{
    (void)run_us;
    (void)us;
    (void)err;
    (void)errlen;
    work *w = user;
    lane_state *st = &w->ls[l];
    pending_join(&st->prev);
    /* on_levels again: a GPU that failed gave way to the CPU's floats */
    st->prev = (pending){.batch = {.w = w,
                                   .ln = st->ln,
                                   .slot = st->slots[q].first,
                                   .k0 = k0,
                                   .i1 = nb,
                                   .out = st->out,
                                   .hooks = st->sh,
                                   .levels = on_levels(w, st->ln),
                                   .measured = !on_levels(w, st->ln) && on_measured(w, st->ln),
                                   .direct = direct_out(w, st->ln)}};
    int on_thread = st->nslots == 2 && !st->ahead;
    pending_start(&st->prev, on_thread);
    if (!on_thread) pending_join(&st->prev);
    return 0;
}

/* engine_sink.end: the lane's last batch finished, its failure noted. */
static void sink_end(void *user, int l, int rc, const char *err)
{
    work *w = user;
    pending_join(&w->ls[l].prev);
    if (rc != 0) fail(w, rc == ENGINE_RUN_FAILED ? PSFSIM_ERR_COMPUTE : rc, err);
}

/* The lanes over w's images (engine_run): lane 0 on this thread, the
 * others on their own. */
static void run_lanes(work *w)
{
    psfsim_set *s = w->s;
    lane_state ls[LIB_MAX_LANES];
    engine_lane *lanes[LIB_MAX_LANES];
    for (int l = 0; l < s->nlanes; ++l) {
        lib_lane *ln = &s->lanes[l];
        ls[l] = (lane_state){.ln = ln, .prev = {.active = 0}};
        ls[l].nslots = lane_slots(s, ln, ls[l].slots);
        ls[l].ahead = ls[l].nslots == 2 && ln->eng.ops == &psf_backend_cpu;
        ls[l].hooks = malloc((size_t)s->batch * sizeof *ls[l].hooks); /* NULL: finish does all */
        lanes[l] = &ln->eng;
    }
    w->ls = ls;
    engine_sink sink = {.slots = sink_slots,
                        .next = sink_next,
                        .stop = sink_stop,
                        .job = sink_job,
                        .taken = sink_taken,
                        .buffer = sink_buffer,
                        .fall_back = sink_fall_back,
                        .done = sink_done,
                        .end = sink_end,
                        .ahead = sink_ahead,
                        .user = w};
    engine_run(lanes, s->nlanes, &w->queue, &sink);
    for (int l = 0; l < s->nlanes; ++l)
        free(ls[l].hooks);
    w->ls = NULL;
}

/* Pre-faulting the caller's buffer: a fresh one (NumPy's np.empty, malloc)
 * has no pages yet, and its first touch, in finish's copies, can cost as
 * much as the GPU's compute (2.6 GB: 640,000 page faults of 4 KiB, or
 * 1,300 of 2 MiB, each page zeroed by the kernel). While the GPU starts (CUDA's
 * context, the module, cuFFT's plans: a quarter of a second or more) the
 * CPUs are idle: the pages are faulted then, by several threads
 * (MADV_POPULATE_WRITE, Linux 5.14; else one write per page, into bytes
 * that the compute overwrites). Nothing is pre-faulted for the CPU backend,
 * whose threads write the images themselves, nor once the lanes run. */
typedef struct {
    char *lo, *hi;
    pthread_t thread;
    int started;
} prefault_part;

static void *prefault_run(void *arg)
{
    const prefault_part *p = arg;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
#ifdef MADV_POPULATE_WRITE
    uintptr_t a = ((uintptr_t)p->lo + page - 1) & ~(page - 1), e = (uintptr_t)p->hi & ~(page - 1);
    if (e > a && madvise((void *)a, e - a, MADV_POPULATE_WRITE) == 0) return NULL;
#endif
    for (volatile char *c = p->lo; c < p->hi; c += page)
        *c = 0;
    return NULL;
}

/* Start the pre-faulting of buf[0, bytes) on up to n threads into parts
 * when the lanes are about to start a GPU; returns the threads started. */
static int prefault_start(const psfsim_set *s, void *buf, size_t bytes, int n, prefault_part *parts)
{
    if (s->nlanes > 0 || s->e.decision.ops == &psf_backend_cpu || !buf ||
        bytes < PREFAULT_MIN_BYTES)
        return 0;
    char *lo = buf;
    for (int t = 0; t < n; ++t) {
        size_t step = bytes / (size_t)n;
        parts[t].lo = lo + step * (size_t)t;
        parts[t].hi = t == n - 1 ? lo + bytes : lo + step * (size_t)(t + 1);
        parts[t].started = pthread_create(&parts[t].thread, NULL, prefault_run, &parts[t]) == 0;
    }
    return n;
}

static void prefault_join(prefault_part *parts, int n)
{
    for (int t = 0; t < n; ++t)
        if (parts[t].started) pthread_join(parts[t].thread, NULL);
}

static int finishers(void)
{
    long n = psf_cpu_count();
    return n < 1 ? 1 : n > FINISH_MAX_THREADS ? FINISH_MAX_THREADS : (int)n;
}

/* Where a compute call's images go: floats or levels, host memory (mem
 * NULL) or CUDA device dev_id's. */
typedef struct {
    float *images;
    uint16_t *levels;
    const gpu_memory_ops *mem;
    int dev_id;
} compute_out;

/* Whether the GPU's measures of a set's floats are its metrics: images
 * the host neither finishes nor turns (the conditions of the levels
 * kernels, image_set_levels_stretch, and not the "poppy" turn). */
static int gpu_measures(const image_set *set)
{
    psf_levels_out lo;
    return image_set_levels_stretch(set, &lo) && set->cfg->orientation != ORIENT_POPPY;
}

/* Whether host floats at p are pinned (psfsim_device_pointer's kind 2)
 * for a set the GPU computes: its copies can then fill them straight. */
static int host_pinned(const psfsim_set *s, const void *p)
{
    if (s->e.decision.ops == &psf_backend_cpu) return 0;
    const gpu_memory_ops *mem = gpu_module_memory();
    int kind = 0, dev = -1;
    return mem && mem->pointer(p, &kind, &dev, NULL, 0) == 0 && kind == 2;
}

static int compute(psfsim_set *s, long long first, long long count, const compute_out *o,
                   size_t capacity, psfsim_metrics *metrics, char *err, size_t errlen)
{
    float *images = o->images;
    uint16_t *levels = o->levels;
    lib_messages_init();
    if (!s || (count > 0 && !images && !levels))
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set or no buffer given");
    int rc = lib_check_range(s, first, count, err, errlen);
    if (rc != PSFSIM_OK) return rc;
    size_t plane = (size_t)s->e.set.samp.npix * s->e.set.samp.npix;
    if (count > 0 && capacity / plane < (size_t)count)
        return lib_fail(err, errlen, PSFSIM_ERR_BUFFER,
                        "the buffer holds %zu values, fewer than the %lld x %d x %d = %.0f the "
                        "images need",
                        capacity, count, s->e.set.samp.npix, s->e.set.samp.npix,
                        (double)count * (double)plane);
    for (long long i = 0; metrics && i < count; ++i)
        metrics[i] = (psfsim_metrics){NAN, NAN, ""};
    if (count == 0) return PSFSIM_OK;
    char why[LIB_ERRLEN] = "";
    prefault_part parts[FINISH_MAX_THREADS];
    size_t bytes = (size_t)count * plane * (images ? sizeof *images : sizeof *levels);
    int pinned = !o->mem && host_pinned(s, images ? (const void *)images : (const void *)levels);
    int np = o->mem || pinned ? 0
                              : prefault_start(s, images ? (void *)images : (void *)levels, bytes,
                                               finishers(), parts);
    rc = lib_lanes_start(s, why, sizeof why);
    prefault_join(parts, np);
    if (rc != PSFSIM_OK) return lib_fail(err, errlen, rc, "%s", why);
    work w = {.s = s,
              .first = first,
              .count = count,
              .images = images,
              .levels = levels,
              .metrics = metrics,
              .mem = o->mem,
              .dev_id = o->dev_id,
              .gpu_meas = gpu_measures(&s->e.set),
              .pinned = pinned,
              .finishers = finishers()};
    pthread_mutex_init(&w.mu, NULL);
    atomic_init(&w.stop, 0);
    w.queue.mu = &w.mu;
    w.queue.next = first;
    w.queue.end = first + count;
    atomic_init(&w.queue.failed, 0);
    run_lanes(&w);
    pthread_mutex_destroy(&w.mu);
    int cancelled = atomic_exchange(&s->cancel, 0) && w.done < count;
    if (w.rc != PSFSIM_OK) return lib_fail(err, errlen, w.rc, "%s", w.err);
    if (cancelled)
        return lib_fail(err, errlen, PSFSIM_ERR_CANCELLED, "cancelled after %lld of %lld image(s)",
                        w.done, count);
    return PSFSIM_OK;
}

/* compute, with the set taken for the call (lib_enter). */
static int compute_entered(const char *what, psfsim_set *s, long long first, long long count,
                           float *images, uint16_t *levels, size_t capacity,
                           psfsim_metrics *metrics, char *err, size_t errlen)
{
    if (!s) return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set or no buffer given");
    int rc = lib_enter(s, what, err, errlen);
    if (rc != PSFSIM_OK) return rc;
    compute_out o = {images, levels, NULL, -1};
    rc = compute(s, first, count, &o, capacity, metrics, err, errlen);
    lib_leave(s);
    return rc;
}

/* psfsim_compute_device's checks (lib/psfsim.h): the module, dst on a
 * device, the caller's stream waited for. */
static int device_out(int dtype, void *dst, void *stream, compute_out *o, char *err, size_t errlen)
{
    if (dtype != PSFSIM_FLOAT32 && dtype != PSFSIM_UINT16)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                        "dtype %d: PSFSIM_FLOAT32 (0) or PSFSIM_UINT16 (1)", dtype);
    const gpu_memory_ops *mem = gpu_module_memory(); /* loads it once, thread-safe */
    if (!mem)
        return lib_fail(err, errlen, PSFSIM_ERR_BACKEND, "device output needs the GPU module: %s",
                        gpu_module_error());
    int kind = 0, dev = -1;
    char why[LIB_ERRLEN];
    if (mem->pointer(dst, &kind, &dev, why, sizeof why) != 0) /* CUDA is not usable */
        return lib_fail(err, errlen, PSFSIM_ERR_BACKEND, "%s", why);
    if (kind != 1)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT,
                        "the output is not CUDA device memory (psfsim_compute and "
                        "psfsim_compute_u16 write host memory)");
    if (mem->wait_stream(dev, stream, why, sizeof why) != 0)
        return lib_fail(err, errlen, PSFSIM_ERR_COMPUTE, "%s", why);
    *o = (compute_out){dtype == PSFSIM_FLOAT32 ? dst : NULL, dtype == PSFSIM_UINT16 ? dst : NULL,
                       mem, dev};
    return PSFSIM_OK;
}

int psfsim_compute_device(psfsim_set *set, long long first, long long count, int dtype, void *dst,
                          size_t capacity, void *stream, char *err, size_t errlen)
{
    lib_messages_init();
    if (!set || !dst)
        return lib_fail(err, errlen, PSFSIM_ERR_ARGUMENT, "no set or no buffer given");
    int rc = lib_enter(set, "psfsim_compute_device", err, errlen);
    if (rc != PSFSIM_OK) return rc;
    compute_out o;
    rc = lib_check_range(set, first, count, err, errlen);
    if (rc == PSFSIM_OK && count > 0) rc = device_out(dtype, dst, stream, &o, err, errlen);
    if (rc == PSFSIM_OK && count > 0)
        rc = compute(set, first, count, &o, capacity, NULL, err, errlen);
    lib_leave(set);
    return rc;
}

int psfsim_compute(psfsim_set *set, long long first, long long count, float *images,
                   size_t capacity, psfsim_metrics *metrics, char *err, size_t errlen)
{
    return compute_entered("psfsim_compute", set, first, count, images, NULL, capacity, metrics,
                           err, errlen);
}

int psfsim_compute_u16(psfsim_set *set, long long first, long long count, uint16_t *levels,
                       size_t capacity, psfsim_metrics *metrics, char *err, size_t errlen)
{
    return compute_entered("psfsim_compute_u16", set, first, count, NULL, levels, capacity, metrics,
                           err, errlen);
}

void psfsim_set_progress(psfsim_set *set, psfsim_progress_fn fn, void *user)
{
    if (!set) return;
    set->progress = fn;
    set->progress_user = user;
}

void psfsim_cancel(psfsim_set *set)
{
    if (set) atomic_store(&set->cancel, 1);
}
