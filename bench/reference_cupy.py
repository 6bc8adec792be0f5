#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Reference pipeline from the question that started psfsim, in CuPy: build
an n x n pupil (circular aperture, phase rho^2 cos(phi) waves) on the GPU,
pad it to 2n x 2n, FFT, take |.|^2 and copy the PSF to host memory. Prints
CSV rows: pipeline,npix,images,seconds_total,us_per_psf
 - cupy_single: one PSF to host memory (median of repeats, after warm-up);
 - cupy_loop: a loop of one-PSF pipelines (the question's code);
 - cupy_batch: the same images as one batched stack (CuPy's best case).
Usage: reference_cupy.py [--sizes 32,64,...] [--batch 1000]"""
import argparse
import time

import cupy as cp


def pupil(n, shift=0.0):
    y, x = cp.mgrid[-1:1:n * 1j, -1:1:n * 1j]
    rho, phi = cp.hypot(x, y), cp.arctan2(y, x)
    amp = (rho <= 1).astype(cp.float32)
    return amp * cp.exp(2j * cp.pi * (rho**2 * cp.cos(phi) + shift))


def psf_to_host(n):
    p = pupil(n)
    padded = cp.zeros((2 * n, 2 * n), dtype=cp.complex64)
    padded[:n, :n] = p
    out = cp.abs(cp.fft.fftshift(cp.fft.fft2(padded)))**2
    return out.get()


def batch_to_host(n, b):
    p = pupil(n)
    padded = cp.zeros((b, 2 * n, 2 * n), dtype=cp.complex64)
    padded[:, :n, :n] = p[None, :, :]
    out = cp.abs(cp.fft.fftshift(cp.fft.fft2(padded), axes=(1, 2)))**2
    return out.get()


def timed(f):
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="32,64,128,256,512,1024,2048")
    ap.add_argument("--batch", type=int, default=1000)
    a = ap.parse_args()
    for n in [int(s) for s in a.sizes.split(",")]:
        for _ in range(3):
            psf_to_host(n)
        reps = 50 if n <= 256 else 10
        t = sorted(timed(lambda: psf_to_host(n)) for _ in range(reps))[reps // 2]
        print(f"cupy_single,{2 * n},1,{t:.6f},{t * 1e6:.1f}", flush=True)
        loop = a.batch if n <= 512 else max(10, a.batch // 100)
        tl = timed(lambda: [psf_to_host(n) for _ in range(loop)])
        print(f"cupy_loop,{2 * n},{loop},{tl:.6f},{tl / loop * 1e6:.1f}", flush=True)
        # The batched stack must fit in device memory (~8 bytes x 3 per pixel).
        b = a.batch
        while b > 1 and b * (2 * n)**2 * 24 > 40e9:
            b //= 2
        batch_to_host(n, min(b, 4))
        tb = timed(lambda: batch_to_host(n, b))
        print(f"cupy_batch,{2 * n},{b},{tb:.6f},{tb / b * 1e6:.1f}", flush=True)
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
