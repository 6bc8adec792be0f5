#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""psfsim's outputs where ML users work (issue 27), against a plain batched
PyTorch implementation of the same PSFs and CuPy's, in one run: K images
of 256 x 256 (128 pupil samples, Q = 2, the obscured circle with binary
edges), each with 8 random Zernike terms (Noll 4..11, normal, 0.05 waves
RMS), as float32 intensities normalised to the sum 1 by each pipeline.

Rows (CSV: what,images,seconds,us_per_psf,psfs_per_s), each the best of
--repeat rounds after a warm-up:
  psfsim_device        Set.compute(device="cuda"): a DeviceArray (DLPack)
  psfsim_out_torch     Set.compute(out=a torch.cuda tensor), in place
  psfsim_numpy_fresh   into a fresh np.empty, float32 (and _u16)
  psfsim_numpy_out     into an array written before, float32 (and _u16)
  psfsim_pinned_empty  into psfsim.pinned_empty's NumPy array, float32
                       (and _u16): pinned host memory psfsim allocates
  psfsim_pinned        into pinned host memory (a pinned torch tensor's
                       NumPy view): the library's own rate to the host
  torch_device         the PyTorch pipeline kept on the GPU
  torch_pinned         the same, copied into pinned host memory
  cupy_device          the same pipeline in CuPy, kept on the GPU
Each peer's images are checked against psfsim's (max |difference| / peak
after normalising both to sum 1). Ratios at the end.
Usage: device_bench.py [--count 10000] [--repeat 3] [--batch 1000]"""
import argparse
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
import psfsim  # noqa: E402

D, OBS, PUPIL, NPIX, TERMS = 2.4, 0.33, 128, 256, list(range(4, 12))
ROWS = {}


def config(count, seed=5):
    return {"name": "devbench",
            "optics": {"wavelength_nm": 550.0, "f_number": 24.0,
                       "aperture": {"diameter_m": D, "obscuration": OBS, "edge": "binary"}},
            "sampling": {"pupil_samples": PUPIL, "padding": NPIX / PUPIL},
            "normalization": "sum",
            "sweep": {"random": {"count": count, "seed": seed,
                                 "zernike": [(j, "normal", 0.05) for j in TERMS]}}}


def basis():
    """The obscured disk's sample centres and Noll Z4..Z11 (RMS 1 on the
    unit disk) on psfsim's grid: sample (i, j) at ((i - N/2) dx, (j - N/2) dx)."""
    c = (np.arange(NPIX) - NPIX // 2) * (D / PUPIL)
    x, y = np.meshgrid(c, c)
    r, t = np.hypot(x, y) / (D / 2), np.arctan2(y, x)
    amp = ((r <= 1) & (r >= OBS)).astype(np.float32)
    z = [np.sqrt(3) * (2 * r**2 - 1), np.sqrt(6) * r**2 * np.sin(2 * t),
         np.sqrt(6) * r**2 * np.cos(2 * t), np.sqrt(8) * (3 * r**3 - 2 * r) * np.sin(t),
         np.sqrt(8) * (3 * r**3 - 2 * r) * np.cos(t), np.sqrt(8) * r**3 * np.sin(3 * t),
         np.sqrt(8) * r**3 * np.cos(3 * t), np.sqrt(5) * (6 * r**4 - 6 * r**2 + 1)]
    return amp, np.stack([v * amp for v in z]).astype(np.float32)


def row(what, n, seconds):
    ROWS[what] = min(seconds, ROWS.get(what, math.inf))
    print("%s,%d,%.4f,%.3f,%.0f" % (what, n, seconds, 1e6 * seconds / n, n / seconds), flush=True)


def best(what, n, fn, repeat, sync=None):
    fn()
    if sync:
        sync()
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        if sync:
            sync()
        row(what, n, time.perf_counter() - t0)


def agree(name, mine, theirs, bound=2e-3):
    mine = np.asarray(mine, dtype=np.float64)
    theirs = np.asarray(theirs, dtype=np.float64)
    d = float(np.abs(theirs / theirs.sum() - mine / mine.sum()).max() / (mine / mine.sum()).max())
    print("# %s against psfsim: max |difference| / peak %.2e (bound %.0e): %s"
          % (name, d, bound, "agrees" if d <= bound else "DIFFERS"), flush=True)


def torch_pipeline(torch, amp, z, coeffs, batch):
    """The batched PyTorch PSFs: phase = c . Z, field = A exp(2 pi i phase),
    the axis to index 0, fft2, |.|^2, the zero frequency back to N/2, sum 1."""
    amp_t = torch.as_tensor(amp, device="cuda")
    z_t = torch.as_tensor(z.reshape(len(z), -1), device="cuda")
    c_t = torch.as_tensor(coeffs, device="cuda", dtype=torch.float32)

    def run(out):
        for b0 in range(0, len(coeffs), batch):
            c = c_t[b0:b0 + batch]
            phase = (c @ z_t).view(-1, NPIX, NPIX)
            field = torch.polar(amp_t.expand_as(phase), 2 * math.pi * phase)
            f = torch.fft.fft2(torch.fft.ifftshift(field, dim=(-2, -1)))
            img = torch.fft.fftshift(f.real**2 + f.imag**2, dim=(-2, -1))
            img /= img.sum(dim=(-2, -1), keepdim=True)
            out[b0:b0 + batch].copy_(img, non_blocking=True)
    return run


def cupy_pipeline(cp, amp, z, coeffs, batch):
    amp_c, z_c = cp.asarray(amp), cp.asarray(z.reshape(len(z), -1))
    c_c = cp.asarray(coeffs, dtype=cp.float32)

    def run(out):
        for b0 in range(0, len(coeffs), batch):
            phase = (c_c[b0:b0 + batch] @ z_c).reshape(-1, NPIX, NPIX)
            field = amp_c * cp.exp((2j * math.pi) * phase.astype(cp.complex64))
            f = cp.fft.fft2(cp.fft.ifftshift(field, axes=(-2, -1)))
            img = cp.fft.fftshift(f.real**2 + f.imag**2, axes=(-2, -1))
            img /= img.sum(axis=(-2, -1), keepdims=True)
            out[b0:b0 + batch] = img
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--batch", type=int, default=1000, help="the peers' images per batch")
    a = ap.parse_args()
    k, shape = a.count, (a.count, NPIX, NPIX)
    print("# %d images of %d x %d, 8 random Zernike terms; psfsim %s" % (k, NPIX, NPIX,
                                                                         psfsim.version()))
    s = psfsim.Set(config(k), backend="gpu")
    coeffs = s.zernike()  # waves RMS, Noll 4..11 in the config's order
    coeffs = coeffs[:, [s.term_j.index(j) for j in TERMS]]
    ref, _ = s.compute(k - 3, 3)
    try:
        import torch
    except ImportError:
        torch = None
    best("psfsim_device", k, lambda: s.compute(device="cuda"), a.repeat)
    out = np.empty(shape, np.float32)
    best("psfsim_numpy_out", k, lambda: s.compute(out=out), a.repeat)
    best("psfsim_numpy_fresh", k, lambda: s.compute(), a.repeat)
    out16 = np.empty(shape, np.uint16)
    best("psfsim_numpy_out_u16", k, lambda: s.compute(out=out16, dtype=np.uint16), a.repeat)
    best("psfsim_numpy_fresh_u16", k, lambda: s.compute(dtype=np.uint16), a.repeat)
    pe = psfsim.pinned_empty(shape, np.float32)
    best("psfsim_pinned_empty", k, lambda: s.compute(out=pe), a.repeat)
    assert np.array_equal(pe[-3:], ref)
    del pe
    pe16 = psfsim.pinned_empty(shape, np.uint16)
    best("psfsim_pinned_empty_u16", k, lambda: s.compute(out=pe16, dtype=np.uint16), a.repeat)
    ref16, _ = s.compute(k - 3, 3, dtype=np.uint16)
    assert np.array_equal(pe16[-3:], ref16)
    del pe16
    if torch is not None and torch.cuda.is_available():
        sync = torch.cuda.synchronize
        tout = torch.empty(shape, device="cuda")
        best("psfsim_out_torch", k, lambda: s.compute(out=tout), a.repeat)
        assert np.array_equal(tout[-3:].cpu().numpy(), ref)
        dev, _ = s.compute(device="cuda")
        assert np.array_equal(torch.from_dlpack(dev)[-3:].cpu().numpy(), ref)
        del dev
        pinned = torch.empty(shape, pin_memory=True)
        pview = pinned.numpy()
        best("psfsim_pinned", k, lambda: s.compute(out=pview), a.repeat)
        amp, z = basis()
        run = torch_pipeline(torch, amp, z, coeffs, a.batch)
        best("torch_device", k, lambda: run(tout), a.repeat, sync)
        agree("torch_device", ref[-1], tout[-1].cpu().numpy())
        best("torch_pinned", k, lambda: run(pinned), a.repeat, sync)
        del tout, pinned, pview
        torch.cuda.empty_cache()
    else:
        print("# torch with CUDA: not available: its rows skipped")
    try:
        import cupy as cp
        amp, z = basis()
        cout = cp.empty(shape, cp.float32)
        run = cupy_pipeline(cp, amp, z, coeffs, a.batch)
        best("cupy_device", k, lambda: run(cout), a.repeat, cp.cuda.Device().synchronize)
        agree("cupy_device", ref[-1], cout[-1].get())
        best("psfsim_out_cupy", k, lambda: s.compute(out=cout), a.repeat)
        del cout
    except ImportError as e:
        print("# cupy: not available (%s): skipped" % e)
    s.close()
    print("# ratios (same run):")
    for x, y in [("psfsim_device", "torch_device"), ("psfsim_out_torch", "torch_device"),
                 ("psfsim_device", "cupy_device"), ("psfsim_numpy_out", "psfsim_pinned"),
                 ("psfsim_numpy_fresh", "psfsim_pinned"), ("psfsim_numpy_out", "torch_pinned"),
                 ("psfsim_numpy_out_u16", "psfsim_pinned"),
                 ("psfsim_pinned_empty", "psfsim_pinned"),
                 ("psfsim_pinned_empty_u16", "psfsim_pinned")]:
        if x in ROWS and y in ROWS:
            print("#   %s / %s: %.2fx (psfsims/s %.0f vs %.0f)" % (
                x, y, ROWS[y] / ROWS[x], k / ROWS[x], k / ROWS[y]))


if __name__ == "__main__":
    main()
