/* SPDX-License-Identifier: BSD-3-Clause */
/* Device outputs (lib/psfsim.h, psfsim_compute_device; API version 3):
 * images computed into CUDA device memory are the bits psfsim_compute and
 * psfsim_compute_u16 give on the host; host memory, a bad dtype, a short
 * buffer and a range outside the set are refused with nothing written.
 * Without a usable GPU the refusal itself is checked (PSFSIM_ERR_BACKEND)
 * and the device cases skip (77). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/psfsim.h"

#define SET                                                                                        \
    "name = \"dev\";\n"                                                                            \
    "optics: { wavelength_nm = 550.0; f_number = 10.0;\n"                                          \
    "  aperture: { diameter_m = 1.0; obscuration = 0.2; }; };\n"                                   \
    "sampling: { pupil_samples = 32; padding = 2.0; };\n"                                          \
    "sweep: { random: { count = 40; seed = 3; zernike = ( (4, \"normal\", 0.05),\n"                \
    "  (7, \"uniform\", 0.03) ); }; };\n"

#define K 40
#define M 64
#define N ((size_t)K * M * M)

static psfsim_set *open_set(const char *backend)
{
    psfsim_options o;
    psfsim_options_init(&o);
    o.backend = backend;
    psfsim_set *s = NULL;
    char err[1024];
    int rc = psfsim_open_text(SET, &o, &s, err, sizeof err);
    if (rc != PSFSIM_OK) fail_msg("open: %s", err);
    return s;
}

/* Device memory for the tests, or NULL (then the device cases skip). */
static void *device_buffer(size_t bytes)
{
    char err[512];
    return psfsim_device_alloc(0, bytes, err, sizeof err);
}

static void test_refused_without_gpu(void **state)
{
    (void)state;
    void *probe = device_buffer(16);
    if (probe) {
        psfsim_device_free(0, probe);
        skip(); /* a GPU is here: the device cases run */
    }
    psfsim_set *s = open_set("cpu");
    char err[512] = "";
    float host[M * M];
    int rc = psfsim_compute_device(s, 0, 1, PSFSIM_FLOAT32, host, M * M, NULL, err, sizeof err);
    /* no module (a CPU-only build): BACKEND; a module without a device:
     * the pointer query's CUDA error or BACKEND */
    assert_true(rc == PSFSIM_ERR_BACKEND || rc == PSFSIM_ERR_COMPUTE || rc == PSFSIM_ERR_ARGUMENT);
    assert_true(err[0] != '\0');
    int kind = -1;
    rc = psfsim_device_pointer(host, &kind, NULL, err, sizeof err);
    assert_true(rc != PSFSIM_OK || kind == 0);
    psfsim_close(s);
}

/* The set's images on the device against the host's, float32 and uint16,
 * on the backend named. */
static void device_equals_host(const char *backend)
{
    float *dev = device_buffer(N * sizeof(float));
    if (!dev) skip();
    psfsim_set *s = open_set(backend);
    char err[1024];
    float *host = malloc(N * sizeof *host), *back = malloc(N * sizeof *back);
    uint16_t *host16 = malloc(N * sizeof *host16), *back16 = malloc(N * sizeof *back16);
    assert_non_null(host && back && host16 && back16);
    assert_int_equal(psfsim_compute(s, 0, K, host, N, NULL, err, sizeof err), PSFSIM_OK);
    assert_int_equal(psfsim_compute_device(s, 0, K, PSFSIM_FLOAT32, dev, N, NULL, err, sizeof err),
                     PSFSIM_OK);
    assert_int_equal(psfsim_device_copy(0, back, dev, N * sizeof *back, err, sizeof err),
                     PSFSIM_OK);
    assert_memory_equal(back, host, N * sizeof *host);
    /* a range: images [5, 9) at the buffer's start */
    assert_int_equal(psfsim_compute_device(s, 5, 4, PSFSIM_FLOAT32, dev, N, NULL, err, sizeof err),
                     PSFSIM_OK);
    assert_int_equal(psfsim_device_copy(0, back, dev, 4 * M * M * sizeof *back, err, sizeof err),
                     PSFSIM_OK);
    assert_memory_equal(back, host + 5 * M * M, 4 * M * M * sizeof *host);
    assert_int_equal(psfsim_compute_u16(s, 0, K, host16, N, NULL, err, sizeof err), PSFSIM_OK);
    assert_int_equal(psfsim_compute_device(s, 0, K, PSFSIM_UINT16, dev, N, NULL, err, sizeof err),
                     PSFSIM_OK);
    assert_int_equal(psfsim_device_copy(0, back16, dev, N * sizeof *back16, err, sizeof err),
                     PSFSIM_OK);
    assert_memory_equal(back16, host16, N * sizeof *host16);
    int kind = -1, device = -1;
    assert_int_equal(psfsim_device_pointer(dev, &kind, &device, err, sizeof err), PSFSIM_OK);
    assert_int_equal(kind, 1);
    assert_int_equal(device, 0);
    free(host);
    free(back);
    free(host16);
    free(back16);
    psfsim_close(s);
    psfsim_device_free(0, dev);
}

static void test_gpu_device_equals_host(void **state)
{
    (void)state;
    device_equals_host("gpu");
}

static void test_cpu_device_equals_host(void **state)
{
    (void)state;
    device_equals_host("cpu");
}

/* Refusals write nothing: the device buffer keeps its sentinel bytes. */
static void test_refusals(void **state)
{
    (void)state;
    float *dev = device_buffer(N * sizeof(float));
    if (!dev) skip();
    psfsim_set *s = open_set("gpu");
    char err[1024];
    float *sentinel = malloc(N * sizeof *sentinel), *back = malloc(N * sizeof *back);
    assert_non_null(sentinel && back);
    for (size_t i = 0; i < N; ++i)
        sentinel[i] = -7.0f;
    assert_int_equal(psfsim_device_copy(0, dev, sentinel, N * sizeof *dev, err, sizeof err),
                     PSFSIM_OK);
    assert_int_equal(psfsim_compute_device(s, 0, K, 7, dev, N, NULL, err, sizeof err),
                     PSFSIM_ERR_ARGUMENT);
    assert_non_null(strstr(err, "dtype 7"));
    assert_int_equal(/* double: psfsim_vjp_device's only */
                     psfsim_compute_device(s, 0, K, PSFSIM_FLOAT64, dev, N, NULL, err, sizeof err),
                     PSFSIM_ERR_ARGUMENT);
    assert_non_null(strstr(err, "dtype 2"));
    assert_int_equal(
        psfsim_compute_device(s, 0, K, PSFSIM_FLOAT32, sentinel, N, NULL, err, sizeof err),
        PSFSIM_ERR_ARGUMENT);
    assert_non_null(strstr(err, "not CUDA device memory"));
    assert_int_equal(
        psfsim_compute_device(s, 0, K, PSFSIM_FLOAT32, dev, N - 1, NULL, err, sizeof err),
        PSFSIM_ERR_BUFFER);
    assert_int_equal(
        psfsim_compute_device(s, 30, 11, PSFSIM_FLOAT32, dev, N, NULL, err, sizeof err),
        PSFSIM_ERR_RANGE);
    assert_int_equal(psfsim_device_copy(0, back, dev, N * sizeof *back, err, sizeof err),
                     PSFSIM_OK);
    assert_memory_equal(back, sentinel, N * sizeof *back);
    free(sentinel);
    free(back);
    psfsim_close(s);
    psfsim_device_free(0, dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused_without_gpu),
        cmocka_unit_test(test_gpu_device_equals_host),
        cmocka_unit_test(test_cpu_device_equals_host),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
