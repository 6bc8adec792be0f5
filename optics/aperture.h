/* Aperture (pupil transmission) masks: circular, annular obscuration, spiders,
 * hexagon, or a transmission map, with area-weighted ("grey") edge pixels.
 * Geometry conventions: design.md, "Aperture" and "Sampling". */
#ifndef PSFSIM_APERTURE_H
#define PSFSIM_APERTURE_H

#include <stddef.h>

typedef enum { APERTURE_CIRCULAR = 0, APERTURE_HEXAGON = 1, APERTURE_FILE = 2 } psf_aperture_shape;
typedef enum { EDGE_GREY = 0, EDGE_BINARY = 1 } psf_edge_mode;

typedef struct {
    psf_aperture_shape shape;
    double diameter_m;       /* circumscribed diameter D, metres */
    double obscuration;      /* central obscuration, linear ratio in [0, 1) */
    int spider_count;        /* 0 = no spiders */
    double spider_width_m;   /* full width of each vane, metres */
    double spider_angle_deg; /* first vane's angle from +x towards +y, degrees */
    psf_edge_mode edge;
    /* APERTURE_FILE only: transmission in [0, 1], map_rows x map_cols,
     * row-major, covering the D x D square centred on the axis (row 0 at
     * y = -D/2). Obscuration and spiders, when set, are applied on top. */
    const float *map;
    int map_rows, map_cols;
} psf_aperture;

/* Returns 0 when a describes a valid aperture (known shape and edge mode,
 * 0 < D finite, obscuration in [0, 1), spider count >= 0, spider width >= 0
 * and angle finite when count > 0, a map of rows x cols >= 1 for
 * APERTURE_FILE), else -1 with a message in err (err may be NULL). Shared
 * by aperture_fill and the backends that build the pupil on the device. */
int aperture_check(const psf_aperture *a, char *err, size_t errlen);

/* Fill amp[N*N] (row-major, row i at y = (i - N/2) dx, column j at
 * x = (j - N/2) dx, metres) with the transmission in [0, 1] for pupil pitch
 * dx_m. Grey edges: each sample's value is the fraction of its dx x dx cell
 * inside the open region, to within 1e-3. Returns 0, or -1 with a message in
 * err for invalid geometry (D <= 0, obscuration outside [0,1), a missing map). */
int aperture_fill(const psf_aperture *a, int npix, double dx_m, float *amp, char *err,
                  size_t errlen);

/* Area of the open region in m^2, analytic for circular/hexagon shapes with
 * obscuration and spiders (overlaps of vanes near the axis counted once).
 * Used by tests and to report the collecting area. Returns < 0 for FILE. */
double aperture_area_m2(const psf_aperture *a);

#endif
