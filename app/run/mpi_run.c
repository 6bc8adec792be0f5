/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/run/mpi_run.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long long mpi_split_unit(long long ntodo, int size)
{
    if (ntodo <= 0 || size < 1) return 0;
    long long unit = (ntodo + size - 1) / size;
    return unit > MPI_SPLIT_UNIT ? MPI_SPLIT_UNIT : unit;
}

void mpi_split(long long ntodo, int size, int rank, long long *first, long long *count)
{
    *first = *count = 0;
    if (ntodo <= 0 || size < 1 || rank < 0 || rank >= size) return;
    long long unit = mpi_split_unit(ntodo, size);
    long long nunits = (ntodo + unit - 1) / unit;
    long long u0 = (long long)rank * nunits / size, u1 = (long long)(rank + 1) * nunits / size;
    long long b = u0 * unit, e = u1 * unit;
    if (e > ntodo) e = ntodo;
    if (b > e) b = e;
    *first = b;
    *count = e - b;
}

#ifdef PSFSIM_HAVE_MPI
#include <mpi.h>

/* err = "what: MPI's message" when rc is not MPI_SUCCESS. Returns 0 or -1. */
static int check(int rc, const char *what, char *err, size_t errlen)
{
    if (rc == MPI_SUCCESS) return 0;
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error %d", rc);
    snprintf(err, errlen, "%s failed: %s", what, msg);
    return -1;
}

static int launched_by_mpirun(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

int mpi_world_start(int *argc, char ***argv, mpi_world *w, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    w->size = w->local_size = 1;
    if (!launched_by_mpirun()) return 0;
    int provided = 0;
    if (check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread", err,
              errlen) != 0)
        return -1;
    w->active = 1;
    if (provided < MPI_THREAD_FUNNELED) {
        snprintf(err, errlen, "MPI_Init_thread: the MPI library gives no MPI_THREAD_FUNNELED");
        return -1;
    }
    if (check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler",
              err, errlen) != 0 ||
        check(MPI_Comm_rank(MPI_COMM_WORLD, &w->rank), "MPI_Comm_rank", err, errlen) != 0 ||
        check(MPI_Comm_size(MPI_COMM_WORLD, &w->size), "MPI_Comm_size", err, errlen) != 0)
        return -1;
    MPI_Comm local;
    if (check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w->rank, MPI_INFO_NULL,
                                  &local),
              "MPI_Comm_split_type", err, errlen) != 0)
        return -1;
    int rc = check(MPI_Comm_rank(local, &w->local_rank), "MPI_Comm_rank", err, errlen);
    if (rc == 0) rc = check(MPI_Comm_size(local, &w->local_size), "MPI_Comm_size", err, errlen);
    if (check(MPI_Comm_free(&local), "MPI_Comm_free", err, errlen) != 0) rc = -1;
    if (rc != 0) return -1;
    char host[MPI_MAX_PROCESSOR_NAME] = "";
    int len = 0;
    if (check(MPI_Get_processor_name(host, &len), "MPI_Get_processor_name", err, errlen) != 0)
        return -1;
    snprintf(w->host, sizeof w->host, "%s", host);
    return 0;
}

int mpi_world_end(mpi_world *w, int clean, char *err, size_t errlen)
{
    if (!w->active) return 0;
    w->active = 0;
    if (!clean) return 0;
    return check(MPI_Finalize(), "MPI_Finalize", err, errlen);
}

int mpi_max_int(const mpi_world *w, int *v, char *err, size_t errlen)
{
    if (!w || !w->active) return 0;
    int in = *v;
    return check(MPI_Allreduce(&in, v, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce", err,
                 errlen);
}

int mpi_bcast(const mpi_world *w, void *buf, size_t n, char *err, size_t errlen)
{
    if (!w || !w->active) return 0;
    for (size_t off = 0; off < n;) {
        size_t piece = n - off > (size_t)INT_MAX ? (size_t)INT_MAX : n - off;
        if (check(MPI_Bcast((char *)buf + off, (int)piece, MPI_BYTE, 0, MPI_COMM_WORLD),
                  "MPI_Bcast", err, errlen) != 0)
            return -1;
        off += piece;
    }
    return 0;
}

int mpi_gather(const mpi_world *w, const void *mine, size_t n, void *all, char *err, size_t errlen)
{
    if (!w || !w->active) {
        memcpy(all, mine, n);
        return 0;
    }
    if (n > (size_t)INT_MAX) {
        snprintf(err, errlen, "MPI_Gather: %zu bytes per rank is too many", n);
        return -1;
    }
    return check(MPI_Gather(mine, (int)n, MPI_BYTE, all, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD),
                 "MPI_Gather", err, errlen);
}

const char *mpi_library(char *buf, size_t len)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int n = 0;
    if (MPI_Get_library_version(v, &n) != MPI_SUCCESS) snprintf(v, sizeof v, "MPI");
    v[strcspn(v, ",\n")] = '\0';
    snprintf(buf, len, "%s", v);
    return buf;
}

#else /* built without MPI: a world of one process */

int mpi_world_start(int *argc, char ***argv, mpi_world *w, char *err, size_t errlen)
{
    (void)argc, (void)argv, (void)err, (void)errlen;
    memset(w, 0, sizeof *w);
    w->size = w->local_size = 1;
    return 0;
}

int mpi_world_end(mpi_world *w, int clean, char *err, size_t errlen)
{
    (void)w, (void)clean, (void)err, (void)errlen;
    return 0;
}

int mpi_max_int(const mpi_world *w, int *v, char *err, size_t errlen)
{
    (void)w, (void)v, (void)err, (void)errlen;
    return 0;
}

int mpi_bcast(const mpi_world *w, void *buf, size_t n, char *err, size_t errlen)
{
    (void)w, (void)buf, (void)n, (void)err, (void)errlen;
    return 0;
}

int mpi_gather(const mpi_world *w, const void *mine, size_t n, void *all, char *err, size_t errlen)
{
    (void)w, (void)err, (void)errlen;
    memcpy(all, mine, n);
    return 0;
}

const char *mpi_library(char *buf, size_t len)
{
    (void)buf, (void)len;
    return NULL;
}

#endif
