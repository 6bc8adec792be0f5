/* SPDX-License-Identifier: BSD-3-Clause */
/* The detector stage's separable path (gpu/detector_sep.h). */
#include "gpu/detector_sep.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "backend/detector.h"
}

/* Threads a block aims at: 16 row or column pairs of 16 threads at N = 256. */
#define SEP_THREADS 256
/* Blocks of pass A and of pass B an SM is to hold at once, which bounds
 * their registers (85 and 75 a thread at N = 256): bench/RESULTS.md run 35
 * measured 2, 3 and 4 (-D at build time); 3 and 4 equal within the noise,
 * 4 spills at N = 256, 2 is 1-3% slower. */
#ifndef SEP_ROWS_MIN_BLOCKS
#define SEP_ROWS_MIN_BLOCKS 3
#endif
#ifndef SEP_COLS_MIN_BLOCKS
#define SEP_COLS_MIN_BLOCKS 3
#endif
/* The largest and smallest N the kernels are made for. */
#define SEP_MIN_NPIX 16
#define SEP_MAX_NPIX 1024

__host__ __device__ static constexpr int sep_log2(int n)
{
    return n <= 1 ? 0 : 1 + sep_log2(n / 2);
}

/* The shape of a length-N transform: K radix-16 stages after a first of
 * radix R0 (2, 4, 8 or 16), T = N / 16 threads, each holding 16 values;
 * S complex values of shared memory a transform (sep_pidx's padding, and
 * one more so that consecutive transforms start on other banks). */
template <int N> struct sep_shape {
    static constexpr int L = sep_log2(N);
    static constexpr int K = (L - 1) / 4;
    static constexpr int R0 = N >> (4 * K);
    static constexpr int T = N / 16;
    static constexpr int S = N + N / 16 + 1;
};

/* Shared-memory index of element i: one complex of padding every 16, so
 * that a radix-16 stage's stores (stride 16) hit distinct banks. */
__device__ __forceinline__ int sep_pidx(int i)
{
    return i + (i >> 4);
}

/* e^{-2 pi i m / 16} (INV: e^{+2 pi i m / 16}) times a, 0 <= m < 16; m is
 * a constant once the callers' loops are unrolled, so the switch folds
 * and the quarter turns cost no multiply. */
template <bool INV> __device__ __forceinline__ float2 sep_w16(float2 a, int m)
{
    const float c1 = 0.92387953251128674f, c2 = 0.70710678118654752f, c3 = 0.38268343236508977f;
    float wr, wi; /* e^{-2 pi i m / 16} */
    switch (m & 15) {
    case 0:
        return a;
    case 4:
        return INV ? make_float2(-a.y, a.x) : make_float2(a.y, -a.x);
    case 8:
        return make_float2(-a.x, -a.y);
    case 12:
        return INV ? make_float2(a.y, -a.x) : make_float2(-a.y, a.x);
    case 1:
        wr = c1, wi = -c3;
        break;
    case 2:
        wr = c2, wi = -c2;
        break;
    case 3:
        wr = c3, wi = -c1;
        break;
    case 5:
        wr = -c3, wi = -c1;
        break;
    case 6:
        wr = -c2, wi = -c2;
        break;
    case 7:
        wr = -c1, wi = -c3;
        break;
    case 9:
        wr = -c1, wi = c3;
        break;
    case 10:
        wr = -c2, wi = c2;
        break;
    case 11:
        wr = -c3, wi = c1;
        break;
    case 13:
        wr = c3, wi = c1;
        break;
    case 14:
        wr = c2, wi = c2;
        break;
    default:
        wr = c1, wi = c3;
        break; /* 15 */
    }
    if (INV) wi = -wi;
    return make_float2(a.x * wr - a.y * wi, a.x * wi + a.y * wr);
}

/* a times w (INV: times conj(w)). */
template <bool INV> __device__ __forceinline__ float2 sep_twiddle(float2 a, float2 w)
{
    float wy = INV ? -w.y : w.y;
    return make_float2(a.x * w.x - a.y * wy, a.x * wy + a.y * w.x);
}

__device__ __forceinline__ float2 sep_add(float2 a, float2 b)
{
    return make_float2(a.x + b.x, a.y + b.y);
}

__device__ __forceinline__ float2 sep_sub(float2 a, float2 b)
{
    return make_float2(a.x - b.x, a.y - b.y);
}

/* The 2-point DFT in place. */
__device__ __forceinline__ void sep_dft2(float2 &a0, float2 &a1)
{
    float2 d = sep_sub(a0, a1);
    a0 = sep_add(a0, a1);
    a1 = d;
}

/* The 4-point DFT in place: X_k = sum_n a_n W4^{n k}, W4 = -i (INV: +i). */
template <bool INV>
__device__ __forceinline__ void sep_dft4(float2 &a0, float2 &a1, float2 &a2, float2 &a3)
{
    float2 s02 = sep_add(a0, a2), d02 = sep_sub(a0, a2), s13 = sep_add(a1, a3),
           d13 = sep_sub(a1, a3);
    float2 j13 = INV ? make_float2(-d13.y, d13.x) : make_float2(d13.y, -d13.x); /* W4 d13 */
    a0 = sep_add(s02, s13);
    a2 = sep_sub(s02, s13);
    a1 = sep_add(d02, j13);
    a3 = sep_sub(d02, j13);
}

/* In-place R-point DFT of v[0 .. R-1], R = 2, 4, 8 or 16, natural order in
 * and out. R = 4 Q (Q = 2, 4) by the four-step split n = Q n1 + n2,
 * k = k1 + 4 k2: X[k1 + 4 k2] = sum_n2 W_Q^{n2 k2} W_R^{n2 k1}
 * sum_n1 x[Q n1 + n2] W_4^{n1 k1} (Cooley and Tukey 1965; Van Loan,
 * Computational Frameworks for the FFT, 1992, 1.3): four-point DFTs and
 * 3 (Q - 1) twiddles, every index a constant. */
template <int R, bool INV> __device__ __forceinline__ void sep_dft(float2 *v)
{
    if constexpr (R == 2) {
        sep_dft2(v[0], v[1]);
    } else if constexpr (R == 4) {
        sep_dft4<INV>(v[0], v[1], v[2], v[3]);
    } else {
        constexpr int Q = R / 4;
        float2 y[R];
#pragma unroll
        for (int n2 = 0; n2 < Q; ++n2) {
            float2 a0 = v[n2], a1 = v[Q + n2], a2 = v[2 * Q + n2], a3 = v[3 * Q + n2];
            sep_dft4<INV>(a0, a1, a2, a3);
            /* W_R^{n2 k1} = W_16^{n2 k1 16 / R} */
            y[4 * n2] = a0;
            y[4 * n2 + 1] = sep_w16<INV>(a1, n2 * (16 / R));
            y[4 * n2 + 2] = sep_w16<INV>(a2, 2 * n2 * (16 / R));
            y[4 * n2 + 3] = sep_w16<INV>(a3, 3 * n2 * (16 / R));
        }
#pragma unroll
        for (int k1 = 0; k1 < 4; ++k1) {
            if constexpr (Q == 4) {
                float2 b0 = y[k1], b1 = y[4 + k1], b2 = y[8 + k1], b3 = y[12 + k1];
                sep_dft4<INV>(b0, b1, b2, b3);
                v[k1] = b0;
                v[k1 + 4] = b1;
                v[k1 + 8] = b2;
                v[k1 + 12] = b3;
            } else {
                float2 b0 = y[k1], b1 = y[4 + k1];
                sep_dft2(b0, b1);
                v[k1] = b0;
                v[k1 + 4] = b1;
            }
        }
    }
}

/* Stage SI of the forward (INV false) or inverse transform: its radix and
 * span Ns. Forward: R0 at Ns = 1, then 16 at Ns = R0 16^(SI-1); inverse:
 * 16 at Ns = 16^SI, then R0 at Ns = 16^K, so that the forward's last
 * stage leaves in each thread exactly the values the inverse's first
 * takes (element t + r T in v[r]): no shared memory between them. */
template <int N, bool INV, int SI> struct sep_stage {
    typedef sep_shape<N> sh;
    static constexpr int R = INV ? (SI < sh::K ? 16 : sh::R0) : (SI == 0 ? sh::R0 : 16);
    static constexpr int NS = INV ? (1 << (4 * SI)) : (SI == 0 ? 1 : sh::R0 << (4 * (SI - 1)));
};

/* Stages SI .. K of one transform by this thread (t < T) of the block:
 * v[i R + r] holds element j + r N / R of job j = t + i T (i < 16 / R) on
 * entry, as stage SI reads it (from buf, this transform's S values, for
 * SI > 0); each stage twiddles (Ns > 1), transforms and, but the last,
 * stores its outputs at (j / Ns) Ns R + j % Ns + r Ns (Stockham
 * autosort: natural order at the end). Every thread of the block calls it
 * (it synchronises); tw[m] = e^{-2 pi i m / N}. */
template <int N, bool INV, int SI>
__device__ __forceinline__ void sep_stages(float2 *v, int t, float2 *buf, const float2 *tw)
{
    typedef sep_shape<N> sh;
    constexpr int R = sep_stage<N, INV, SI>::R, NS = sep_stage<N, INV, SI>::NS;
    if constexpr (SI > 0) {
#pragma unroll
        for (int i = 0; i < 16 / R; ++i)
#pragma unroll
            for (int r = 0; r < R; ++r)
                v[i * R + r] = buf[sep_pidx(t + i * sh::T + r * (N / R))];
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 16 / R; ++i) {
        int j = t + i * sh::T;
        if constexpr (NS > 1) {
            int m0 = (j % NS) * (N / (NS * R));
#pragma unroll
            for (int r = 1; r < R; ++r)
                v[i * R + r] = sep_twiddle<INV>(v[i * R + r], tw[m0 * r]);
        }
        sep_dft<R, INV>(v + i * R);
    }
    if constexpr (SI < sh::K) {
#pragma unroll
        for (int i = 0; i < 16 / R; ++i) {
            int j = t + i * sh::T, d = (j / NS) * NS * R + j % NS;
#pragma unroll
            for (int r = 0; r < R; ++r)
                buf[sep_pidx(d + r * NS)] = v[i * R + r];
        }
        __syncthreads();
        sep_stages<N, INV, SI + 1>(v, t, buf, tw);
    }
}

/* The circular convolution of this thread's transform with the inverse
 * DFT of g (real, even: N values, 1/N in them): forward DFT, times g,
 * inverse DFT. v as sep_stages' first stage takes it from and leaves it
 * to the caller: element t + i T + r N / R0 in v[i R0 + r]. */
template <int N>
__device__ __forceinline__ void sep_convolve(float2 *v, int t, float2 *buf, const float2 *tw,
                                             const float *g)
{
    typedef sep_shape<N> sh;
    sep_stages<N, false, 0>(v, t, buf, tw);
#pragma unroll
    for (int r = 0; r < 16; ++r) {
        float f = g[t + r * sh::T];
        v[r] = make_float2(v[r].x * f, v[r].y * f);
    }
    sep_stages<N, true, 0>(v, t, buf, tw);
}

/* This thread's values of one transform pair, as sep_stages' first stage
 * takes them: element e = t + i T + r N / R0 of the two real sequences a
 * and b (stride floats apart: 1 along a row, mcols down a column, N mcols
 * < 2^31) into v[i R0 + r] as a[e] + i b[e]. */
template <int N>
__device__ __forceinline__ void sep_load(float2 *v, int t, const float *a, const float *b,
                                         int stride)
{
    typedef sep_shape<N> sh;
    constexpr int R0 = sh::R0;
#pragma unroll
    for (int i = 0; i < 16 / R0; ++i)
#pragma unroll
        for (int r = 0; r < R0; ++r) {
            int e = (t + i * sh::T + r * (N / R0)) * stride;
            v[i * R0 + r] = make_float2(a[e], b[e]);
        }
}

/* The block's tables into shared memory: tw [N] complex, g [N] floats. */
template <int N>
__device__ __forceinline__ void sep_tables(float2 *tw, float *g, const float2 *tw_g,
                                           const float *g_g)
{
    for (int i = threadIdx.x; i < N; i += blockDim.x) {
        tw[i] = tw_g[i];
        g[i] = g_g[i];
    }
}

/* Row pairs of a pass A block, column pairs of a pass B block (IPC: one
 * more, the halo). */
static int rows_pairs(int npix)
{
    int per = SEP_THREADS / (npix / 16);
    return per < npix / 2 ? per : npix / 2;
}

static int cols_pairs(int npix, int mcols, int ipc)
{
    int per = SEP_THREADS / (npix / 16), want = (mcols + 1) / 2;
    return (per < want ? per : want) + (ipc ? 1 : 0);
}

/* Where pass A reads its rows: grid images (SEP_FROM_GRID), or a pass's
 * field spectra as gpu/intensity.h's kernel reads them (the FFT's layout,
 * shifted by N/2 on both axes, or centred: the MFT's), so that the
 * intensities never go to device memory. */
enum { SEP_FROM_GRID, SEP_FROM_FIELDS, SEP_FROM_FIELDS_CENTRED };

/* A pass's fields and records (gpu_psf_intensity's arguments). */
typedef struct {
    const float2 *field;
    const float *scale;
    const gpu_pass_image *images;
} sep_fields;

/* This thread's values of rows ra and ra + 1 of record e's image, as
 * sep_load gives them, each sum_f scale[f] |field_f[u][v]|^2 at source row
 * u and column v of the element (shifted by N/2 unless CENTRED): the
 * intensity kernel's arithmetic, in its order. */
template <int N, bool CENTRED>
__device__ __forceinline__ void sep_load_power(float2 *v, int t, const sep_fields &fs,
                                               const gpu_pass_image &e, int ra)
{
    typedef sep_shape<N> sh;
    constexpr int R0 = sh::R0, H = CENTRED ? 0 : N / 2;
    const size_t plane = (size_t)N * N;
    const float2 *a = fs.field + (size_t)((ra + H) & (N - 1)) * N,
                 *b = fs.field + (size_t)((ra + 1 + H) & (N - 1)) * N;
#pragma unroll
    for (int i = 0; i < 16 / R0; ++i)
#pragma unroll
        for (int r = 0; r < R0; ++r) {
            int c = (t + i * sh::T + r * (N / R0) + H) & (N - 1);
            float pa = 0.0f, pb = 0.0f;
            for (int f = e.first_field; f < e.first_field + e.nfields; ++f) {
                float2 za = a[(size_t)f * plane + c], zb = b[(size_t)f * plane + c];
                pa += fs.scale[f] * (za.x * za.x + za.y * za.y);
                pb += fs.scale[f] * (zb.x * zb.x + zb.y * zb.y);
            }
            v[i * R0 + r] = make_float2(pa, pb);
        }
}

/* Pass A: block b holds row pairs (2 q, 2 q + 1) of image b / (N / 2 P)
 * (P = rows_pairs, one transform of T threads each, thread-major within
 * a transform: a warp's loads run along rows), read from the grid or
 * (SRC) made from record b / (N / 2 P)'s fields into its image e.image;
 * each row convolved with tx's kernel, column c written to out's column
 * (c - o) / s when c - o is a multiple of s (out: N rows of mcols an
 * image). */
template <int N, int SRC>
__global__ static void __launch_bounds__(SEP_THREADS, SEP_ROWS_MIN_BLOCKS)
    sep_rows_kernel(const float *__restrict__ grid, sep_fields fs, const float2 *__restrict__ tw_g,
                    const float *__restrict__ tx_g, int s_shift, int off, int mcols,
                    float *__restrict__ out)
{
    typedef sep_shape<N> sh;
    extern __shared__ float2 sep_sm[];
    float2 *tw = sep_sm, *buf = sep_sm + N + N / 2;
    float *tx = (float *)(sep_sm + N);
    sep_tables<N>(tw, tx, tw_g, tx_g);
    int pairs = (int)blockDim.x / sh::T, p = (int)threadIdx.x / sh::T, t = (int)threadIdx.x % sh::T;
    int blocks = (N / 2) / pairs, q = ((int)blockIdx.x % blocks) * pairs + p;
    size_t k = blockIdx.x / blocks;
    float2 v[16];
    constexpr int R0 = sh::R0;
    if constexpr (SRC == SEP_FROM_GRID) {
        const float *ra = grid + (k * N + 2 * (size_t)q) * N;
        sep_load<N>(v, t, ra, ra + N, 1);
    } else {
        gpu_pass_image e = fs.images[k];
        sep_load_power<N, SRC == SEP_FROM_FIELDS_CENTRED>(v, t, fs, e, 2 * q);
        k = (size_t)e.image;
    }
    __syncthreads(); /* the tables */
    sep_convolve<N>(v, t, buf + p * sh::S, tw, tx);
    float *oa = out + (k * N + 2 * (size_t)q) * (size_t)mcols, *ob = oa + mcols;
    int mask = (1 << s_shift) - 1;
#pragma unroll
    for (int i = 0; i < 16 / R0; ++i)
#pragma unroll
        for (int r = 0; r < R0; ++r) {
            int c = t + i * sh::T + r * (N / R0) - off;
            if (c >= 0 && (c & mask) == 0) {
                oa[c >> s_shift] = v[i * R0 + r].x;
                ob[c >> s_shift] = v[i * R0 + r].y;
            }
        }
}

static __device__ __forceinline__ int sep_mod(int a, int m)
{
    int r = a % m;
    return r < 0 ? r + m : r;
}

/* The IPC kernel, passed by value (the constant bank). */
typedef struct {
    float k[9];
} sep_ipc;

/* The IPC kernel on the tile (mrows x w floats in shared memory, tile
 * column x = detector column c0 + x, rows circular, mrows a power of two)
 * into o's columns c0 + 1 .. c0 + wide (those below mcols):
 * o[i][c] = sum_{a,b} k[a][b] tile[i - (a - 1)][x - (b - 1)]. Each thread
 * takes one column and a run of consecutive rows, a 3 x 3 window sliding
 * down it in registers: three shared loads an output, not nine. */
__device__ __forceinline__ void sep_stencil(const float *tile, int w, int wide, int mrows, int c0,
                                            int mcols, const sep_ipc &ipc, float *o)
{
    int nt = (int)blockDim.x, xs = nt < wide ? nt : wide, groups = nt / xs;
    int tid = (int)threadIdx.x, mask = mrows - 1;
    if (tid >= groups * xs) return;
    int per = (mrows + groups - 1) / groups, i0 = (tid / xs) * per;
    int i1 = i0 + per < mrows ? i0 + per : mrows;
    for (int x = tid % xs + 1; x <= wide && c0 + x < mcols; x += xs) {
        const float *col = tile + x;
        float up[3], mid[3], dn[3]; /* rows i - 1, i, i + 1 at columns x - 1, x, x + 1 */
        for (int b = 0; b < 3; ++b) {
            up[b] = col[((i0 - 1) & mask) * w + b - 1];
            mid[b] = col[(i0 & mask) * w + b - 1];
        }
        for (int i = i0; i < i1; ++i) {
            for (int b = 0; b < 3; ++b)
                dn[b] = col[((i + 1) & mask) * w + b - 1];
            float acc = 0.0f;
#pragma unroll
            for (int b = 0; b < 3; ++b) /* column x - (b - 1): window index 2 - b */
                acc += ipc.k[b] * dn[2 - b] + ipc.k[3 + b] * mid[2 - b] + ipc.k[6 + b] * up[2 - b];
            o[(size_t)i * mcols + c0 + x] = psf_detector_clamp_value(acc);
#pragma unroll
            for (int b = 0; b < 3; ++b) {
                up[b] = mid[b];
                mid[b] = dn[b];
            }
        }
    }
}

/* Pass B: block b holds column pairs p < P of tile b % tiles of image
 * b / tiles (thread (t, p) = threadIdx p + P t: a warp's loads run along
 * rows); columns c0 + 2 p, c0 + 2 p + 1 (mod mcols; c0 = tile W', W' = 2 P,
 * or with IPC 2 P - 2 and c0 one column before, the halo) each convolved
 * with ty's kernel (s^2 in it), then rows (r - o) / s kept (mrows of
 * them); with IPC the tile's rows go to shared memory and each of its W'
 * columns is sum_{a,b} k[a][b] tile[i - (a - 1)][w - (b - 1)], rows
 * circular (the grid is periodic: row (i +- 1) s + o mod N is detector row
 * i +- 1 mod M); what is written is clamped at 0 (psf_detector_clamp). in: N
 * rows of mcols an image; out: mrows x mcols. */
template <int N, bool IPC>
__global__ static void __launch_bounds__(SEP_THREADS + N / 16, SEP_COLS_MIN_BLOCKS)
    sep_cols_kernel(const float *__restrict__ in, const float2 *__restrict__ tw_g,
                    const float *__restrict__ ty_g, sep_ipc ipc, int s_shift, int off, int mcols,
                    int mrows, int tiles, float *__restrict__ out)
{
    typedef sep_shape<N> sh;
    extern __shared__ float2 sep_sm[];
    float2 *tw = sep_sm, *buf = sep_sm + N + N / 2;
    float *ty = (float *)(sep_sm + N);
    sep_tables<N>(tw, ty, tw_g, ty_g);
    int pairs = (int)blockDim.x / sh::T, p = (int)threadIdx.x % pairs, t = (int)threadIdx.x / pairs;
    int wide = IPC ? 2 * pairs - 2 : 2 * pairs, tile = (int)blockIdx.x % tiles;
    int c0 = tile * wide - (IPC ? 1 : 0);
    size_t k = blockIdx.x / tiles;
    const float *img = in + k * N * (size_t)mcols;
    float2 v[16];
    constexpr int R0 = sh::R0;
    sep_load<N>(v, t, img + sep_mod(c0 + 2 * p, mcols), img + sep_mod(c0 + 2 * p + 1, mcols),
                mcols);
    __syncthreads(); /* the tables */
    sep_convolve<N>(v, t, buf + p * sh::S, tw, ty);
    int mask = (1 << s_shift) - 1, w = 2 * pairs;
    float *o = out + k * (size_t)mrows * mcols;
    /* The inverse's last shared-memory reads were before its last barrier:
     * the tile may overwrite buf now. */
    float *tilebuf = (float *)buf;
#pragma unroll
    for (int i = 0; i < 16 / R0; ++i)
#pragma unroll
        for (int r = 0; r < R0; ++r) {
            int row = t + i * sh::T + r * (N / R0) - off;
            if (row < 0 || (row & mask) != 0) continue;
            row >>= s_shift;
            if (IPC) {
                tilebuf[row * w + 2 * p] = v[i * R0 + r].x;
                tilebuf[row * w + 2 * p + 1] = v[i * R0 + r].y;
            } else {
                int c = c0 + 2 * p;
                if (c < mcols)
                    o[(size_t)row * mcols + c] = psf_detector_clamp_value(v[i * R0 + r].x);
                if (c + 1 < mcols)
                    o[(size_t)row * mcols + c + 1] = psf_detector_clamp_value(v[i * R0 + r].y);
            }
        }
    if (!IPC) return;
    __syncthreads();
    sep_stencil(tilebuf, w, wide, mrows, c0, mcols, ipc, o);
}

int gpu_detector_sep_supports(const psf_problem *problem)
{
    const psf_detector *d = &problem->detector;
    int n = problem->npix, s = d->oversample > 1 ? d->oversample : 1;
    return psf_detector_active(d) && psf_detector_convolves(d) && n >= SEP_MIN_NPIX &&
           n <= SEP_MAX_NPIX && (n & (n - 1)) == 0 && n % s == 0 && (d->sample || s == 1) &&
           !(d->sample && psf_detector_bins(d)); /* the kernels keep a column, not a block's sum */
}

/* The kernels for N and their shared memory limits raised to what g takes. */
template <int N> static int sep_prepare(const gpu_detector_sep *g, gpu_check *chk)
{
    const cudaFuncAttribute a = cudaFuncAttributeMaxDynamicSharedMemorySize;
    return GPU_CUDA(chk,
                    cudaFuncSetAttribute(sep_rows_kernel<N, SEP_FROM_GRID>, a, (int)g->smem_a)) ||
                   GPU_CUDA(chk, cudaFuncSetAttribute(sep_rows_kernel<N, SEP_FROM_FIELDS>, a,
                                                      (int)g->smem_a)) ||
                   GPU_CUDA(chk, cudaFuncSetAttribute(sep_rows_kernel<N, SEP_FROM_FIELDS_CENTRED>,
                                                      a, (int)g->smem_a)) ||
                   GPU_CUDA(chk, cudaFuncSetAttribute(g->ipc ? sep_cols_kernel<N, true>
                                                             : sep_cols_kernel<N, false>,
                                                      a, (int)g->smem_b))
               ? -1
               : 0;
}

/* What one call of sep_dispatch does. */
typedef struct {
    int what;        /* 0: prepare; 1: pass A; 2: pass B */
    int src;         /* pass A: SEP_FROM_GRID, _FIELDS, _FIELDS_CENTRED */
    const float *in; /* pass A from the grid, pass B: its input */
    sep_fields fs;   /* pass A from fields */
    int n;           /* images (records) */
    float *out;
    cudaStream_t stream;
} sep_call;

/* Pass A of c->n images or records, enqueued. */
template <int N> static int sep_rows(const gpu_detector_sep *g, const sep_call *c, gpu_check *chk)
{
    unsigned blocks = (unsigned)c->n * (unsigned)((N / 2) / g->pairs_a),
             threads = (unsigned)(g->pairs_a * (N / 16));
#define SEP_ROWS(S)                                                                                \
    sep_rows_kernel<N, S><<<blocks, threads, g->smem_a, c->stream>>>(                              \
        c->in, c->fs, g->tw, g->tx, g->s_shift, g->off, g->mcols, c->out)
    if (c->src == SEP_FROM_FIELDS)
        SEP_ROWS(SEP_FROM_FIELDS);
    else if (c->src == SEP_FROM_FIELDS_CENTRED)
        SEP_ROWS(SEP_FROM_FIELDS_CENTRED);
    else
        SEP_ROWS(SEP_FROM_GRID);
#undef SEP_ROWS
    return GPU_LAUNCH(chk, "sep_rows_kernel");
}

/* Pass B of c->n images, enqueued. */
template <int N> static int sep_cols(const gpu_detector_sep *g, const sep_call *c, gpu_check *chk)
{
    int wide = g->ipc ? 2 * g->pairs_b - 2 : 2 * g->pairs_b;
    int tiles = (g->mcols + wide - 1) / wide;
    sep_ipc k;
    memcpy(k.k, g->ipc_kernel, sizeof k.k);
    unsigned blocks = (unsigned)c->n * (unsigned)tiles, threads = (unsigned)(g->pairs_b * (N / 16));
    if (g->ipc)
        sep_cols_kernel<N, true><<<blocks, threads, g->smem_b, c->stream>>>(
            c->in, g->tw, g->ty, k, g->s_shift, g->off, g->mcols, g->mrows, tiles, c->out);
    else
        sep_cols_kernel<N, false><<<blocks, threads, g->smem_b, c->stream>>>(
            c->in, g->tw, g->ty, k, g->s_shift, g->off, g->mcols, g->mrows, tiles, c->out);
    return GPU_LAUNCH(chk, "sep_cols_kernel");
}

template <int N> static int sep_run(const gpu_detector_sep *g, const sep_call *c, gpu_check *chk)
{
    if (c->what == 0) return sep_prepare<N>(g, chk);
    return c->what == 1 ? sep_rows<N>(g, c, chk) : sep_cols<N>(g, c, chk);
}

/* c for g's N. */
static int sep_dispatch(const gpu_detector_sep *g, const sep_call *c, gpu_check *chk)
{
    switch (g->npix) {
    case 16:
        return sep_run<16>(g, c, chk);
    case 32:
        return sep_run<32>(g, c, chk);
    case 64:
        return sep_run<64>(g, c, chk);
    case 128:
        return sep_run<128>(g, c, chk);
    case 256:
        return sep_run<256>(g, c, chk);
    case 512:
        return sep_run<512>(g, c, chk);
    case 1024:
        return sep_run<1024>(g, c, chk);
    default:
        break;
    }
    snprintf(chk->err, chk->errlen, "gpu: the separable detector path has no %d x %d kernels",
             g->npix, g->npix);
    return -1;
}

/* The tables on the host (double, stored as float), then on the device. */
static int sep_upload(gpu_detector_sep *g, const psf_detector *d, int sampled, gpu_check *chk)
{
    int n = g->npix;
    float *host = (float *)malloc((size_t)n * 4 * sizeof(float));
    if (!host) {
        snprintf(chk->err, chk->errlen, "gpu: out of host memory");
        return -1;
    }
    float *tw = host, *tx = host + 2 * n, *ty = host + 3 * n;
    for (int m = 0; m < n; ++m) {
        double a = 2.0 * M_PI * (double)m / n;
        tw[2 * m] = (float)cos(a);
        tw[2 * m + 1] = (float)-sin(a);
    }
    psf_detector_axis_tables(d, n, tx, ty);
    float s2 = (float)(1 << g->s_shift) * (float)(1 << g->s_shift); /* exact: a power of two */
    for (int k = 0; sampled && k < n; ++k)
        ty[k] *= s2;
    int rc = GPU_CUDA(chk, cudaMalloc(&g->tw, (size_t)n * sizeof(float2)));
    if (rc) g->tw = NULL;
    if (rc == 0) rc = GPU_CUDA(chk, cudaMalloc(&g->tx, 2 * (size_t)n * sizeof(float)));
    if (rc) g->tx = NULL;
    if (rc == 0) {
        g->ty = g->tx + n;
        rc = GPU_CUDA(chk,
                      cudaMemcpy(g->tw, tw, (size_t)n * sizeof(float2), cudaMemcpyHostToDevice)) ||
             GPU_CUDA(chk,
                      cudaMemcpy(g->tx, tx, 2 * (size_t)n * sizeof(float), cudaMemcpyHostToDevice));
    }
    free(host);
    return rc ? -1 : 0;
}

int gpu_detector_sep_create(gpu_detector_sep *g, const psf_problem *problem, gpu_check *chk)
{
    memset(g, 0, sizeof *g);
    const psf_detector *d = &problem->detector;
    if (!gpu_detector_sep_supports(problem)) {
        snprintf(chk->err, chk->errlen, "gpu: the detector stage is not separable here");
        return -1;
    }
    int n = problem->npix, s = d->oversample > 1 ? d->oversample : 1, sampled = d->sample;
    g->npix = n;
    g->s_shift = sep_log2(s);
    g->off = sampled ? psf_detector_sample_offset(d, n) : 0;
    g->mcols = g->mrows = sampled ? n / s : n;
    g->ipc = d->ipc;
    for (int i = 0; i < 9; ++i)
        g->ipc_kernel[i] = (float)d->ipc_kernel[i];
    g->pairs_a = rows_pairs(n);
    g->pairs_b = cols_pairs(n, g->mcols, g->ipc);
    size_t tables = (size_t)n * (sizeof(float2) + sizeof(float)), per = (size_t)(n + n / 16 + 1);
    g->smem_a = tables + (size_t)g->pairs_a * per * sizeof(float2);
    g->smem_b = tables + (size_t)g->pairs_b * per * sizeof(float2);
    sep_call prepare;
    memset(&prepare, 0, sizeof prepare);
    if (sep_upload(g, d, sampled, chk) || sep_dispatch(g, &prepare, chk)) {
        gpu_detector_sep_destroy(g);
        return -1;
    }
    return 0;
}

void gpu_detector_sep_destroy(gpu_detector_sep *g)
{
    cudaFree(g->tw);
    cudaFree(g->tx);
    memset(g, 0, sizeof *g);
}

int gpu_detector_sep_apply(const gpu_detector_sep *g, const float *grid, int n, float *scratch,
                           float *out, cudaStream_t stream, gpu_check *chk)
{
    if (n < 1) return 0;
    sep_call c;
    memset(&c, 0, sizeof c);
    c.what = 1;
    c.src = SEP_FROM_GRID;
    c.in = grid;
    c.n = n;
    c.out = scratch;
    c.stream = stream;
    if (sep_dispatch(g, &c, chk)) return -1;
    return g->steps == 1 ? 0 : gpu_detector_sep_columns(g, scratch, n, out, stream, chk);
}

int gpu_detector_sep_rows_from_fields(const gpu_detector_sep *g, const cufftComplex *field,
                                      const float *scale, const gpu_pass_image *images, int nimages,
                                      int centred, float *rows, cudaStream_t stream, gpu_check *chk)
{
    if (nimages < 1) return 0;
    sep_call c;
    memset(&c, 0, sizeof c);
    c.what = 1;
    c.src = centred ? SEP_FROM_FIELDS_CENTRED : SEP_FROM_FIELDS;
    c.fs.field = (const float2 *)field;
    c.fs.scale = scale;
    c.fs.images = images;
    c.n = nimages;
    c.out = rows;
    c.stream = stream;
    return sep_dispatch(g, &c, chk);
}

int gpu_detector_sep_columns(const gpu_detector_sep *g, const float *rows, int n, float *out,
                             cudaStream_t stream, gpu_check *chk)
{
    if (n < 1) return 0;
    sep_call c;
    memset(&c, 0, sizeof c);
    c.what = 2;
    c.in = rows;
    c.n = n;
    c.out = out;
    c.stream = stream;
    return sep_dispatch(g, &c, chk);
}
