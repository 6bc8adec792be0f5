/* Checks of an image set that computes but may not mean what its config
 * asks: warnings, each one line naming the config's file, line and key,
 * which the run logs (log_warn) and adds to the timing log's summary
 * (NAME_timing.csv, rows "warning"; docs/config.md). */
#ifndef PSFSIM_SET_CHECKS_H
#define PSFSIM_SET_CHECKS_H

#include "app/set/image_set.h"

#define SET_NOTES_MAX 8
#define SET_NOTE_LEN 640

typedef struct {
    int n;
    char text[SET_NOTES_MAX][SET_NOTE_LEN]; /* "FILE:LINE: KEY: MESSAGE", one line each */
} set_notes;

/* The warnings of set s (image_set_init done) into notes (zeroed first;
 * at most SET_NOTES_MAX, the rest dropped):
 *  - aberrations.units = "waves" (or an OPD map in waves) with non-zero
 *    terms in a set that spans wavelengths (sweep.wavelength_nm, or a
 *    broadband optics.wavelengths_nm): a coefficient in waves is the same
 *    phase at every wavelength, not the same optical path, so the
 *    aberration scales with the wavelength (design.md, "Aberrations").
 * No I/O, no errors. */
void set_checks_warn(const image_set *s, set_notes *notes);

/* The maps image_set_init loaded, before any work: the OPD map's largest
 * |value| (times scale) within CFG_MAX_WAVES waves at the set's shortest
 * wavelength (nm: CFG_MAX_WAVES wavelengths). Returns 0, or -1 with
 * "FILE:LINE: aberrations.opd_map.scale: PATH: ..." (the file's key when
 * scale is not written) in err. */
int set_checks_maps(const image_set *s, char *err, size_t errlen);

#endif
