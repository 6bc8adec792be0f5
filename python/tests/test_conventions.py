# SPDX-License-Identifier: BSD-3-Clause
"""psfsim against the conventions of prysm, POPPY (and WebbPSF, built on
it), HCIPy and GalSim (docs/conventions.md): one shared case, a NumPy
reference of each package's convention (sign of the transform, centre
pixel, orientation, normalisation), and the package itself where it is
importable (skipped otherwise: CI needs no network).

The shared case: D = 2 m, lambda = 1 um, n = 64 binary-edged pupil samples
(the reference builds the same pupil exactly), Zernike Noll 2, 5 and 8 of
40, 30 and 20 nm RMS (no symmetry hides a flip), pupil normalisation, and
M x M pixels of 0.02 arcsec by the MFT (M = 32: the even case where the
centres differ; M = 33: odd). Run with PSFSIM_BIN, the psfsim command."""
import math
import os
import subprocess

import numpy as np
import pytest

BIN = os.environ.get("PSFSIM_BIN")
pytestmark = pytest.mark.skipif(not BIN, reason="PSFSIM_BIN (the psfsim command) not given")

D, LAM, N_PUPIL, PIX_ARCSEC = 2.0, 1e-6, 64, 0.02
TERMS = ((2, 40.0), (5, 30.0), (8, 20.0))  # Noll j, nm RMS
RAD_PER_ARCSEC = math.pi / (180 * 3600)

# Each package's convention on an M x M frame: the sign of the transform's
# exponent for a pupil field A exp(+i 2 pi OPD / lambda) (-1: the forward DFT;
# +1 is the same image turned 180 degrees), and the axis's 0-based pixel.
CONVENTIONS = {
    "psfsim": {"sign": -1, "centre": lambda m: m // 2},
    "prysm": {"sign": -1, "centre": lambda m: m // 2},
    "poppy": {"sign": +1, "centre": lambda m: (m - 1) / 2},
    "hcipy": {"sign": -1, "centre": lambda m: (m - 1) / 2},
    "galsim": {"sign": +1, "centre": lambda m: (m - 1) / 2},
}


def config_text(name, npix, orientation=None, fft=False):
    zern = ", ".join("(%d, %.1f)" % t for t in TERMS)
    grid = "" if fft else "npix = %d; pixel_scale_arcsec = %g; " % (npix, PIX_ARCSEC)
    orient = 'orientation = "%s"; ' % orientation if orientation else ""
    return (
        'name = "%s";\n'
        "optics: { wavelength_nm = %.1f; aperture: { diameter_m = %.1f; edge = \"binary\"; }; };\n"
        "sampling: { pupil_samples = %d; padding = 2.0; };\n"
        'aberrations: { units = "nm"; zernike = ( %s ); };\n'
        'normalization = "pupil";\n'
        "output: { %s%spng: { enabled = false; }; fits: { enabled = true; }; };\n"
        % (name, LAM * 1e9, D, N_PUPIL, zern, grid, orient))


def run_psfsim(tmp_path, name, npix, orientation=None, fft=False):
    """psfsim's image 0 of the shared case and its FITS header."""
    from test_psfsim import read_fits
    cfg = tmp_path / (name + ".cfg")
    cfg.write_text(config_text(name, npix, orientation, fft))
    out = tmp_path / name
    subprocess.run([BIN, "-c", str(cfg), "-o", str(out), "-q", "--backend", "cpu", "--force"],
                   check=True)
    header, img = read_fits(str(out / (name + "_0.fits")))
    return header, img.astype(np.float64)


def zernike_noll(j, rho, theta):
    """Noll's orthonormal terms 2, 5 and 8 (Noll 1976): unit RMS on the disk."""
    if j == 2:
        return 2 * rho * np.cos(theta)
    if j == 5:
        return math.sqrt(6) * rho ** 2 * np.sin(2 * theta)
    if j == 8:
        return math.sqrt(8) * (3 * rho ** 3 - 2 * rho) * np.cos(theta)
    raise ValueError(j)


def pupil_field():
    """psfsim's binary pupil: samples at integer offsets (i, j) D/n from the
    axis, open where (2i)^2 + (2j)^2 <= n^2; (offsets, field)."""
    h = N_PUPIL // 2 + 2
    off = np.arange(-h, h + 1)
    yy, xx = np.meshgrid(off, off, indexing="ij")
    amp = ((2 * yy) ** 2 + (2 * xx) ** 2 <= N_PUPIL ** 2).astype(float)
    rho = np.hypot(xx, yy) / (N_PUPIL / 2)
    theta = np.arctan2(yy, xx)
    opd = sum(c * 1e-9 * zernike_noll(j, rho, theta) for j, c in TERMS)
    return off, amp * np.exp(2j * math.pi * opd / LAM)


def reference(package, npix, pixel_rad=PIX_ARCSEC * RAD_PER_ARCSEC):
    """The shared case's image in package's convention by a direct DFT:
    E(k) = sum_j A_j exp(sign 2 pi i x_j theta_k / lambda), theta_k =
    (k - centre) p; scaled to unit power through the pupil (a full period,
    1/a pixels with a = dx p / lambda, sums to 1 by Parseval)."""
    conv = CONVENTIONS[package]
    off, field = pupil_field()
    a = (D / N_PUPIL) * pixel_rad / LAM
    k = np.arange(npix) - conv["centre"](npix)
    w = np.exp(conv["sign"] * 2j * math.pi * a * np.outer(k, off))
    e = w @ field @ w.T
    return np.abs(e) ** 2 * a ** 2 / np.sum(np.abs(field) ** 2)


def rel(a, b):
    return np.abs(a - b).max() / b.max()


@pytest.mark.parametrize("npix", [32, 33])
def test_psfsim_and_poppy_orientation(tmp_path, npix):
    """The default images follow psfsim's convention; orientation = "poppy"
    follows POPPY's (turned 180 degrees, the axis at (M-1)/2: between
    pixels for even M), GalSim's too; both to float32 rounding."""
    h, img = run_psfsim(tmp_path, "ps", npix)
    assert rel(img, reference("psfsim", npix)) < 2e-5
    hp, pimg = run_psfsim(tmp_path, "pp", npix, "poppy")
    assert rel(pimg, reference("poppy", npix)) < 2e-5
    assert rel(pimg, reference("galsim", npix)) < 2e-5
    assert hp["IMORIENT"] == "poppy" and hp["CRPIX1"] == hp["CRPIX2"] == (npix + 1) / 2
    assert "IMORIENT" not in h and h["CRPIX1"] == npix // 2 + 1
    # HCIPy's symmetric grid with psfsim's sign: the poppy image turned back.
    assert rel(pimg[::-1, ::-1], reference("hcipy", npix)) < 2e-5
    if npix % 2:  # odd frames share the centre: poppy is a plain 180-degree turn
        assert np.array_equal(pimg, img[::-1, ::-1])
    else:  # even: not a turn of the same samples (half a pixel apart)
        assert rel(pimg, img[::-1, ::-1]) > 0.05
    # The positive x tilt (Noll 2) moves psfsim's light to larger columns,
    # POPPY's to smaller ones, about the same distance from each one's axis.
    cols = np.arange(npix)
    cx = (img.sum(axis=0) * cols).sum() / img.sum() - npix // 2
    px = (pimg.sum(axis=0) * cols).sum() / pimg.sum() - (npix - 1) / 2
    assert cx > 0.1 and px < -0.1 and abs(cx + px) < 0.05


def test_prysm_fft_convention(tmp_path):
    """An FFT set (no output grid) is prysm's: fftshift(fft2(ifftshift(A e^{i phi}))),
    zero frequency at N/2, unit pupil power."""
    _, img = run_psfsim(tmp_path, "pf", 0, fft=True)
    nfft = img.shape[0]
    off, field = pupil_field()
    grid = np.zeros((nfft, nfft), complex)
    c = nfft // 2
    grid[c + off[0]:c + off[-1] + 1, c + off[0]:c + off[-1] + 1] = field
    e = np.fft.fftshift(np.fft.fft2(np.fft.ifftshift(grid)))
    ref = np.abs(e) ** 2 / (nfft ** 2 * np.sum(np.abs(field) ** 2))
    assert rel(img, ref) < 2e-5


def test_poppy_itself(tmp_path):
    """POPPY (when installed): its Fraunhofer detector image of the case
    equals psfsim's orientation = "poppy" image to its pupil sampling (POPPY
    samples between pupil pixels, psfsim on the axis: ~1e-2 of the peak at
    n = 64), and its sum (unit power at the first plane) psfsim's EEFIELD
    to 1e-2 (psfsim's binary edge, POPPY's grey one)."""
    poppy = pytest.importorskip("poppy")
    u = pytest.importorskip("astropy.units")
    hp, pimg = run_psfsim(tmp_path, "pp", 32, "poppy")
    osys = poppy.OpticalSystem(pupil_diameter=D * u.m, npix=N_PUPIL, oversample=1)
    osys.add_pupil(poppy.CircularAperture(radius=D / 2))
    coeffs = [0.0] * 8
    for j, c in TERMS:
        coeffs[j - 1] = c * 1e-9
    osys.add_pupil(poppy.ZernikeWFE(radius=D / 2, coefficients=coeffs))
    osys.add_detector(pixelscale=PIX_ARCSEC, fov_pixels=32, oversample=1)
    ref = osys.calc_psf(wavelength=LAM)[0].data
    assert rel(pimg, ref) < 2e-2
    assert rel(pimg[::-1, ::-1], ref) > 0.1  # psfsim's own orientation does not match
    assert abs(pimg.sum() - ref.sum()) < 1e-2


def test_hcipy_itself(tmp_path):
    """HCIPy (when installed): FraunhoferPropagator onto make_uniform_grid's
    symmetric focal grid, psfsim's sign: psfsim's poppy image turned back."""
    hc = pytest.importorskip("hcipy")
    _, pimg = run_psfsim(tmp_path, "pp", 32, "poppy")
    pg = hc.make_pupil_grid(4 * N_PUPIL, D)
    ap = hc.evaluate_supersampled(hc.make_circular_aperture(D), pg, 4)
    zb = hc.make_zernike_basis(8, D, pg, 1)
    opd = sum(c * 1e-9 * zb[j - 1] for j, c in TERMS)
    wf = hc.Wavefront(ap * np.exp(2j * np.pi * opd / LAM), LAM)
    wf.total_power = 1
    fg = hc.make_uniform_grid([32, 32], [32 * PIX_ARCSEC * RAD_PER_ARCSEC] * 2)
    img = hc.FraunhoferPropagator(pg, fg)(wf).power.shaped
    assert rel(pimg[::-1, ::-1], img) < 2e-2
    assert rel(pimg, img) > 0.1


def test_galsim_itself(tmp_path):
    """GalSim (when installed): OpticalPSF drawn without the pixel response
    (method = "no_pixel") on an even image: POPPY's orientation and centre,
    flux 1 over the whole plane (psfsim's pupil normalisation)."""
    galsim = pytest.importorskip("galsim")
    _, pimg = run_psfsim(tmp_path, "pp", 32, "poppy")
    ab = [0.0] * 9
    for j, c in TERMS:
        ab[j] = c * 1e-9 / LAM
    psf = galsim.OpticalPSF(lam=LAM * 1e9, diam=D, aberrations=ab, scale_unit=galsim.arcsec,
                            pad_factor=4, oversampling=4)
    img = psf.drawImage(nx=32, ny=32, scale=PIX_ARCSEC, method="no_pixel").array
    assert rel(pimg, img) < 2e-2
    assert rel(pimg[::-1, ::-1], img) > 0.1


def test_prysm_itself(tmp_path):
    """prysm (when installed): Wavefront.focus of the same pupil (prysm's
    own grid, centred on a sample as psfsim's) equals psfsim's FFT image."""
    pytest.importorskip("prysm")
    from prysm.coordinates import cart_to_polar, make_xy_grid
    from prysm.propagation import Wavefront
    _, img = run_psfsim(tmp_path, "pf", 0, fft=True)
    nfft = img.shape[0]
    x, y = make_xy_grid(nfft, dx=D / N_PUPIL)
    r, t = cart_to_polar(x, y)
    amp = ((2 * np.round(x / (D / N_PUPIL))) ** 2 + (2 * np.round(y / (D / N_PUPIL))) ** 2
           <= N_PUPIL ** 2).astype(float)
    rho = r / (D / 2)
    opd_nm = sum(c * zernike_noll(j, rho, t) for j, c in TERMS)
    wf = Wavefront.from_amp_and_phase(amp, opd_nm, LAM * 1e6, D / N_PUPIL * 1e3)
    psf = wf.focus(1.0, Q=1).intensity.data
    psf = psf / psf.sum()
    assert psf.shape == img.shape
    assert rel(img / img.sum(), psf) < 1e-4


def test_poppy_hdf5_attributes(tmp_path):
    """The HDF5 set of orientation = "poppy" holds the same images as its FITS
    files, and its axis and convention attributes say where the axis is."""
    h5py = pytest.importorskip("h5py")
    from test_psfsim import read_fits
    cfg = tmp_path / "ph.cfg"
    cfg.write_text(config_text("ph", 32, "poppy").replace(
        "fits: { enabled = true; };", "fits: { enabled = true; }; hdf5: { enabled = true; };"))
    out = tmp_path / "ph"
    subprocess.run([BIN, "-c", str(cfg), "-o", str(out), "-q", "--backend", "cpu"], check=True)
    with h5py.File(out / "ph.h5", "r") as f:
        assert f.attrs["axis_row"] == f.attrs["axis_column"] == 15.5
        assert str(f.attrs["centring"]).startswith("poppy:")
        assert str(f.attrs["orientation"]).startswith("poppy:")
        assert np.array_equal(f["images"][0], read_fits(str(out / "ph_0.fits"))[1])
