#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""psfsim from Python: a through-focus set and a set of random aberrations,
side by side, each image compared with the same PSF computed in NumPy and,
when it is installed, with prysm (pip install prysm).

    python3 examples/python/through_focus.py [--plot through_focus.png]

The aperture is the HST's (2.4 m, obscuration 0.33, spiders left out so
that prysm's circle() draws the same pupil), 128 samples across it on a
256 x 256 grid (Q = 2), binary edges (prysm's masks are binary); 550 nm.
Both codes propagate |F{A exp(+i 2 pi W)}|^2 with the axis at (N/2, N/2)
and orthonormal Zernike terms, so with the same pupil the images agree to
float32 rounding (psfsim computes in single precision).

The random set is one psfsim set (sweep.random): Noll 4..11 drawn by
psfsim (normal, 0.05 waves RMS each, seed 1), and the NumPy and prysm
images made from the coefficients psfsim labels each image with.
"""
import argparse
import math

import numpy as np

import psfsim

D, OBS, N_PUPIL, Q, WL_NM = 2.4, 0.33, 128, 2.0, 550.0
BASE = {
    "optics": {"wavelength_nm": WL_NM, "f_number": 24.0,
               "aperture": {"diameter_m": D, "obscuration": OBS, "edge": "binary"}},
    "sampling": {"pupil_samples": N_PUPIL, "padding": Q},
}
DEFOCUS = [-0.5, -0.25, 0.0, 0.25, 0.5]  # waves RMS of Noll 4
NOLL = list(range(4, 12))


def through_focus():
    """One psfsim set: the sweep over defocus."""
    cfg = dict(BASE, name="through_focus", sweep={"defocus": DEFOCUS})
    images, params = psfsim.compute(cfg, backend="cpu", frame=False)
    return images, params, [{4: d} for d in DEFOCUS]


def random_aberrations(count=5, rms=0.05, seed=1):
    """One psfsim set of count random draws of Noll 4..11 (normal, rms waves
    RMS each, sweep.random), and each image's coefficients as psfsim drew
    them (Set.zernike: the label of every image)."""
    cfg = dict(BASE, name="random", sweep={"random": {
        "count": count, "seed": seed, "zernike": [(j, "normal", rms) for j in NOLL]}})
    with psfsim.Set(cfg, backend="cpu") as s:
        images, _ = s.compute()
        coeffs = s.zernike()
        terms = [dict(zip(s.term_j, row)) for row in coeffs]
    return images, terms


# ---- the same PSFs in NumPy: psfsim's conventions (README, "Conventions") ----

def noll_to_nm(j):
    """Noll's index j -> (n, m): in order n, |m| increasing, each |m| > 0
    twice, the even j the cosine (m > 0), the odd j the sine (Noll 1976)."""
    n = 0
    while (n + 1) * (n + 2) // 2 < j:
        n += 1
    mags = [m for m in range(n % 2, n + 1, 2) for _ in range(1 if m == 0 else 2)]
    m = mags[j - n * (n + 1) // 2 - 1]
    return n, (m if m == 0 or j % 2 == 0 else -m)


def zernike(n, m, rho, theta):
    """Orthonormal (unit RMS over the disk) Zernike polynomial."""
    R = np.zeros_like(rho)
    for s in range((n - abs(m)) // 2 + 1):
        c = ((-1) ** s * math.factorial(n - s) /
             (math.factorial(s) * math.factorial((n + abs(m)) // 2 - s) *
              math.factorial((n - abs(m)) // 2 - s)))
        R += c * rho ** (n - 2 * s)
    if m == 0:
        return np.sqrt(n + 1) * R
    return np.sqrt(2 * (n + 1)) * R * (np.cos(m * theta) if m > 0 else np.sin(-m * theta))


def numpy_psf(terms):
    """The PSF for {noll: waves RMS}, normalised to the unaberrated peak."""
    n_fft = int(np.floor(Q * N_PUPIL + 0.5))
    dx = D / N_PUPIL
    c = (np.arange(n_fft) - n_fft // 2) * dx
    x, y = np.meshgrid(c, c)
    r = np.hypot(x, y)
    rho, theta = r / (D / 2), np.arctan2(y, x)
    amp = ((r <= D / 2) & (r >= OBS * D / 2)).astype(float)
    w = sum(v * zernike(*noll_to_nm(j), rho, theta) for j, v in terms.items())
    field = np.fft.fft2(np.fft.ifftshift(amp * np.exp(2j * np.pi * w * (amp > 0))))
    return np.fft.fftshift(np.abs(field) ** 2) / amp.sum() ** 2


def prysm_psf(terms):
    """The same with prysm (0.21): None when prysm is not installed."""
    try:
        from prysm.coordinates import cart_to_polar, make_xy_grid
        from prysm.geometry import circle
        from prysm.polynomials import noll_to_nm as p_noll, zernike_nm
        from prysm.propagation import Wavefront
    except ImportError:
        return None
    n_fft = int(np.floor(Q * N_PUPIL + 0.5))
    x, y = make_xy_grid(n_fft, dx=D / N_PUPIL * 1e3)  # mm
    r, t = cart_to_polar(x, y)
    amp = circle(D / 2 * 1e3, r) & ~circle(OBS * D / 2 * 1e3, r)
    opd_nm = sum(v * WL_NM * zernike_nm(*p_noll(j), r / (D / 2 * 1e3), t, norm=True)
                 for j, v in terms.items())
    def focus(opd):
        wf = Wavefront.from_amp_and_phase(amp.astype(float), opd * amp, WL_NM / 1e3,
                                          D / N_PUPIL * 1e3)
        return wf.focus(efl=24.0 * D * 1e3, Q=1).intensity.data

    # Over prysm's own unaberrated peak: its FFT's scaling differs between
    # versions (0.21: none, the peak is amp.sum()^2).
    return focus(opd_nm) / focus(0.0 * opd_nm).max()


def compare(name, images, terms):
    print("%s: %d images of %dx%d" % (name, len(images), *images.shape[1:]))
    for k, (img, t) in enumerate(zip(images, terms)):
        ref = numpy_psf(t)
        line = "  %d: Strehl %.4f  |psfsim - numpy| max %.2g" % (k, img.max(),
                                                                np.abs(img - ref).max())
        pr = prysm_psf(t)
        if pr is not None:
            line += "  |psfsim - prysm| max %.2g" % np.abs(img - pr).max()
        print(line)
        assert np.abs(img - ref).max() < 1e-5, "psfsim and NumPy differ"
        if pr is not None:
            assert np.abs(img - pr).max() < 1e-5, "psfsim and prysm differ"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plot", help="write both sets side by side to this PNG (matplotlib)")
    args = ap.parse_args()
    focus_images, params, focus_terms = through_focus()
    print("defocus (waves RMS):", params["defocus"], " Strehl:", np.round(params["strehl"], 4))
    compare("through focus", focus_images, focus_terms)
    random_images, random_terms = random_aberrations()
    compare("random aberrations", random_images, random_terms)
    if args.plot:
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(2, 5, figsize=(12, 5))
        for k in range(5):
            for row, img in ((0, focus_images[k]), (1, random_images[k])):
                ax[row, k].imshow(np.log10(np.maximum(img[96:160, 96:160], 1e-5)),
                                  vmin=-5, vmax=0, cmap="inferno")
                ax[row, k].set_axis_off()
        ax[0, 0].set_title("through focus", loc="left")
        ax[1, 0].set_title("random Noll 4-11", loc="left")
        fig.savefig(args.plot, dpi=80)
        print("wrote", args.plot)


if __name__ == "__main__":
    main()
