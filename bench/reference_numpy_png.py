#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Issue 5's reference: a loop over the NumPy reference pipeline (pupil with
phase rho^2 cos(phi) waves plus a per-image defocus, padded 2x, FFT, |.|^2)
writing each PSF as a 16-bit log-stretched PNG with Pillow, in one process.
Prints CSV: pipeline,npix,images,seconds_total,us_per_psf
Usage: reference_numpy_png.py OUTDIR [--pupil 128] [--images 300]"""
import argparse
import time
from pathlib import Path

import numpy as np
from PIL import Image


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--pupil", type=int, default=128)
    ap.add_argument("--images", type=int, default=300)
    a = ap.parse_args()
    out = Path(a.outdir)
    out.mkdir(parents=True, exist_ok=True)
    n = a.pupil
    y, x = np.mgrid[-1:1:n * 1j, -1:1:n * 1j]
    rho, phi = np.hypot(x, y), np.arctan2(y, x)
    amp = (rho <= 1).astype(np.float64)
    t0 = time.perf_counter()
    for k in range(a.images):
        w = rho**2 * np.cos(phi) + 0.01 * k * (2 * rho**2 - 1)
        padded = np.zeros((2 * n, 2 * n), dtype=np.complex128)
        padded[:n, :n] = amp * np.exp(2j * np.pi * w)
        psf = np.abs(np.fft.fftshift(np.fft.fft2(padded)))**2
        v = np.clip((np.log10(np.maximum(psf / psf.max(), 1e-30)) + 6) / 6, 0, 1)
        Image.fromarray((v * 65535 + 0.5).astype(np.uint16)).save(out / f"np_{k:05d}.png",
                                                                   compress_level=1)
    t = time.perf_counter() - t0
    print(f"numpy_png_loop,{2 * n},{a.images},{t:.6f},{t / a.images * 1e6:.1f}", flush=True)


if __name__ == "__main__":
    main()
