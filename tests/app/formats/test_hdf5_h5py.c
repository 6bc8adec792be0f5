/* SPDX-License-Identifier: BSD-3-Clause */
/* The HDF5 sets as h5py reads them: writes two small sets (float32 with
 * gzip, uint16 without) and runs tests/app/formats/h5_read.py on them,
 * which checks shapes, dtypes, chunks, filters, attributes, labels and
 * values with h5py and NumPy. Exit 77 (skipped) when no python3 imports
 * both. */
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app/formats/h5set.h"
#include "tests/support/testutil.h"

extern char **environ;

enum { K = 37, M = 16, J = 3, NCOL = 7 };

/* Image k, pixel (y, x) = k * 1000 + y * M + x (exact in float32); uint16:
 * (k * 256 + y * M + x) mod 65536. Labels follow from k (h5_read.py). */
static int write_set(const char *path, h5set_dtype dtype, int gzip, char *err, size_t errlen)
{
    static const int noll[J] = {4, 5, 6};
    static const h5set_column cols[NCOL] = {
        {.name = "wavelength_nm", .type = H5SET_DOUBLE, .units = "nm"},
        {.name = "defocus", .type = H5SET_DOUBLE, .units = "waves"},
        {.name = "focus_shift_um", .type = H5SET_DOUBLE, .units = "um"},
        {.name = "strehl", .type = H5SET_DOUBLE, .description = "Strehl ratio"},
        {.name = "axial_intensity", .type = H5SET_DOUBLE},
        {.name = "backend", .type = H5SET_STRING, .width = 8},
        {.name = "draw", .type = H5SET_INT64, .description = "draw index"},
    };
    static const h5set_attr attrs[] = {
        {.key = "pixel_scale_lod", .type = H5SET_DOUBLE, .d = 0.5},
        {.key = "conventions", .type = H5SET_STRING, .s = "images[k, y, x]; row 0 first"},
        {.key = "psfsim_version", .type = H5SET_STRING, .s = "0.1.0"},
        {.key = "nwavelengths", .type = H5SET_INT64, .i = 1},
        {.object = "images", .key = "units", .type = H5SET_STRING, .s = "peak = 1"},
    };
    h5set_params p = {.dir_fd = AT_FDCWD,
                      .name = path,
                      .nimages = K,
                      .npix = M,
                      .dtype = dtype,
                      .gzip = gzip,
                      .chunk_images = gzip ? 8 : 0,
                      .nzernike = J,
                      .noll_j = noll,
                      .zernike_units = "waves",
                      .ncolumns = NCOL,
                      .columns = cols,
                      .nattrs = sizeof attrs / sizeof *attrs,
                      .attrs = attrs,
                      .resume_key = "e2e"};
    static float f[K * M * M];
    static uint16_t u[K * M * M];
    static double z[K * J], d[5][K];
    static int64_t draw[K];
    static const char *backend[K];
    for (int k = 0; k < K; ++k) {
        for (int i = 0; i < M * M; ++i) {
            f[k * M * M + i] = (float)(k * 1000 + i);
            u[k * M * M + i] = (uint16_t)(k * 256 + i);
        }
        for (int j = 0; j < J; ++j)
            z[k * J + j] = 0.01 * k + j;
        d[0][k] = 500 + k, d[1][k] = 0.1 * k, d[2][k] = -2.0 * k, d[3][k] = 1.0 / (k + 1);
        d[4][k] = 100.0 * k;
        draw[k] = 10 * k;
        backend[k] = k % 2 ? "gpu" : "cpu";
    }
    h5set *s = h5set_open(&p, H5SET_NEW, NULL, err, errlen);
    for (int k = 0; s && k < K; k += 10) {
        int n = K - k < 10 ? K - k : 10;
        const void *c[NCOL] = {&d[0][k], &d[1][k],    &d[2][k], &d[3][k],
                               &d[4][k], &backend[k], &draw[k]};
        h5set_rows rows = {.images = dtype == H5SET_FLOAT32 ? (const void *)&f[k * M * M]
                                                            : (const void *)&u[k * M * M],
                           .zernike = &z[k * J],
                           .columns = c};
        if (h5set_write(s, k, n, &rows, err, errlen)) {
            h5set_close(s, H5SET_DISCARD, NULL, 0);
            return -1;
        }
    }
    return s ? h5set_close(s, H5SET_COMPLETE, err, errlen) : -1;
}

/* Run argv; its exit status, or -1. quiet: output to /dev/null. */
static int run(char *const argv[], int quiet)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (quiet) {
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    }
    pid_t pid;
    int st, rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0 || waitpid(pid, &st, 0) != pid) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(void)
{
    char *dir = tu_mkdtemp("h5py");
    char f32[4096], u16[4096], script[4096], err[512] = "";
    snprintf(f32, sizeof f32, "%s/f32.h5", dir);
    snprintf(u16, sizeof u16, "%s/u16.h5", dir);
    snprintf(script, sizeof script, "%s/tests/app/formats/h5_read.py", tu_source_dir());
    if (write_set(f32, H5SET_FLOAT32, 4, err, sizeof err) ||
        write_set(u16, H5SET_UINT16, 0, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        tu_rmtree(dir);
        free(dir);
        return 1;
    }
    /* $PSFSIM_PYTHON, the python3 on PATH, else the system's (where the
     * distribution's python3-h5py is, when PATH leads to another python). */
    const char *env = getenv("PSFSIM_PYTHON");
    const char *pythons[] = {env && *env ? env : "python3", "python3", "/usr/bin/python3"};
    int rc = 77;
    for (size_t i = 0; i < sizeof pythons / sizeof *pythons && rc == 77; ++i) {
        char *probe[] = {(char *)pythons[i], "-c", "import h5py, numpy", NULL};
        if (run(probe, 1) != 0) continue;
        char *check[] = {(char *)pythons[i], script, f32, u16, NULL};
        rc = run(check, 0);
    }
    if (rc == 77) printf("skipped: no python3 imports h5py and numpy\n");
    tu_rmtree(dir);
    free(dir);
    return rc;
}
