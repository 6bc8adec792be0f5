# SPDX-License-Identifier: BSD-3-Clause
"""output.psf_grid (docs/config.md): a listed set with field_x_px and
field_y_px columns written as one FITS cube in the layout photutils'
GriddedPSFModel reads (WebbPSF's psf_grid: a [n_psf, ny, nx] primary
image, OVERSAMP, NUM_PSFS, DET_YX<i> = '(y, x)'). End to end: the header
and the planes read back with astropy (the planes equal the same set's
per-image FITS files), photutils' reader when it is importable, and each
mistake refused with FILE:LINE: KEY and nothing written. Run with
PSFSIM_BIN, the psfsim command."""
import os
import subprocess

import numpy as np
import pytest

BIN = os.environ.get("PSFSIM_BIN")
pytestmark = pytest.mark.skipif(not BIN, reason="PSFSIM_BIN (the psfsim command) not given")

ROWS = [(0.0, 0.0, 0.0, 0.0), (1000.0, 0.0, 0.05, 0.0), (0.0, 2000.0, 0.0, 0.04),
        (1000.0, 2000.0, 0.05, 0.04)]  # field_x_px, field_y_px, z4, z7


def write_set(tmp_path, name, fits_block, extra="", rows=ROWS, header="field_x_px,field_y_px,z4,z7"):
    table = tmp_path / (name + ".csv")
    table.write_text(header + "\n" + "".join(",".join("%g" % v for v in r) + "\n" for r in rows))
    cfg = tmp_path / (name + ".cfg")
    cfg.write_text(
        'name = "%s";\n'
        "optics: { wavelength_nm = 1000.0; aperture: { diameter_m = 2.0; }; };\n"
        "sampling: { pupil_samples = 32; padding = 2.0; };\n"
        'sweep: { table = "%s.csv"; %s};\n'
        'normalization = "sum";\n'
        'output: { npix = 25; orientation = "poppy"; png: { enabled = false; }; %s };\n'
        % (name, name, extra, fits_block))
    return cfg


def run(cfg, out):
    return subprocess.run([BIN, "-c", str(cfg), "-o", str(out), "-q", "--backend", "cpu",
                           "--force"], capture_output=True, text=True)


def test_grid_file(tmp_path):
    fits = pytest.importorskip("astropy.io.fits")
    cfg = write_set(tmp_path, "grid", "psf_grid = true; fits: { enabled = true; cube = true; };")
    r = run(cfg, tmp_path / "g")
    assert r.returncode == 0, r.stderr
    one = write_set(tmp_path, "one", "fits: { enabled = true; };")
    assert run(one, tmp_path / "o").returncode == 0
    with fits.open(tmp_path / "g" / "grid_cube.fits") as h:
        hdr, cube = h[0].header, h[0].data
        planes = h["PLANES"].data
    assert cube.shape == (4, 25, 25) and hdr["NAXIS3"] == 4
    assert hdr["OVERSAMP"] == 1 and hdr["NUM_PSFS"] == 4 and hdr["FOVPIXEL"] == 25
    for i, (x, y, z4, z7) in enumerate(ROWS):
        yx = hdr["DET_YX%d" % i].strip("()").split(",")
        assert (float(yx[0]), float(yx[1])) == (y, x)
        assert planes["FIELDX"][i] == x and planes["FIELDY"][i] == y
        assert planes["Z4"][i] == z4 and planes["Z7"][i] == z7
        with fits.open(tmp_path / "o" / ("one_%d.fits" % i)) as p:
            assert np.array_equal(cube[i], p[0].data)  # plane i is row i's image
            assert p[0].header["FIELDX"] == x and p[0].header["FIELDY"] == y
    import csv
    with open(tmp_path / "g" / "grid_manifest.csv") as f:
        man = list(csv.DictReader(f))
    assert [(float(m["field_x_px"]), float(m["field_y_px"])) for m in man] == \
        [(r[0], r[1]) for r in ROWS]  # the manifest carries them as labels
    for i in range(4):  # four different PSFs (their aberrations differ)
        for j in range(i):
            assert np.abs(cube[i] - cube[j]).max() > 1e-3 * cube[j].max()


@pytest.mark.parametrize("write", ["detector", "oversampled"])
def test_grid_oversampled(tmp_path, write):
    """With the detector group the grid's OVERSAMP is the written image's
    (WebbPSF's psf_grid: the oversampled PSFs with OVERSAMP = s; photutils
    scales the model by it), once, and the planes' PIXELSCL its pixel:
    a new user's grid of oversampled PSFs said OVERSAMP = 1 and the
    detector pixel, so photutils read the PSFs 4x too wide."""
    fits = pytest.importorskip("astropy.io.fits")
    block = ('psf_grid = true; pixel_scale_arcsec = 0.05; fits: { enabled = true; cube = true; '
             '}; }; detector: { oversample = 4; write = "%s";' % write)
    cfg = write_set(tmp_path, "g" + write, block)
    r = run(cfg, tmp_path / write)
    assert r.returncode == 0, r.stderr
    with fits.open(tmp_path / write / ("g%s_cube.fits" % write)) as h:
        hdr, cube, planes = h[0].header, h[0].data, h["PLANES"].data
    s = 4 if write == "oversampled" else 1
    assert list(hdr.keys()).count("OVERSAMP") == 1
    assert hdr["OVERSAMP"] == s and hdr["DET_SAMP"] == 4
    assert hdr["EXTNAME"] == ("OVERSAMP" if s > 1 else "DET_SAMP")
    assert cube.shape == (4, 25 * s, 25 * s)
    assert np.allclose(planes["PIXELSCL"], 0.05 / s, rtol=1e-12)
    # photutils' ePSF convention (WebbPSF's psf_grid): an oversampled PSF
    # sums to s^2 ("sum": 1 in detector pixels), and BUNIT says so.
    assert np.allclose(cube.sum(axis=(1, 2)), s * s, rtol=1e-5)
    assert ("OVERSAMP^2" in hdr["BUNIT"]) == (s > 1)
    pytest.importorskip("photutils", minversion="1.10")  # the "webbpsf" reader
    psf = pytest.importorskip("photutils.psf")
    model = psf.GriddedPSFModel.read(str(tmp_path / write / ("g%s_cube.fits" % write)),
                                     format="webbpsf")
    assert tuple(np.atleast_1d(model.oversampling)) in ((s,), (s, s))
    # The model on detector pixels: the source's flux, 1, but for the
    # window's edge (the grid's 25 pixels hold ~0.99 of it).
    x0, y0 = np.asarray(model.grid_xypos, float)[0]
    y, x = np.mgrid[-20:21, -20:21]
    img = model.evaluate(x + x0, y + y0, 1.0, x0, y0)
    assert 0.95 < img.sum() < 1.01


def test_photutils_reads_it(tmp_path):
    pytest.importorskip("astropy.io.fits")
    pytest.importorskip("photutils", minversion="1.10")  # the "webbpsf" reader
    psf = pytest.importorskip("photutils.psf")
    cfg = write_set(tmp_path, "grid", "psf_grid = true; fits: { enabled = true; cube = true; };")
    assert run(cfg, tmp_path / "g").returncode == 0
    from astropy.io import fits
    path = str(tmp_path / "g" / "grid_cube.fits")
    cube = fits.getdata(path)
    model = psf.GriddedPSFModel.read(path, format="webbpsf")
    got = [tuple(p) for p in np.asarray(model.grid_xypos, float)]
    # photutils reads DET_YX as (y, x) (its fixed reader) or, up to 3.0,
    # as (x, y): either way every plane sits at its row's position.
    xy = [(r[0], r[1]) for r in ROWS]
    swap = sorted(got) != sorted(xy)
    assert sorted(got) == sorted([(y, x) for x, y in xy] if swap else xy)
    assert tuple(np.atleast_1d(model.oversampling)) in ((1,), (1, 1))
    for i, (x, y) in enumerate(xy):
        j = got.index((y, x) if swap else (x, y))
        assert np.array_equal(np.asarray(model.data[j]), cube[i])


@pytest.mark.parametrize("case", ["no_columns", "one_column", "repeat", "other_axis", "no_cube"])
def test_grid_errors(tmp_path, case):
    grid = "psf_grid = true; fits: { enabled = true; cube = true; };"
    if case == "no_columns":
        cfg = write_set(tmp_path, "bad", grid, rows=[r[2:] for r in ROWS], header="z4,z7")
        want = "bad.cfg:6: output.psf_grid: needs a sweep.table with field_x_px and field_y_px"
    elif case == "one_column":
        cfg = write_set(tmp_path, "bad", grid, rows=[(r[0],) + r[2:] for r in ROWS],
                        header="field_x_px,z4,z7")
        want = "bad.cfg:4: sweep.table: %s:1:1 (field_x_px): needs a field_y_px column too" % (
            tmp_path / "bad.csv")
    elif case == "repeat":
        cfg = write_set(tmp_path, "bad", grid, rows=ROWS + [(1000.0, 0.0, 0.1, 0.1)])
        want = "bad.cfg:6: output.psf_grid: %s:6: the position (1000, 0) repeats line 3's" % (
            tmp_path / "bad.csv")
    elif case == "other_axis":
        cfg = write_set(tmp_path, "bad", grid, extra="defocus = [0.0, 0.1]; ")
        want = "bad.cfg:6: output.psf_grid: the other axes make 2 images per table row"
    else:
        cfg = write_set(tmp_path, "bad", "psf_grid = true; fits: { enabled = true; };")
        want = "bad.cfg:6: output.psf_grid: needs output.fits.enabled = true and output.fits.cube"
    out = tmp_path / "out"
    r = run(cfg, out)
    assert r.returncode == 2 and want in r.stderr, r.stderr
    assert not out.exists()
