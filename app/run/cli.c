/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/run/cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "app/base/text_shown.h"

void cli_usage(FILE *f)
{
    fputs("usage: psfsim -c FILE [-o DIR] [--backend auto|cpu|gpu] [--gpus all|LIST]\n"
          "              [--force|--resume] [-j N] [-q|-v]\n"
          "       psfsim -c FILE --draw-aperture PNG\n"
          "       psfsim -c FILE --retrieve DATA.fits [--terms LIST] [--noise uniform|photon]\n"
          "              [--sigma S] [--gain G] [--fit-background] [--fit-opd-map L]\n"
          "              [-o DIR] [--force] [-q|-v]\n"
          "       psfsim --probe [-o DIR]\n"
          "       psfsim --help | --version\n"
          "\n"
          "Computes the point-spread-function images that the config FILE describes\n"
          "and writes them, with a manifest and a timing log, to the config's\n"
          "output.dir (or DIR).\n"
          "\n"
          "  -c, --config FILE   config file (libconfig syntax; see the README); - reads\n"
          "                      standard input\n"
          "  -o, --output DIR    output directory, overriding output.dir\n"
          "  -b, --backend NAME  auto (default: the faster one), cpu or gpu\n"
          "  -g, --gpus LIST     the GPUs to share the set: all (default) or device\n"
          "                      indices such as 0,2 (after CUDA_VISIBLE_DEVICES)\n"
          "  -f, --force         overwrite an existing image set (with --retrieve: an\n"
          "                      earlier retrieval's NAME_retrieve.json and\n"
          "                      NAME_residuals.fits)\n"
          "  -r, --resume        finish an interrupted set: compute only the images its\n"
          "                      manifest does not list\n"
          "  -j, --jobs N        writer threads (PNG/FITS encoding; default: one per CPU)\n"
          "  -q, --quiet         errors only\n"
          "  -v, --verbose       progress and backend decisions on stderr\n"
          "      --probe         measure CPU and GPU on this machine, print the table and\n"
          "                      crossover, write psfsim_probe.csv/.png to DIR (default .)\n"
          "                      and refresh the cache auto uses\n"
          "      --draw-aperture PNG  write the config's sampled aperture transmission\n"
          "                      (pupil_samples square, 8-bit grey; segment numbers at\n"
          "                      their centres when built with cairo) to PNG and exit\n"
          "      --retrieve DATA.fits  phase retrieval: fit Zernike terms to the measured\n"
          "                      images of DATA.fits (a cube of the set's K images, M x M,\n"
          "                      the diversity the config's sweep); writes\n"
          "                      NAME_retrieve.json and NAME_residuals.fits to DIR\n"
          "      --terms LIST    the terms fitted, j of the config's convention: 4-15\n"
          "                      (default), 4,5,7-11; not piston (Noll 1, ANSI 0)\n"
          "      --noise NAME    the weights: uniform (default: variance S^2, S = --sigma\n"
          "                      or 1) or photon (variance model/G + S^2: G = --gain,\n"
          "                      photons per data unit, default 1; S the read noise)\n"
          "      --fit-background  fit a background per image (a flux per image always)\n"
          "      --fit-opd-map L  fit the config's aberrations.opd_map too (added to it),\n"
          "                      regularised by L/2 x the sum of its squared values\n"
          "  -h, --help          this text\n"
          "  -V, --version       version and build options\n"
          "\n"
          "Exit status: 0 all images written; 2 usage or config error (nothing\n"
          "written); 3 run-time failure (the manifest lists the images written);\n"
          "130 interrupted (the manifest lists the images written; --resume finishes;\n"
          "while the config loads: nothing written).\n",
          f);
}

static int parse_backend(const char *s, backend_choice *b)
{
    if (!strcmp(s, "auto"))
        *b = BACKEND_AUTO;
    else if (!strcmp(s, "cpu"))
        *b = BACKEND_CPU;
    else if (!strcmp(s, "gpu"))
        *b = BACKEND_GPU;
    else
        return -1;
    return 0;
}

/* s as a message shows it (text_shown.h), at most 200 bytes. Returns buf. */
static const char *shown(const char *s, char *buf, size_t len)
{
    return text_shown(s, 200, buf, len);
}

/* "-z: unknown option" for a short option, named alone even inside a
 * cluster (-qz, where getopt leaves optind on the cluster), or the whole
 * element for a long one ("--frob", "--force=1"). */
static void unknown_option(int argc, char **argv, char *err, size_t errlen)
{
    char arg[256];
    const char *cur = optind < argc ? argv[optind] : NULL; /* a cluster still being read */
    const char *prev = optind > 0 ? argv[optind - 1] : "";
    int in_cluster = optopt > 0 && cur && cur[0] == '-' && cur[1] != '-' && strchr(cur + 1, optopt);
    if (in_cluster || (optopt > 0 && !(prev[0] == '-' && prev[1] == '-'))) {
        char opt[2] = {(char)optopt, '\0'};
        snprintf(err, errlen, "-%s: unknown option", shown(opt, arg, sizeof arg));
    } else {
        snprintf(err, errlen, "%s: unknown option", shown(prev, arg, sizeof arg));
    }
}

int cli_parse(int argc, char **argv, cli_options *o, char *err, size_t errlen)
{
    char arg[256];
    static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
                                             {"output", required_argument, NULL, 'o'},
                                             {"backend", required_argument, NULL, 'b'},
                                             {"force", no_argument, NULL, 'f'},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"verbose", no_argument, NULL, 'v'},
                                             {"help", no_argument, NULL, 'h'},
                                             {"version", no_argument, NULL, 'V'},
                                             {"probe", no_argument, NULL, 'P'},
                                             {"resume", no_argument, NULL, 'r'},
                                             {"jobs", required_argument, NULL, 'j'},
                                             {"gpus", required_argument, NULL, 'g'},
                                             {"draw-aperture", required_argument, NULL, 'A'},
                                             {"retrieve", required_argument, NULL, 'R'},
                                             {"terms", required_argument, NULL, 'T'},
                                             {"noise", required_argument, NULL, 'N'},
                                             {"sigma", required_argument, NULL, 'S'},
                                             {"gain", required_argument, NULL, 'G'},
                                             {"fit-background", no_argument, NULL, 'B'},
                                             {"fit-opd-map", required_argument, NULL, 'M'},
                                             {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    gpu_list_all(&o->gpus);
    optind = 0; /* 0, not 1: glibc then also forgets a cluster left half-read (-zq) */
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":c:o:b:g:fqvhVrj:", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            o->config_path = optarg;
            break;
        case 'o':
            if (!optarg[0]) { /* "" is no directory (and was read as one later) */
                snprintf(err, errlen, "--output: expected a directory (got \"\")");
                return -1;
            }
            o->output_dir = optarg;
            break;
        case 'b':
            if (parse_backend(optarg, &o->backend) != 0) {
                snprintf(err, errlen, "--backend: expected auto, cpu or gpu (got \"%s\")",
                         shown(optarg, arg, sizeof arg));
                return -1;
            }
            o->backend_given = 1;
            break;
        case 'g':
            if (gpu_list_parse(optarg, &o->gpus, err, errlen) != 0) return -1;
            o->gpus_given = 1;
            break;
        case 'f':
            o->force = 1;
            break;
        case 'q':
            o->quiet = 1;
            break;
        case 'v':
            o->verbose = 1;
            break;
        case 'h':
            o->help = 1;
            break;
        case 'V':
            o->version = 1;
            break;
        case 'P':
            o->probe = 1;
            break;
        case 'r':
            o->resume = 1;
            break;
        case 'A':
            if (!optarg[0]) {
                snprintf(err, errlen, "--draw-aperture: expected a PNG file name (got \"\")");
                return -1;
            }
            o->draw_aperture = optarg;
            break;
        case 'R':
            if (!optarg[0]) {
                snprintf(err, errlen, "--retrieve: expected a FITS file of images (got \"\")");
                return -1;
            }
            o->retrieve = optarg;
            break;
        case 'T':
            o->terms = optarg;
            o->retrieve_only_set = 1;
            break;
        case 'N':
            if (strcmp(optarg, "uniform") && strcmp(optarg, "photon")) {
                snprintf(err, errlen, "--noise: expected uniform or photon (got \"%s\")",
                         shown(optarg, arg, sizeof arg));
                return -1;
            }
            o->noise = !strcmp(optarg, "photon");
            o->retrieve_only_set = 1;
            break;
        case 'S':
        case 'G': {
            char *end;
            double v = strtod(optarg, &end);
            if (!optarg[0] || *end || !(v >= 0) || v > 1e30) {
                snprintf(err, errlen, "--%s: expected a number >= 0 (got \"%s\")",
                         c == 'S' ? "sigma" : "gain", shown(optarg, arg, sizeof arg));
                return -1;
            }
            *(c == 'S' ? &o->sigma : &o->gain) = v;
            o->retrieve_only_set = 1;
            break;
        }
        case 'M': {
            char *end;
            double v = strtod(optarg, &end);
            if (!optarg[0] || *end || !(v > 0) || v > 1e30) {
                snprintf(err, errlen, "--fit-opd-map: expected a regularisation > 0 (got \"%s\")",
                         shown(optarg, arg, sizeof arg));
                return -1;
            }
            o->opd_lambda = v;
            o->retrieve_only_set = 1;
            break;
        }
        case 'B':
            o->fit_background = 1;
            o->retrieve_only_set = 1;
            break;
        case 'j': {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (*end || n < 1 || n > 1024) {
                snprintf(err, errlen, "--jobs: expected a number of threads 1..1024 (got \"%s\")",
                         shown(optarg, arg, sizeof arg));
                return -1;
            }
            o->jobs = (int)n;
            break;
        }
        case ':':
            snprintf(err, errlen, "%s: needs an argument",
                     shown(argv[optind - 1], arg, sizeof arg));
            return -1;
        default:
            unknown_option(argc, argv, err, errlen);
            return -1;
        }
    }
    if (optind < argc) {
        snprintf(err, errlen, "%s: unexpected argument (the config goes after -c)",
                 shown(argv[optind], arg, sizeof arg));
        return -1;
    }
    if (!o->help && !o->version && !o->probe && !o->config_path) {
        snprintf(err, errlen, "no config file: give one with -c FILE");
        return -1;
    }
    if (o->probe && o->config_path) {
        snprintf(err, errlen, "--probe measures this machine and takes no config (-c)");
        return -1;
    }
    if (o->draw_aperture && (o->resume || o->force || o->output_dir)) {
        snprintf(err, errlen, "--draw-aperture writes one PNG and takes no %s",
                 o->resume  ? "--resume"
                 : o->force ? "--force"
                            : "-o (the PNG is its argument)");
        return -1;
    }
    if (o->retrieve_only_set && !o->retrieve) {
        snprintf(err, errlen,
                 "--terms, --noise, --sigma, --gain, --fit-background and --fit-opd-map go "
                 "with --retrieve");
        return -1;
    }
    if (o->retrieve && (o->resume || o->draw_aperture)) {
        snprintf(err, errlen, "--retrieve fits images and takes no %s",
                 o->resume ? "--resume" : "--draw-aperture");
        return -1;
    }
    if (o->force && o->resume) {
        snprintf(err, errlen, "--force and --resume contradict each other");
        return -1;
    }
    if (o->quiet && o->verbose) {
        snprintf(err, errlen, "-q and -v contradict each other");
        return -1;
    }
    return 0;
}
