/* SPDX-License-Identifier: BSD-3-Clause */
/* psfsim's command line. */
#ifndef PSFSIM_CLI_H
#define PSFSIM_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "app/config/config.h"
#include "app/select/gpu_list.h"

typedef struct {
    const char *config_path;   /* -c FILE */
    const char *output_dir;    /* -o DIR, NULL = the config's output.dir */
    backend_choice backend;    /* --backend */
    int backend_given;         /* --backend was on the command line */
    int force;                 /* --force: overwrite an existing image set */
    int quiet, verbose;        /* -q, -v */
    int help, version;         /* --help, --version */
    int probe;                 /* --probe: measure and report the backends */
    int resume;                /* --resume: compute only the images an earlier run did not finish */
    int jobs;                  /* -j: writer threads, 0 = one per CPU */
    gpu_list gpus;             /* --gpus: the GPUs to use (default all visible) */
    int gpus_given;            /* --gpus was on the command line */
    const char *draw_aperture; /* --draw-aperture FILE.png: draw the aperture and exit */
    /* --retrieve DATA.fits: phase retrieval of the config's set from the
     * measured images (app/retrieve/retrieve_command.h) */
    const char *retrieve;
    const char *terms;     /* --terms LIST: Noll/config j fitted ("4-15" when NULL) */
    int noise;             /* --noise: 0 uniform (default), 1 photon */
    double sigma;          /* --sigma S: uniform's pixel sigma, photon's read noise (0) */
    double gain;           /* --gain G: photon noise's photons per data unit (0: 1) */
    int fit_background;    /* --fit-background */
    double opd_lambda;     /* --fit-opd-map LAMBDA: fit the config's OPD map too, with
                              this regularisation (0: not fitted) */
    int retrieve_only_set; /* a --terms, --noise, --sigma, --gain or --fit-background given */
} cli_options;

/* Parse argv into o. Returns 0, or -1 with a message in err (unknown
 * option, missing argument, an empty -o, bad --backend, --jobs or --gpus
 * value, no -c).
 * --gpus applies when the GPU computes: with the CPU it is not used. */
int cli_parse(int argc, char **argv, cli_options *o, char *err, size_t errlen);

void cli_usage(FILE *f);

#endif
