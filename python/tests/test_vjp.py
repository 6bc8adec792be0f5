# SPDX-License-Identifier: BSD-3-Clause
"""Gradients of a set's images (psfsim.vjp, psfsim.compute_inputs; lib/psfsim.h
psfsim_vjp): the double model's images equal compute()'s to float32
rounding; every gradient equals the central differences of compute_inputs
(double) to 1e-4 relative, for the FFT and the MFT, one and three
wavelengths, every normalisation, with and without the detector stage, a
segmented aperture's segment terms, an OPD map, POPPY's orientation; and
two gradients known without psfsim: the peak pixel's gradient in defocus
at zero aberration (0: the peak is a maximum over defocus, even in it) and
the centroid's in tilt (an independent NumPy model of the same pupil)."""
import os

import numpy as np
import pytest

import psfsim
from gpu_probe import gpu_missing

H = 1e-5  # central-difference step (config units: waves)


def base(**over):
    """A small set: 32 pupil samples, a 64 x 64 FFT, three images."""
    cfg = {"name": "vjp",
           "optics": {"wavelength_nm": 600.0,
                      "aperture": {"diameter_m": 2.0, "obscuration": 0.2}},
           "sampling": {"pupil_samples": 32},
           "aberrations": {"units": "waves", "zernike": [[5, 0.04], [8, -0.03]]},
           "sweep": {"defocus": [0.0, 0.05, -0.1]}}
    for k, v in over.items():
        node = cfg
        keys = k.split(".")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = v
    return cfg


CASES = {
    "fft": {},
    "fft_sum": {"normalization": "sum"},
    "fft_pupil": {"normalization": "pupil"},
    "fft_nm": {"aberrations.units": "nm", "aberrations.zernike": [[5, 20.0]]},
    "wl_sweep_nm": {"aberrations.units": "nm", "aberrations.zernike": [[5, 20.0]],
                    "sweep.wavelength_nm": [500.0, 700.0]},
    "broadband": {"optics.wavelengths_nm": [550.0, 600.0, 650.0],
                  "optics.weights": [0.2, 0.5, 0.3], "optics.wavelength_nm": None},
    # 18 images at one wavelength: 18 rows on one pupil, a batch past
    # GPU_VJP_FEW_ROWS (the GPU's cuBLAS products, not its own kernels)
    "fft_many_rows": {"sweep.defocus": [0.01 * i - 0.09 for i in range(18)]},
    "mft": {"output.npix": 40, "output.pixel_scale": 0.4},
    "mft_sum": {"output.npix": 40, "output.pixel_scale": 0.4, "normalization": "sum"},
    "mft_pupil": {"output.npix": 40, "output.pixel_scale": 0.4, "normalization": "pupil"},
    "mft_broadband_sum": {"output.npix": 36, "output.pixel_scale": 0.45,
                          "normalization": "sum",
                          "optics.wavelengths_nm": [550.0, 650.0],
                          "optics.wavelength_nm": None},
    "detector": {"detector.oversample": 2, "detector.pixel_response": True,
                 "detector.jitter_lambda_d": 0.3, "detector.charge_diffusion_px": 0.2,
                 "detector.ipc": [0.0, 0.02, 0.0, 0.02, 0.92, 0.02, 0.0, 0.02, 0.0]},
    "detector_sum_broadband": {"detector.oversample": 2, "detector.jitter_lambda_d": 0.2,
                               "normalization": "sum",
                               "optics.wavelengths_nm": [550.0, 650.0],
                               "optics.wavelength_nm": None},
    "detector_oversampled": {"detector.oversample": 2, "detector.write": "oversampled",
                             "detector.jitter_lambda_d": 0.3, "normalization": "pupil"},
    "mft_detector_sum": {"output.npix": 20, "output.pixel_scale": 0.8,
                         "normalization": "sum", "detector.oversample": 2,
                         "detector.ipc": [0.0, 0.02, 0.0, 0.02, 0.92, 0.02, 0.0, 0.02, 0.0]},
    "poppy": {"output.orientation": "poppy", "output.npix": 40, "output.pixel_scale": 0.4,
              "normalization": "sum"},
    "poppy_blocks": {"output.orientation": "poppy", "detector.oversample": 3,
                     "detector.pixel_response": True, "output.npix": 16,
                     "output.pixel_scale": 0.9},
}


def config(name):
    over = dict(CASES[name])
    cfg = base(**{k: v for k, v in over.items() if v is not None})
    if over.get("optics.wavelength_nm", 1) is None:
        del cfg["optics"]["wavelength_nm"]
    return cfg


def numeric_zernike(s, terms, cot, z0):
    """d(sum cot I)/dz by central differences of compute_inputs."""
    count = cot.shape[0]
    out = np.zeros((count, len(terms)))
    for t in range(len(terms)):
        dz = np.zeros((count, len(terms)))
        dz[:, t] = H
        fp = s.compute_inputs(terms=terms, zernike=z0 + dz)
        fm = s.compute_inputs(terms=terms, zernike=z0 - dz)
        out[:, t] = ((fp - fm) * cot).sum(axis=(1, 2)) / (2 * H)
    return out


def rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


def cotangent(s, seed=3):
    return np.random.default_rng(seed).standard_normal((s.count, s.npix, s.npix))


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_equals_compute(name):
    with psfsim.Set(config(name), backend="cpu") as s:
        f32, _ = s.compute()
        f64 = s.compute_inputs()
        assert f64.dtype == np.float64 and f64.shape == f32.shape
        assert np.abs(f32 - f64).max() <= 1e-5 * f64.max()
        if s.info["normalization"] == "sum":
            assert np.allclose(f64.sum(axis=(1, 2)), 1.0, rtol=1e-3)


@pytest.mark.parametrize("name", sorted(CASES))
def test_zernike_gradient_matches_differences(name):
    """Terms the set has (5) and has not (4, 7, 11), at non-zero inputs."""
    with psfsim.Set(config(name), backend="cpu") as s:
        unit = 600.0 if name.endswith("_nm") else 1.0  # the step in the set's unit
        terms = [4, 5, 7, 11]
        cot = cotangent(s)
        z0 = np.array([[0.02, -0.01, 0.03, 0.01]] * s.count) * unit
        g = s.vjp(cot, terms=terms, zernike=z0)["zernike"]
        num = numeric_zernike(s, terms, cot, z0)
        assert g.shape == (s.count, len(terms))
        assert rel(g, num) < 1e-4


def test_label_terms_default():
    """No terms given: the gradient is for the set's label terms, at its own values."""
    with psfsim.Set(config("fft"), backend="cpu") as s:
        cot = cotangent(s)
        out = s.vjp(cot, images=True)
        assert s.label_j == [4, 5, 8]
        assert out["zernike"].shape == (3, 3)
        num = numeric_zernike(s, s.label_j, cot, np.zeros((3, 3)))
        assert rel(out["zernike"], num) < 1e-4
        assert np.array_equal(out["images"], s.compute_inputs())


SEGMENTED = {"name": "seg",
             "optics": {"wavelength_nm": 700.0,
                        "aperture": {"shape": "segmented", "diameter_m": 2.0,
                                     "segments": {"flat_to_flat_m": 0.5, "gap_m": 0.02,
                                                  "rings": 1, "missing": [0],
                                                  "zernike": [[1, 2, 0.05], [3, 1, 0.02]]}}},
             "sampling": {"pupil_samples": 32},
             "aberrations": {"units": "waves", "zernike": [[4, 0.05]]}}


def test_segment_gradient_matches_differences():
    with psfsim.Set(SEGMENTED, backend="cpu") as s:
        f32, _ = s.compute()
        assert np.abs(f32 - s.compute_inputs()).max() <= 1e-5 * f32.max()
        cot = cotangent(s)
        st = [1, 2, 3, 4]
        z0 = np.zeros((1, 7, 4))
        z0[0, 2, 1] = 0.03
        g = s.vjp(cot, wrt=("zernike", "segment_zernike"), segment_terms=st,
                  segment_zernike=z0)
        assert g["segment_zernike"].shape == (1, 7, 4)
        assert np.all(g["segment_zernike"][0, 0] == 0.0)  # the missing centre
        num = np.zeros((1, 7, 4))
        for seg in range(1, 7):
            for t in range(4):
                dz = np.zeros_like(z0)
                dz[0, seg, t] = H
                fp = s.compute_inputs(segment_terms=st, segment_zernike=z0 + dz)
                fm = s.compute_inputs(segment_terms=st, segment_zernike=z0 - dz)
                num[0, seg, t] = ((fp - fm) * cot).sum() / (2 * H)
        assert rel(g["segment_zernike"], num) < 1e-4
        # piston of a segment (j = 1) changes the image: not a null gradient
        assert np.abs(num[0, 1:, 0]).min() > 0
        # without segment_terms: the set's own segment modes (j 2 and 1)
        own = s.vjp(cot, wrt="segment_zernike")["segment_zernike"]
        assert own.shape == (1, 7, 2)
        assert rel(own[0, :, 0], g_own_expected(s, cot)) < 1e-4


def g_own_expected(s, cot):
    """d/dc of segment mode j = 2 (the set's first) per segment, by differences."""
    out = np.zeros(7)
    for seg in range(1, 7):
        dz = np.zeros((1, 7, 1))
        dz[0, seg, 0] = H
        fp = s.compute_inputs(segment_terms=[2], segment_zernike=dz)
        fm = s.compute_inputs(segment_terms=[2], segment_zernike=-dz)
        out[seg] = ((fp - fm) * cot).sum() / (2 * H)
    return out


def opd_config(units="nm", **over):
    rng = np.random.default_rng(5)
    opd = rng.standard_normal((9, 11)).astype(np.float32) * 20.0
    cfg = base(**over)
    cfg["aberrations"]["opd_map"] = {"file": opd, "units": units, "scale": 1.5}
    return cfg


@pytest.mark.parametrize("units,over", [
    ("nm", {}),
    ("nm", {"output.npix": 40, "output.pixel_scale": 0.4, "normalization": "sum"}),
    ("nm", {"optics.wavelengths_nm": [550.0, 650.0]}),
    ("waves", {"optics.wavelengths_nm": [550.0, 650.0], "normalization": "pupil"})])
def test_opd_map_gradient_matches_differences(units, over):
    cfg = opd_config(units, **over)
    if units == "waves":
        cfg["aberrations"]["opd_map"]["scale"] = 0.002  # 0.04 waves RMS
    if "optics.wavelengths_nm" in over:
        del cfg["optics"]["wavelength_nm"]
    with psfsim.Set(cfg, backend="cpu") as s:
        f32, _ = s.compute()
        assert np.abs(f32 - s.compute_inputs()).max() <= 1e-5 * f32.max()
        cot = cotangent(s)
        d0 = np.random.default_rng(9).standard_normal((9, 11))
        g = s.vjp(cot, wrt=("opd_map", "zernike"), opd_map=d0)
        assert g["opd_map"].shape == (9, 11)
        num = np.zeros((9, 11))
        h = 1e-3  # nm
        for r in range(9):
            for c in range(11):
                dm = d0.copy()
                dm[r, c] += h
                fp = s.compute_inputs(opd_map=dm)
                dm[r, c] -= 2 * h
                fm = s.compute_inputs(opd_map=dm)
                num[r, c] = ((fp - fm) * cot).sum() / (2 * h)
        assert rel(g["opd_map"], num) < 1e-4


def aperture_config(t, **over):
    """A transmission map t (values k / 1024: t +- 1/1024 is exact in
    float32) stretched over D, with an obscuration and spiders on top."""
    cfg = base(**over)
    cfg["optics"]["aperture"] = {"diameter_m": 2.0, "shape": "file", "file": t,
                                 "obscuration": 0.15,
                                 "spiders": {"count": 3, "width_m": 0.04}}
    return cfg


@pytest.mark.parametrize("over", [
    {}, {"normalization": "sum"}, {"normalization": "pupil"},
    {"output.npix": 40, "output.pixel_scale": 0.4, "normalization": "sum"},
    {"output.npix": 40, "output.pixel_scale": 0.4},
    {"optics.wavelengths_nm": [550.0, 650.0], "optics.weights": [0.3, 0.7],
     "detector.oversample": 2, "detector.jitter_lambda_d": 0.2}])
def test_transmission_gradient_matches_differences(over):
    """dL/d(aperture map) against sets opened with the map +- 1/1024 at
    each pixel: the field's part and the normalisation's (the scales'
    S1 = sum A, S2 = sum A^2, the "peak" normalisation's unaberrated
    peak), summed over the images."""
    rng = np.random.default_rng(11)
    t = (np.round(rng.uniform(0.3, 0.9, (6, 7)) * 1024) / 1024).astype(np.float32)
    def cfg(m):
        c = aperture_config(m, **over)
        if "optics.wavelengths_nm" in over:
            del c["optics"]["wavelength_nm"]
        return c
    with psfsim.Set(cfg(t), backend="cpu") as s:
        f32, _ = s.compute()
        assert np.abs(f32 - s.compute_inputs()).max() <= 1e-5 * f32.max()
        cot = cotangent(s)
        z0 = np.full((s.count, 1), 0.03)
        g = s.vjp(cot, wrt=("transmission",), terms=[7], zernike=z0)["transmission"]
    assert g.shape == (6, 7)
    h = 1.0 / 1024
    num = np.zeros((6, 7))
    for r in range(6):
        for c in range(7):
            tp, tm = t.copy(), t.copy()
            tp[r, c] += h
            tm[r, c] -= h
            with psfsim.Set(cfg(tp), backend="cpu") as sp, \
                    psfsim.Set(cfg(tm), backend="cpu") as sm:
                fp = sp.compute_inputs(terms=[7], zernike=z0)
                fm = sm.compute_inputs(terms=[7], zernike=z0)
            num[r, c] = ((fp - fm) * cot).sum() / (2 * h)
    assert rel(g, num) < 1e-4


def test_peak_defocus_gradient_is_zero():
    """At zero aberration the axial pixel is the maximum over defocus
    (the unaberrated PSF's peak is |sum A|^2, the largest any phase gives),
    so its gradient in defocus is 0, while tilt's is 0 by symmetry too and
    the gradient of the image's sum in any term is 0 (Parseval: the FFT's
    sum is the pupil's power)."""
    cfg = base()
    cfg["aberrations"] = {"units": "waves"}
    cfg["sweep"] = {"defocus": [0.0]}
    with psfsim.Set(cfg, backend="cpu") as s:
        m = s.npix
        cot = np.zeros((1, m, m))
        cot[0, m // 2, m // 2] = 1.0
        g = s.vjp(cot, terms=[2, 3, 4, 11], zernike=np.zeros((1, 4)))["zernike"]
        assert np.abs(g).max() < 1e-10
        ones = np.ones((1, m, m))
        g = s.vjp(ones, terms=[2, 4, 7], zernike=np.array([[0.1, -0.2, 0.05]]))["zernike"]
        assert np.abs(g).max() < 1e-9


def binary_pupil_set():
    """A clear pupil of radius 16 samples given as a 33 x 33 transmission
    map at the pupil's own pitch (map pixel (r, c) on pupil sample (r - 16,
    c - 16) from the axis: exact 0s and 1s, no edge antialiasing), on a
    64 x 64 FFT, normalised to unit sum, no aberration."""
    r, c = np.mgrid[0:33, 0:33] - 16
    mask = (r ** 2 + c ** 2 <= 16 ** 2).astype(np.float32)
    cfg = base()
    cfg["optics"]["aperture"] = {"diameter_m": 2.0, "shape": "file", "file": mask,
                                 "pixel_scale_m": 2.0 / 32}
    cfg["aberrations"] = {"units": "waves"}
    cfg["sweep"] = {"defocus": [0.0]}
    cfg["normalization"] = "sum"
    return cfg, mask


def numpy_image(mask, z2, z4, n=64):
    """The independent model: |FFT(A exp(i 2 pi W))|^2, fftshift'ed, over
    its sum, W = z2 Z2 + z4 Z4 (Noll, unit RMS: Z2 = 2 rho cos(theta) =
    2 x / R, Z4 = sqrt(3) (2 rho^2 - 1)), R = 16 samples, the pupil's axis
    on grid sample n/2 (docs/design.md, "Propagation")."""
    amp = np.zeros((n, n))
    amp[n // 2 - 16:n // 2 + 17, n // 2 - 16:n // 2 + 17] = mask
    y, x = np.mgrid[0:n, 0:n] - n // 2
    rho2 = (x ** 2 + y ** 2) / 16.0 ** 2
    w = z2 * 2.0 * x / 16.0 + z4 * np.sqrt(3.0) * (2.0 * rho2 - 1.0)
    field = amp * np.exp(2j * np.pi * w)
    img = np.abs(np.fft.fftshift(np.fft.fft2(np.fft.ifftshift(field)))) ** 2
    return img / img.sum()


def test_gradient_equals_an_independent_numpy_model():
    """psfsim's image and its gradient in tilt (Z2) and defocus (Z4) at a
    non-zero point equal a NumPy float64 model of the same pupil (its
    gradient by central differences), and the tilt moves the image as the
    shift theorem says: a ramp of 2 a / R waves per pupil sample moves the
    (periodic, band-limited) image by s = (2 a / R) N pixels, 8 pixels per
    wave of Z2, so its first column harmonic F(a) = sum I e^{2 pi i col/N}
    turns: F(a) = F(0) e^{2 pi i s / N}, and with the cotangent
    sin(2 pi col / N) dL/da = Im F'(0) = (2 pi / N)(2 N / R) Re F(0) =
    (4 pi / R) sum I cos(2 pi col / N) (the image is even: Im F(0) = 0)."""
    cfg, mask = binary_pupil_set()
    with psfsim.Set(cfg, backend="cpu") as s:
        z0 = np.array([[0.03, -0.05]])
        img = s.compute_inputs(terms=[2, 4], zernike=z0)[0]
        ref = numpy_image(mask, 0.03, -0.05)
        assert np.abs(img - ref).max() <= 1e-12 * ref.max()
        cot = cotangent(s, 7)
        g = s.vjp(cot, terms=[2, 4], zernike=z0)["zernike"][0]
        h = 1e-6
        num = [((numpy_image(mask, 0.03 + h, -0.05) - numpy_image(mask, 0.03 - h, -0.05)) *
                cot[0]).sum() / (2 * h),
               ((numpy_image(mask, 0.03, -0.05 + h) - numpy_image(mask, 0.03, -0.05 - h)) *
                cot[0]).sum() / (2 * h)]
        assert g == pytest.approx(num, rel=1e-6)
        m = s.npix
        phase = 2.0 * np.pi * (np.arange(m) - m // 2) / m
        sin = np.broadcast_to(np.sin(phase)[None, None, :], (1, m, m)).astype(np.float64)
        out = s.vjp(sin, terms=[2], zernike=np.zeros((1, 1)), images=True)
        expect = 4.0 * np.pi / 16.0 * (out["images"][0] * np.cos(phase)[None, :]).sum()
        assert out["zernike"][0, 0] == pytest.approx(expect, rel=1e-9)


def test_gradient_is_linear_in_the_cotangent():
    """The VJP is linear in its cotangent (through the detector stage:
    tests/cpu/test_adjoint_detector.c has the stage's dot-product test)."""
    with psfsim.Set(config("detector"), backend="cpu") as s:
        y1, y2 = cotangent(s, 1), cotangent(s, 2)
        z = np.full((3, 1), 0.02)
        g1 = s.vjp(y1, terms=[4], zernike=z)["zernike"]
        g2 = s.vjp(y2, terms=[4], zernike=z)["zernike"]
        g12 = s.vjp(2.0 * y1 - y2, terms=[4], zernike=z)["zernike"]
        assert np.allclose(g12, 2.0 * g1 - g2, rtol=1e-9, atol=1e-12 * np.abs(g1).max())


def test_threads_give_the_same_gradients():
    """Images spread over threads (the Set's threads=): each image's values
    and Zernike gradients are the same bits whatever the thread count; the
    OPD map's gradient, summed over fixed blocks of images thread by
    thread, to rounding (and the same bits again for the same count:
    test_kept_models_give_the_same_values)."""
    cfg = opd_config()
    out = []
    for threads in (1, 3):
        with psfsim.Set(cfg, backend="cpu", threads=threads) as s:
            cot = cotangent(s)
            out.append(s.vjp(cot, wrt=("zernike", "opd_map"), images=True))
    assert np.array_equal(out[0]["images"], out[1]["images"])
    assert np.array_equal(out[0]["zernike"], out[1]["zernike"])
    assert np.allclose(out[0]["opd_map"], out[1]["opd_map"], rtol=1e-12,
                       atol=1e-12 * np.abs(out[0]["opd_map"]).max())


def test_kept_models_give_the_same_values():
    """The models kept on the set between calls (lib/vjp_cache.c: made for
    one list of terms, replaced by a call with others) give the values a
    fresh set gives, whatever came before."""
    cfg = opd_config()
    with psfsim.Set(cfg, backend="cpu") as fresh:
        cot = cotangent(fresh)
        ref = fresh.vjp(cot, wrt=("zernike", "opd_map"), terms=[4, 6], zernike=[0.01, 0.02])
    with psfsim.Set(cfg, backend="cpu") as s:
        for _ in range(2):
            s.vjp(cot, wrt=("zernike", "opd_map"), terms=[4, 6], zernike=[0.01, 0.02])
            s.vjp(cot, terms=[5], zernike=[0.03])     # other terms: the models replaced
            s.compute_inputs()                         # the label terms, no map gradient
        out = s.vjp(cot, wrt=("zernike", "opd_map"), terms=[4, 6], zernike=[0.01, 0.02])
        again = s.vjp(cot, wrt=("zernike", "opd_map"), terms=[4, 6], zernike=[0.01, 0.02])
    for k in ("zernike", "opd_map"):
        assert np.array_equal(out[k], ref[k])
        assert np.array_equal(again[k], ref[k])


def test_errors():
    with psfsim.Set(config("fft"), backend="cpu") as s:
        cot = cotangent(s)
        with pytest.raises(psfsim.ArgumentError, match="inputs.j"):
            s.vjp(cot, terms=[0], zernike=np.zeros((3, 1)))
        with pytest.raises(psfsim.ArgumentError, match="given twice"):
            s.vjp(cot, terms=[4, 4], zernike=np.zeros((3, 2)))
        with pytest.raises(psfsim.ArgumentError, match="not segmented"):
            s.vjp(cot, wrt="segment_zernike")
        with pytest.raises(psfsim.ArgumentError, match="opd_map"):
            s.vjp(cot, wrt="opd_map")
        with pytest.raises(psfsim.ArgumentError, match="optics.aperture.file"):
            s.vjp(cot, wrt="transmission")
        with pytest.raises(psfsim.ArgumentError, match="cotangent: shape"):
            s.vjp(cot[:2])
        with pytest.raises(psfsim.ArgumentError, match="zernike"):
            s.vjp(cot, terms=[4], zernike=np.zeros((4, 1)))
        # one row of inputs stands for every image
        one = s.vjp(cot, terms=[4, 6], zernike=[0.01, 0.02])["zernike"]
        assert np.array_equal(one, s.vjp(cot, terms=[4, 6],
                                         zernike=np.tile([0.01, 0.02], (3, 1)))["zernike"])
        with pytest.raises(psfsim.ArgumentError, match="wrt"):
            s.vjp(cot, wrt="tilt")
        with pytest.raises(psfsim.RangeError):
            s.vjp(cot[:1], first=3, count=1)


def test_module_functions_and_gpu_sets(monkeypatch):
    """psfsim.vjp / compute_inputs take a config or an open Set; a Set of
    backend "auto" computes its gradients on the CPU with
    PSFSIM_VJP_BACKEND=cpu (the same bits as a CPU Set's)."""
    monkeypatch.setenv("PSFSIM_VJP_BACKEND", "cpu")
    cfg = config("fft")
    with psfsim.Set(cfg, backend="cpu") as s:
        cot = cotangent(s)
        ref = s.vjp(cot, images=True)
        assert np.array_equal(psfsim.vjp(s, cot)["zernike"], ref["zernike"])
    out = psfsim.vjp(cfg, cot, images=True, backend="auto")
    assert np.array_equal(out["zernike"], ref["zernike"])
    assert np.array_equal(out["images"], ref["images"])
    part = psfsim.vjp(cfg, cot[1:], first=1, count=2)
    assert np.array_equal(part["zernike"], ref["zernike"][1:])
    assert np.array_equal(psfsim.compute_inputs(cfg, first=1, count=1)[0], ref["images"][1])


# The GPU's gradients (lib/vjp_gpu.c, gpu/adjoint.cu): FFT sets with and
# without the detector stage, global Zernike terms and the OPD map, equal
# to the CPU's in double. Skipped without a CUDA device.
GPU_CASES = ["fft", "fft_sum", "fft_pupil", "fft_nm", "wl_sweep_nm", "broadband",
             "fft_many_rows", "detector",
             "detector_sum_broadband", "detector_oversampled", "poppy_blocks_fft",
             "detector_ipc_asymmetric", "segmented_own_modes"]


def gpu_or_skip():
    """Skip without a device, unless the module is the host's
    (tests/support/host_vjp_module.c, PSFSIM_VJP_HOST_MODULE=1)."""
    if os.environ.get("PSFSIM_VJP_HOST_MODULE") == "1":
        return
    why = gpu_missing(config("fft"))
    if why:
        pytest.skip("no GPU: " + why)


def gpu_and_cpu(cfg):
    return psfsim.Set(cfg, backend="gpu"), psfsim.Set(cfg, backend="cpu")


@pytest.mark.parametrize("name", GPU_CASES)
def test_gpu_gradients_equal_the_cpus(name, monkeypatch):
    """Images and Zernike gradients (given terms at non-zero inputs, and the
    label terms by default) to 1e-10 relative; compute_inputs too."""
    gpu_or_skip()
    if name == "poppy_blocks_fft":  # an odd frame (297 -> 99) on the FFT: turned, blocks
        cfg = base(**{"output.orientation": "poppy", "detector.oversample": 3,
                      "detector.pixel_response": True, "sampling.pupil_samples": 33,
                      "sampling.padding": 3.0})
    elif name == "segmented_own_modes":  # the set's segment modes: rows of the basis
        cfg = dict(SEGMENTED, sweep={"defocus": [0.0, 0.05, -0.1]})
    elif name == "detector_ipc_asymmetric":  # T complex: the transpose's conj(T) seen
        cfg = base(**{"detector.oversample": 3, "detector.jitter_lambda_d": 0.2,
                      "detector.ipc": [0.0, 0.05, 0.0, 0.01, 0.9, 0.0, 0.0, 0.03, 0.01]})
    else:
        cfg = config(name)
    monkeypatch.setenv("PSFSIM_VJP_BACKEND", "gpu")  # no silent fall-back to the CPU
    g, c = gpu_and_cpu(cfg)
    with g, c:
        unit = 600.0 if name.endswith("_nm") else 1.0
        terms = [4, 5, 7, 11]
        cot = cotangent(c)
        z0 = np.array([[0.02, -0.01, 0.03, 0.01]] * c.count) * unit
        rg = g.vjp(cot, terms=terms, zernike=z0, images=True)
        rc = c.vjp(cot, terms=terms, zernike=z0, images=True)
        assert rel(rg["images"], rc["images"]) < 1e-10
        assert rel(rg["zernike"], rc["zernike"]) < 1e-10
        assert rel(g.vjp(cot)["zernike"], c.vjp(cot)["zernike"]) < 1e-10
        assert rel(g.compute_inputs(terms=terms, zernike=z0),
                   c.compute_inputs(terms=terms, zernike=z0)) < 1e-10
        part = g.vjp(cot[1:3], terms=terms, zernike=z0[1:3], first=1, count=2)
        assert rel(part["zernike"], rc["zernike"][1:3]) < 1e-10


@pytest.mark.parametrize("units,over", [
    ("nm", {}),
    ("nm", {"optics.wavelengths_nm": [550.0, 650.0]}),
    ("waves", {"optics.wavelengths_nm": [550.0, 650.0], "normalization": "pupil"})])
def test_gpu_opd_map_gradient_equals_the_cpus(units, over, monkeypatch):
    gpu_or_skip()
    cfg = opd_config(units, **over)
    if units == "waves":
        cfg["aberrations"]["opd_map"]["scale"] = 0.002
    if "optics.wavelengths_nm" in over:
        del cfg["optics"]["wavelength_nm"]
    monkeypatch.setenv("PSFSIM_VJP_BACKEND", "gpu")
    g, c = gpu_and_cpu(cfg)
    with g, c:
        cot = cotangent(c)
        d0 = np.random.default_rng(9).standard_normal((9, 11))
        rg = g.vjp(cot, wrt=("opd_map", "zernike"), opd_map=d0, images=True)
        rc = c.vjp(cot, wrt=("opd_map", "zernike"), opd_map=d0, images=True)
        for k in ("images", "zernike", "opd_map"):
            assert rel(rg[k], rc[k]) < 1e-10, k


def test_gpu_segment_gradients_run_on_the_cpu(monkeypatch):
    """Segment inputs or gradients: the CPU's path (the same bits), refused
    under PSFSIM_VJP_BACKEND=gpu."""
    gpu_or_skip()
    g, c = gpu_and_cpu(SEGMENTED)
    with g, c:
        cot = cotangent(c)
        wrt = ("zernike", "segment_zernike")
        rg, rc = g.vjp(cot, wrt=wrt), c.vjp(cot, wrt=wrt)
        for k in wrt:
            assert np.array_equal(rg[k], rc[k])
        monkeypatch.setenv("PSFSIM_VJP_BACKEND", "gpu")
        with pytest.raises(psfsim.BackendError, match="segment inputs or gradients"):
            g.vjp(cot, wrt=wrt)


@pytest.mark.parametrize("name", ["fft", "broadband", "detector"])
def test_gpu_gradient_after_its_forward_is_the_same(name, monkeypatch):
    """A vjp right after the forward of the same inputs starts from that
    forward's kept fields (gpu/adjoint.cu, kept_matches): bit for bit the
    gradient of a vjp made afresh, and of one after other inputs' forward
    (which is not reused)."""
    gpu_or_skip()
    monkeypatch.setenv("PSFSIM_VJP_BACKEND", "gpu")
    cfg = config(name)
    terms = [4, 5, 7, 11]
    with psfsim.Set(cfg, backend="gpu") as g:
        cot = cotangent(g)
        z0 = np.array([[0.02, -0.01, 0.03, 0.01]] * g.count)
        fresh = g.vjp(cot, terms=terms, zernike=z0)["zernike"]
        g.compute_inputs(terms=terms, zernike=z0)
        kept = g.vjp(cot, terms=terms, zernike=z0)["zernike"]
        g.compute_inputs(terms=terms, zernike=2 * z0)
        other = g.vjp(cot, terms=terms, zernike=z0)["zernike"]
    assert np.array_equal(kept, fresh) and np.array_equal(other, fresh)


def retrieval_model(case):
    """A through-focus set of three images (test_retrieve.py's) for a
    retrieval case, and the OPD map it is made with (or None)."""
    d = {"name": "pr", "optics": {"wavelength_nm": 600.0,
                                  "aperture": {"diameter_m": 1.0, "obscuration": 0.2}},
         "sampling": {"pupil_samples": 32, "padding": 2.0},
         "sweep": {"defocus": [-0.5, 0.0, 0.5]}}
    if case == "detector_poppy":  # an odd FFT frame turned, the detector stage's blocks
        d["output"] = {"orientation": "poppy"}
        d["detector"] = {"oversample": 3, "pixel_response": True, "jitter_lambda_d": 0.1}
        d["sampling"] = {"pupil_samples": 33, "padding": 3.0}
    if case != "opd_map":
        return d, None
    yy, xx = (np.mgrid[0:8, 0:8] + 0.5) / 8 - 0.5
    bump = 30.0 * np.exp(-((xx - 0.1) ** 2 + yy ** 2) / (2 * 0.15 ** 2))
    return d, bump


@pytest.mark.parametrize("case", ["photon", "opd_map", "detector_poppy"])
def test_gpu_retrieval_equals_the_cpus(case, monkeypatch, caplog):
    """psfsim.retrieve on a GPU set evaluates on the device (lib/retrieve_gpu.c:
    the images, the flux/background solve, the cotangent and the Fisher
    products stay there; its log line says "on the GPU") and finds the CPU
    set's fit: coefficients (and map) within 1e-4 of their uncertainties,
    uncertainties, fluxes and chi2 within 1e-6 relative, the iterations
    within 3; a second GPU fit, and one without the evaluation's CUDA
    graph (PSFSIM_GPU_EVAL_GRAPH=0), the same bits. Photon noise (the
    weights loaded three times), an OPD map fitted, and an odd turn with the
    detector stage."""
    gpu_or_skip()
    monkeypatch.setenv("PSFSIM_VJP_BACKEND", "gpu")
    cfg, bump = retrieval_model(case)
    truth = np.array([0.04, -0.06, 0.05, 0.03, -0.04, 0.02, -0.03, 0.035])
    terms = list(range(4, 12))
    make = dict(cfg, aberrations={"zernike": list(zip(terms, truth))})
    if bump is not None:
        make["aberrations"]["opd_map"] = {"file": bump.astype(np.float32), "units": "nm"}
        start = np.zeros((8, 8))
        start[0, 0] = 1e-6  # the config refuses a map of zeros
        cfg = dict(cfg, aberrations={"opd_map": {"file": start.astype(np.float32), "units": "nm"}})
    clean, _ = psfsim.compute(make, backend="cpu", frame=False)
    data = np.random.default_rng(5).poisson(1e5 * clean / clean.max() + 3.0).astype(np.float64)
    kw = dict(terms=terms, noise="photon", fit_background=True)
    if bump is not None:  # the map's fit converges slowly: the two compared after 25 steps
        kw.update(fit_opd_map=True, opd_regularization=1e-3, max_iterations=25, passes=1)
    g, c = gpu_and_cpu(cfg)
    with g, c, caplog.at_level("INFO", logger="psfsim"):
        rg = psfsim.retrieve(g, data, **kw)
        assert "on the GPU, one call each" in caplog.text
        caplog.clear()
        again = psfsim.retrieve(g, data, **kw)  # fixed-order sums: the same bits
        assert np.array_equal(again.coefficients, rg.coefficients) and again.chi2 == rg.chi2
        monkeypatch.setenv("PSFSIM_GPU_EVAL_GRAPH", "0")  # read as the set's module starts
        with psfsim.Set(cfg, backend="gpu") as direct:  # no graph: the same kernels, bits
            rd = psfsim.retrieve(direct, data, **kw)
        monkeypatch.delenv("PSFSIM_GPU_EVAL_GRAPH")
        assert np.array_equal(rd.coefficients, rg.coefficients) and rd.chi2 == rg.chi2
        assert np.array_equal(rd.uncertainties, rg.uncertainties)
        caplog.clear()
        rc = psfsim.retrieve(c, data, **kw)
        assert "on the host" in caplog.text
    # the stop near the loss's rounding floor follows its last bits (the
    # GPU's sums are not the CPU's): the iterations within a few
    assert rg.fisher_ok and rc.fisher_ok and abs(rg.iterations - rc.iterations) <= 3
    assert np.abs(rg.coefficients - rc.coefficients).max() < 1e-4 * rc.uncertainties.min()
    assert rel(rg.uncertainties, rc.uncertainties) < 1e-6
    assert rel(rg.flux, rc.flux) < 1e-6 and rel(rg.flux_sigma, rc.flux_sigma) < 1e-6
    assert abs(rg.chi2 / rc.chi2 - 1) < 1e-6
    if bump is not None:
        assert rel(rg.opd_map, rc.opd_map) < 1e-4


def test_gpu_retrieval_faults(monkeypatch):
    """PSFSIM_GPU_FAIL_AT=n, n = 1, 2, ... (PSFSIM_VJP_BACKEND=gpu): the
    n-th checked CUDA, cuFFT or cuBLAS call of each module call of a
    retrieval fails (the count starts afresh at each module call, and at
    an evaluation's backward): a ComputeError naming it, until n passes
    the longest count; then the fit is the unfaulted one, bit for bit."""
    gpu_or_skip()
    if os.environ.get("PSFSIM_VJP_HOST_MODULE") == "1":
        pytest.skip("the host's module injects no faults")
    cfg, _ = retrieval_model("photon")
    terms = list(range(4, 8))
    make = dict(cfg, aberrations={"zernike": [(4, 0.05), (5, -0.04), (6, 0.03), (7, 0.02)]})
    data = psfsim.compute(make, backend="cpu", frame=False)[0].astype(np.float64)
    monkeypatch.setenv("PSFSIM_VJP_BACKEND", "gpu")
    kw = dict(terms=terms, max_iterations=4)
    with psfsim.Set(cfg, backend="gpu") as g:
        ref = psfsim.retrieve(g, data, **kw)
        failed = 0
        for n in range(1, 200):
            monkeypatch.setenv("PSFSIM_GPU_FAIL_AT", str(n))
            try:
                got = psfsim.retrieve(g, data, **kw)
            except psfsim.ComputeError as e:
                assert "injected fault at CUDA call %d" % n in str(e)
                failed += 1
                continue
            assert np.array_equal(got.coefficients, ref.coefficients)
            assert np.array_equal(got.uncertainties, ref.uncertainties)
            break
        assert failed >= 10


def test_gpu_scope_and_errors(monkeypatch):
    """Out of scope (the MFT, with and without the detector stage): the
    CPU's path, the same bits;
    PSFSIM_VJP_BACKEND=gpu refuses them (BackendError). Each checked CUDA,
    cuFFT and cuBLAS call failing in turn (PSFSIM_GPU_FAIL_AT) is a
    ComputeError naming it, or without PSFSIM_VJP_BACKEND the CPU's result."""
    gpu_or_skip()
    for name in ("mft", "mft_detector_sum"):
        g, c = gpu_and_cpu(config(name))
        with g, c:
            cot = cotangent(c)
            assert np.array_equal(g.vjp(cot)["zernike"], c.vjp(cot)["zernike"])
            monkeypatch.setenv("PSFSIM_VJP_BACKEND", "gpu")
            with pytest.raises(psfsim.BackendError, match="cannot run on the GPU"):
                g.vjp(cot)
            monkeypatch.delenv("PSFSIM_VJP_BACKEND")
    if os.environ.get("PSFSIM_VJP_HOST_MODULE") == "1":
        return  # the host's module injects no faults
    g, c = gpu_and_cpu(config("broadband"))
    with g, c:
        cot = cotangent(c)
        ref = c.vjp(cot)["zernike"]
        failed = 0
        for n in range(1, 200):
            monkeypatch.setenv("PSFSIM_GPU_FAIL_AT", str(n))
            monkeypatch.setenv("PSFSIM_VJP_BACKEND", "gpu")
            try:
                got = g.vjp(cot)["zernike"]
            except psfsim.ComputeError as e:
                assert "injected fault at CUDA call %d" % n in str(e)
                failed += 1
                monkeypatch.delenv("PSFSIM_VJP_BACKEND")
                assert np.array_equal(g.vjp(cot)["zernike"], ref)  # the CPU's fall-back
                continue
            assert rel(got, ref) < 1e-10
            break
        assert failed >= 10
        monkeypatch.delenv("PSFSIM_GPU_FAIL_AT")
        monkeypatch.setenv("PSFSIM_VJP_BACKEND", "gpu")
        assert rel(g.vjp(cot)["zernike"], ref) < 1e-10


def device_copy(a, dtype):
    """a (host) as a psfsim.DeviceArray of dtype on device 0."""
    a = np.ascontiguousarray(a, dtype=dtype)
    d = psfsim.DeviceArray(a.shape, dtype, 0)
    psfsim._device.copy(0, d.ptr, a.ctypes.data, a.nbytes)
    return d


@pytest.mark.parametrize("name", ["broadband", "detector", "poppy_blocks_fft", "mft"])
def test_gpu_device_cotangent_equals_the_hosts(name, monkeypatch):
    """Set.vjp with the cotangent in device memory (a DeviceArray: the CUDA
    array interface): psfsim_vjp_device, its images a DeviceArray of the
    cotangent's dtype; float64 equal to the host cotangent's (1e-12), float32
    equal to the host path's of the float cotangent widened (the images to
    float rounding). The MFT: through the host (out of the GPU's scope)."""
    gpu_or_skip()
    if name == "poppy_blocks_fft":
        cfg = base(**{"output.orientation": "poppy", "detector.oversample": 3,
                      "detector.pixel_response": True, "sampling.pupil_samples": 33,
                      "sampling.padding": 3.0})
    else:
        cfg = config(name)
    if name != "mft":
        monkeypatch.setenv("PSFSIM_VJP_BACKEND", "gpu")
    calls = []
    real = psfsim._lib.lib.psfsim_vjp_device
    monkeypatch.setattr(psfsim._lib.lib, "psfsim_vjp_device",
                        lambda *a: calls.append(a[5]) or real(*a))
    with psfsim.Set(cfg, backend="gpu") as g:
        terms, z0 = [4, 5, 7], np.array([[0.02, -0.01, 0.03]] * g.count)
        cot = cotangent(g)
        ref = g.vjp(cot, terms=terms, zernike=z0, images=True)
        got = g.vjp(device_copy(cot, np.float64), terms=terms, zernike=z0, images=True)
        assert isinstance(got["images"], psfsim.DeviceArray)
        assert got["images"].dtype == np.float64 and got["images"].shape == cot.shape
        assert rel(got["images"].numpy(), ref["images"]) < 1e-12
        assert rel(got["zernike"], ref["zernike"]) < 1e-12
        c32 = cot.astype(np.float32)
        ref = g.vjp(c32.astype(np.float64), terms=terms, zernike=z0, images=True)
        got = g.vjp(device_copy(c32, np.float32), terms=terms, zernike=z0, images=True)
        assert got["images"].dtype == np.float32
        assert rel(got["zernike"], ref["zernike"]) < 1e-12
        assert rel(got["images"].numpy().astype(np.float64), ref["images"]) < 1e-7
        part = g.vjp(device_copy(c32[1:], np.float32), terms=terms, zernike=z0[1:], first=1,
                     count=2)
        assert rel(part["zernike"], ref["zernike"][1:]) < 1e-12
    assert calls == [2, 0, 0]  # PSFSIM_FLOAT64, then PSFSIM_FLOAT32 twice


def test_gpu_device_cotangent_errors():
    """A device cotangent of another shape or dtype, or not C-contiguous:
    ArgumentError before the call."""
    gpu_or_skip()
    with psfsim.Set(config("fft"), backend="gpu") as g:
        n = g.npix
        with pytest.raises(psfsim.ArgumentError, match="shape"):
            g.vjp(psfsim.DeviceArray((2, n, n), np.float64, 0))
        with pytest.raises(psfsim.ArgumentError, match="dtype uint16, expected float32"):
            g.vjp(psfsim.DeviceArray((3, n, n), np.uint16, 0))
