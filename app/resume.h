/* --resume: which images of a set an earlier, interrupted run finished.
 * An image counts as done when the earlier manifest lists it with every
 * file the config asks for, each present and non-empty (files are renamed
 * into place whole, so present means complete), under the same config
 * fingerprint. */
#ifndef PSFSIM_RESUME_H
#define PSFSIM_RESUME_H

#include <stddef.h>

#include "app/config/config.h"

typedef struct {
    long long nimages;
    unsigned char *done; /* [nimages] 1 = finished earlier */
    long long ndone;
    char **manifest_rows; /* the manifest lines of the done images, verbatim */
    long long nmanifest;
    char **timing_rows; /* their timing lines */
    long long ntiming;
} resume_state;

/* The config's fingerprint: FNV-1a 64 (Fowler, Noll, Vo) of the config
 * file's bytes and psfsim's version, as 16 hex digits. 0 or -1 with err. */
int config_fingerprint(const char *path, char out[24], char *err, size_t errlen);

/* Read dir/NAME_manifest.csv and dir/NAME_timing.csv (both may be missing:
 * nothing done). A manifest of another config (fingerprint) or not a psfsim
 * manifest is an error (-1 with err: exit 2, nothing touched). */
int resume_load(const psf_config *cfg, const char *dir, long long nimages, const char *hash,
                resume_state *rs, char *err, size_t errlen);

void resume_free(resume_state *rs);

/* Another file of the set holds images too (output.hdf5's NAME.h5): an
 * image stays done only when also[k] (1 = it is in that file) says so as
 * well; the others are done again, their kept manifest and timing rows
 * dropped. */
void resume_require(resume_state *rs, const unsigned char *also);

/* Remove the temp files (".NAME_*.tmp.*") a killed run left in dir. */
void resume_clean_temps(const char *dir, const char *name);

#endif
