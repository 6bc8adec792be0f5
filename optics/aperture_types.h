/* SPDX-License-Identifier: BSD-3-Clause */
/* The aperture's description (psf_aperture and its parts), apart from the
 * functions on it (aperture.h): the per-sample helpers that compile into
 * the CUDA kernels too (aperture_geom.h, aperture_seg.h) read these types,
 * and aperture.c uses those helpers, so the types stand below both and the
 * dependency goes one way: aperture -> aperture_geom -> aperture_seg ->
 * aperture_types. Geometry conventions: docs/design.md, "Aperture". */
#ifndef PSFSIM_APERTURE_TYPES_H
#define PSFSIM_APERTURE_TYPES_H

typedef enum {
    APERTURE_CIRCULAR = 0,
    APERTURE_HEXAGON = 1,
    APERTURE_FILE = 2,
    APERTURE_SEGMENTED = 3
} psf_aperture_shape;

/* Largest number of rings around the centre segment, and of segments:
 * 1 + 3 rings (rings + 1); 17 rings hold the ELT's 798 segments
 * (configs/elt_segments.cfg). APERTURE_SEG_WORDS: 64-bit words of the
 * missing set. */
#define APERTURE_SEG_MAX_RINGS 17
#define APERTURE_SEG_MAX 919
#define APERTURE_SEG_WORDS ((APERTURE_SEG_MAX + 63) / 64)

/* A segmented aperture (APERTURE_SEGMENTED): regular hexagonal segments on
 * a hexagonal lattice (docs/design.md, "Aperture"; numbering in docs/config.md,
 * "Segmented apertures"). At angle 0 every segment has its vertices on its
 * own +x and -x directions (as the single hexagon), neighbouring centres
 * are a pitch p = flat_to_flat + gap apart across the flats, at 30 + 60 k
 * degrees. Segment 0 is the centre; ring n >= 1 holds segments
 * 3 n (n - 1) + 1 .. 3 n (n + 1), counter-clockwise from the one at angle
 * 30 degrees (rotated with angle_deg). */
typedef struct {
    double flat_to_flat_m;  /* each segment's width across its flats, metres */
    double gap_m;           /* gap between facing flats of neighbours, metres, >= 0 */
    int rings;              /* rings around the centre segment, 0..APERTURE_SEG_MAX_RINGS */
    double angle_deg;       /* rotation of the whole array, from +x towards +y */
    double stop_diameter_m; /* outer circular stop's diameter; 0 = none */
    unsigned long long
        missing[APERTURE_SEG_WORDS]; /* bit k % 64 of word k / 64: segment k left out */
} psf_segments;
typedef enum { EDGE_GREY = 0, EDGE_BINARY = 1 } psf_edge_mode;

/* Most vanes of a listed spider (psf_aperture.vanes). */
#define APERTURE_MAX_VANES 16

/* One listed spider vane: the strip |s - offset| < width/2 for
 * r_start <= t <= r_end, where t is the distance along the direction
 * u = (cos angle, sin angle) and s along (-sin angle, cos angle): a strut
 * parallel to u at a signed distance offset from the axis, from t = r_start
 * to t = r_end measured from its point nearest the axis (r_end 0: no end). */
typedef struct {
    double angle_deg, width_m, offset_m, r_start_m, r_end_m;
} psf_vane;

typedef struct {
    psf_aperture_shape shape;
    double diameter_m;       /* circumscribed diameter D, metres */
    double obscuration;      /* central obscuration, linear ratio in [0, 1) */
    int spider_count;        /* 0 = no spiders */
    double spider_width_m;   /* full width of each vane, metres */
    double spider_angle_deg; /* first vane's angle from +x towards +y, degrees */
    psf_edge_mode edge;
    /* APERTURE_FILE only: transmission in [0, 1], map_rows x map_cols,
     * row-major, covering the map_width_m x map_height_m rectangle centred
     * on the axis (row 0 at y = -height/2; optics/map_sample.h); a width or
     * height of 0 is D (the map stretched over D x D). Obscuration and
     * spiders, when set, are applied on top. */
    const float *map;
    int map_rows, map_cols;
    double map_width_m, map_height_m;
    /* APERTURE_SEGMENTED only; diameter_m then is the pupil's diameter
     * (sampling, Zernike radius, obscuration ratio), holding every segment. */
    psf_segments seg;
    /* APERTURE_HEXAGON: rotation of the hexagon from +x towards +y, degrees
     * (0: vertices on the x axis). */
    double angle_deg;
    /* Central obscuration's shape: 0 a circle of radius e D/2, 1 a hexagon
     * of circumradius e D/2, its vertices at angle_deg (HEXAGON), at the
     * segments' angle (SEGMENTED), else on the x axis. */
    int obscuration_hexagon;
    /* Listed vanes, on top of the spider_count equal ones (either may be 0). */
    int nvanes;
    psf_vane vanes[APERTURE_MAX_VANES];
} psf_aperture;

#endif
