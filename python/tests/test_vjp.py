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
import numpy as np
import pytest

import psfsim

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


def test_module_functions_and_gpu_sets():
    """psfsim.vjp / compute_inputs take a config or an open Set; a Set of
    backend "auto" computes its gradients on the CPU all the same."""
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
