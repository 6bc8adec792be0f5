/* SPDX-License-Identifier: BSD-3-Clause */
#include "app/select/backend_select.h"
#include "backend/cpu_count.h"

#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "app/select/cost_model.h"
#include "app/select/gpu.h"
#include "app/base/log.h"
#include "app/select/probe.h"
#include "app/select/probe_cache.h"

/* "0.41 ms" / "212 ms" / "3.2 s" */
static void fmt_time(char *out, size_t len, double us)
{
    if (us < 1e3)
        snprintf(out, len, "%.3g us", us);
    else if (us < 1e6)
        snprintf(out, len, "%.3g ms", us * 1e-3);
    else
        snprintf(out, len, "%.3g s", us * 1e-6);
}

/* The probe's figures: cached when the machine is the same, else measured
 * now (which starts CUDA) and cached. *started says whether CUDA runs. */
static int figures(const machine_key *key, probe_figures *f, int *started, backend_decision *d)
{
    char dir[4096], why[512], err[512], made[4096];
    const char *cdir = probe_cache_dir(dir, sizeof dir);
    *started = 0;
    if (cdir && probe_cache_load(cdir, key, f, why, sizeof why) == 0) {
        snprintf(d->probe, sizeof d->probe, "cached in %s/probe.txt", cdir);
        return 0;
    }
    log_info("latency probe: %s; measuring", cdir ? why : "no cache directory (no HOME)");
    if (probe_measure(f, 1, probe_cache_dir_made(made, sizeof made), why, sizeof why, err,
                      sizeof err) != 0) {
        log_warn("latency probe failed: %s", err);
        return -1;
    }
    if (!f->have_gpu) log_info("latency probe: no usable GPU: %s", why);
    *started = f->have_gpu;
    snprintf(d->probe, sizeof d->probe, "measured now in %.0f ms", f->probe_us * 1e-3);
    if (!cdir || probe_cache_store(cdir, key, f, err, sizeof err) != 0)
        log_warn("cannot cache the latency probe's figures (%s); psfsim probes again next time",
                 cdir ? err : "no HOME");
    return 0;
}

/* The probe's relative speed of each listed device, summed: the GPUs'
 * throughput in units of device 0's (cost_job.gpu_speed). */
static double devices_speed(const probe_figures *f, const backend_decision *d)
{
    double speed = 0;
    for (int i = 0; i < d->ndevices; ++i) {
        int dev = d->devices[i];
        speed += dev < PROBE_MAX_GPUS ? f->gpu_rel_speed[dev] : 0.0; /* 0: failed in the probe */
    }
    return speed > 0 ? speed : 1.0;
}

/* auto: the backend with the lower predicted wall time for the whole set. */
static int choose_auto(const image_set *s, int writers, const gpu_list *gpus, backend_decision *d,
                       char *err, size_t errlen)
{
    d->ops = &psf_backend_cpu;
    d->cpu_us = d->gpu_us = NAN;
    machine_key key;
    machine_key_read(&key);
    if (!key.gpu_present) {
        snprintf(d->reason, sizeof d->reason, "backend cpu: auto, no NVIDIA GPU on this machine");
        return 0;
    }
    probe_figures f;
    int started;
    if (figures(&key, &f, &started, d) != 0 || !f.have_gpu) {
        snprintf(d->reason, sizeof d->reason, "backend cpu: auto, the GPU is not usable");
        return 0;
    }
    /* The probe counted the devices (CUDA_VISIBLE_DEVICES is in the key). */
    if (gpu_list_resolve(gpus, f.gpu_count > 0 ? f.gpu_count : 1, d->devices, &d->ndevices, err,
                         errlen) != 0)
        return -1;
    long cores = psf_cpu_count();
    set_wavelength_list wl; /* per image: one wavelength each */
    image_set_wavelengths(s, &wl);
    cost_job job = {.npix = s->calc_npix > 0 ? s->calc_npix : s->samp.npix, /* computed grid */
                    .nimages = s->nimages,
                    .ncomp = wl.n > 0 ? wl.n : 1,
                    .batch = PSF_GPU_PREFERRED_BATCH,
                    .writers = writers > 0 ? writers
                               : cores > 0 ? (int)cores
                                           : 1,
                    .write_us =
                        cost_write_us(&f, s->samp.npix, s->cfg->png_enabled, s->cfg->fits_enabled),
                    .gpu_started = started,
                    .gpu_speed = devices_speed(&f, d)};
    cost_prediction p;
    cost_predict(&f, &job, &p);
    d->cpu_us = p.cpu_us;
    d->gpu_us = p.gpu_us;
    char c[32], g[32];
    fmt_time(c, sizeof c, p.cpu_us);
    fmt_time(g, sizeof g, p.gpu_us);
    const psf_backend_ops *gpu = p.use_gpu ? psf_backend_gpu() : NULL; /* loads the module */
    if (gpu) d->ops = gpu;
    p.use_gpu = gpu != NULL;
    snprintf(d->reason, sizeof d->reason, "backend %s: predicted %s %s vs %s %s%s", d->ops->name,
             p.use_gpu ? "gpu" : "cpu", p.use_gpu ? g : c, p.use_gpu ? "cpu" : "gpu",
             p.use_gpu ? c : g, started ? "" : " incl. start");
    return 0;
}

/* --backend gpu: the listed devices among those CUDA sees. */
static int forced_devices(const psf_backend_ops *gpu, const gpu_list *gpus, backend_decision *d,
                          char *err, size_t errlen)
{
    char why[256];
    int count = gpu->device_count(why, sizeof why);
    if (count < 1) {
        backend_gpu_unusable(why, err, errlen);
        return -1;
    }
    return gpu_list_resolve(gpus, count, d->devices, &d->ndevices, err, errlen);
}

void backend_gpu_unusable(const char *why, char *err, size_t errlen)
{
    machine_key key;
    machine_key_read(&key);
    snprintf(err, errlen, "backend gpu: %s (%.900s)",
             key.gpu_present ? "the GPU cannot be used" : "no NVIDIA GPU on this machine", why);
}

int backend_select(backend_choice choice, const image_set *s, int writers, const gpu_list *gpus,
                   backend_decision *d, char *err, size_t errlen)
{
    d->cpu_us = d->gpu_us = NAN;
    d->probe[0] = '\0';
    d->ndevices = 1;
    d->devices[0] = 0;
    if (choice == BACKEND_GPU) {
        const psf_backend_ops *gpu = psf_backend_gpu();
        if (!gpu) {
            snprintf(err, errlen, "backend gpu: %s", gpu_module_error());
            return -1;
        }
        d->ops = gpu;
        snprintf(d->reason, sizeof d->reason, "backend gpu: requested");
        return forced_devices(gpu, gpus, d, err, errlen);
    }
    if (choice == BACKEND_CPU) {
        d->ops = &psf_backend_cpu;
        snprintf(d->reason, sizeof d->reason, "backend cpu: requested");
        return 0;
    }
    if (!gpu_module_present()) { /* a stat: the module is not loaded for this */
        d->ops = &psf_backend_cpu;
        snprintf(d->reason, sizeof d->reason, "backend cpu: auto, %s",
                 gpu_module_built() ? "the CUDA backend's module is missing (see --version)"
                                    : "built without CUDA");
        return 0;
    }
    return choose_auto(s, writers, gpus, d, err, errlen);
}

int backend_batch(const psf_backend_ops *ops, int npix, long long nimages)
{
    double per = (double)npix * npix * sizeof(float);
    long long b = (long long)(BACKEND_BATCH_BYTES / per);
    if (b > ops->preferred_batch) b = ops->preferred_batch;
    if (b > nimages) b = nimages;
    return b < 1 ? 1 : (int)b;
}
