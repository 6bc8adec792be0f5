/* SPDX-License-Identifier: BSD-3-Clause */
/* The probe's figures cached per machine in $PSFSIM_CACHE_DIR, else
 * $XDG_CACHE_HOME/psfsim, else ~/.cache/psfsim (XDG Base Directory spec),
 * as a small "key value" text file written atomically. The machine key is
 * read without initialising CUDA or asking the driver: the GPUs the driver
 * lists (/proc/driver/nvidia/gpus) by their PCI ids and address (sysfs),
 * the driver's version (/sys/module/nvidia/version),
 * CUDA runtime and cuFFT versions compiled in, FFTW's version, the CPU
 * model and thread count, and CUDA_VISIBLE_DEVICES (the devices the
 * probe counted and compared). A different key, a corrupt or truncated file:
 * the cache misses and psfsim probes again. */
#ifndef PSFSIM_PROBE_CACHE_H
#define PSFSIM_PROBE_CACHE_H

#include <stddef.h>

#include "app/select/probe.h"

#define MACHINE_KEY_FIELDS 9

typedef struct {
    /* gpus, driver, cudart, cufft, fftw, cpu, threads, psfsim, visible */
    char value[MACHINE_KEY_FIELDS][256];
    int gpu_present; /* /proc/driver/nvidia lists a GPU (or /dev/nvidia0 exists) */
} machine_key;

/* Read this machine's key (no CUDA call). */
void machine_key_read(machine_key *k);

/* The cache directory (see above) into buf. Returns buf, or NULL when no
 * place can be named (no HOME). */
const char *probe_cache_dir(char *buf, size_t len);

/* The cache directory, created if need be, for the backends to keep what
 * they learn about this machine (psf_backend_options.cache_dir: the CPU's
 * measured FFT plans, made once per machine): buf, or NULL when it cannot
 * be named or made (the backends then keep nothing). */
const char *probe_cache_dir_made(char *buf, size_t len);

/* Load the cached figures for key from dir/probe.txt, read as
 * backend/cache_file.h says (at most 1 MiB, never blocking on a FIFO or
 * device, never through a symbolic link). Returns 0 on a hit; -1 on a miss
 * with the reason in why (no file, other machine, corrupt); a file that is
 * there but cannot be read so is also said as a warning naming it. */
int probe_cache_load(const char *dir, const machine_key *k, probe_figures *f, char *why,
                     size_t whylen);

/* Store f for key in dir/probe.txt (creating dir), atomically. Returns 0,
 * or -1 with err (unwritable directory...). */
int probe_cache_store(const char *dir, const machine_key *k, const probe_figures *f, char *err,
                      size_t errlen);

#endif
