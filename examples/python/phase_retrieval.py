#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Phase retrieval with psfsim (issue 28): the aberrations of a
through-focus set made with photon noise, recovered by psfsim.retrieve.

    python3 examples/python/phase_retrieval.py [--peak 1e5] [--seed 1] [--npix 128]

Three images at defocus -0.5, 0 and +0.5 waves RMS (Noll 4) of a 1 m
telescope with a 20% central obscuration, 600 nm, Nyquist sampled
(padding 2), carry unknown Noll 4..15 of a few hundredths of a wave each.
The "measurements" are psfsim's images scaled to --peak photons in the
brightest pixel, plus a background of 2 photons, with Poisson noise
(NumPy, seeded). psfsim.retrieve fits Noll 4..15 to them from zero with
photon-noise weights, a flux and a background per image, and reports
each coefficient's 1-sigma uncertainty from the Fisher information: the
table shows the errors against those uncertainties.
"""
import argparse
import time

import numpy as np

import psfsim

TERMS = list(range(4, 16))
TRUTH = [0.04, -0.06, 0.05, 0.03, -0.04, 0.02, -0.03, 0.035, 0.02, -0.02, 0.015, -0.01]


def config(npix, zernike=None):
    d = {"name": "through_focus",
         "optics": {"wavelength_nm": 600.0, "aperture": {"diameter_m": 1.0, "obscuration": 0.2}},
         "sampling": {"pupil_samples": npix // 2, "padding": 2.0},
         "sweep": {"defocus": [-0.5, 0.0, 0.5]}}
    if zernike:
        d["aberrations"] = {"zernike": zernike}
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--peak", type=float, default=1e5, help="photons in the brightest pixel")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--npix", type=int, default=128, help="image size M (pupil M/2 samples)")
    args = ap.parse_args()
    clean, _ = psfsim.compute(config(args.npix, list(zip(TERMS, TRUTH))), backend="cpu",
                              frame=False)
    rng = np.random.default_rng(args.seed)
    data = rng.poisson(args.peak * clean / clean.max() + 2.0).astype(np.float64)
    t0 = time.perf_counter()
    r = psfsim.retrieve(config(args.npix), data, terms=TERMS, noise="photon",
                        fit_background=True)
    dt = time.perf_counter() - t0
    print("%d images of %dx%d, peak %.3g photons: %d iterations, %d evaluations, %.2f s, "
          "chi2/dof %.4f" % (len(data), args.npix, args.npix, args.peak, r.iterations,
                             r.evaluations, dt, r.chi2 / r.dof))
    print("  Noll    truth      fit    sigma   (fit-truth)/sigma")
    for j, t, c, s in zip(r.terms, TRUTH, r.coefficients, r.uncertainties):
        print("  %4d  %+.4f  %+.5f  %.5f  %+.2f" % (j, t, c, s, (c - t) / s))
    err = np.asarray(r.coefficients) - TRUTH
    print("error %.2e waves RMS in all; errors/sigma RMS %.2f" %
          (np.sqrt(np.sum(err ** 2)), np.sqrt(np.mean((err / r.uncertainties) ** 2))))
    print("flux", np.round(r.flux, 1), "background", np.round(r.background, 3))


if __name__ == "__main__":
    main()
