/* SPDX-License-Identifier: BSD-3-Clause */
/* LAPACK for the fit (lib/fit/fisher.c), loaded on first use rather than
 * linked: every process that loads libpsfsim (the command, Python) would
 * otherwise load the system's BLAS at start, and where that is OpenBLAS
 * (Debian's alternatives pick it when installed) its constructor starts a
 * thread pool in every psfsim run and, under an address-space limit
 * (ulimit -v), spins for ever in its buffer allocation (seen on the GPU
 * machine: `psfsim --version` never returned). Only a retrieval's Fisher
 * step now pays for it. */
#ifndef PSFSIM_LIB_FIT_LAPACK_H
#define PSFSIM_LIB_FIT_LAPACK_H

#include <stddef.h>

/* Column-major Cholesky factor and inverse of a symmetric positive
 * definite matrix (LAPACK's dpotrf and dpotri), and the BLAS products the
 * Fisher matrix is made of (dsyrk: C = alpha A^T A + beta C; dgemv: y =
 * alpha A^T x + beta y), from LAPACK's own BLAS (its dependency, found
 * through its handle): Fortran calling convention. */
typedef struct {
    void (*dpotrf)(const char *uplo, const int *n, double *a, const int *lda, int *info);
    void (*dpotri)(const char *uplo, const int *n, double *a, const int *lda, int *info);
    void (*dsyrk)(const char *uplo, const char *trans, const int *n, const int *k,
                  const double *alpha, const double *a, const int *lda, const double *beta,
                  double *c, const int *ldc);
    void (*dgemv)(const char *trans, const int *m, const int *n, const double *alpha,
                  const double *a, const int *lda, const double *x, const int *incx,
                  const double *beta, double *y, const int *incy);
} fit_lapack;

/* The routines of liblapack.so.3 (dlopen'ed once per process, kept
 * loaded). 0, or -1 with a message naming the library and dlerror()'s
 * reason in err (errlen bytes). Thread-safe. */
int fit_lapack_get(fit_lapack *out, char *err, size_t errlen);

#endif
