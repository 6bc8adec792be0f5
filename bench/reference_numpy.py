#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Reference pipeline from the question that started psfsim, in NumPy: build
an n x n pupil (circular aperture, phase rho^2 cos(phi) waves), pad it to
2n x 2n, FFT, take |.|^2. Prints CSV rows:
    pipeline,npix,images,seconds_total,us_per_psf
for a single PSF (median of repeats) and a loop over a batch of images.
Usage: reference_numpy.py [--sizes 32,64,...] [--batch 1000]"""
import argparse
import time

import numpy as np


def pupil(n):
    y, x = np.mgrid[-1:1:n * 1j, -1:1:n * 1j]
    rho, phi = np.hypot(x, y), np.arctan2(y, x)
    amp = (rho <= 1).astype(np.float64)
    return amp * np.exp(2j * np.pi * rho**2 * np.cos(phi))


def psf(n):
    p = pupil(n)
    padded = np.zeros((2 * n, 2 * n), dtype=np.complex128)
    padded[:n, :n] = p
    return np.abs(np.fft.fftshift(np.fft.fft2(padded)))**2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="32,64,128,256,512,1024,2048")
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--max-seconds", type=float, default=20.0,
                    help="cap the batch loop at this many seconds (then extrapolate per PSF)")
    a = ap.parse_args()
    for n in [int(s) for s in a.sizes.split(",")]:
        psf(n)  # warm-up
        reps = max(3, min(50, int(0.5 / max(1e-6, _time(lambda: psf(n))))))
        t = sorted(_time(lambda: psf(n)) for _ in range(reps))[reps // 2]
        print(f"numpy_single,{2 * n},1,{t:.6f},{t * 1e6:.1f}", flush=True)
        done, t0 = 0, time.perf_counter()
        while done < a.batch and time.perf_counter() - t0 < a.max_seconds:
            psf(n)
            done += 1
        tb = time.perf_counter() - t0
        print(f"numpy_batch,{2 * n},{done},{tb:.6f},{tb / done * 1e6:.1f}", flush=True)


def _time(f):
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
