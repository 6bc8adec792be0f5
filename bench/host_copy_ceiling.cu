/* SPDX-License-Identifier: BSD-3-Clause */
/* The host's ceiling for images into pageable memory (issue 27's "into a
 * NumPy array" target): any design that stages through pinned buffers
 * moves each image twice on the host, the GPU's copy into a pinned buffer
 * (DMA) and a CPU copy from there into the caller's pageable array. This
 * measures that pipeline with nothing else: batches of images copied from
 * device memory into two pinned buffers in turn (cudaMemcpyAsync), each
 * batch then copied by T threads into its place in one large pageable
 * destination while the next batch's DMA runs. Rows (CSV):
 *   what,bytes_per_image,threads,images,seconds,images_per_s,gb_per_s
 * what: dma_pinned (the DMA alone), memcpy_written / memcpy_fresh (the
 * CPU copy alone, into memory written before / freshly mapped: page
 * faults; _huge: advised to huge pages), staged_written / staged_fresh
 * (the two overlapped).
 * The other way, the caller's memory registered (page-locked in place,
 * cudaHostRegister) so that the DMA writes it directly: register_written /
 * unregister_written (the whole destination, its slices on T threads at
 * once), dma_registered (the DMA into it), and pipeline_written /
 * pipeline_fresh_huge (batches registered by T threads ahead of the DMA
 * that fills them, then all unregistered on T threads: what a call that
 * pins the caller's array for its own length would take).
 * Usage: psfsim_host_copy_ceiling [IMAGES [BYTES_PER_IMAGE [BATCH [REG]]]]
 * (defaults 10000, 262144 = a 256^2 float32 image, 256; any REG: the
 * registration rows only). */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <cuda_runtime.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

typedef struct {
    char *dst;
    const char *src;
    size_t bytes;
} part;

static void *copy_part(void *arg)
{
    part *p = (part *)arg;
    memcpy(p->dst, p->src, p->bytes);
    return NULL;
}

/* bytes from src to dst on nt threads (this one takes the last part). */
static void copy_threads(char *dst, const char *src, size_t bytes, int nt)
{
    pthread_t th[64];
    part parts[64];
    int started[64] = {0};
    size_t step = (bytes / nt + 4095) & ~(size_t)4095;
    for (int t = 0; t < nt; ++t) {
        size_t a = t * step < bytes ? t * step : bytes, b = a + step < bytes ? a + step : bytes;
        parts[t] = (part){dst + a, src + a, b - a};
        started[t] = t < nt - 1 && pthread_create(&th[t], NULL, copy_part, &parts[t]) == 0;
        if (!started[t]) copy_part(&parts[t]);
    }
    for (int t = 0; t < nt; ++t)
        if (started[t]) pthread_join(th[t], NULL);
}

/* Freshly mapped memory; huge: advised to transparent huge pages, as
 * NumPy's allocator does for arrays of 4 MiB or more (numpy alloc.c), so
 * that a fault maps 2 MiB rather than 4 KiB. */
static char *fresh(size_t bytes, int huge)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
#ifdef MADV_HUGEPAGE
    if (huge) madvise(p, bytes, MADV_HUGEPAGE);
#else
    (void)huge;
#endif
    return (char *)p;
}

static void row(const char *what, size_t per, int nt, long n, double s)
{
    printf("%s,%zu,%d,%ld,%.4f,%.0f,%.2f\n", what, per, nt, n, s, n / s, n * (double)per / s / 1e9);
    fflush(stdout);
}

/* n images in batches: DMA into pinned[b % 2] then (dst non-NULL) the
 * threads' copy into dst while the next batch's DMA runs. */
static double staged(const char *dev, char *pinned[2], char *dst, size_t per, long n, int batch,
                     int nt, cudaStream_t st, cudaEvent_t ev[2])
{
    double t0 = now();
    long nb = (n + batch - 1) / batch;
    for (long b = 0; b <= nb; ++b) {
        if (b < nb) {
            long k = b * batch, c = n - k < batch ? n - k : batch;
            CHECK(cudaMemcpyAsync(pinned[b % 2], dev, c * per, cudaMemcpyDeviceToHost, st));
            CHECK(cudaEventRecord(ev[b % 2], st));
        }
        if (b > 0) { /* the previous batch: wait for its DMA, then copy it out */
            long p = b - 1, k = p * batch, c = n - k < batch ? n - k : batch;
            CHECK(cudaEventSynchronize(ev[p % 2]));
            if (dst) copy_threads(dst + k * per, pinned[p % 2], c * per, nt);
        }
    }
    CHECK(cudaStreamSynchronize(st));
    return now() - t0;
}

typedef struct {
    char *base;
    size_t chunk, total;
    long nchunks;
    long next;  /* the next chunk to take (atomic) */
    int *ready; /* a chunk registered (atomic) */
    int unregister;
} reg_job;

static void *reg_worker(void *arg)
{
    reg_job *j = (reg_job *)arg;
    long k;
    while ((k = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED)) < j->nchunks) {
        size_t a = k * j->chunk, b = a + j->chunk < j->total ? a + j->chunk : j->total;
        if (j->unregister)
            CHECK(cudaHostUnregister(j->base + a));
        else
            CHECK(cudaHostRegister(j->base + a, b - a, cudaHostRegisterDefault));
        if (j->ready) __atomic_store_n(&j->ready[k], 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

/* (Un)register dst's chunks on nt threads (this one among them). */
static void reg_threads(reg_job *j, int nt)
{
    pthread_t th[64];
    int started[64] = {0};
    j->next = 0;
    for (int t = 0; t < nt - 1; ++t)
        started[t] = pthread_create(&th[t], NULL, reg_worker, j) == 0;
    reg_worker(j);
    for (int t = 0; t < nt - 1; ++t)
        if (started[t]) pthread_join(th[t], NULL);
}

/* Batches registered by nt threads ahead of the DMA into them, then all
 * unregistered on nt threads: seconds from the first registration on. */
static double pipeline(const char *dev, char *dst, size_t per, long n, int batch, int nt,
                       cudaStream_t st)
{
    long nb = (n + batch - 1) / batch;
    int *ready = (int *)calloc(nb, sizeof *ready);
    reg_job j = {dst, batch * per, n * per, nb, 0, ready, 0};
    pthread_t th[64];
    int started[64] = {0};
    double t0 = now();
    for (int t = 0; t < nt; ++t)
        started[t] = pthread_create(&th[t], NULL, reg_worker, &j) == 0;
    for (long b = 0; b < nb; ++b) {
        long c = n - b * batch < batch ? n - b * batch : batch;
        while (!__atomic_load_n(&ready[b], __ATOMIC_ACQUIRE))
            sched_yield();
        CHECK(cudaMemcpyAsync(dst + b * batch * per, dev, c * per, cudaMemcpyDeviceToHost, st));
    }
    for (int t = 0; t < nt; ++t)
        if (started[t]) pthread_join(th[t], NULL);
    CHECK(cudaStreamSynchronize(st));
    reg_job u = {dst, batch * per, n * per, nb, 0, NULL, 1};
    reg_threads(&u, nt);
    free(ready);
    return now() - t0;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 10000;
    size_t per = argc > 2 ? (size_t)atol(argv[2]) : 262144;
    int batch = argc > 3 ? atoi(argv[3]) : 256;
    if (n < 1 || per < 1 || batch < 1) return 2;
    char *dev, *pinned[2];
    CHECK(cudaMalloc((void **)&dev, batch * per));
    CHECK(cudaMemset(dev, 1, batch * per));
    for (int i = 0; i < 2; ++i)
        CHECK(cudaHostAlloc((void **)&pinned[i], batch * per, cudaHostAllocDefault));
    cudaStream_t st;
    cudaEvent_t ev[2];
    CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    for (int i = 0; i < 2; ++i)
        CHECK(cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming));
    size_t total = (size_t)n * per;
    char *dst = fresh(total, 0);
    memset(dst, 0, total);
    printf("what,bytes_per_image,threads,images,seconds,images_per_s,gb_per_s\n");
    staged(dev, pinned, NULL, per, n, batch, 1, st, ev); /* warm */
    row("dma_pinned", per, 0, n, staged(dev, pinned, NULL, per, n, batch, 1, st, ev));
    int threads[] = {1, 2, 4, 8, 12, 16};
    for (size_t i = 0; i < sizeof threads / sizeof *threads; ++i) {
        int nt = threads[i];
        long nb = (n + batch - 1) / batch;
        reg_job r = {dst, batch * per, total, nb, 0, NULL, 0};
        double t0 = now();
        reg_threads(&r, nt);
        row("register_written", per, nt, n, now() - t0);
        if (i == 0) {
            t0 = now();
            for (long k = 0; k < n; k += batch)
                CHECK(cudaMemcpyAsync(dst + k * per, dev, (n - k < batch ? n - k : batch) * per,
                                      cudaMemcpyDeviceToHost, st));
            CHECK(cudaStreamSynchronize(st));
            row("dma_registered", per, 0, n, now() - t0);
        }
        r.unregister = 1;
        t0 = now();
        reg_threads(&r, nt);
        row("unregister_written", per, nt, n, now() - t0);
        row("pipeline_written", per, nt, n, pipeline(dev, dst, per, n, batch, nt, st));
        char *f = fresh(total, 1);
        row("pipeline_fresh_huge", per, nt, n, pipeline(dev, f, per, n, batch, nt, st));
        munmap(f, total);
    }
    if (argc > 4) return 0; /* registration only */
    for (size_t i = 0; i < sizeof threads / sizeof *threads; ++i) {
        int nt = threads[i];
        double t0 = now();
        for (long k = 0; k < n; k += batch)
            copy_threads(dst + k * per, pinned[0], (n - k < batch ? n - k : batch) * per, nt);
        row("memcpy_written", per, nt, n, now() - t0);
        row("staged_written", per, nt, n, staged(dev, pinned, dst, per, n, batch, nt, st, ev));
        for (int huge = 0; huge < 2; ++huge) {
            char *f = fresh(total, huge);
            row(huge ? "staged_fresh_huge" : "staged_fresh", per, nt, n,
                staged(dev, pinned, f, per, n, batch, nt, st, ev));
            munmap(f, total);
            f = fresh(total, huge);
            t0 = now();
            for (long k = 0; k < n; k += batch)
                copy_threads(f + k * per, pinned[0], (n - k < batch ? n - k : batch) * per, nt);
            row(huge ? "memcpy_fresh_huge" : "memcpy_fresh", per, nt, n, now() - t0);
            munmap(f, total);
        }
    }
    return 0;
}
