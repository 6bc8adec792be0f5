/* SPDX-License-Identifier: BSD-3-Clause */
/* An example of libpsfsim (psfsim.h): open a config, say what the set is
 * and which backend computes it, compute every image into one buffer, and
 * print each image's parameters and Strehl ratio. Writes no file.
 *
 *   cc psfsim_example.c $(pkg-config --cflags --libs psfsim) -o psfsim_example
 *   ./psfsim_example share/psfsim/configs/defocus.cfg
 */
#include <psfsim.h>
#include <stdio.h>
#include <stdlib.h>

static int progress(long long done, long long total, void *user)
{
    (void)user;
    fprintf(stderr, "\r%lld / %lld images", done, total);
    return 0; /* non-zero would cancel */
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CONFIG\n", argv[0]);
        return 2;
    }
    char err[1024];
    psfsim_options options;
    psfsim_options_init(&options);
    options.backend = "cpu"; /* as --backend cpu; NULL: the config's */
    psfsim_set *set = NULL;
    int rc = psfsim_open_file(argv[1], &options, &set, err, sizeof err);
    if (rc != PSFSIM_OK) {
        fprintf(stderr, "psfsim_example: %s (%s)\n", err, psfsim_status_name(rc));
        return rc == PSFSIM_ERR_CONFIG ? 2 : 3;
    }
    psfsim_info info;
    psfsim_decision decision;
    psfsim_describe(set, &info, NULL, 0);
    psfsim_decision_get(set, &decision, NULL, 0);
    printf("%s: %lld image(s) of %d x %d; %s\n", info.name, info.count, info.npix, info.npix,
           decision.reason);

    size_t n = (size_t)info.count * info.npix * info.npix;
    float *images = malloc(n * sizeof *images);
    psfsim_metrics *metrics = malloc((size_t)info.count * sizeof *metrics);
    psfsim_params *params = malloc((size_t)info.count * sizeof *params);
    if (!images || !metrics || !params) {
        fprintf(stderr, "psfsim_example: out of memory\n");
        return 3;
    }
    psfsim_set_progress(set, progress, NULL);
    rc = psfsim_compute(set, 0, info.count, images, n, metrics, err, sizeof err);
    fputc('\n', stderr);
    if (rc == PSFSIM_OK) rc = psfsim_params_get(set, 0, info.count, params, err, sizeof err);
    if (rc != PSFSIM_OK) {
        fprintf(stderr, "psfsim_example: %s\n", err);
        return 3;
    }
    printf("index,wavelength_nm,defocus,focus_shift_um,pixel_scale_arcsec,strehl,backend\n");
    for (long long k = 0; k < info.count; ++k)
        printf("%lld,%g,%g,%g,%.6g,%.6f,%s\n", k, params[k].wavelength_nm, params[k].defocus,
               params[k].focus_shift_um, params[k].pixel_scale_arcsec, metrics[k].strehl,
               metrics[k].backend);
    /* Image k's pixel (row, column) is images[(k * npix + row) * npix + column]. */
    size_t axis = (size_t)(info.npix / 2) * info.npix + info.npix / 2;
    printf("image 0 at the axis: %.6g\n", images[axis]);
    free(images);
    free(metrics);
    free(params);
    psfsim_close(set);
    return 0;
}
