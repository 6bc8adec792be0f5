/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the command line. The input is split at NUL bytes (and
 * newlines) into at most 64 arguments, each in its own allocation (so a
 * parser that keeps a pointer into an earlier argv is caught by ASan), and
 * given to cli_parse after argv[0] = "psfsim". A second parse of a fixed,
 * valid command line must then give exactly its options: state left over
 * from the first parse is a finding. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "app/run/cli.h"
#include "fuzz/fuzz_util.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* argv from data: pieces between NUL or '\n' bytes, argv[0] = "psfsim". */
static int split(const uint8_t *data, size_t size, char **argv)
{
    int argc = 0;
    argv[argc++] = strdup("psfsim");
    size_t start = 0;
    for (size_t i = 0; i <= size && argc < MAX_ARGS; ++i) {
        if (i == size || data[i] == 0 || data[i] == '\n') {
            size_t len = i - start;
            char *a = malloc(len + 1);
            FUZZ_REQUIRE(a, "out of memory");
            memcpy(a, data + start, len);
            a[len] = '\0';
            argv[argc++] = a;
            start = i + 1;
        }
    }
    argv[argc] = NULL;
    return argc;
}

static void free_args(int argc, char **argv)
{
    for (int i = 0; i < argc; ++i)
        free(argv[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *argv[MAX_ARGS + 1];
    int argc = split(data, size, argv);
    cli_options o;
    char err[512] = "";
    if (cli_parse(argc, argv, &o, err, sizeof err) != 0) {
        fuzz_check_message(err, NULL);
    } else {
        FUZZ_REQUIRE(o.help || o.version || o.probe || o.config_path, "no config accepted");
        FUZZ_REQUIRE(!(o.quiet && o.verbose), "-q and -v accepted together");
        FUZZ_REQUIRE(o.backend >= BACKEND_AUTO && o.backend <= BACKEND_GPU, "backend %d",
                     (int)o.backend);
    }
    free_args(argc, argv);

    /* The same process parses again: nothing may carry over. */
    char *good[] = {strdup("psfsim"), strdup("-c"), strdup("x.cfg"), NULL};
    err[0] = '\0';
    int rc = cli_parse(3, good, &o, err, sizeof err);
    FUZZ_REQUIRE(rc == 0, "a valid command line refused after the input: %s", err);
    FUZZ_REQUIRE(o.config_path && strcmp(o.config_path, "x.cfg") == 0 && !o.output_dir &&
                     !o.force && !o.quiet && !o.verbose && !o.help && !o.version && !o.probe &&
                     !o.backend_given,
                 "options carried over from the input");
    free_args(3, good);
    return 0;
}
