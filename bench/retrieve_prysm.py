#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Phase retrieval, psfsim against prysm's differentiable model of the same
problem (issue 28's peer: "prysm's ... gradient-based retrieval ... on the
same problem in the same run: >= 10x faster to the same accuracy").

The problem is bench/retrieve_jax.py's, imported from it (DEFOCUS, problem(),
the same seeded truth): Noll 4..LAST (default 37) from three M x M
through-focus images (defocus -0.5, 0, +0.5 waves RMS of Z4), noiseless,
unit flux, least squares with uniform weights, from zero; the pupil a
transmission map of exact 0s and 1s at psfsim's own pitch. prysm's model:
W = sum_j c_j Z_j + d Z4 in waves (prysm.polynomials.zernike_nm of
noll_to_nm(j), unit RMS, of rho = r / R and theta from the columns' axis),
the field Wavefront.from_amp_and_phase(A, 600 W nm, 0.6 um) on the M x M
grid with the axis on sample M/2, Wavefront.focus(Q=1) (an orthonormal
fftshift(fft2(ifftshift)): exp(+2 pi i W), as psfsim), I = .intensity over
its sum per image; loss 0.5 sum (I - data)^2. The two forwards are checked
to agree (max |difference| / peak, at most 1e-6) before anything is timed.

The gradient is a reverse pass through prysm's operators, neither autodiff
nor differences. prysm 0.21.1, the last release, has no adjoints (its
unreleased GitHub master, 0.22, adds Wavefront.intensity_adjoint,
.focus_adjoint and .from_amp_and_phase_adjoint_phase), so those three
steps are written here as 0.22 writes them: Ebar = 2 Ibar E; Pbar =
unfocus(Ebar), focus's adjoint as the orthonormal FFT is unitary (0.22's
focus_adjoint at Q=1); Wbar = 2 pi Im(Pbar conj(P)) (0.22's phase adjoint,
which at its HEAD also multiplies by i). Before them, the unit-sum
normalisation's adjoint; after them, the Zernikes'. The gradient is checked
once against a central difference on the term of largest gradient
(relative difference, at most 1e-5). 0.21.1 has no optimiser (0.22's
prysm.x.optym is unreleased): SciPy's L-BFGS-B drives prysm's model, with
retrieve_jax's options. psfsim: psfsim.retrieve
(L-BFGS from liblbfgs over psfsim_vjp, the set's backend),
uncertainties=False. prysm computes in double on --xp: NumPy (scipy.fft,
one thread: prysm's default) or CuPy (prysm's backend swapped to CuPy and
cupyx.scipy.fft; synchronised before the clock is read). Each fit's time
is the best of --repeat after a warm-up fit; the error is the
coefficients' RMS distance from the truth, in waves. Prints why and exits
0 without prysm or SciPy (or CuPy when --xp cupy is asked for).

    PSFSIM_LIBRARY=build/libpsfsim.so.0 PYTHONPATH=python \\
        python3 bench/retrieve_prysm.py [--npix 256] [--last 37] [--xp numpy] [--backend gpu]
"""
import argparse
import os
import sys
import warnings

import numpy as np

import psfsim

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from retrieve_jax import DEFOCUS, problem, time_fits  # noqa: E402  the very same problem

WVL_NM = 600.0  # problem()'s wavelength_nm
EFL_MM = 1.0  # sets only the PSF's pitch, which nothing here uses


def skip(why):
    print("# retrieve_prysm: skipped: %s" % why)
    sys.exit(0)


def main():
    try:
        import cupy
    except ImportError:
        cupy = None
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--npix", type=int, default=256)
    ap.add_argument("--last", type=int, default=37)
    ap.add_argument("--xp", choices=("numpy", "cupy"), default="numpy" if cupy is None else "cupy",
                    help="prysm's array backend (default cupy if importable)")
    ap.add_argument("--backend", default="cpu", help="psfsim's (cpu, gpu, auto)")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    try:
        with warnings.catch_warnings():  # 0.21.1's import of pkg_resources
            warnings.simplefilter("ignore")
            import prysm
        from prysm import mathops
        from prysm.polynomials import noll_to_nm, zernike_nm
        from prysm.propagation import Wavefront
        from scipy.optimize import minimize
    except ImportError as e:
        skip("no prysm or SciPy (%s)" % e)
    if a.xp == "cupy" and cupy is None:
        skip("no CuPy for --xp cupy")
    terms = list(range(4, a.last + 1))
    rng = np.random.default_rng(37)  # retrieve_jax's truth
    truth = np.array([rng.normal(0, 0.03) / (1 + 0.1 * (j - 4)) ** 0.5 for j in terms])
    cfg, amp, rho, theta = problem(a.npix)
    cfg["name"] = "retrieve_prysm"
    basis = np.stack([zernike_nm(*noll_to_nm(j), rho, theta) for j in terms])  # [J, M, M]
    z4 = zernike_nm(*noll_to_nm(4), rho, theta)
    dx_mm = 1e3 / cfg["sampling"]["pupil_samples"]

    if a.xp == "cupy":  # everything prysm computes from here on is a CuPy array
        if hasattr(mathops, "set_backend_to_cupy"):
            mathops.set_backend_to_cupy()
        else:  # 0.21.1: its shims' source modules, as its documentation swaps them
            import cupyx.scipy.fft
            mathops.np._srcmodule, mathops.fft._srcmodule = cupy, cupyx.scipy.fft
        xp, to_host, sync = cupy, cupy.asnumpy, cupy.cuda.Device().synchronize
    else:
        xp, to_host, sync = np, np.asarray, lambda: None
    with psfsim.Set(cfg, backend=a.backend) as s:
        data = s.compute_inputs(terms=terms, zernike=truth)  # [3, M, M], each sums to 1
        amp_x, basis_x, z4_x, data_x = (xp.asarray(v, dtype=xp.float64)
                                        for v in (amp, basis, z4, data))

        def forward(c):  # -> [(pupil, psf, I over its sum, its sum)], one per image
            w = xp.tensordot(xp.asarray(c), basis_x, axes=1)
            out = []
            for d in DEFOCUS:
                pupil = Wavefront.from_amp_and_phase(amp_x, (w + d * z4_x) * WVL_NM,
                                                     WVL_NM / 1e3, dx_mm)
                psf = pupil.focus(EFL_MM, Q=1)
                i = psf.intensity.data
                out.append((pupil, psf, i / i.sum(), i.sum()))
            return out

        def loss(c):
            return 0.5 * sum(float(((i - dk) ** 2).sum())
                             for (_, _, i, _), dk in zip(forward(c), data_x))

        def fun(c):  # the loss and its gradient by the reverse pass, on the host for SciPy
            v, wbar = 0.0, 0.0
            for (pupil, psf, i, total), dk in zip(forward(c), data_x):
                r = i - dk
                v += 0.5 * (r * r).sum()
                ibar = (r - (r * i).sum()) / total  # through I / sum(I)
                ebar = Wavefront(2 * ibar * psf.data, psf.wavelength, psf.dx, psf.space)
                pbar = ebar.unfocus(EFL_MM, Q=1).data  # focus's adjoint
                wbar = wbar + 2 * np.pi * xp.imag(pbar * xp.conj(pupil.data))  # in waves
            g = xp.tensordot(basis_x, wbar, axes=((1, 2), (0, 1)))
            return float(v), to_host(g).astype(np.float64)

        images = xp.stack([i for _, _, i, _ in forward(truth)])
        agree = float(abs(images - data_x).max() / data_x.max())
        print("# psfsim %s, prysm %s (%s) on %s; Noll 4..%d (%d terms) from 3 images of "
              "%d x %d; forwards agree to %.1e of the peak" % (
                  psfsim.version(), getattr(prysm, "__version__", "?"), a.xp,
                  "the GPU" if a.xp == "cupy" else "the CPU", a.last, len(terms), a.npix,
                  a.npix, agree))
        if agree > 1e-6:  # psfsim samples its Zernike basis in float32
            print("# the two models differ: no comparison")
            sys.exit(1)
        c0 = 0.5 * truth  # away from the minimum, where the gradient is not small
        g = fun(c0)[1]
        k, h = int(np.argmax(abs(g))), 1e-6
        e = np.zeros(len(terms))
        e[k] = h
        fd = (loss(c0 + e) - loss(c0 - e)) / (2 * h)
        rel = abs(g[k] - fd) / abs(fd)
        print("# prysm's gradient on Z%d against a central difference (h %g): %.3e and %.3e, "
              "relative difference %.1e" % (terms[k], h, g[k], fd, rel))
        if not rel <= 1e-5:
            print("# prysm's gradient is wrong: no comparison")
            sys.exit(1)

        def fit_prysm():
            r = minimize(fun, np.zeros(len(terms)), jac=True, method="L-BFGS-B",
                         options={"maxiter": 2000, "ftol": 1e-30, "gtol": 1e-14,
                                  "maxcor": 10})
            sync()
            return r.x, r.nit

        def fit_psfsim():
            r = psfsim.retrieve(s, data, terms=terms, fit_flux=False, uncertainties=False)
            return r.coefficients, r.iterations

        print("what,seconds,iterations,error_waves_rms")
        ps, pr = "psfsim_" + s.decision["backend"], "prysm_" + a.xp
        # warm: plans, caches, the device's first kernels
        best = time_fits(((ps, fit_psfsim), (pr, fit_prysm)), a.repeat, truth, sync, warm=True)
    (tp, _, ep), (tr, _, er) = best[ps], best[pr]
    print("# the fit alone: psfsim %.3f s (error %.1e waves RMS), prysm %.3f s (%.1e): %.2fx" % (
        tp, ep, tr, er, tr / tp))


if __name__ == "__main__":
    main()
