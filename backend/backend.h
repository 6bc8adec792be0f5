/* SPDX-License-Identifier: BSD-3-Clause */
/* The backend interface: one table of functions that cpu/ and gpu/ each
 * implement (docs/design.md, "Data flow"). A backend is created for one image set,
 * the problem (grid size, aperture, Zernike modes, maps: psf_problem), run
 * as the caller's options say (threads, device, plan effort, cache
 * directory: psf_backend_options); it plans its transforms once there, and
 * then computes batches of images into host memory. How it runs them is its
 * own business: the interface says what is computed, and how much memory
 * that takes (memory_need). No CUDA header is included.
 *
 * Two propagations: the FFT (default; the image grid is the FFT grid, pixel
 * lambda_c/(N dx_c)) and, when psf_problem.mft is set, the matrix Fourier
 * transform (Soummer et al. 2007, Optics Express 15, 15935) from the pupil
 * onto an npix x npix grid of any pixel (psf_component.out_pixel_rad). A
 * backend that does not implement the MFT must refuse an MFT set in create. */
#ifndef PSFSIM_BACKEND_H
#define PSFSIM_BACKEND_H

#include <stddef.h>

#include "optics/aperture.h"
#include "optics/aperture_cache.h"
#include "optics/wavefront.h"

#define PSF_MAX_COMPONENTS 64 /* wavelengths summed into one (broadband) image */
/* Bytes of MFT matrices a backend keeps at most (each backend's own count
 * of them aside, CPU_MFT_TABLES and GPU_MFT_TABLES); past it one is
 * rebuilt when needed again (a sweep of many wavelengths at a fixed um
 * pixel). The backends' memory_need count them up to this plus one. */
#define PSF_MFT_TABLE_BYTES (1ULL << 30)

/* One monochromatic field of an image. */
typedef struct {
    double wavelength_m;
    double dx_m;               /* pupil pitch for this component, metres */
    double scale;              /* the image gets scale * |F{field}|^2 */
    const double *coeff_waves; /* [psf_coeff_count(problem)] Zernike RMS coefficients, waves:
                                  the modes.nterms global terms, then (seg_modes) segment
                                  s's term t at modes.nterms + s seg_modes.nterms + t */
    double opd_to_waves;       /* OPD map value times this = waves; 0 = no OPD */
    double out_pixel_rad;      /* MFT sets only: the image pixel, radians on the sky
                                  (pixel theta_k = (k - npix/2) out_pixel_rad);
                                  ignored by the FFT */
} psf_component;

/* What a backend found of a finished image as it wrote it: the pass over
 * the image that app/set/measure.c would make, taken while the values were
 * in registers. */
typedef struct {
    float peak;   /* the largest pixel, NaNs skipped (-inf when all are NaN) */
    int in_range; /* 1: every pixel is in [0, FLT_MAX] (finite, not negative) */
} psf_image_scan;

/* One image: the weighted sum of its components' intensities. */
typedef struct {
    int ncomp;
    psf_component comp[PSF_MAX_COMPONENTS];
    /* Optional, NULL = none: called as done(done_ctx, image, scan) with the
     * finished npix x npix image on the thread that computed it, right
     * after it (the caller measures it while it is in that thread's
     * cache), and scan its psf_image_scan, or NULL when the backend took
     * none. The CPU backend's FFT path without a detector stage calls it;
     * other paths do not, and the caller does that work afterwards. */
    void (*done)(void *done_ctx, float *image, const psf_image_scan *scan);
    void *done_ctx;
    /* 1: the caller reads the image no more soon after done (the scan
     * serves its measure): a backend calling done with a scan may write
     * the image past the cache (non-temporal stores, which save the read
     * for ownership of each line). 0: written through the cache. */
    int stream;
} psf_job;

/* The detector stage (docs/design.md, "Detector"): the backend computes
 * the image on its grid (npix x npix, pixel p), convolves it with the
 * product of the enabled kernels as one transfer-function multiply (real
 * FFT, multiply, inverse real FFT: a circular convolution over the grid),
 * and then, when sample is set, writes the detector image of M = npix / s
 * pixels: D[i][j] = s^2 G[i s + o][j s + o], G the convolved grid image,
 * o = npix/2 - s (M/2) (0 for even M: backend/detector.h), so that
 * detector pixel (M/2, M/2) is centred on the optical axis; s^2 keeps the
 * flux (blocks: WebbPSF's binning instead, below). The kernels, with u, v the
 * frequencies in cycles per detector pixel (u = k / M for grid frequency
 * index k): the pixel box sinc(u) sinc(v), sinc(x) = sin(pi x)/(pi x)
 * (pixel_response: then D is the exact integral of the grid image's
 * trigonometric interpolant over each detector pixel); Gaussians
 * exp(-2 pi^2 (sx^2 u^2 + sy^2 v^2)) (jitter, charge diffusion); the IPC
 * kernel sum_{a,b} k[a][b] exp(-2 pi i ((b - 1) u + (a - 1) v)). All zero
 * (oversample 0 or 1, nothing enabled, sample 0) is no stage at all. */
typedef struct {
    int oversample;      /* s: the detector pixel is s x s grid pixels; 0 or 1 = the same */
    int sample;          /* 1: run() writes the detector image, M x M (M = npix / s, npix % s == 0);
                            0: the convolved grid image, npix x npix */
    int pixel_response;  /* 1: the detector pixel's box (width one detector pixel) */
    double jitter_px[2]; /* Gaussian jitter sigma, detector pixels, [0] along x (columns),
                            [1] along y (rows); 0 = none */
    double diffusion_px; /* charge diffusion Gaussian sigma, detector pixels; 0 = none */
    int ipc;             /* 1: the inter-pixel capacitance kernel */
    double ipc_kernel[9]; /* row-major 3x3: a unit charge in pixel (i, j) reads k[a][b] in pixel
                             (i + a - 1, j + b - 1) */
    int blocks; /* 1: WebbPSF's detector (output.orientation "poppy", docs/conventions.md):
                   detector pixel (i, j) is the grid's s x s block from (i s, j s), and
                   pixel_response is the block's sum (poppy.utils.rebin_array), not the
                   box's convolution: the grid image (sample 0) has no pixel box, and
                   D[i][j] = sum_{a,b < s} G[i s + a][j s + b]. Without pixel_response
                   D = s^2 G[i s + (s-1)/2][...] (odd s only: an even block's centre is
                   between grid pixels; psf_detector_check). 0: psfsim's, above. */
} psf_detector;

/* What run_levels makes of each image (issue 17): its grey levels, the
 * stretch of app/formats/png_io.h's psf_png_stretch_levels (backend/levels.h
 * states the formula), for sets whose every image output is levels. */
typedef struct {
    int bits;             /* 8 or 16; 0: no levels output (run_levels refuses the set) */
    int stretch;          /* PSF_STRETCH_LINEAR, _LOG, _SQRT (backend/levels.h) */
    double dynamic_range; /* log only: [1/dr, 1] of I / peak onto the levels */
    int rotate_180;       /* 1: levels[n - 1 - i] for pixel i (output.orientation "poppy") */
} psf_levels_out;

/* The problem: what is fixed over a whole image set, whichever backend
 * computes it. Pointers stay valid until destroy. */
typedef struct {
    int npix;       /* the image size the backend writes, npix x npix: the FFT size
                       N, or with mft the MFT's output grid (output.npix) */
    int mft;        /* 0: FFT, the pupil sampled on the npix x npix grid;
                       1: MFT (Soummer et al. 2007), the pupil sampled on the
                       pupil_npix x pupil_npix grid */
    int pupil_npix; /* mft only: G, the pupil grid (axis at sample G/2, as for the
                       FFT), large enough to hold every open sample; 0 otherwise */
    int half_pixel; /* mft only: 1 = the image grid's axis half a pixel before
                       pixel (npix/2, npix/2) along both axes, theta_k =
                       (k - npix/2 + 1/2) out_pixel_rad (POPPY's even-frame centre,
                       (npix - 1)/2, for even npix; output.orientation); 0 = on it */
    psf_aperture aperture;
    psf_modes modes; /* Zernike modes of every job's coeff_waves */
    /* Segmented apertures only: Zernike modes over each segment's
     * circumscribed circle (optics/seg_wavefront.h), every segment's
     * coefficients after the global ones in coeff_waves; nterms 0 = none. */
    psf_modes seg_modes;
    const float *opd_map; /* NULL, or OPD map opd_rows x opd_cols covering D x D */
    int opd_rows, opd_cols;
    /* The OPD map's extent, metres, centred on the axis (optics/map_sample.h,
     * map_bilinear_wh); 0: D (the map stretched over D x D). */
    double opd_width_m, opd_height_m;
    aperture_cache *aperture_grids; /* NULL, or grids of this aperture already filled
                                       (optics/aperture_cache.h): a backend that fills
                                       the aperture on the host takes them from here */
    int max_batch;                  /* most jobs one run() call gets */
    long long nimages;              /* images in the whole set: backends plan harder for big sets */
    /* What the jobs will span, for memory_need alone (create ignores them). */
    int pupil_samples;     /* n: samples across the aperture diameter at the finest pitch,
                              so at most (n + 2)^2 are open; 0 = unknown (the whole grid) */
    int pupil_pitches;     /* distinct psf_component.dx_m over the set (pupils kept); 0 = 1 */
    int mft_matrices;      /* MFT sets: distinct dx out_pixel_rad / wavelength over the set
                              (transform matrices made); 0 = 1 */
    psf_detector detector; /* all zero: none; run()'s images are then npix x npix */
    /* The levels output for run_levels (backend/levels.h): bits 0 = none. */
    psf_levels_out levels;
} psf_problem;

/* Coefficients of each component's coeff_waves for problem p: its global
 * modes, plus seg_modes' for each of the 1 + 3 rings (rings + 1) segments
 * (missing ones included, their values unused) of a segmented aperture. */
static inline int psf_coeff_count(const psf_problem *p)
{
    int r = p->aperture.seg.rings,
        ns = p->aperture.shape == APERTURE_SEGMENTED ? p->seg_modes.nterms : 0;
    return p->modes.nterms + (ns > 0 ? ns * (1 + 3 * r * (r + 1)) : 0);
}

/* How a backend runs a problem: choices of the caller that change no
 * image. All zero is the default. */
typedef struct {
    int threads;           /* CPU threads to use; 0 = choose */
    int device;            /* the CUDA device index, 0 = the first visible
                              (CUDA_VISIBLE_DEVICES); ignored by the CPU */
    int measure_plans;     /* read by no backend: the CPU's plans are estimated, so that
                              an image never depends on timing (cpu/plan_cache.h); kept
                              so that the GPU module's ABI is unchanged */
    const char *cache_dir; /* an existing directory where a backend may keep what it
                              learns about this machine across runs; NULL = none. Read
                              by create only (backend/cache_file.h says how); neither
                              backend keeps anything there now (the CPU kept FFTW
                              wisdom before its plans were estimated) */
    /* Where create says what the user should know that is no error (a
     * cache file it cannot use, named); NULL = unsaid. Called on create's thread. */
    void (*warn)(const char *message);
} psf_backend_options;

/* Memory a backend takes for a problem, bytes (saturating at UINT64_MAX,
 * backend/bytes.h), beside run()'s images (the caller's, alloc_images).
 * Upper bounds, so a set that fits them does not run out later. */
typedef struct {
    unsigned long long transform; /* host: the transform's buffers (FFT in and out, or
                                     the MFT's matrices, pupil box and products) */
    unsigned long long pupils;    /* host: the pupils kept, one per pitch */
    unsigned long long scratch;   /* host: the grids a pupil is built on, while it is */
    unsigned long long host;      /* all host memory: the three above and the rest */
    unsigned long long device;    /* device memory (0 for the CPU) */
} psf_memory_need;

typedef struct psf_backend psf_backend;

typedef struct {
    const char *name; /* "cpu" or "gpu" */
    /* Plan for the problem, run as options say (NULL: the defaults).
     * Returns 0, or -1 with a message in err. */
    int (*create)(const psf_problem *problem, const psf_backend_options *options, psf_backend **out,
                  char *err, size_t errlen);
    /* Compute njobs (<= max_batch) images into images[njobs * N * N]
     * (N = psf_detector_out_npix(problem): npix, or the detector image's M
     * with problem->detector.sample; row-major, image k at k*N*N, optical axis at
     * (N/2, N/2)), each sum_c scale_c |F{A_c exp(+i 2 pi W_c)}|^2 with F the
     * forward DFT, the axis sample at index 0 before and the zero frequency
     * moved to N/2 after (docs/design.md, "Propagation"). With problem->mft, F is
     * the MFT instead: E(theta_r, theta_c) = sum_{i,j} P[i][j]
     * exp(-2 pi i (y_i theta_r + x_j theta_c) / lambda_c), pupil sample
     * (i, j) at y_i = (i - G/2) dx_c, x_j = (j - G/2) dx_c, theta_k =
     * (k - N/2) out_pixel_rad_c; with N dx_c out_pixel_rad_c = lambda_c it
     * is the same DFT; then the detector stage (psf_detector), when the
     * problem has one. Returns 0, or -1 with a message. */
    int (*run)(psf_backend *b, const psf_job *jobs, int njobs, float *images, char *err,
               size_t errlen);
    void (*destroy)(psf_backend *b);
    /* Host memory for run()'s images (nfloats floats), from the backend so
     * that the GPU's is pinned and its copies run at full speed. NULL on
     * failure. Free with free_images before destroy. */
    float *(*alloc_images)(psf_backend *b, size_t nfloats);
    void (*free_images)(psf_backend *b, float *images);
    /* Most images per run() call worth giving this backend (the app's batch). */
    int preferred_batch;
    /* Devices this backend can compute on (psf_backend_options.device 0..n-1):
     * the CUDA devices visible to the process (cudaGetDeviceCount, so
     * CUDA_VISIBLE_DEVICES counts), 1 for the CPU. Returns n >= 1, or -1
     * with err (no driver, no device). */
    int (*device_count)(char *err, size_t errlen);
    /* What create and run would take for problem run as options say
     * (NULL: the defaults), into out; arithmetic only (no allocation, no
     * device call: the GPU's is known without CUDA). Returns 0, or -1
     * with err for a problem create refuses by its sizes alone. */
    int (*memory_need)(const psf_problem *problem, const psf_backend_options *options,
                       psf_memory_need *out, char *err, size_t errlen);
    /* As run, but instead of the floats: each image's grey levels into
     * levels[njobs * N * N] (image k at k N N; N = npix: a problem with a
     * detector stage is refused) as problem->levels says (backend/levels.h:
     * psf_levels_image of the image run would have written, with its
     * PSF_MEASURE_PEAK), and its measures into measures[njobs *
     * PSF_MEASURES] (image k's at k PSF_MEASURES, backend/levels.h). levels
     * may be memory from alloc_images (nfloats >= njobs N N / 2: pinned for
     * the GPU). The CPU computes the floats and measures them in pixel
     * order; the GPU on the device, its total summed in another order (so
     * it may differ from the pixel-order sum in the last bits). Returns 0,
     * or -1 with a message (problem->levels.bits 0, a detector stage, and
     * run's errors). */
    int (*run_levels)(psf_backend *b, const psf_job *jobs, int njobs, unsigned short *levels,
                      double *measures, char *err, size_t errlen);
    /* As run, and each image's measures (backend/levels.h) into
     * measures[njobs * PSF_MEASURES] (image k's at k PSF_MEASURES), made
     * where the images are: the GPU's on the device, so that the caller
     * need not read the images back to measure them (issue 27: a host
     * copy at the link's rate), its total summed in another order than the
     * pixel order (as run_levels'). Problems with a detector stage are
     * refused (-1). NULL: the backend has none (the CPU, whose done hooks
     * measure each image in its cache). */
    int (*run_measured)(psf_backend *b, const psf_job *jobs, int njobs, float *images,
                        double *measures, char *err, size_t errlen);
} psf_backend_ops;

extern const psf_backend_ops psf_backend_cpu;

#endif
