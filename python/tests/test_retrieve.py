# SPDX-License-Identifier: BSD-3-Clause
"""psfsim.retrieve (issue 28): Zernike coefficients from a through-focus
set of three 64 x 64 images made by psfsim.compute with known Noll 4..15,
fitted with the same config without them. Noiseless: to 1e-3 waves RMS in
all; photon noise (peak 1e5, seeded NumPy Poisson): the errors within 2x
the uncertainties the fit reports (their RMS ratio over several draws);
the flux and background found; the Retrieval's fields and its as_dict();
bad arguments raise ArgumentError.

Run by ctest (test_python) and scripts/test.sh with PSFSIM_LIBRARY."""
import json

import numpy as np
import pytest

import psfsim

TERMS = list(range(4, 16))
TRUTH = np.array([0.04, -0.06, 0.05, 0.03, -0.04, 0.02, -0.03, 0.035, 0.02, -0.02, 0.015, -0.01])


def model(zernike=None):
    d = {"name": "pr",
         "optics": {"wavelength_nm": 600.0,
                    "aperture": {"diameter_m": 1.0, "obscuration": 0.2}},
         "sampling": {"pupil_samples": 32, "padding": 2.0},
         "sweep": {"defocus": [-0.5, 0.0, 0.5]}}
    if zernike:
        d["aberrations"] = {"zernike": zernike}
    return d


@pytest.fixture(scope="module")
def clean():
    images, _ = psfsim.compute(model(list(zip(TERMS, TRUTH))), backend="cpu", frame=False)
    return images.astype(np.float64)


def test_noiseless(clean):
    data = 3000.0 * clean + 4.0
    r = psfsim.retrieve(model(), data, terms=TERMS, fit_background=True)
    assert r.terms == TERMS
    err = np.sqrt(np.sum((r.coefficients - TRUTH) ** 2))
    assert err <= 1e-3, err
    assert np.allclose(r.flux, 3000.0, rtol=1e-3)
    assert np.allclose(r.background, 4.0, atol=1e-2)
    assert r.residuals.shape == (3, 64, 64)
    assert np.abs(r.residuals).max() < 0.01 * 3000.0
    assert r.fisher_ok and r.covariance.shape == (12, 12)
    assert np.allclose(np.sqrt(np.diag(r.covariance)), r.uncertainties)
    assert len(r.history) == r.iterations and r.history[-1] < 1e-6 * r.history[0]
    d = r.as_dict()
    json.dumps(d)  # JSON as it is
    assert d["terms"] == TERMS and len(d["coefficients"]) == 12


def test_without_uncertainties(clean):
    """uncertainties=False: the same fit bit for bit (the Fisher step comes
    after it), its sigmas unknown (NaN) and fisher_ok False."""
    data = 3000.0 * clean + 4.0
    with psfsim.Set(model(), backend="cpu") as s:
        a = psfsim.retrieve(s, data, terms=TERMS, fit_background=True)
        b = psfsim.retrieve(s, data, terms=TERMS, fit_background=True, uncertainties=False)
    assert np.array_equal(a.coefficients, b.coefficients)
    assert np.array_equal(a.flux, b.flux) and np.array_equal(a.residuals, b.residuals)
    assert a.chi2 == b.chi2 and a.iterations == b.iterations
    assert a.fisher_ok and not b.fisher_ok
    assert np.isnan(b.uncertainties).all() and np.isnan(b.covariance).all()
    assert np.isnan(b.flux_sigma).all() and np.isnan(b.background_sigma).all()


def test_photon_noise(clean):
    rng = np.random.default_rng(28)
    expect = 1e5 * clean / clean.max() + 2.0
    z = []
    with psfsim.Set(model(), backend="cpu") as s:
        for _ in range(4):
            data = rng.poisson(expect).astype(np.float64)
            r = psfsim.retrieve(s, data, terms=TERMS, noise="photon", fit_background=True)
            assert r.fisher_ok
            assert abs(r.chi2 / r.dof - 1) < 0.1
            z.append((r.coefficients - TRUTH) / r.uncertainties)
    zrms = np.sqrt(np.mean(np.square(z)))
    assert 0.5 < zrms < 2.0, zrms


def test_arguments():
    with pytest.raises(psfsim.ArgumentError, match="images: expected shape"):
        psfsim.retrieve(model(), np.zeros((2, 64, 64)), terms=TERMS)
    with pytest.raises(psfsim.ArgumentError, match="noise: expected"):
        psfsim.retrieve(model(), np.zeros((3, 64, 64)), terms=TERMS, noise="gauss")
    with pytest.raises(psfsim.ArgumentError, match="initial: expected 12 values"):
        psfsim.retrieve(model(), np.zeros((3, 64, 64)), terms=TERMS, initial=[0.0])
    with pytest.raises(psfsim.ArgumentError, match="bad option nterms"):
        psfsim.retrieve(model(), np.zeros((3, 64, 64)), terms=[])


def test_terms_of_the_convention():
    """Terms the config's convention has, piston left out (it changes no
    image: its gradient is 0 and the Fisher matrix singular): the library's
    messages, as they end."""
    zeros = np.zeros((3, 64, 64))
    msg = ("psfsim_retrieve: j[1] = 1 is piston in the Noll convention: it changes no image and "
           "cannot be fitted; the terms fitted start at 2")
    with pytest.raises(psfsim.ArgumentError) as e:
        psfsim.retrieve(model(), zeros, terms=[4, 1])
    assert str(e.value).endswith(msg), str(e.value)
    with pytest.raises(psfsim.ArgumentError) as e:
        psfsim.retrieve(model(), zeros, terms=[0, 4])
    assert str(e.value).endswith(
        "psfsim_retrieve: j[0] = 0 is not an index of the Noll convention (j >= 1, radial order "
        "<= 100); the terms fitted start at 2"), str(e.value)
    ansi = dict(model(), aberrations={"convention": "ansi"})
    with pytest.raises(psfsim.ArgumentError) as e:
        psfsim.retrieve(ansi, zeros, terms=[0])
    assert str(e.value).endswith(
        "psfsim_retrieve: j[0] = 0 is piston in the ANSI convention: it changes no image and "
        "cannot be fitted; the terms fitted start at 1"), str(e.value)
    with pytest.raises(psfsim.ArgumentError) as e:
        psfsim.retrieve(model(), zeros, terms=[5152])
    assert "j[0] = 5152 is not an index of the Noll convention" in str(e.value)


def test_noll_4_37():
    """The issue's case at 128 x 128 (bench/retrieve_bench.py runs it at
    256 x 256): Noll 4..37 from three images, noiseless to 1e-3 waves RMS;
    with photon noise (peak 1e5) the errors within 2x the uncertainties."""
    terms = list(range(4, 38))
    rng = np.random.default_rng(37)
    truth = np.array([rng.normal(0, 0.03) / (1 + 0.1 * (j - 4)) ** 0.5 for j in terms])
    cfg = model()
    cfg["sampling"] = {"pupil_samples": 64, "padding": 2.0}
    with psfsim.Set(cfg, backend="cpu") as s:
        clean = s.compute_inputs(terms=terms, zernike=truth[None, :].repeat(3, 0))
        r = psfsim.retrieve(s, 1e4 * clean, terms=terms)
        assert np.sqrt(np.sum((r.coefficients - truth) ** 2)) <= 1e-3
        data = rng.poisson(1e5 * clean / clean.max() + 2.0).astype(np.float64)
        r = psfsim.retrieve(s, data, terms=terms, noise="photon", fit_background=True)
        z = (r.coefficients - truth) / r.uncertainties
        assert 0.5 < np.sqrt(np.mean(z ** 2)) < 2.0, z


def test_nm_units_and_focus_shift(clean):
    """aberrations.units = "nm" (coefficients in nm of OPD: the waves' x 600)
    and a focus-shift sweep as the diversity: the same images, so the same
    fit in those units, and uncertainties scaled alike."""
    data = 3000.0 * clean + 4.0
    r = psfsim.retrieve(model(), data, terms=TERMS, fit_background=True, noise="photon")
    cfg = model()
    cfg["aberrations"] = {"units": "nm"}
    f = 10.0  # a defocus of d waves RMS is dz = d 600e-3 um 16 sqrt(3) f^2 (docs/config.md)
    cfg["optics"]["f_number"] = f
    cfg["sweep"] = {"focus_shift_um": [d * 0.6 * 16 * 3 ** 0.5 * f * f for d in (-0.5, 0.0, 0.5)]}
    rn = psfsim.retrieve(cfg, data, terms=TERMS, fit_background=True, noise="photon")
    assert np.allclose(rn.coefficients, 600.0 * TRUTH, atol=0.6)  # 1e-3 waves
    assert np.allclose(rn.uncertainties, 600.0 * r.uncertainties, rtol=0.02)


def test_reversed_diversity_gives_the_twin(clean):
    """The twin-image ambiguity (W(r) and -W(-r) make the same image): a
    model whose defocus sweep is reversed fits the data exactly with the
    twin of the truth, the even terms negated and the odd ones kept."""
    cfg = model()
    cfg["sweep"] = {"defocus": [0.5, 0.0, -0.5]}
    r = psfsim.retrieve(cfg, 3000.0 * clean, terms=TERMS)
    odd = np.array([odd_term(j) for j in TERMS])
    twin = np.where(odd, TRUTH, -TRUTH)
    assert np.sqrt(np.sum((r.coefficients - twin) ** 2)) <= 1e-3


def odd_term(j):
    """Noll j's term is odd under r -> -r when its azimuthal order m is
    odd, i.e. its radial order n (m has n's parity; Noll's order n ends at
    j = (n + 1)(n + 2) / 2)."""
    n = 0
    while (n + 1) * (n + 2) // 2 < j:
        n += 1
    return n % 2 == 1


def test_opd_map():
    """fit_opd_map: a 16 x 16 OPD map (nm, stretched over D) fitted with
    Noll 4..6 to images of a Gaussian bump of 40 nm that no low-order term
    makes: the fit's map follows the bump (correlation > 0.95 over the
    pupil's inner annulus) and chi2 falls 100-fold from the Zernike-only
    fit's; a stronger regularisation shrinks the map."""
    R = 16
    yy, xx = (np.mgrid[0:R, 0:R] + 0.5) / R - 0.5
    bump = 40.0 * np.exp(-((xx - 0.15) ** 2 + (yy + 0.1) ** 2) / (2 * 0.08 ** 2))
    zero = np.zeros((R, R))
    zero[0, 0] = 1e-6  # outside the aperture: the config refuses a map of zeros

    def cfg(opd):
        d = model()
        d["aberrations"] = {"opd_map": {"file": opd.astype(np.float32), "units": "nm"}}
        return d

    clean, _ = psfsim.compute(cfg(bump), backend="cpu", frame=False)
    data = 1e5 * clean.astype(np.float64) / clean.max()
    with psfsim.Set(cfg(zero), backend="cpu") as s:
        r0 = psfsim.retrieve(s, data, terms=[4, 5, 6], noise="photon")
        assert r0.opd_map is None
        r = psfsim.retrieve(s, data, terms=[4, 5, 6], noise="photon", fit_opd_map=True,
                            opd_regularization=1e-3)
        strong = psfsim.retrieve(s, data, terms=[4, 5, 6], noise="photon", fit_opd_map=True,
                                 opd_regularization=10.0)
        with pytest.raises(psfsim.ArgumentError, match="opd_regularization"):
            psfsim.retrieve(s, data, terms=[4], fit_opd_map=True)
    rr = np.hypot(xx, yy)
    inner = (rr < 0.4) & (rr > 0.15)
    assert r.opd_map.shape == (R, R)
    assert np.corrcoef(r.opd_map[inner], bump[inner])[0, 1] > 0.95
    assert r.chi2 < 0.01 * r0.chi2
    assert np.linalg.norm(strong.opd_map) < 0.5 * np.linalg.norm(r.opd_map)
    assert r.fisher_ok and r.uncertainties.shape == (3,)
    with pytest.raises(psfsim.ArgumentError, match="has no aberrations.opd_map"):
        psfsim.retrieve(model(), data, terms=[4], fit_opd_map=True, opd_regularization=1.0)


@pytest.mark.parametrize("bad, what", [(np.nan, "NaN"), (np.inf, "an infinity")])
def test_non_finite_data_refused(clean, bad, what):
    """A NaN or an infinity in the data is refused, named by its image, row
    and column (it would poison every sum: the fit returned NaNs)."""
    data = 3000.0 * clean
    data[2, 5, 7] = bad
    with pytest.raises(psfsim.ArgumentError,
                       match="data: %s at image 2, row 5, column 7" % what):
        psfsim.retrieve(model(), data, terms=TERMS)
