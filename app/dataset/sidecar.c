/* SPDX-License-Identifier: BSD-3-Clause */
/* The sidecar NAME.json (app/dataset/sidecar.h). */
#include "app/dataset/sidecar.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "app/dataset/config_json.h"
#include "app/formats/atomic_file.h"
#include "app/select/probe_cache.h"

/* machine_key's one-token text back to words ('_' was a space). */
static json_t *words(const char *token)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", token);
    for (char *c = buf; *c; ++c)
        if (*c == '_') *c = ' ';
    return json_string(buf);
}

static json_t *machine(const sidecar_run *run)
{
    machine_key key;
    machine_key_read(&key);
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    json_t *gpus = json_array(), *devices = json_array();
    if (run->pv.gpu && gpus && key.gpu_present) { /* "model:uuid,model:uuid" */
        char list[256];
        snprintf(list, sizeof list, "%s", key.value[0]);
        for (char *save = NULL, *g = strtok_r(list, ",", &save); g;
             g = strtok_r(NULL, ",", &save)) {
            char *colon = strchr(g, ':');
            if (colon) *colon = '\0';
            json_array_append_new(gpus, words(g));
        }
    }
    for (int i = 0; run->pv.gpu && devices && i < run->ndevices; ++i)
        json_array_append_new(devices, json_integer(run->devices[i]));
    return json_pack("{s:s, s:o, s:I, s:o, s:o}", "hostname", host, "cpu", words(key.value[5]),
                     "cpus", (json_int_t)sysconf(_SC_NPROCESSORS_ONLN), "gpus", gpus, "gpu_devices",
                     devices);
}

static json_t *num_or_null(double v)
{
    return isfinite(v) && v != 0.0 ? json_real(v) : json_null();
}

static json_t *reals(const double *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; a && i < n; ++i)
        json_array_append_new(a, json_real(v[i]));
    return a;
}

static json_t *set_constants(const image_set *s)
{
    const psf_config *cfg = s->cfg;
    image_info info;
    image_set_common_info(s, &info);
    set_wavelength_list wl;
    image_set_wavelengths(s, &wl);
    int per_image = wl.per_image; /* the pixel follows the wavelength */
    return json_pack(
        "{s:I, s:i, s:i, s:i, s:f, s:s, s:f, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "nimages",
        (json_int_t)s->nimages, "pupil_samples", s->samp.pupil_samples, "fft_size", s->fft_npix,
        "npix", s->samp.npix, "padding", s->samp.padding, "propagation", s->mft ? "mft" : "fft",
        "diameter_m", s->samp.diameter_m, "f_number", num_or_null(cfg->f_number), "wavelengths_nm",
        per_image ? json_null() : reals(wl.nm, wl.n), "weights",
        per_image ? json_null() : reals(wl.weights, wl.n), "pixel_wavelength_nm",
        per_image ? json_null() : json_real(info.wavelength_nm), "pixel_scale_lambda_d",
        per_image ? json_null() : num_or_null(info.pixel_lambda_d), "pixel_scale_arcsec",
        per_image ? json_null() : num_or_null(info.pixel_arcsec), "pixel_scale_um",
        per_image ? json_null() : num_or_null(info.pixel_um));
}

static json_t *labels(const image_set *s)
{
    hdf5_set_desc d; /* the file's own description: the same j list and columns */
    hdf5_provenance pv = {.config_hash = "", .backend = ""};
    char err[256];
    json_t *noll = json_array(), *conv = json_array(), *cols = json_array(), *segs = json_array();
    if (hdf5_set_describe(s, AT_FDCWD, ".", &pv, &d, err, sizeof err) == 0) {
        for (int i = 0; i < d.nterms; ++i) {
            int t = d.term[i];
            json_array_append_new(noll, json_integer(d.noll_j[i]));
            json_array_append_new(conv, json_integer(zernike_nm_to_index(
                                            s->cfg->zconv, s->modes.n[t], s->modes.m[t])));
        }
        for (int c = 0; c < d.p.ncolumns; ++c)
            json_array_append_new(cols, json_string(d.cols[c].name));
        const set_segterms *st = &s->segterms;
        for (int i = 0; i < d.nseg; ++i)
            json_array_append_new(segs,
                                  json_pack("{s:i, s:i, s:s}", "segment", st->label_segment[i], "j",
                                            st->label_j[i], "column", d.seg_names[i]));
    }
    hdf5_set_desc_free(&d);
    json_t *o =
        json_pack("{s:o, s:o, s:s, s:o}", "zernike_noll_j", noll, "zernike_j", conv,
                  "zernike_units", s->cfg->zunits == ZUNITS_NM ? "nm" : "waves", "columns", cols);
    /* Only with segment terms: a sidecar without is as before them. */
    if (o && json_array_size(segs) > 0)
        json_object_set_new(o, "segment_terms", segs);
    else
        json_decref(segs);
    return o;
}

static json_t *conventions(const image_set *s)
{
    set_convention c[SET_CONVENTIONS];
    int n = hdf5_set_conventions(s, c);
    json_t *o = json_object();
    for (int i = 0; o && i < n; ++i)
        json_object_set_new(o, c[i].key, json_string(c[i].value));
    return o;
}

/* With the detector group: its settings (the jitter in detector pixels,
 * as the stage used it); NULL without, so the sidecar is as before. */
static json_t *detector(const image_set *s)
{
    const cfg_detector *g = &s->cfg->detector;
    if (!g->enabled) return NULL;
    return json_pack("{s:i, s:s, s:b, s:[f, f], s:f, s:o}", "oversample", g->oversample, "write",
                     hdf5_set_detector_write(s), "pixel_response", g->pixel_response, "jitter_px",
                     s->detector.jitter_px[0], s->detector.jitter_px[1], "charge_diffusion_px",
                     g->diffusion_px, "ipc", g->ipc ? reals(g->ipc_kernel, 9) : json_null());
}

static json_t *sidecar(const image_set *s, const sidecar_run *run)
{
    const psf_config *cfg = s->cfg;
    set_versions v;
    hdf5_set_versions(s, run->pv.gpu, &v);
    char h5[512], manifest[512], timing[512];
    outputs_set_file(NULL, cfg->name, SET_HDF5, h5, sizeof h5);
    outputs_set_file(NULL, cfg->name, SET_MANIFEST, manifest, sizeof manifest);
    outputs_set_file(NULL, cfg->name, SET_TIMING, timing, sizeof timing);
    json_t *o = json_pack(
        "{s:s, s:i, s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s}, s:o, s:o, s:{s:s, s:s, s:s, s:o}, "
        "s:o, s:s, s:o, s:o}",
        "format", "psfsim image set sidecar", "format_version", 1, "name", cfg->name, "config_file",
        cfg->path, "config_hash", run->pv.config_hash, "date", v.date, "files", "hdf5", h5,
        "manifest", manifest, "timing", timing, "config", config_to_json(cfg), "conventions",
        conventions(s), "versions", "psfsim", v.psfsim, "fftw", v.fftw, "hdf5", v.hdf5, "cuda",
        v.cuda[0] ? json_string(v.cuda) : json_null(), "machine", machine(run), "backend",
        run->pv.backend, "set", set_constants(s), "labels", labels(s));
    json_t *det = detector(s);
    if (o && det) json_object_set_new(o, "detector", det);
    return o;
}

int sidecar_write(const image_set *s, int dirfd, const char *dir, const sidecar_run *run, char *err,
                  size_t errlen)
{
    char path[SET_PATH_MAX], name[SET_PATH_MAX];
    outputs_set_file(dir, s->cfg->name, SET_SIDECAR, path, sizeof path);
    outputs_set_file(NULL, s->cfg->name, SET_SIDECAR, name, sizeof name);
    json_t *root = sidecar(s, run);
    if (!root) {
        snprintf(err, errlen, "cannot write %s: out of memory", path);
        return -1;
    }
    atomic_file af;
    int rc = atomic_open_at(&af, dirfd, dir, name, err, errlen);
    if (rc == 0 && (json_dumpf(root, af.fp, JSON_INDENT(2) | JSON_ENSURE_ASCII) != 0 ||
                    fputc('\n', af.fp) == EOF)) {
        atomic_abort(&af);
        snprintf(err, errlen, "cannot write %s", path);
        rc = -1;
    } else if (rc == 0) {
        rc = atomic_commit(&af, err, errlen);
    }
    json_decref(root);
    return rc;
}

int sidecar_config_hash(int dirfd, const char *name, char *out, size_t outlen)
{
    char file[SET_PATH_MAX];
    outputs_set_file(NULL, name, SET_SIDECAR, file, sizeof file);
    int fd = openat(dirfd, file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    json_t *root = fd >= 0 ? json_loadfd(fd, 0, NULL) : NULL;
    if (fd >= 0) close(fd);
    const char *h = json_string_value(json_object_get(root, "config_hash"));
    int rc = h ? 0 : -1;
    if (h) snprintf(out, outlen, "%s", h);
    json_decref(root);
    return rc;
}
