/* SPDX-License-Identifier: BSD-3-Clause */
/* The gradients' model on the CPU (lib/psfsim.h, psfsim_vjp; docs/design.md,
 * "Gradients (vector-Jacobian products)"): one image's components in
 * double precision, each step with its adjoint, one concept per file:
 *
 *   cpu/adjoint_pupil.c      the pupil field U = A exp(i 2 pi W) of a
 *                            component, W from the backend's samples
 *                            (cpu/pupil.h) plus the call's inputs, and the
 *                            chain from dL/dW to the inputs' gradients;
 *   cpu/adjoint_transform.c  the FFT or MFT E = F U, the intensity
 *                            scale |E|^2, and B = F^H (scale g .* E);
 *   cpu/adjoint_detector.c   the detector stage (convolution, sampling)
 *                            and its transpose.
 *
 * The normalisation and the orientation, which are the image set's (not
 * the CPU's), are lib/vjp_image.c's. Everything here is double: FFTW's
 * double plans (fftw3, FFTW_ESTIMATE). FFTW's planner is not thread-safe
 * (FFTW manual 5.4): the _init and _free functions, which plan and destroy
 * plans, must be serialised by the caller (lib/vjp_image.c: lib_lock);
 * the rest runs on any thread, one per struct. */
#ifndef PSFSIM_CPU_ADJOINT_H
#define PSFSIM_CPU_ADJOINT_H

/* fftw3.h before complex.h: fftw_complex stays double[2] (FFTW manual
 * 4.1.1), as cpu/pupil.h's fftwf_complex elsewhere. */
#include <fftw3.h>

#include <complex.h>
#include <stddef.h>

#include "backend/backend.h"
#include "cpu/pupil.h"

/* The terms a call adds (psfsim_inputs), as (n, m) pairs. */
typedef struct {
    int nterms;               /* global terms */
    const int *n, *m;         /* [nterms] */
    int seg_nterms;           /* per-segment terms (segmented apertures) */
    const int *seg_n, *seg_m; /* [seg_nterms] */
    int opd;                  /* 1: an OPD map input (the set has a map) */
    int transmission;         /* 1: the aperture map's gradient (shape "file") */
} adj_terms;

/* One pupil pitch's samples: the backend's (cpu_pupil_build for the FFT,
 * cpu_pupil_build_compact for the MFT: the same samples, basis and OPD
 * values psfsim_compute uses), with what the inputs need at each. */
typedef struct {
    cpu_pupil p;    /* the backend's samples, in grid order (never transposed) */
    int grid;       /* the grid they were built on: N (FFT) or G (MFT) */
    double s1, s2;  /* sum A, sum A^2 over the samples (the normalisation's sums) */
    int *row, *col; /* [nopen] each sample's grid row and column */
    double *zb;     /* [terms.nterms * nopen] Z_t (unit RMS) of the input terms */
    int *seg;       /* [nopen] each sample's segment, or -1 (input segment terms) */
    double *sb;     /* [terms.seg_nterms * nopen] segment term t over its segment */
    int *mw_idx;    /* [4 nopen] the OPD map pixels of each sample's bilinear value */
    double *mw;     /* [4 nopen] their weights (optics/map_sample.h's arithmetic) */
    /* terms.transmission only: A_n = tg_n m(x_n), m the aperture map
     * sampled bilinearly (optics/aperture.c, aperture_fill) */
    double *tg;  /* [nopen] the geometry's factor (aperture_sample_index) */
    int *aw_idx; /* [4 nopen] the aperture map pixels of each sample's m */
    double *aw;  /* [4 nopen] their weights */
} adj_pupil;

/* Build pp for pitch dx_m of problem (mft: on the G = pupil_npix grid,
 * else the N = npix grid), with the input terms' values. Returns 0, or -1
 * with err (allocation, aperture geometry). */
int adj_pupil_build(adj_pupil *pp, const psf_problem *problem, double dx_m, const adj_terms *terms,
                    char *err, size_t errlen);
void adj_pupil_free(adj_pupil *pp);

/* What one component adds to its pupil's phase: the inputs' values and
 * their factors to waves. */
typedef struct {
    const double *zernike;     /* [terms.nterms] config units, or NULL */
    const double *seg_zernike; /* [S][terms.seg_nterms] config units, or NULL */
    const double *opd_map;     /* [rows][cols] map units, or NULL */
    double units_to_waves;     /* coefficient unit -> waves: 1, or 1 / lambda_nm */
} adj_input;

/* The component's phase W[nopen] (waves): the backend's own
 * (cpu_pupil_field's W, in double) plus the inputs', and its field
 * u[nopen] = A exp(+i 2 pi W). */
void adj_pupil_field(const adj_pupil *pp, const psf_problem *problem, const adj_terms *terms,
                     const psf_component *comp, const adj_input *in, double *w, double complex *u);

/* Where one component's phase gradient goes (each NULL = not wanted). */
typedef struct {
    double *zernike;      /* [terms.nterms] += */
    double *seg_zernike;  /* [S][terms.seg_nterms] += */
    double *opd_map;      /* [rows][cols] += */
    double *transmission; /* [rows][cols] of the aperture map += */
    /* The normalisation's part of dL/dA_n (A the transmission at sample n):
     * t_alpha A_n + t_beta (lib/vjp_image.c: the scales' dependence on the
     * pupil's sums S1 = sum A, S2 = sum A^2). */
    double t_alpha, t_beta;
    int t_direct; /* 1: the field's part 2 Re(conj(B_n) u_n) / A_n too */
} adj_grads;

/* From B = F^H(...) (adj_transform_adjoint) and the field u: dL/dW_n =
 * 4 pi Im(B_n conj(u_n)) (docs/design.md, "Gradients"), chained into g:
 * zernike[t] += f sum_n dW_n Z_t(n), seg_zernike[s][t] += f sum_{n in s}
 * dW_n Z_t(n) (f = in->units_to_waves), opd_map[pixel] += opd_to_waves
 * sum_n dW_n weight(n, pixel) (the bilinear sampling's transpose);
 * transmission[pixel] += sum_n dA_n tg_n weight(n, pixel) with dL/dA_n =
 * t_direct 2 Re(conj(B_n) u_n) / A_n + t_alpha A_n + t_beta (dU_n/dA_n =
 * u_n / A_n; b and u are not read without t_direct). */
void adj_pupil_grads(const adj_pupil *pp, const adj_terms *terms, const psf_component *comp,
                     const adj_input *in, const double complex *b, const double complex *u,
                     const adj_grads *g);

/* The transform of a problem: the FFT of the N x N grid (zero frequency
 * moved to N/2), or the MFT onto the M x M grid (cpu/mft.h's matrices, in
 * double). */
typedef struct {
    int mft;
    int n;                   /* the image grid: N (FFT) or M (MFT) */
    int half_pixel;          /* MFT: the grid's axis half a pixel before n/2 */
    fftw_complex *buf;       /* FFT: [N N] the transform's input and output */
    fftw_plan fwd, bwd;      /* FFT: in place on buf, FFTW_FORWARD and FFTW_BACKWARD */
    unsigned *shift;         /* FFT: [N N] the image pixel of each output index (fftshift) */
    double complex *e;       /* [n n] E of the last forward (FFT: zero frequency at 0) */
    double complex *box;     /* MFT: [R C] the pupil box, then B's */
    double complex *t;       /* MFT: [R M] the intermediate product */
    double complex *wr, *wc; /* MFT: [M R], [M C] the matrices of the last forward */
    size_t cap_box, cap_t, cap_wr, cap_wc;
    int rows, cols; /* MFT: the last forward's box */
} adj_transform;

/* Plan for problem (FFTW_ESTIMATE). Returns 0, or -1 with err. */
int adj_transform_init(adj_transform *t, const psf_problem *problem, char *err, size_t errlen);
void adj_transform_free(adj_transform *t);

/* E = F u into t->e: the FFT of the field on the N x N grid (the samples
 * at pp's FFT indices), or the MFT of pp's box with comp's a = dx p /
 * lambda (cpu/mft.h). Returns 0, or -1 with err (allocation). */
int adj_transform_forward(adj_transform *t, const adj_pupil *pp, const psf_component *comp,
                          const double complex *u, char *err, size_t errlen);

/* image[n n] (centred, row-major) += scale |E|^2 (the FFT's shifted). */
void adj_transform_intensity(const adj_transform *t, double scale, double *image);

/* <g, |E|^2> (g[n n] centred, as adj_transform_intensity's image): the
 * cotangent against the component's unscaled intensity, dL/dscale. */
double adj_transform_dot(const adj_transform *t, const double *g);

/* b[nopen] = (F^H (scale g .* E)) at pp's samples, g[n n] the image's
 * cotangent (centred, as adj_transform_intensity's image), E the last
 * forward's (the same component): F^H the inverse DFT unnormalised (FFTW
 * BACKWARD), or the MFT's conjugate transposes (B = Wy^H G conj(Wx)). */
void adj_transform_adjoint(adj_transform *t, const adj_pupil *pp, const double *g, double scale,
                           double complex *b);

/* The detector stage in double (backend/detector.h's: the circular
 * convolution by the transfer function, the sampling; no clamp). */
typedef struct {
    int active; /* 0: the stage is the identity (n = m) */
    int n, m;   /* the grid, the output (n / s when sampled, else n) */
    int s, off, bins, sample, convolve;
    double *otf;        /* [n (n/2+1)] complex, psf_detector_otf_double */
    double *real;       /* [n n] fftw_malloc'd */
    fftw_complex *spec; /* [n (n/2+1)] */
    fftw_plan r2c, c2r;
} adj_detector;

int adj_detector_init(adj_detector *d, const psf_problem *problem, char *err, size_t errlen);
void adj_detector_free(adj_detector *d);

/* out[m m] = the stage of grid[n n] (out != grid). */
void adj_detector_forward(adj_detector *d, const double *grid, double *out);

/* g_grid[n n] = the stage's transpose of g_out[m m] (g_grid != g_out):
 * the sampling's scatter (s^2 at the sample, or 1 over WebbPSF's block),
 * then the convolution by conj(T) (the correlation). */
void adj_detector_adjoint(adj_detector *d, const double *g_out, double *g_grid);

#endif
