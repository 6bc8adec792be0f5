/* SPDX-License-Identifier: BSD-3-Clause */
/* fit_lapack_get (lib/fit/lapack.h): liblapack.so.3 by dlopen, once. */
#include "lib/fit/lapack.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Debian's soname of LAPACK (liblapack3, or an alternative providing it). */
#define FIT_LAPACK_SONAME "liblapack.so.3"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static fit_lapack loaded;
static char why[256];

static void load(void)
{
    void *h = dlopen(FIT_LAPACK_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, sizeof why, "%s", dlerror());
        return;
    }
    /* POSIX dlsym returns void *; a function pointer is converted via memcpy. */
    void *f = dlsym(h, "dpotrf_"), *g = dlsym(h, "dpotri_"), *k = dlsym(h, "dsyrk_"),
         *v = dlsym(h, "dgemv_");
    if (!f || !g || !k || !v) {
        snprintf(why, sizeof why, "no dpotrf_, dpotri_, dsyrk_ or dgemv_ in it or its BLAS");
        return; /* kept loaded: unloading a BLAS with threads is unsafe */
    }
    memcpy(&loaded.dpotrf, &f, sizeof f);
    memcpy(&loaded.dpotri, &g, sizeof g);
    memcpy(&loaded.dsyrk, &k, sizeof k);
    memcpy(&loaded.dgemv, &v, sizeof v);
}

int fit_lapack_get(fit_lapack *out, char *err, size_t errlen)
{
    pthread_once(&once, load);
    if (!loaded.dpotrf) {
        snprintf(err, errlen, "cannot load LAPACK (%s, Debian liblapack3): %s", FIT_LAPACK_SONAME,
                 why);
        return -1;
    }
    *out = loaded;
    return 0;
}
