/* SPDX-License-Identifier: BSD-3-Clause */
/* psfsim --retrieve DATA.fits -c MODEL.cfg: phase retrieval (issue 28) by
 * libpsfsim's psfsim_retrieve (lib/psfsim.h), its results written beside
 * the set's other outputs (docs/config.md, "Command line"). */
#ifndef PSFSIM_RETRIEVE_COMMAND_H
#define PSFSIM_RETRIEVE_COMMAND_H

#include <stddef.h>

#include "optics/zernike.h"

/* What psfsim --retrieve was given (main.c copies it from the command
 * line: only the run's entry and main.c see cli.h). */
typedef struct {
    const char *config_path; /* -c MODEL.cfg */
    const char *output_dir;  /* -o DIR, NULL = the config's output.dir */
    const char *data;        /* --retrieve DATA.fits */
    const char *terms;       /* --terms LIST, NULL = "4-15" */
    int noise;               /* --noise: 0 uniform, 1 photon */
    double sigma, gain;      /* --sigma, --gain */
    int fit_background;      /* --fit-background */
    double opd_lambda;       /* --fit-opd-map L, 0 = the map not fitted */
    int quiet;               /* -q: nothing on stdout */
    int force;               /* --force: replace an earlier retrieval's files */
} retrieve_args;

/* Parse a term list, "4-15" or "4,5,7-11" (whole numbers j >= 0 written
 * in digits alone, ranges a-b with a <= b, each j once, at most max terms),
 * into j. Returns the count, or -1 with "--terms: WHY (got "LIST"); ..."
 * in err (an empty entry, "4,", ",4", "4,,5"; a range without its end,
 * "4-"; one that runs backwards, "5-4"; anything else). */
int retrieve_parse_terms(const char *list, int *j, int max, char *err, size_t errlen);

/* Check the n terms j parsed from list against the config's convention:
 * each an index of it (Noll and Fringe j >= 1, ANSI j >= 0, radial order
 * <= ZERNIKE_MAX_ORDER) and not piston (Noll and Fringe 1, ANSI 0), which
 * changes no intensity image: its gradient is 0 and the Fisher matrix
 * singular. Returns 0, or -1 with a message naming --terms, the list and
 * the first term fitted. */
int retrieve_check_terms(zernike_convention conv, const char *list, const int *j, int n, char *err,
                         size_t errlen);

/* The command: open the set of o->config_path (the CPU computes), read
 * o->data (a FITS cube of the set's K images of M x M, or one 2-D
 * image for a set of one), fit o->terms with o's noise model, flux per
 * image and, with --fit-background, a background per image; write to the
 * output directory (-o DIR, else the config's output.dir) NAME_retrieve.json
 * (the terms, coefficients, uncertainties, covariance, flux and background
 * with their uncertainties, chi2, dof, iterations, the loss history, the
 * options, the data file) and NAME_residuals.fits (a cube of the K
 * residual images data - fit, float32, its PLANES table the flux and
 * background per image); print the coefficients. Either file already in
 * the directory (whatever it is: a symbolic link too, which is never
 * followed) is refused before the fit unless o->force, as a set's files
 * are; with it the files are replaced by atomic renames, so a link at
 * their names is replaced, not written through. Returns the exit status:
 * 0, 2 (the config, the data, the options, files there without --force:
 * nothing written) or 3 (the fit or a file failed). */
int retrieve_command(const retrieve_args *o);

#endif
