/* SPDX-License-Identifier: BSD-3-Clause */
/* psfsim: point-spread-function images from a config file. */
#include <stdio.h>

#include <fftw3.h>

#include "app/run/cli.h"
#include "app/run/draw_aperture.h"
#include "app/base/interrupt.h"
#include "app/base/log.h"
#include "app/select/probe_report.h"
#include "app/select/gpu.h"
#include "app/run/mpi_run.h"
#include "app/run/run.h"
#include "app/retrieve/retrieve_command.h"

static void print_version(void)
{
    char gpu[128], detail[1024];
    gpu_module_describe(gpu, sizeof gpu, detail, sizeof detail);
    printf("psfsim %s (CPU: FFTW3; %s)\n", PSFSIM_VERSION, gpu);
    if (detail[0]) printf("%s\n", detail);
    char cufft[128];
    printf("FFTW: %s\ncuFFT: %s\n", fftwf_version,
           gpu_module_cufft(1, cufft, sizeof cufft) ? cufft : "not loaded");
    char lib[128];
    if (mpi_library(lib, sizeof lib)) printf("MPI: %s (mpirun -n K psfsim splits a set)\n", lib);
}

int main(int argc, char **argv)
{
    cli_options o;
    char err[512];
    if (cli_parse(argc, argv, &o, err, sizeof err) != 0) {
        fprintf(stderr, "psfsim: %s\n", err);
        fputs("Try 'psfsim --help'.\n", stderr);
        return 2;
    }
    if (o.help) {
        cli_usage(stdout);
        return 0;
    }
    if (o.version) {
        print_version();
        return 0;
    }
    log_set_level(o.quiet ? LOG_ERROR : o.verbose ? LOG_INFO : LOG_WARN);
    if (o.probe) return probe_command(o.output_dir ? o.output_dir : ".");
    if (o.draw_aperture) return draw_aperture_command(o.config_path, o.draw_aperture);
    if (o.retrieve) {
        retrieve_args ra = {.config_path = o.config_path,
                            .output_dir = o.output_dir,
                            .data = o.retrieve,
                            .terms = o.terms,
                            .noise = o.noise,
                            .sigma = o.sigma,
                            .gain = o.gain,
                            .fit_background = o.fit_background,
                            .opd_lambda = o.opd_lambda,
                            .quiet = o.quiet,
                            .force = o.force};
        return retrieve_command(&ra);
    }
    mpi_world w; /* MPI only when mpirun started psfsim (app/run/mpi_run.h) */
    if (mpi_world_start(&argc, &argv, &w, err, sizeof err) != 0) {
        fprintf(stderr, "psfsim: %s\n", err);
        return 3;
    }
    interrupt_install(); /* before the config loads (psfsim_run installs it again: harmless) */
    int status = psfsim_run(&o, &w);
    /* A signal before the run started stopped the load or the checks
     * (exit 2, nothing written): it is an interruption all the same. */
    if (status == 2 && interrupt_pending()) status = 130;
    /* An interrupted rank leaves without MPI_Finalize: another may be dead. */
    if (mpi_world_end(&w, !interrupt_pending(), err, sizeof err) != 0) {
        fprintf(stderr, "psfsim: %s\n", err);
        if (status == 0) status = 3;
    }
    return status;
}
