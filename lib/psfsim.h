/* SPDX-License-Identifier: BSD-3-Clause */
/* psfsim.h: the psfsim library, libpsfsim.so.0 (pkg-config psfsim, or
 * find_package(psfsim) and the target psfsim::psfsim).
 *
 * An image set is opened from a config file, or from config text in memory
 * (the same schema as the psfsim command: docs/config.md), queried (image
 * count, image shape, each image's parameters: the manifest's quantities,
 * the backend decision with its predicted times) and computed into buffers
 * the caller owns, any range of images at a time, as float32 intensities
 * or as the PNG's grey levels. The library writes no file of the set and
 * never prints: every error comes back as a psfsim_status code with a
 * one-line message in the caller's err buffer (err may be NULL, errlen 0),
 * config errors as the command says them ("FILE:LINE: key: why"); what
 * the command would log (a GPU failure and the fall-back to the CPU, the
 * latency probe) goes to the handler of psfsim_set_message_handler, or
 * nowhere. It never calls exit() and installs no signal handler.
 *
 * Images: image k of a set of K is M x M float32 (M = psfsim_info.npix),
 * row-major, row 0 first, optical axis at (row M/2, column M/2), 0-based;
 * image k at offset (k - first) * M * M of the buffer. The values are the
 * command's FITS pixels (the normalisation of the config: peak or sum;
 * README, "Conventions"); the grey levels are its PNG's (bits, stretch and
 * dynamic range of output.png).
 *
 * Thread safety: distinct sets may be opened, queried, computed and closed
 * at the same time from different threads (the library serialises what
 * must be: the FFT planner, the GPU module's loading, the latency probe).
 * One set takes one call at a time: psfsim_compute, psfsim_compute_u16,
 * psfsim_params_get, psfsim_zernike, psfsim_segment_zernike,
 * psfsim_fits_header(_image), psfsim_decision_get, psfsim_vjp and
 * psfsim_compute_inputs called while another
 * of them runs on the same set (from another thread, or from the progress
 * callback) return PSFSIM_ERR_BUSY at once, doing nothing (the set's busy
 * flag, atomic: a second call is refused, never queued). To compute in
 * parallel, open one set per thread (each computes with several threads
 * already). psfsim_describe, psfsim_zernike_terms, psfsim_label_terms,
 * psfsim_segment_terms, psfsim_field_positions, psfsim_field_h, psfsim_map_shape and
 * psfsim_segment_modes read only what open
 * fixed and may be called at any time; psfsim_cancel from any thread while
 * the set is open. psfsim_set_progress and psfsim_close must not be called
 * while a call runs on the set. psfsim_set_message_handler is
 * process-wide: set it before opening sets.
 *
 * ABI: the structs are fixed for soname 0 (new quantities come as new
 * functions), except psfsim_options, psfsim_inputs and psfsim_gradients,
 * which carry their size. */
#ifndef PSFSIM_H
#define PSFSIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define PSFSIM_API __attribute__((visibility("default")))
#else
#define PSFSIM_API
#endif

/* Functions of this header: 1 for libpsfsim.so.0's first release; 2 adds
 * psfsim_fits_header_image and PSFSIM_ERR_BUSY; 3 adds psfsim_map and
 * psfsim_options' maps and nmaps (maps given in memory), and the device
 * outputs (psfsim_compute_device, psfsim_device_*); 4 adds the gradients
 * (psfsim_vjp, psfsim_compute_inputs, psfsim_inputs, psfsim_gradients,
 * psfsim_map_shape, psfsim_segment_modes); 5 adds psfsim_vjp_device and
 * PSFSIM_FLOAT64; 6 adds phase retrieval (psfsim_retrieve,
 * psfsim_retrieve_options, psfsim_retrieve_result) and psfsim_field_h; 7
 * adds psfsim_retrieve_options.uncertainties, psfsim_host_alloc and
 * psfsim_host_free. */
#define PSFSIM_API_VERSION 7

/* What every function that can fail returns. */
typedef enum {
    PSFSIM_OK = 0,
    PSFSIM_ERR_ARGUMENT = 1,  /* a NULL set or buffer, a bad option ("backend", "gpus") */
    PSFSIM_ERR_CONFIG = 2,    /* the config: syntax, unknown key, range, map files;
                                 the message is the command's, "FILE:LINE: key: why" */
    PSFSIM_ERR_RANGE = 3,     /* images [first, first + count) not inside [0, K) */
    PSFSIM_ERR_BUFFER = 4,    /* the caller's buffer holds fewer values than needed */
    PSFSIM_ERR_BACKEND = 5,   /* the backend asked for cannot be used ("gpu" without
                                 a usable GPU, a --gpus device that is not there) */
    PSFSIM_ERR_COMPUTE = 6,   /* a run-time failure while computing */
    PSFSIM_ERR_MEMORY = 7,    /* out of memory */
    PSFSIM_ERR_CANCELLED = 8, /* psfsim_cancel (or the progress callback) stopped it */
    PSFSIM_ERR_BUSY = 9,      /* another call is using the set (another thread's, or a
                                 progress callback's own): one call at a time on a set
                                 ("Thread safety" above); nothing was done */
} psfsim_status;

/* "ok", "argument", "config", "range", "buffer", "backend", "compute",
 * "memory", "cancelled", "busy"; "unknown" for any other value. */
PSFSIM_API const char *psfsim_status_name(int status);

/* The library's version, "0.1.0" (the psfsim command's). */
PSFSIM_API const char *psfsim_version(void);

/* A map given in memory instead of a map file (docs/config.md, "Maps"):
 * it stands for the config key key, which the config then leaves out:
 * "optics.aperture.file" (shape = "file": a transmission in [0, 1]) or
 * "aberrations.opd_map.file" (an OPD map; it stands for the group
 * aberrations.opd_map too when the config has none). values: rows x cols
 * float32, row-major, row 0 first, laid out as a FITS map file's image
 * (NAXIS2 = rows, NAXIS1 = cols) is read: row 0 is the file's first
 * stored row (the PNG's top row), at y = -D/2 when stretched. The values
 * are read as a FITS map's float32 pixels (psfsim reads every map as
 * float32), through the same keys (units, scale, pixel_scale_m: an array
 * has no FITS header, so no BUNIT or PUPLSCAL) and the same checks (NaN
 * read as 0, a transmission outside [0, 1], a map that is 0 everywhere,
 * the OPD bound), whose messages name the key and "<array>" where a
 * file's path goes: "NAME: optics.aperture.file: <array>: transmission 1.5
 * at row 3, column 7 is outside [0, 1] ..."; so a set with an array gives
 * the images of the set with the same values in a FITS file, bit for bit.
 * Errors (PSFSIM_ERR_CONFIG, "NAME: KEY: why"): a key that takes no array,
 * a key given twice, values NULL, rows or cols < 1 or more than 2^28
 * pixels, and (with the key's line) a key the config writes too ("given
 * both as a file in the config and as an array"). The library copies the
 * values at open: nothing of the array is used after psfsim_open_*
 * returns. An array counts in the set's fingerprint (FITS CFGHASH) by its
 * shape and values, as a map file counts by its bytes. */
typedef struct {
    const char *key;     /* "optics.aperture.file" or "aberrations.opd_map.file" */
    const float *values; /* rows * cols values, row-major, row 0 first */
    int rows;            /* NAXIS2 of the same map as a FITS file */
    int cols;            /* NAXIS1 */
} psfsim_map;

/* How a set is opened. Call psfsim_options_init first, then set fields.
 * A caller built against an older header passes a smaller size: the
 * fields after it are taken as their defaults (API version 2's options
 * end at base_dir). */
typedef struct {
    size_t size;            /* sizeof(psfsim_options), set by psfsim_options_init */
    const char *backend;    /* NULL: the config's `backend` key; else "auto", "cpu" or
                               "gpu", as the command's --backend */
    const char *gpus;       /* NULL or "all": every visible GPU; else CUDA device indices,
                               "0,2", as --gpus (used when the GPU computes) */
    int threads;            /* CPU threads of the CPU backend: 1 .. 1024, or 0 = one per
                               CPU (the default); else PSFSIM_ERR_ARGUMENT at open.
                               Started at the first compute, kept until psfsim_close */
    const char *name;       /* config text only: how messages name it; NULL = "<config>" */
    const char *base_dir;   /* config text only: the directory @include and relative map
                               files are resolved against; NULL = the current one */
    const psfsim_map *maps; /* API version 3: maps given in memory (psfsim_map), nmaps of
                               them; NULL = none */
    int nmaps;              /* 0 .. 16; else (or maps NULL with nmaps > 0)
                               PSFSIM_ERR_ARGUMENT at open */
} psfsim_options;

/* Defaults: the config's backend, every GPU, threads chosen, "<config>",
 * no maps in memory. */
PSFSIM_API void psfsim_options_init(psfsim_options *options);
/* The same for a struct of size bytes (sizeof, from the header the caller
 * was built with): what psfsim_options_init is, as a macro, since API
 * version 3. The symbol psfsim_options_init itself fills version 2's
 * fields only, so that a program built against version 2, whose struct
 * ends at base_dir, keeps its memory. */
PSFSIM_API void psfsim_options_init_size(psfsim_options *options, size_t size);
#define psfsim_options_init(options) psfsim_options_init_size((options), sizeof *(options))

typedef struct psfsim_set psfsim_set;

/* Open the set of the config file path (its maps resolved against its
 * directory), or of config text (NUL-terminated), with options (NULL: the
 * defaults): the config is loaded and checked, the maps read, each image's
 * job laid out and the backend chosen (with "auto" on a machine with an
 * NVIDIA GPU: the latency probe's figures, cached per machine, measured
 * once otherwise). The backend itself starts at the first compute.
 * Returns PSFSIM_OK with *set (close it with psfsim_close), or
 * PSFSIM_ERR_CONFIG (the config, its maps), PSFSIM_ERR_ARGUMENT (NULL
 * path/text/set, bad backend, gpus or threads option), PSFSIM_ERR_BACKEND ("gpu"
 * without a GPU backend, a GPU asked for that is not there, or none that
 * CUDA sees: "backend gpu: no NVIDIA GPU on this machine (...)"; a GPU that
 * is there but cannot start fails at the first compute) or
 * PSFSIM_ERR_MEMORY, with *set NULL and the message in err. */
PSFSIM_API int psfsim_open_file(const char *path, const psfsim_options *options, psfsim_set **set,
                                char *err, size_t errlen);
PSFSIM_API int psfsim_open_text(const char *text, const psfsim_options *options, psfsim_set **set,
                                char *err, size_t errlen);

/* Stop the backend and free everything; NULL is harmless. */
PSFSIM_API void psfsim_close(psfsim_set *set);

/* What the whole set shares. */
typedef struct {
    long long count;           /* K: images in the set (the sweep's product) */
    int npix;                  /* M: every image is M x M */
    int pupil_samples;         /* n: samples across the aperture diameter */
    int fft_npix;              /* N = floor(padding n + 0.5): the FFT size */
    int mft;                   /* 1: the images are matrix Fourier transforms onto the
                                  output grid (README, "Output grid (MFT)") */
    double padding;            /* sampling.padding Q */
    double diameter_m;         /* D */
    double f_number;           /* 0 when the config gives none */
    int nwavelengths;          /* wavelengths summed into each image (broadband); 1 when
                                  each takes its own (a sweep, a draw, a table's column) */
    int nterms;                /* Zernike modes of psfsim_zernike's totals */
    int nswept;                /* swept Zernike terms (sweep.zernike entries) */
    int png_bits;              /* psfsim_compute_u16's levels are 0 .. 2^png_bits - 1 */
    const char *name;          /* the config's name; valid until psfsim_close */
    const char *normalization; /* "peak" or "sum" */
    long long random_count;    /* sweep.random.count; 0 when the set is not a random set */
    unsigned long long seed;   /* sweep.random.seed (the manifest's seed); 0 without */
} psfsim_info;

PSFSIM_API int psfsim_describe(const psfsim_set *set, psfsim_info *info, char *err, size_t errlen);

/* One image's parameters: the manifest's columns known before computing. */
typedef struct {
    long long index;             /* k */
    double wavelength_nm;        /* the image's wavelength; broadband: the weighted mean
                                    sum w_c lambda_c (FITS WAVELEN, the manifest's) */
    double defocus;              /* sweep.defocus value (aberrations.units RMS); NaN when
                                    not swept */
    double focus_shift_um;       /* sweep.focus_shift_um value; NaN when not swept */
    double pixel_scale_lambda_d; /* the image's pixel, lambda/D at the reference
                                    wavelength: wavelength_nm, broadband the shortest
                                    (FITS REFWAVE) */
    double pixel_scale_arcsec;   /* arcseconds on the sky */
    double pixel_scale_um;       /* focal-plane micrometres; NaN without f_number */
    double sampling_q;           /* Q = (lambda/D) / pixel (FITS PADDING) */
    long long table_row;         /* the sweep.table data row (0-based); -1 without a table */
    long long draw;              /* the sweep.random draw index d (the manifest's draw);
                                    -1 when the set is not a random set */
} psfsim_params;

/* Parameters of images [first, first + count) into params[count].
 * PSFSIM_ERR_RANGE, PSFSIM_ERR_ARGUMENT (NULL), PSFSIM_ERR_CONFIG (a map
 * grid that cannot be built), PSFSIM_ERR_BUSY (another call on the set). */
PSFSIM_API int psfsim_params_get(psfsim_set *set, long long first, long long count,
                                 psfsim_params *params, char *err, size_t errlen);

/* The Zernike indices, in the config's convention (aberrations.convention):
 * the swept terms' j (the manifest's zernike_j, nswept of them) into
 * swept_j, and every mode's j (the FITS header's Z<j>, nterms) into
 * term_j; either may be NULL, else it must hold psfsim_info's count. */
PSFSIM_API int psfsim_zernike_terms(const psfsim_set *set, int *swept_j, int *term_j, char *err,
                                    size_t errlen);

/* For images [first, first + count): the swept Zernike values (the
 * manifest's zernike_coeff) into swept[count * nswept] and each mode's
 * total coefficient in the config's units (FITS Z<j>, the focus shift
 * included in Z4) into total[count * nterms], image-major; either may be
 * NULL. Errors as psfsim_params_get. */
PSFSIM_API int psfsim_zernike(psfsim_set *set, long long first, long long count, double *swept,
                              double *total, char *err, size_t errlen);

/* The Zernike label terms (the manifest's z<j> columns and NAME.h5's
 * labels/zernike, docs/config.md "Labels"): the terms non-zero anywhere in
 * the set, j ascending in the config's convention, each with mode, its
 * column in psfsim_zernike's total (whose cell is the label's value:
 * fixed, swept, table and drawn parts summed, the focus shift in Z4).
 * *count (required) gets their number; j and mode may be NULL, else each
 * must hold *count entries (at most psfsim_info's nterms).
 * PSFSIM_ERR_ARGUMENT (NULL set or count). */
PSFSIM_API int psfsim_label_terms(const psfsim_set *set, int *count, int *j, int *mode, char *err,
                                  size_t errlen);

/* The per-segment Zernike label terms of a segmented aperture's set (the
 * manifest's s<segment>_z<j> columns, docs/config.md, "Segmented
 * apertures"): every (segment, j) non-zero somewhere in the set, by
 * segment then j, j in the config's convention. *count (required) gets
 * their number (0: none, any set without segment terms); segment and j
 * may be NULL, else each must hold *count entries (ask with NULL first).
 * PSFSIM_ERR_ARGUMENT (NULL set or count). */
PSFSIM_API int psfsim_segment_terms(const psfsim_set *set, int *count, int *segment, int *j,
                                    char *err, size_t errlen);

/* For images [first, first + count): each label term's total coefficient
 * (the manifest's s<segment>_z<j> cells: the fixed, swept, table and drawn
 * values summed, in aberrations.units) into total[count * nterms],
 * image-major, in psfsim_segment_terms' order (nterms its *count).
 * total may be NULL only when nterms or count is 0. Errors as
 * psfsim_params_get. */
PSFSIM_API int psfsim_segment_zernike(psfsim_set *set, long long first, long long count,
                                      double *total, char *err, size_t errlen);

/* The detector positions of images [first, first + count) (the manifest's
 * field_x_px, field_y_px: the field group's positions, docs/config.md
 * "field", or a sweep.table's label columns, pixels) into xy[2 * count],
 * x then y per image; NaN when the set has neither. *present (may be NULL)
 * gets 1 when it has them, else 0; xy may be NULL only when count is 0.
 * PSFSIM_ERR_RANGE, PSFSIM_ERR_ARGUMENT (NULL set or xy). */
PSFSIM_API int psfsim_field_positions(const psfsim_set *set, long long first, long long count,
                                      int *present, double *xy, char *err, size_t errlen);

/* The normalised field coordinates of images [first, first + count) (the
 * manifest's field_hx, field_hy, docs/config.md "field": hx = (x -
 * field.centre_px[0]) / field.radius_px, hy = (y - field.centre_px[1]) /
 * field.radius_px, binary64, x, y the image's position) into hxhy[2 *
 * count], hx then hy per image; NaN when the set has no field group (a
 * sweep.table's field_x_px, field_y_px columns have no centre nor radius,
 * so no field_hx, field_hy). *present (may be NULL) gets 1 when it has
 * them, else 0; hxhy may be NULL only when count is 0.
 * PSFSIM_ERR_RANGE, PSFSIM_ERR_ARGUMENT (NULL set or hxhy). */
PSFSIM_API int psfsim_field_h(const psfsim_set *set, long long first, long long count, int *present,
                              double *hxhy, char *err, size_t errlen);

/* The backend decision. */
typedef struct {
    char backend[8];         /* "cpu" or "gpu" */
    char reason[256];        /* as -v and the timing log say it: "backend cpu: predicted
                                0.41 ms vs gpu 212 ms incl. start"; after a GPU failure
                                "backend cpu: fallback after: ..." */
    double predicted_cpu_us; /* auto: predicted wall time of the whole set computed into
                                memory (no files), microseconds; NaN otherwise */
    double predicted_gpu_us; /* the same on the GPU(s), start-up included when CUDA is
                                not running yet; NaN otherwise */
    char probe[256];         /* auto: where the probe's figures came from; "" otherwise */
    int ndevices;            /* GPU: the CUDA devices that share the set */
    int devices[16];
} psfsim_decision;

PSFSIM_API int psfsim_decision_get(const psfsim_set *set, psfsim_decision *decision, char *err,
                                   size_t errlen);

/* What computing an image measured: the manifest's strehl, axial_intensity
 * and backend. */
typedef struct {
    double strehl;          /* image peak / unaberrated peak */
    double axial_intensity; /* axis pixel / unaberrated peak */
    const char *backend;    /* "cpu" or "gpu" (static) */
} psfsim_metrics;

/* Progress: called after each half of a batch (the CPU's: 32 images, or 16
 * a thread with more than 2 threads) with the images of this compute call
 * done so far and its count, from the thread that computed the batch
 * (with several GPUs their threads, one call at a time). A non-zero return
 * cancels, as psfsim_cancel. NULL removes it. */
typedef int (*psfsim_progress_fn)(long long done, long long total, void *user);
PSFSIM_API void psfsim_set_progress(psfsim_set *set, psfsim_progress_fn fn, void *user);

/* Ask the compute call in progress on set (or, if none, the next one) to
 * stop after the half batch in flight: it returns PSFSIM_ERR_CANCELLED, the
 * images done before it are valid (the progress callback counted them).
 * Any thread, any time while the set is open. */
PSFSIM_API void psfsim_cancel(psfsim_set *set);

/* Compute images [first, first + count) into images (capacity floats, at
 * least count * M * M), in batches of the backend's size (the CPU's 64 or
 * 32 a thread, the GPU's up to 1024 images), the backend writing straight into the
 * buffer. metrics (NULL, or count entries) gets each image's metrics.
 * While a GPU starts (the set's first compute), a buffer of 64 MiB or more
 * is pre-faulted by several threads, so that the copies into a fresh one
 * (np.empty, malloc) do not take its page faults; only the bytes of its
 * count images are written.
 * A GPU that fails is said once (message handler) and the CPU computes the
 * rest, as the command does. Returns PSFSIM_OK, PSFSIM_ERR_RANGE,
 * PSFSIM_ERR_BUFFER, PSFSIM_ERR_ARGUMENT, PSFSIM_ERR_BACKEND (a GPU asked
 * for with "gpu" cannot start), PSFSIM_ERR_COMPUTE, PSFSIM_ERR_MEMORY,
 * PSFSIM_ERR_CANCELLED or PSFSIM_ERR_BUSY (another call on the set: the
 * progress callback may not compute on its own set). count 0 does
 * nothing. */
PSFSIM_API int psfsim_compute(psfsim_set *set, long long first, long long count, float *images,
                              size_t capacity, psfsim_metrics *metrics, char *err, size_t errlen);

/* The same, as the grey levels the command writes to its PNG files
 * (output.png: bits, stretch, dynamic_range; 8-bit levels are 0..255),
 * count * M * M values. The float images are made in the library's own
 * batch buffer. */
PSFSIM_API int psfsim_compute_u16(psfsim_set *set, long long first, long long count,
                                  uint16_t *levels, size_t capacity, psfsim_metrics *metrics,
                                  char *err, size_t errlen);

/* Device outputs (API version 3): images computed into CUDA device memory,
 * for GPU programs (PyTorch, CuPy, JAX through DLPack or the CUDA array
 * interface) that would otherwise copy them back from the host. The
 * library itself never links the CUDA runtime: these load the GPU module
 * (libpsfsim-gpu.so), and return PSFSIM_ERR_BACKEND when it cannot be
 * used (a build without CUDA, no driver). */
typedef enum {
    PSFSIM_FLOAT32 = 0, /* psfsim_compute's intensities */
    PSFSIM_UINT16 = 1,  /* psfsim_compute_u16's grey levels */
    PSFSIM_FLOAT64 = 2  /* double: psfsim_vjp_device's cotangents and images only */
} psfsim_dtype;

/* Images [first, first + count) into dst, device memory of a CUDA device
 * (cudaMalloc'd, a torch.cuda tensor's, a CuPy array's; managed memory
 * too), count * M * M values of dtype at capacity values at least, the
 * layout of psfsim_compute (image k at (k - first) M M, row-major): the
 * same bits psfsim_compute or psfsim_compute_u16 give on the same backend.
 * A GPU lane's copies write dst straight from its device buffers (peer
 * copies when dst is on another of the set's GPUs); images the CPU
 * computes (a CPU set, a fall-back) are uploaded batch by batch.
 * Synchronisation: the call first waits for the work queued on stream
 * (the caller's cudaStream_t on dst's device, NULL = the legacy default
 * stream: cudaStreamSynchronize), so that what the caller did with dst
 * before is done; it returns once every image is in dst, so any stream
 * may read them then. The library computes on streams of its own, none
 * of them the legacy default stream. No metrics: they need the images on
 * the host (psfsim_compute gives them). Errors as psfsim_compute, and
 * PSFSIM_ERR_ARGUMENT (dst not device memory, a dtype other than
 * PSFSIM_FLOAT32 and PSFSIM_UINT16), PSFSIM_ERR_BACKEND (no GPU module), PSFSIM_ERR_COMPUTE
 * (a CUDA call failed, named in err). count 0 does nothing. */
PSFSIM_API int psfsim_compute_device(psfsim_set *set, long long first, long long count, int dtype,
                                     void *dst, size_t capacity, void *stream, char *err,
                                     size_t errlen);

/* Whether p is CUDA device memory (cudaPointerGetAttributes): *kind 1
 * (device or managed memory) with its device in *device (may be NULL),
 * 2 pinned host memory (cudaHostAlloc'd or registered: psfsim_compute's
 * GPU copies land there straight), 0 other host memory (*device -1). PSFSIM_OK,
 * PSFSIM_ERR_ARGUMENT (kind NULL), PSFSIM_ERR_BACKEND (no GPU module, or
 * CUDA not usable: "no CUDA device: no NVIDIA driver ...") with err. */
PSFSIM_API int psfsim_device_pointer(const void *p, int *kind, int *device, char *err,
                                     size_t errlen);

/* bytes of device memory on CUDA device `device`, ready for any stream
 * (stream-ordered cudaMallocAsync, waited for); free it with
 * psfsim_device_free. NULL with err (PSFSIM_ERR_BACKEND's or CUDA's
 * message). */
PSFSIM_API void *psfsim_device_alloc(int device, size_t bytes, char *err, size_t errlen);

/* Free what psfsim_device_alloc gave, after all work queued on the legacy
 * default stream (cudaFreeAsync there). NULL is harmless. */
PSFSIM_API void psfsim_device_free(int device, void *p);

/* bytes of pinned (page-locked) host memory (cudaHostAlloc, portable to
 * every device; API 7): psfsim_compute's GPU copies land in it straight
 * at the host link's rate (floats and psfsim_compute_u16's levels), where
 * pageable memory takes a second copy on the host (README, "Host
 * copies"). Free it with psfsim_host_free. NULL with err
 * (PSFSIM_ERR_BACKEND's message: no GPU module; or CUDA's). Pinned memory
 * is taken from the system's RAM for good until freed: allocate what a
 * program keeps reusing, not per call. */
PSFSIM_API void *psfsim_host_alloc(size_t bytes, char *err, size_t errlen);

/* Free what psfsim_host_alloc gave (after the device's work: cudaFreeHost
 * synchronises). NULL is harmless. */
PSFSIM_API void psfsim_host_free(void *p);

/* bytes from src to dst, each host or device memory (cudaMemcpyDefault),
 * complete on return, on device's stream of the module's. PSFSIM_OK,
 * PSFSIM_ERR_ARGUMENT (NULL), PSFSIM_ERR_BACKEND, PSFSIM_ERR_COMPUTE. */
PSFSIM_API int psfsim_device_copy(int device, void *dst, const void *src, size_t bytes, char *err,
                                  size_t errlen);

/* Gradients (API version 4; psfsim_vjp_device, with the cotangent in
 * device memory, 5; docs/design.md, "Gradients (vector-Jacobian
 * products)"). Where they run: a set whose backend is the GPU computes
 * them on its (first) GPU, in double (cuFFT Z2Z, cuBLAS DGEMM; equal to
 * the CPU's to rounding, the tests 1e-10 of the largest value), batched,
 * when the set is an FFT set (not the MFT; with or without the detector
 * stage) and the call has no segment inputs or gradients and no
 * transmission gradient ("zernike" and "opd_map" inputs and gradients,
 * any wavelengths, every normalisation); the GPU's pupils, plans and
 * buffers are kept on the set between calls with the same input terms
 * (psfsim_close frees them). Everything else, and a GPU that fails, runs
 * on the CPU as below; the environment's PSFSIM_VJP_BACKEND=cpu forces the
 * CPU, =gpu the GPU (out of scope: PSFSIM_ERR_BACKEND; the GPU's failure:
 * PSFSIM_ERR_COMPUTE naming the CUDA call) (docs/config.md). On the CPU:
 * in double precision (FFTW's double plans), the images spread over the
 * set's CPU threads (psfsim_options.threads; 0: one per CPU), one image
 * per thread at a time: the set's own model (its jobs: components, pupil
 * samples, Zernike basis, OPD map, normalisation, detector stage,
 * orientation) recomputed in double, whose images equal psfsim_compute's
 * to float rounding (the tests: within 1e-5 of the peak). Not covered:
 * detector.noise (random, and never in the library's images: the
 * gradient is the noiseless image's, psfsim_compute's, the mean of the
 * command's noisy exposures), the detector stage's clamp at 0
 * (the double model has no rounding negatives to clamp), and the
 * transmission gradient at samples where the aperture is 0 (not in the
 * pupil: raising the map there is not seen). Each thread's pupils, plans
 * (FFTW_ESTIMATE) and buffers are kept on the set for the next call with
 * the same terms (a call with other terms makes new ones) until
 * psfsim_close. Each image's values and gradients are the same bits
 * whatever the thread count, but for the maps' (OPD, transmission):
 * each thread sums a fixed block of the images, then the threads' sums
 * are added in order (the same bits for the same thread count, the last
 * bits another for another). */

/* What a call adds to each image's own aberrations (its totals, as
 * psfsim_zernike gives them). Call psfsim_inputs_init first (all NULL /
 * 0: nothing added). */
typedef struct {
    size_t size;               /* sizeof(psfsim_inputs), set by psfsim_inputs_init */
    int nterms;                /* global Zernike terms given: 0 .. 1024 */
    const int *j;              /* [nterms] their j, the config's convention
                                  (aberrations.convention), each valid and listed once */
    const double *zernike;     /* [count][nterms] RMS coefficients, aberrations.units (nm or
                                  waves), added to image k's (row k - first); NULL = none */
    int seg_nterms;            /* segmented apertures: per-segment terms given, 0 .. 15 */
    const int *seg_j;          /* [seg_nterms] their j (radial order <= 4), listed once */
    const double *seg_zernike; /* [count][S][seg_nterms] (S: psfsim_segment_modes), added
                                  to every segment's own (missing segments' unused); NULL */
    const double *opd_map;     /* [rows][cols] (psfsim_map_shape of "aberrations.opd_map.file")
                                  added to the set's OPD map, in its values' unit (nm or waves
                                  as the set holds it: after aberrations.opd_map.scale and the
                                  file's BUNIT); the same for every image; NULL = none */
} psfsim_inputs;

/* Where the gradients go (dL/dx of L = sum cotangent * image): NULL
 * fields are not computed. Call psfsim_gradients_init first. */
typedef struct {
    size_t size;          /* sizeof(psfsim_gradients), set by psfsim_gradients_init */
    double *zernike;      /* [count][nterms]: dL/dc per aberrations.units, for the inputs'
                             terms; with inputs nterms 0 (or no inputs) for the set's label
                             terms (psfsim_label_terms' count and order) */
    double *seg_zernike;  /* [count][S][seg_nterms]: per segment, for the inputs' seg_j; with
                             seg_nterms 0 for the set's own segment modes
                             (psfsim_segment_modes' nterms and j) */
    double *opd_map;      /* [rows][cols] of the set's OPD map (psfsim_map_shape), per map
                             unit, summed over the count images (the map is shared) */
    double *transmission; /* [rows][cols] of optics.aperture.file (shape "file";
                             psfsim_map_shape), per unit of transmission, summed over
                             the images: through the field A exp(i 2 pi W) and the
                             normalisation's sums of A (docs/design.md) */
} psfsim_gradients;

/* Defaults (all NULL / 0) for a struct of size bytes (sizeof, from the
 * header the caller was built with). */
PSFSIM_API void psfsim_inputs_init_size(psfsim_inputs *inputs, size_t size);
PSFSIM_API void psfsim_gradients_init_size(psfsim_gradients *grads, size_t size);
#define psfsim_inputs_init(inputs) psfsim_inputs_init_size((inputs), sizeof *(inputs))
#define psfsim_gradients_init(grads) psfsim_gradients_init_size((grads), sizeof *(grads))

/* The shape of the set's map given as key ("aberrations.opd_map.file" or
 * "optics.aperture.file", psfsim_map's keys): *rows, *cols (NAXIS2,
 * NAXIS1: psfsim_map's layout), 0 and 0 when the set has none.
 * PSFSIM_ERR_ARGUMENT (NULL, another key). Any time, as psfsim_describe. */
PSFSIM_API int psfsim_map_shape(const psfsim_set *set, const char *key, int *rows, int *cols,
                                char *err, size_t errlen);

/* A segmented aperture's segments and per-segment modes: *segments S (1 +
 * 3 r (r + 1) for r rings, missing segments counted; 0 when the aperture
 * is not segmented), *nterms the set's own segment modes (0 without) and
 * their j (the config's convention, in the order of the set's
 * coefficients) into j (NULL, or *nterms entries; at most 15).
 * Segment s is the manifest's s<s>. PSFSIM_ERR_ARGUMENT (NULL set,
 * segments or nterms). Any time. */
PSFSIM_API int psfsim_segment_modes(const psfsim_set *set, int *segments, int *nterms, int *j,
                                    char *err, size_t errlen);

/* The images [first, first + count) of the set with inputs added (NULL:
 * none), in double, into images[count][M][M] (psfsim_compute's layout,
 * values and normalisation; see "Gradients" above): the forward of
 * psfsim_vjp. Errors: PSFSIM_ERR_ARGUMENT (NULL set or images, inputs of
 * an unknown size, a term j that is not valid in the convention or given
 * twice, nterms out of range, NULL j with nterms > 0, segment inputs for
 * a set without segments, an OPD map input for a set without one),
 * PSFSIM_ERR_RANGE, PSFSIM_ERR_MEMORY,
 * PSFSIM_ERR_COMPUTE (FFTW could not plan, the aperture grid), and
 * PSFSIM_ERR_BUSY (another call on the set). count 0 does nothing. */
PSFSIM_API int psfsim_compute_inputs(psfsim_set *set, long long first, long long count,
                                     const psfsim_inputs *inputs, double *images, char *err,
                                     size_t errlen);

/* The vector-Jacobian product: for L = sum_{k,p} cotangent[k][p] I_k[p]
 * (cotangent [count][M][M], dL/dI of the images psfsim_compute_inputs
 * gives), grads' fields (those not NULL) get dL/d(inputs' values) at the
 * given inputs (NULL: at the set's own aberrations, the gradient then
 * with respect to the label terms), the layouts of psfsim_gradients;
 * images (NULL or [count][M][M]) gets the forward images on the way.
 * The adjoint, step by step backwards (docs/design.md, "Gradients"): the
 * orientation's turn, the MFT "sum" normalisation g' = (g - <g, I_n>)/S,
 * the detector stage (the sampling's scatter, the convolution by the
 * transfer function's conjugate), per wavelength component c the
 * intensity's B = F^H (scale_c g .* E) (F the FFT or the MFT, F^H its
 * adjoint) and dL/dW_n = 4 pi Im(B_n conj(U_n)) for the pupil field U =
 * A exp(i 2 pi W) (W waves), then the chain to the coefficients (the
 * basis, 1/lambda_nm for nm units), to the OPD map (the bilinear
 * sampling's scatter) and to the transmission map (dL/dA_n = 2 Re(conj(B_n)
 * U_n) / A_n plus the scales' dependence on sum A and sum A^2, then the
 * map's bilinear sampling's scatter); Fienup 1982, Appl. Opt. 21, 2758;
 * Jurling and Fienup 2014, JOSA A 31, 1348. Errors as
 * psfsim_compute_inputs, and PSFSIM_ERR_ARGUMENT for a NULL cotangent or
 * grads, a gradient the set lacks (seg_zernike: not segmented; opd_map: no
 * OPD map; transmission: no optics.aperture.file). count 0 does
 * nothing. */
PSFSIM_API int psfsim_vjp(psfsim_set *set, long long first, long long count,
                          const psfsim_inputs *inputs, const double *cotangent, double *images,
                          psfsim_gradients *grads, char *err, size_t errlen);

/* psfsim_vjp with the cotangent, and the images when wanted, in CUDA
 * device memory (API version 5): for GPU programs (PyTorch, CuPy) whose
 * dL/dI is on the device, so that neither crosses to the host.
 * cotangent: [count][M][M] values of cot_dtype (PSFSIM_FLOAT32 or
 * PSFSIM_FLOAT64), psfsim_vjp's layout, in device (or managed) memory;
 * images: NULL or [count][M][M] of the same dtype on the same device,
 * the forward images (psfsim_compute_inputs' values; float: rounded once
 * from the double). grads: host memory, double, as psfsim_vjp's: the
 * gradients are computed in double whatever cot_dtype (a float
 * cotangent is widened exactly; its gradients equal psfsim_vjp's with
 * that float cotangent given as double, to the double rounding).
 * Where it runs: in the GPU's scope (psfsim_vjp's "Gradients" above: a
 * GPU set, FFT, no segment inputs or gradients, no transmission
 * gradient, and the arrays on the set's first GPU) the module reads the
 * cotangent and writes the images on the device (float widened and the
 * "poppy" turn there); only the rows' coefficients and gradients cross
 * the bus. Any other call (a CPU set, an MFT set, segment or
 * transmission gradients, the arrays on another device,
 * PSFSIM_VJP_BACKEND=cpu, or the GPU failing under "auto") goes through
 * the host: the cotangent copied down (widened to double), psfsim_vjp's
 * CPU path, the images narrowed to cot_dtype and copied up; the same
 * values, at the bus's cost. Synchronisation as psfsim_compute_device:
 * the call first waits for the work queued on stream (the caller's
 * cudaStream_t on the cotangent's device, NULL = the legacy default
 * stream), and returns once the gradients and images are complete.
 * Errors as psfsim_vjp, and PSFSIM_ERR_ARGUMENT (cot_dtype not
 * PSFSIM_FLOAT32 or PSFSIM_FLOAT64; the cotangent or the images in host
 * memory, pageable or pinned: psfsim_vjp takes those; the two on
 * different devices), nothing written then; PSFSIM_ERR_BACKEND (no GPU
 * module or CUDA not usable), PSFSIM_ERR_COMPUTE (a CUDA call failed,
 * named in err). count 0 does nothing (and checks no pointer). */
PSFSIM_API int psfsim_vjp_device(psfsim_set *set, long long first, long long count,
                                 const psfsim_inputs *inputs, const void *cotangent, int cot_dtype,
                                 void *images, psfsim_gradients *grads, void *stream, char *err,
                                 size_t errlen);

/* Phase retrieval (issue 28; docs/design.md, "Phase retrieval"): the
 * Zernike coefficients that, added to every image's own aberrations (as
 * psfsim_inputs' zernike), make the set's K images fit measured ones best,
 * the diversity between the images being the set's own (a through-focus
 * sweep: sweep.defocus, sweep.focus_shift_um). The fitted image k is
 * f_k I_k(c) + b_k, I_k psfsim_compute_inputs' image, with a flux f_k and a
 * background b_k per image, each fitted or fixed; the fit minimises the
 * weighted least squares chi2 = sum_k sum_i w_ki (d_ki - f_k I_ki - b_ki)^2
 * by L-BFGS (liblbfgs; the gradient from psfsim_vjp, flux and background
 * solved for exactly at each step), and reports each coefficient's 1-sigma
 * uncertainty sqrt(diag(F^-1)), F = J^T W J the Fisher information of all
 * fitted parameters (the Cramer-Rao bound for Gaussian noise of the
 * weights' variances, and for photon noise with its weights), J by
 * forward differences of psfsim_compute_inputs. Each function evaluation
 * computes the K images and one vector-Jacobian product on the CPU, in
 * double (see "Gradients" above). */
typedef enum {
    PSFSIM_NOISE_UNIFORM = 0, /* variance sigma^2 at every pixel */
    PSFSIM_NOISE_PHOTON = 1   /* variance max(m, 0) / gain + sigma^2 (m the fitted image:
                                 the data for the first pass, the previous fit's after) */
} psfsim_noise;

typedef struct {
    size_t size;               /* sizeof, set by psfsim_retrieve_options_init */
    int nterms;                /* Zernike terms fitted, 1 .. 1024 */
    const int *j;              /* [nterms] their j, the config's convention, each once; not
                                  piston (Noll, Fringe 1; ANSI 0), which changes no image */
    const double *initial;     /* [nterms] the start (aberrations.units RMS); NULL = 0 */
    int noise;                 /* psfsim_noise; default PSFSIM_NOISE_UNIFORM */
    double sigma;              /* uniform: every pixel's noise sigma (0 = 1); photon: the read
                                  noise sigma; data units */
    double gain;               /* photon: photons (electrons) per data unit; 0 = 1 */
    int passes;                /* photon: fits, each weighted by the previous one's model;
                                  0 = 2 */
    int fit_flux;              /* 1 (default): a flux per image fitted; 0: fixed (flux) */
    int fit_background;        /* 1: a background per image fitted; 0 (default): fixed */
    const double *flux;        /* [K] the fixed fluxes; NULL = 1 */
    const double *background;  /* [K] the fixed backgrounds; NULL = 0 */
    int max_iterations;        /* L-BFGS iterations per pass; 0 = 200 */
    double tolerance;          /* stop when the loss fell by less than this (relative) over 3
                                  iterations, or |gradient| < tolerance max(1, |c|); 0 = 1e-10 */
    double fisher_step;        /* forward differences' step (aberrations.units); 0 = 1e-5 waves */
    int fit_opd_map;           /* 1: fit an OPD map too, added to the set's own
                                  (aberrations.opd_map, psfsim_map_shape's rows x cols, its
                                  values' unit), regularised by opd_regularization / 2 x the
                                  sum of its squared values; not in the Fisher matrix (the
                                  coefficients' uncertainties are with the map held) */
    double opd_regularization; /* > 0 with fit_opd_map (per map unit squared, in chi2 / 2) */
    int uncertainties;         /* 1 (default): the Fisher matrix and the uncertainties (one
                                  forward evaluation per coefficient, then F's products); 0:
                                  the fit alone (uncertainties, covariance and the flux and
                                  background sigmas NaN, fisher_ok 0). API 7 */
} psfsim_retrieve_options;

/* Defaults (as above) for a struct of size bytes. */
PSFSIM_API void psfsim_retrieve_options_init_size(psfsim_retrieve_options *opt, size_t size);
#define psfsim_retrieve_options_init(opt) psfsim_retrieve_options_init_size((opt), sizeof *(opt))

/* What psfsim_retrieve fills: caller-owned arrays, NULL where not wanted
 * (coefficients and uncertainties are required). */
typedef struct {
    double *coefficients;     /* [nterms] the fit (aberrations.units RMS) */
    double *uncertainties;    /* [nterms] 1 sigma; NaN when F is singular */
    double *covariance;       /* [nterms][nterms] F^-1's block of the coefficients */
    double *flux;             /* [K] */
    double *flux_sigma;       /* [K] 0 where fixed */
    double *background;       /* [K] */
    double *background_sigma; /* [K] */
    double *residuals;        /* [K][M][M] data - fitted image */
    double *history;          /* [max_history] the loss chi2 / 2 after each iteration */
    int max_history;
    int nhistory;     /* iterations recorded, all passes (may exceed max_history) */
    int iterations;   /* L-BFGS iterations, all passes */
    int evaluations;  /* image-and-gradient evaluations */
    int lbfgs_status; /* liblbfgs's return of the last pass (0 converged; < 0 other
                         stops: -997 iterations exhausted; -1001, -1000, -998 a line
                         search that made no progress: what a noiseless fit reaches at
                         the rounding floor) */
    int fisher_ok;    /* 1: F positive definite, the uncertainties valid */
    double chi2;      /* sum w (d - m)^2 at the fit */
    double dof;       /* K M M - fitted parameters (the OPD map's pixels not counted) */
    double *opd_map;  /* [rows][cols] with fit_opd_map: the map fitted (added to the set's) */
} psfsim_retrieve_result;

/* Fit images data[K][M][M] (double, psfsim_compute's layout; K the set's
 * count) as above. Returns PSFSIM_OK (whatever liblbfgs's stop:
 * lbfgs_status), PSFSIM_ERR_ARGUMENT (NULL set, data, opt, res or its
 * required arrays, nterms out of range, a bad option: "sigma", "gain",
 * ...; a j that is not an index of the config's convention, or is piston:
 * "psfsim_retrieve: j[0] = 1 is piston in the Noll convention: it changes
 * no image and cannot be fitted; the terms fitted start at 2"; the terms
 * as psfsim_compute_inputs checks them (each once); a NaN or an
 * infinity in data, named by image, row and column), PSFSIM_ERR_MEMORY,
 * or psfsim_compute_inputs' and psfsim_vjp's errors (PSFSIM_ERR_COMPUTE,
 * PSFSIM_ERR_BUSY) with err. It calls psfsim_compute_inputs and
 * psfsim_vjp on set, each taking the set for its call: another thread's
 * call on the set meanwhile may get PSFSIM_ERR_BUSY, or make this one fail
 * with it; one retrieval per set at a time. */
PSFSIM_API int psfsim_retrieve(psfsim_set *set, const double *data,
                               const psfsim_retrieve_options *opt, psfsim_retrieve_result *res,
                               char *err, size_t errlen);

/* One keyword of the FITS header of an image, as the command writes it. */
typedef struct {
    char key[12]; /* "WAVELEN", "Z4", ... */
    char type;    /* 'd' a double (d), 'i' an integer (i), 's' a string (s) */
    double d;
    long long i;
    char s[72];
    char comment[72];
} psfsim_card;

/* The header keywords of image k's FITS file (README, "Outputs": WAVELEN,
 * DIAM, ..., Z<j>), in the command's order, by the command's own header
 * code, with metrics the image's (from psfsim_compute) for STREHL,
 * AXIALINT and BACKEND, into cards (max entries; 300 are always enough);
 * *ncards gets their number. The command's cards but its HISTORY, and,
 * without the image, EEFIELD (normalization "pupil": the image's sum):
 * psfsim_fits_header_image gives it.
 * PSFSIM_ERR_ARGUMENT (NULL), PSFSIM_ERR_RANGE, PSFSIM_ERR_BUFFER (cards
 * too few), PSFSIM_ERR_BUSY. */
PSFSIM_API int psfsim_fits_header(psfsim_set *set, long long k, const psfsim_metrics *metrics,
                                  psfsim_card *cards, int max, int *ncards, char *err,
                                  size_t errlen);

/* The same with image k as psfsim_compute wrote it (M x M floats; capacity
 * floats at image, at least M * M, else PSFSIM_ERR_BUFFER), NULL for
 * none: with normalization "pupil" its EEFIELD (the captured fraction, the
 * image's sum in double, as the command's), so the cards are the
 * command's file's (HISTORY aside). API version 2. */
PSFSIM_API int psfsim_fits_header_image(psfsim_set *set, long long k, const psfsim_metrics *metrics,
                                        const float *image, size_t capacity, psfsim_card *cards,
                                        int max, int *ncards, char *err, size_t errlen);

/* Where the library's messages go (the command's warnings and -v lines,
 * without "psfsim: "): fn(level, message, user) for levels 1 error, 2
 * warning, 3 information, 4 debug up to max_level; NULL (the default):
 * nowhere. Process-wide; from any thread that computes. */
typedef void (*psfsim_message_fn)(int level, const char *message, void *user);
PSFSIM_API void psfsim_set_message_handler(psfsim_message_fn fn, int max_level, void *user);

#ifdef __cplusplus
}
#endif

#endif
