/* SPDX-License-Identifier: BSD-3-Clause */
/* The MPI mode (issue 7): `mpirun -n K psfsim -c set.cfg` splits an image
 * set across K processes (ranks). This file is psfsim's one view of MPI:
 * start and end, the few collectives the run needs, and the split rule.
 * Built without MPI (PSFSIM_MPI=OFF, the default) every function is a stub
 * for a world of one process (rank 0 of 1), so callers need no #if.
 *
 * MPI is initialised only when a launcher started psfsim (mpirun, mpiexec,
 * srun: it sets OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK); psfsim run
 * directly is a plain single-process run even in an MPI build. Threads:
 * MPI_THREAD_FUNNELED; only the main thread calls MPI (the writer threads
 * and the GPU warm-up thread never do). Errors of MPI calls come back as
 * return codes (MPI_ERRORS_RETURN on MPI_COMM_WORLD) and become messages. */
#ifndef PSFSIM_MPI_RUN_H
#define PSFSIM_MPI_RUN_H

#include <stddef.h>

typedef struct {
    int active;     /* 1: MPI is initialised (built with MPI and launched by mpirun) */
    int rank, size; /* in MPI_COMM_WORLD; 0 and 1 for a plain run */
    int local_rank; /* rank among the processes on this host (MPI_COMM_TYPE_SHARED), */
    int local_size; /* and their number: the GPU choice, the default writer threads */
    char host[64];  /* this host's name (MPI_Get_processor_name), "" for a plain run */
} mpi_world;

/* Start MPI when a launcher started this process (see above), else fill w
 * for one process. argc/argv: main's, passed to MPI_Init_thread. Returns 0,
 * or -1 with err (MPI_Init_thread failed or gives less than FUNNELED). */
int mpi_world_start(int *argc, char ***argv, mpi_world *w, char *err, size_t errlen);

/* End MPI. clean = 1: MPI_Finalize (every rank must get here); clean = 0:
 * a rank that was interrupted (SIGTERM from mpirun when another rank died)
 * leaves without MPI_Finalize, which would wait for the dead rank. Returns
 * 0, or -1 with err. No-op for a plain run. */
int mpi_world_end(mpi_world *w, int clean, char *err, size_t errlen);

/* Collectives over every rank of w (no-ops, or a copy, for one process).
 * Each returns 0, or -1 with err naming the MPI call and MPI's message.
 *  mpi_max_int:  *v becomes the largest *v of all ranks (MPI_Allreduce).
 *  mpi_bcast:    n bytes at buf from rank 0 to every rank (MPI_Bcast;
 *                n may exceed INT_MAX: sent in pieces).
 *  mpi_gather:   each rank's n bytes at mine into all[rank * n ..] on rank 0
 *                (all: size * n bytes there; ignored on the other ranks).
 *                Raw bytes: the ranks must share one ABI (a homogeneous
 *                cluster), as every psfsim binary of one build does. */
int mpi_max_int(const mpi_world *w, int *v, char *err, size_t errlen);
int mpi_bcast(const mpi_world *w, void *buf, size_t n, char *err, size_t errlen);
int mpi_gather(const mpi_world *w, const void *mine, size_t n, void *all, char *err, size_t errlen);

/* The split: the images this run computes, T of them in index order (all,
 * or on --resume the missing ones), are cut into units of
 * U = min(MPI_SPLIT_UNIT, ceil(T / size)) images, n = ceil(T / U) units,
 * and rank r takes units floor(r n / size) .. floor((r + 1) n / size) - 1:
 * one contiguous block of whole units, the blocks differing by at most one
 * unit. Every rank gets work when T >= size * MPI_SPLIT_UNIT (and usually
 * well below that; a rank with no unit computes nothing). Sets *first (0-
 * based position in the T images) and *count of rank's block. */
#define MPI_SPLIT_UNIT 64 /* the CPU backend's batch; a GPU batch is 16 units */
void mpi_split(long long ntodo, int size, int rank, long long *first, long long *count);

/* U of the split above for ntodo images over size ranks (0 when there is
 * nothing to split). */
long long mpi_split_unit(long long ntodo, int size);

/* "Open MPI v4.1.4, ..." (MPI_Get_library_version, first line) into buf,
 * or NULL when built without MPI. */
const char *mpi_library(char *buf, size_t len);

#endif
