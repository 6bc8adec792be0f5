#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Gradients against the forward (issue 28): for a set of 256 x 256 FFT
images (128 pupil samples, padding 2, an obscured aperture, 3 Zernike
terms), the seconds per image of
  forward_f32   Set.compute(): the CPU backend's float images
  forward_f64   Set.compute_inputs(): the double model
  vjp           Set.vjp(cot, terms=..., zernike=...): the double forward and
                its adjoint for 3 Zernike terms
  vjp_opd       the same with the OPD map's gradient too (a 64 x 64 map)
each the best of --repeat rounds of --count images on --threads CPU
threads (the Set's threads=), and their ratios.

    PSFSIM_LIBRARY=build/libpsfsim.so.0 PYTHONPATH=python \\
        python3 bench/vjp_bench.py [--count 8] [--repeat 3] [--threads 1]

--backend gpu (the GPU's gradients, lib/vjp_gpu.c; issue 28's "a gradient
costs <= 2x a forward image, batched, 256 x 256"): a Set of backend "gpu",
--count images (default 256) per call, the best of --repeat rounds after
one warm-up call of each (the backend started, the gradients' pupils,
plans and buffers kept), in one run:
  forward_host    Set.compute(): the GPU's float images into host memory
  forward_device  Set.compute(device="cuda"): kept in device memory
  forward_f64     Set.compute_inputs(): the GPU's double model, to the host
  vjp             Set.vjp(cot, terms=[4, 5, 8], zernike=...) (double cotangents
                  in, 3 gradients per image out)
  vjp_opd         the same with the OPD map's gradient too
  vjp_dev_f64     Set.vjp with the cotangent a psfsim.DeviceArray, float64
                  (psfsim_vjp_device: no host copy of it)
  vjp_dev_f32     the same, float32 (widened to double on the device)
  vjp_dev_f32_img the same with images=True (a float32 DeviceArray)
  vjp_torch_f32   the same from a torch CUDA tensor (when torch has CUDA)
and each one's ratio to forward_host and forward_device.
PSFSIM_VJP_BACKEND=gpu is set, so a gradient that cannot run on the GPU
fails instead of timing the CPU.

    PSFSIM_LIBRARY=build/libpsfsim.so.0 PYTHONPATH=python \\
        python3 bench/vjp_bench.py --backend gpu [--count 256] [--repeat 5]
"""
import os
import argparse
import time

import numpy as np

import psfsim


def config(count, npix=256):
    opd = np.random.default_rng(1).normal(0.0, 10.0, (64, 64)).astype(np.float32)
    return {"name": "vjp_bench",
            "optics": {"wavelength_nm": 600.0,
                       "aperture": {"diameter_m": 2.0, "obscuration": 0.2}},
            "sampling": {"pupil_samples": npix // 2},
            "aberrations": {"units": "waves", "zernike": [[5, 0.04], [8, -0.03]],
                            "opd_map": {"file": opd}},
            "sweep": {"defocus": list(np.linspace(-0.2, 0.2, count))}}


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def on_device(a, dtype):
    """Host array a as a psfsim.DeviceArray of dtype on device 0."""
    a = np.ascontiguousarray(a, dtype=dtype)
    d = psfsim.DeviceArray(a.shape, dtype, 0)
    psfsim._device.copy(0, d.ptr, a.ctypes.data, a.nbytes)
    return d


def torch_cuda(a):
    """a as a float32 torch CUDA tensor, or None without torch's CUDA."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    return torch.as_tensor(a, dtype=torch.float32, device="cuda")


def gpu_rows(a):
    """The GPU's forward and gradients, each once first (warm-up)."""
    os.environ["PSFSIM_VJP_BACKEND"] = "gpu"
    with psfsim.Set(config(a.count), backend="gpu") as s:
        cot = np.random.default_rng(2).standard_normal((s.count, s.npix, s.npix))
        z = np.zeros((s.count, 3))
        d64, d32, t32 = on_device(cot, np.float64), on_device(cot, np.float32), torch_cuda(cot)
        calls = {
            "forward_host": lambda: s.compute(),
            "forward_device": lambda: s.compute(device="cuda"),
            "forward_f64": lambda: s.compute_inputs(),
            "vjp": lambda: s.vjp(cot, terms=[4, 5, 8], zernike=z),
            "vjp_opd": lambda: s.vjp(cot, wrt=("zernike", "opd_map"), terms=[4, 5, 8], zernike=z),
            "vjp_dev_f64": lambda: s.vjp(d64, terms=[4, 5, 8], zernike=z),
            "vjp_dev_f32": lambda: s.vjp(d32, terms=[4, 5, 8], zernike=z),
            "vjp_dev_f32_img": lambda: s.vjp(d32, terms=[4, 5, 8], zernike=z, images=True),
        }
        if t32 is not None:
            calls["vjp_torch_f32"] = lambda: s.vjp(t32, terms=[4, 5, 8], zernike=z)
        rows = {}
        for k, fn in calls.items():
            fn()
            rows[k] = best(fn, a.repeat)
        return rows, s.npix


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--backend", choices=("cpu", "gpu"), default="cpu")
    a = ap.parse_args()
    if a.backend == "gpu":
        a.count = a.count or 256
        rows, npix = gpu_rows(a)
        print("%d images of %d x %d per call, backend gpu (best of %d)" %
              (a.count, npix, npix, a.repeat))
        for k, v in rows.items():
            print("%-15s %9.3f us/image  %6.2fx forward_host  %6.2fx forward_device" %
                  (k, 1e6 * v / a.count, v / rows["forward_host"], v / rows["forward_device"]))
        return
    a.count = a.count or 8
    with psfsim.Set(config(a.count), backend="cpu", threads=a.threads) as s:
        cot = np.random.default_rng(2).standard_normal((s.count, s.npix, s.npix))
        z = np.zeros((s.count, 3))
        s.compute()  # the backend started, its pupils built
        rows = {
            "forward_f32": best(lambda: s.compute(), a.repeat),
            "forward_f64": best(lambda: s.compute_inputs(), a.repeat),
            "vjp": best(lambda: s.vjp(cot, terms=[4, 5, 8], zernike=z), a.repeat),
            "vjp_opd": best(lambda: s.vjp(cot, wrt=("zernike", "opd_map"), terms=[4, 5, 8],
                                          zernike=z), a.repeat),
        }
    base = rows["forward_f32"]
    print("%d images of %d x %d, backend cpu, %d threads" %
          (a.count, s.npix, s.npix, a.threads))
    for k, v in rows.items():
        print("%-12s %9.3f ms/image  %6.1fx forward_f32" % (k, 1e3 * v / a.count, v / base))


if __name__ == "__main__":
    main()
