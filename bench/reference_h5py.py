#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The best dataset peer one can write in Python: random-aberration PSFs
computed in chunks with one batched FFT per chunk (CuPy on a GPU, else
NumPy), written with h5py into one chunked float32 dataset [K, M, M], as
psfsim's NAME.h5 holds them. The PSF is psfsim's: a circular pupil of n
samples across D, zero-padded to N = Q n, |FFT|^2 centred at (N/2, N/2),
"peak" normalised (the unaberrated peak is (sum A)^2); Zernike terms
j = 4..(3 + terms), Noll order, unit RMS, drawn normal with sigma 0.05
waves (any generator: the timing does not depend on the values).

    reference_h5py.py OUT.h5 --images K [--pupil 32] [--padding 2] [--terms 12]
                      [--chunk 4096] [--numpy]

SYNC=1 in the environment: the time includes a sync(2) after the file is
closed (bytes on the disk, as datasets_bench.sh's SYNC=1 times the others).

Prints one CSV row: peer,images,npix,seconds,images_per_s."""
import argparse
import math
import os
import time

import h5py
import numpy as np


def noll_to_nm(j):
    # Noll (1976): n from j, |m| by position within the order, sign by parity.
    n = 0
    while (n + 1) * (n + 2) // 2 < j:
        n += 1
    k = j - n * (n + 1) // 2 - 1  # 0-based position within order n
    ms = [m for m in range(n % 2, n + 1, 2) for _ in ((0,) if m == 0 else (0, 1))]
    am = ms[k]
    m = am if am == 0 else (am if j % 2 == 0 else -am)
    return n, m


def zernike(n, m, rho, phi):
    am = abs(m)
    r = np.zeros_like(rho)
    for s in range((n - am) // 2 + 1):
        c = (-1) ** s * math.factorial(n - s) / (
            math.factorial(s) * math.factorial((n + am) // 2 - s) * math.factorial((n - am) // 2 - s))
        r += c * rho ** (n - 2 * s)
    norm = math.sqrt(n + 1) if m == 0 else math.sqrt(2 * (n + 1))
    ang = 1.0 if m == 0 else (np.cos(am * phi) if m > 0 else np.sin(am * phi))
    return norm * r * ang


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--images", type=int, required=True)
    ap.add_argument("--pupil", type=int, default=32)
    ap.add_argument("--padding", type=float, default=2.0)
    ap.add_argument("--terms", type=int, default=12)
    ap.add_argument("--chunk", type=int, default=4096)
    ap.add_argument("--numpy", action="store_true")
    a = ap.parse_args()
    xp = np
    if not a.numpy:
        try:
            import cupy
            xp = cupy
        except ImportError:
            pass
    n, N = a.pupil, int(math.floor(a.padding * a.pupil + 0.5))
    c = (np.arange(n) - n / 2 + 0.5) / (n / 2)
    x, y = np.meshgrid(c, c)
    rho, phi = np.hypot(x, y), np.arctan2(y, x)
    amp = (rho <= 1).astype(np.float32)
    basis = np.stack([zernike(*noll_to_nm(j), rho, phi) * amp for j in range(4, 4 + a.terms)])
    basis = xp.asarray(basis.reshape(a.terms, n * n), dtype=xp.float32)
    amp_d = xp.asarray(amp)
    peak = float(amp.sum()) ** 2
    rng = np.random.default_rng(1)
    t0 = time.perf_counter()
    with h5py.File(a.out, "w") as f:
        cimg = max(1, (1 << 20) // (N * N * 4))
        ds = f.create_dataset("images", (a.images, N, N), dtype="f4", chunks=(cimg, N, N))
        for first in range(0, a.images, a.chunk):
            b = min(a.chunk, a.images - first)
            coeff = xp.asarray(rng.normal(0.0, 0.05, (b, a.terms)).astype(np.float32))
            phase = (coeff @ basis).reshape(b, n, n)
            field = xp.zeros((b, N, N), dtype=xp.complex64)
            field[:, :n, :n] = amp_d * xp.exp(2j * np.pi * phase)
            img = xp.abs(xp.fft.fftshift(xp.fft.fft2(field), axes=(1, 2))) ** 2 / peak
            host = img.astype(xp.float32)
            host = host.get() if xp is not np else host
            ds[first:first + b] = host
    if os.environ.get("SYNC") == "1":  # as bench/datasets_bench.sh times psfsim and dd
        os.sync()
    t = time.perf_counter() - t0
    name = "cupy_h5py" if xp is not np else "numpy_h5py"
    print(f"{name},{a.images},{N},{t:.3f},{a.images / t:.0f}", flush=True)


if __name__ == "__main__":
    main()
