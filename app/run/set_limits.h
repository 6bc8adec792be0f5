/* SPDX-License-Identifier: BSD-3-Clause */
/* Limits checked before any work (issue 6): the host memory an image set
 * needs on the CPU backend, and the disk space and inodes its files need in
 * the output directory, each against what this machine has. psfsim refuses
 * a set that cannot fit (exit 2, nothing written) instead of failing hours
 * into it. The estimates are upper bounds built from what the code
 * allocates and writes (sources below); every figure is in bytes, 64-bit,
 * so no product of sizes can overflow (N <= 65536, at most 10^7 images:
 * the largest is 10^7 * 65536^2 * 4 ~ 1.7e20 > 2^64, hence the saturating
 * arithmetic). */
#ifndef PSFSIM_LIMITS_H
#define PSFSIM_LIMITS_H

#include <stddef.h>
#include <stdint.h>

#include "backend/bytes.h"
#include "app/run/set_limits_disk.h" /* the disk the files need: limits_disk */
#include "app/set/image_set.h"

/* What of the run the limits depend on (app/run/run.c fills it from the
 * command line): NULL stands for all zero. */
typedef struct {
    int writers; /* writer threads (--jobs); 0 = one per CPU */
    int force;   /* --force: the files of the set it replaces are reclaimed */
} limits_options;

/* Host memory of one run on the CPU backend, bytes (saturating at
 * UINT64_MAX). fft, pupils and the first part of scratch are the backend's
 * own figures (psf_backend_cpu.memory_need, cpu/backend.c). Terms, with N the FFT size, M the image
 * size, P the pupil grid (N, or n + 4 with the MFT), n the pupil samples, T the Zernike modes, W
 * the writer threads, B the images of one batch:
 *  - fft: the FFT's two complex float N x N buffers, 16 N^2 (cpu/plan_cache.c;
 *    none with the MFT), or with the MFT the twiddle tables (8 P M each,
 *    one per wavelength, at most 1 GiB + one table: cpu/backend.c), the
 *    pupil box 8 P^2 and the transform's scratch 8 P M + 8 M^2 (cpu/mft.c);
 *  - images: WRITER_SLOTS batches of B = min(CPU batch 64, 512 MiB / 4M^2,
 *    images to do), at least 1, of 4 M^2 bytes each (app/run/run_lanes.c);
 *  - pupils: per pupil pitch (one, or one per broadband wavelength) the
 *    open samples' index, transmission, T basis values and OPD, 4 bytes
 *    each, for at most min(P^2, (n + 2)^2) samples (cpu/pupil.c);
 *  - scratch: the aperture grid, with the resampled OPD map, while a pupil
 *    is built, 4 P^2 each (cpu/pupil.c), and the aperture grids the set
 *    keeps for the backend, 4 P^2 per pupil pitch up to 64 MiB
 *    (IMAGE_SET_GRIDS_BYTES, app/set/image_set.c);
 *  - writers: per writer thread the PNG levels 2 M^2 and 1 MiB for zlib,
 *    libpng and cfitsio state (app/formats/png_io.c, app/output/writer_pool.c);
 *  - hdf5: with output.hdf5, NAME.h5's writer: its queue, the module's
 *    stages and gzip buffers, the written flags and the uint16 levels
 *    (hdf5_writer_memory_need, app/dataset/hdf5_writer.h);
 *  - base: 64 MiB for the program, its libraries and FFTW's plans. */
typedef struct {
    unsigned long long fft, images, pupils, scratch, writers, base;
    unsigned long long hdf5; /* 0 without output.hdf5 */
    unsigned long long total;
    int batch;    /* B */
    int nwriters; /* W */
} limits_memory;

/* What the machine offers; 0 = unknown (that check is skipped). */
typedef struct {
    unsigned long long mem_physical;  /* sysconf(_SC_PHYS_PAGES) * page size */
    unsigned long long mem_available; /* /proc/meminfo MemAvailable */
    unsigned long long mem_cgroup;    /* cgroup memory.max - memory.current (v2; v1 alike) */
    unsigned long long mem_rlimit;    /* RLIMIT_AS (ulimit -v), when set */
    unsigned long long disk_free;     /* statvfs f_bavail * f_frsize (unknown: f_blocks = 0) */
    unsigned long long inodes_free;   /* statvfs f_favail (0: the file system has no limit) */
    unsigned long long block;         /* f_frsize, >= 512 */
    unsigned long long reclaim;       /* with --force: bytes of the old set's files, freed as
                                         the new ones replace them */
    unsigned long long hdf5_part;     /* with output.hdf5: bytes of NAME.h5's temp file, which
                                         the run continues (--resume) or replaces */
    char fs_path[4096];               /* the directory statvfs looked at: dir or its nearest
                                         existing ancestor */
} limits_machine;

/* The memory s needs with nwriters writer threads and todo images to
 * compute. No I/O. */
void limits_memory_need(const image_set *s, int nwriters, long long todo, limits_memory *m);

/* Fill mc from this machine: memory (sysconf, /proc/meminfo, the cgroup's
 * memory.max and memory.current or memory.limit_in_bytes and
 * memory.usage_in_bytes, getrlimit), and statvfs of dir or its nearest
 * existing ancestor; with force, reclaim sums the sizes of the files of
 * set cfg in dir (app/output/set_members.h: the ones --force replaces or
 * removes). Unreadable sources leave 0. */
void limits_probe(const char *dir, const psf_config *cfg, int force, limits_machine *mc);

/* Hold s to mc: returns 0, or -1 with one message in err when the memory
 * need exceeds the smallest known of mem_available (else mem_physical),
 * mem_cgroup and mem_rlimit, when the disk need exceeds disk_free +
 * reclaim + hdf5_part, or the files inodes_free, or (output.hdf5) when
 * one image is 4 GiB or more, more than an HDF5 chunk holds
 *   "defocus.cfg:9: output.npix: an image of 40000 x 40000 float32 is
 *    6.0 GiB, more than one HDF5 chunk holds (under 4 GiB): ...". The message gives both numbers
 * and names the config key the need comes from, as config errors do: "defocus.cfg:12:
 * sampling.pupil_samples: a 65536 x 65536 FFT grid needs 70.1 GiB of memory on the CPU backend
 * (...), more than this machine can give: 22.1 GiB available (MemAvailable) of 23.4 GiB physical"
 *   "defocus.cfg:20: sweep: 10000000 images of 256 x 256 (PNG 16-bit)
 *    need up to 1.2 TiB in out/x, but its file system (/) has 80.2 GiB
 *    free"
 * (key line from the config file; the directory as given). dir: the
 * output directory; o: the writer threads (o->force is limits_probe's, in
 * mc). todo: images this run computes. */
int limits_evaluate(const image_set *s, const char *dir, const limits_options *o, long long todo,
                    const limits_machine *mc, char *err, size_t errlen);

/* limits_probe (and, with output.hdf5, the size of NAME.h5's temp file
 * into hdf5_part) then limits_evaluate: the one call prepare() makes (after
 * image_set_init and outputs_check, before anything is written). */
int limits_check(const image_set *s, const char *dir, const limits_options *o, long long todo,
                 char *err, size_t errlen);

/* "1.5 GiB", "812.0 MiB", "4096 bytes": bytes in binary units, one
 * decimal. */
void limits_format_bytes(unsigned long long bytes, char *out, size_t outlen);

#endif
