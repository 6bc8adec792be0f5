#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Phase retrieval benchmark (issue 28): Noll 4..37 from three 256 x 256
through-focus images (defocus -0.5, 0, +0.5 waves RMS; pupil 128 samples,
padding 2; 600 nm, 1 m, obscuration 0.2), psfsim.retrieve from zero,
noiseless (uniform weights, a flux per image) and with photon noise of
peak 1e5 (photon weights, flux and background per image, NumPy seeded).
Prints the wall time of each fit (best of --repeat) and the process's CPU
time in it (all threads: the machine's other load does not count), its
iterations and evaluations, the error in waves RMS and the errors over the reported
uncertainties. The fit computes on the CPU in double (psfsim_vjp).

    PSFSIM_LIBRARY=build/libpsfsim.so.0 PYTHONPATH=python \\
        python3 bench/retrieve_bench.py [--npix 256] [--last 37] [--repeat 1]
"""
import argparse
import logging
import os
import time

import numpy as np

import psfsim


def config(npix, zernike=None):
    d = {"name": "bench",
         "optics": {"wavelength_nm": 600.0, "aperture": {"diameter_m": 1.0, "obscuration": 0.2}},
         "sampling": {"pupil_samples": npix // 2, "padding": 2.0},
         "sweep": {"defocus": [-0.5, 0.0, 0.5]}}
    if zernike:
        d["aberrations"] = {"zernike": zernike}
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--npix", type=int, default=256)
    ap.add_argument("--last", type=int, default=37, help="the last Noll term fitted (from 4)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--backend", default="cpu", help="the Set's: cpu, gpu (its VJP on the GPU), "
                    "auto")
    args = ap.parse_args()
    # psfsim_retrieve logs where its time went (images, gradients, Fisher; on the GPU
    # its evaluations' parts)
    said = []
    log = logging.getLogger("psfsim")
    log.setLevel(logging.INFO)
    log.addHandler(type("H", (logging.Handler,), {"emit": lambda h, r: said.append(r.getMessage())})())
    terms = list(range(4, args.last + 1))
    rng = np.random.default_rng(37)
    # 0.02 waves RMS per term, falling with the radial order (a typical spectrum)
    truth = np.array([rng.normal(0, 0.03) / (1 + 0.1 * (j - 4)) ** 0.5 for j in terms])
    clean, _ = psfsim.compute(config(args.npix, list(zip(terms, truth))), backend="cpu",
                              frame=False)
    clean = clean.astype(np.float64)
    noisy = rng.poisson(1e5 * clean / clean.max() + 2.0).astype(np.float64)
    print("psfsim %s, %d CPUs: Noll 4..%d (%d terms) from 3 images of %dx%d, truth %.3f waves "
          "RMS" % (psfsim.version(), os.cpu_count(), args.last, len(terms), args.npix, args.npix,
                   np.sqrt(np.sum(truth ** 2))))
    runs = (("noiseless", clean * 1e4, dict()),
            ("photon 1e5", noisy, dict(noise="photon", fit_background=True)))
    with psfsim.Set(config(args.npix), backend=args.backend, threads=args.threads) as s:
        print("# backend %s" % s.decision["backend"])
        for name, data, kw in runs:
            best = cpu = None
            for _ in range(args.repeat):
                n0 = len(said)
                t0, c0 = time.perf_counter(), time.process_time()
                r = psfsim.retrieve(s, data, terms=terms, **kw)
                dt, dc = time.perf_counter() - t0, time.process_time() - c0
                if best is None or dt < best:
                    best, cpu = dt, dc
                    parts = [m for m in said[n0:] if m.startswith("retrieve:")]
            err = r.coefficients - truth
            print("%-11s %.3f s (CPU %.3f s)  %3d iterations  %4d evaluations  error %.2e waves RMS  "
                  "errors/sigma RMS %.2f  lbfgs %d" % (name, best, cpu, r.iterations, r.evaluations,
                                                       np.sqrt(np.sum(err ** 2)),
                                                       np.sqrt(np.mean((err / r.uncertainties)
                                                                       ** 2)),
                                                       r.lbfgs_status))
            for m in parts:
                print("    " + m)


if __name__ == "__main__":
    main()
