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
"""
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
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
