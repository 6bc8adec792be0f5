# SPDX-License-Identifier: BSD-3-Clause
"""Set.params()' label columns against the psfsim command's manifest: a
segmented aperture's per-segment totals s<segment>_z<j> (a random set
drawn as configs/jwst_piston.cfg draws) and a table set's detector
positions field_x_px, field_y_px, named as the manifest's headers and
equal to its cells. Run with PSFSIM_BIN, the psfsim command."""
import csv
import math
import os
import re
import subprocess

import numpy as np
import pytest

import psfsim

SRC = os.environ.get("PSFSIM_SOURCE_DIR",
                     os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BIN = os.environ.get("PSFSIM_BIN")
LABEL = re.compile(r"s\d+_z\d+|field_[xy]_px")


def manifest(cfg, out, name):
    """The command's manifest of cfg: (header, rows as dicts)."""
    subprocess.run([BIN, "-c", str(cfg), "-o", str(out), "-q", "--backend", "cpu"], check=True,
                   cwd=os.path.dirname(str(cfg)))
    with open(os.path.join(str(out), name + "_manifest.csv")) as f:
        rows = list(csv.DictReader(f))
    with open(os.path.join(str(out), name + "_manifest.csv")) as f:
        head = f.readline().rstrip("\n").split(",")
    return head, rows


def check_labels(s, head, rows):
    """params()' s<k>_z<j> and field columns are the manifest's, in its
    order, cell for cell (the manifest writes binary64 exactly)."""
    p = s.params(frame=False)
    labels = [c for c in head if LABEL.fullmatch(c)]
    assert labels, head
    assert [c for c in p.dtype.names if LABEL.fullmatch(c)] == labels
    assert len(rows) == s.count
    for k, row in enumerate(rows):
        for c in labels:
            assert float(row[c]) == p[c][k], (k, c)
    return p, labels


def jwst_piston_small(tmp_path):
    """configs/jwst_piston.cfg with a smaller pupil (the same draws)."""
    text = open(os.path.join(SRC, "configs", "jwst_piston.cfg")).read()
    text = text.replace("pupil_samples = 256", "pupil_samples = 64")
    assert "pupil_samples = 64" in text
    cfg = tmp_path / "jwst_piston.cfg"
    cfg.write_text(text)
    return cfg


def test_segment_columns_without_command(tmp_path):
    """Every present segment (18, centre missing) gets its drawn piston,
    tip and tilt: 54 columns s1_z1 .. s18_z3, by segment then j; the
    segment_zernike() array is the same numbers."""
    with psfsim.Set(str(jwst_piston_small(tmp_path)), backend="cpu") as s:
        assert s.segment_terms == [(k, j) for k in range(1, 19) for j in (1, 2, 3)]
        assert not s.has_field
        p = s.params(frame=False)
        names = ["s%d_z%d" % t for t in s.segment_terms]
        assert all(n in p.dtype.names for n in names)
        assert "field_x_px" not in p.dtype.names
        total = s.segment_zernike()
        assert total.shape == (3, 54)
        for i, n in enumerate(names):
            np.testing.assert_array_equal(p[n], total[:, i])
        # draws: normal of width 0.1 (piston), 0.02 (tip, tilt); all distinct
        assert np.all(total != 0.0) and len(np.unique(total)) == total.size
        assert np.abs(total[:, 0::3]).max() < 1.0 and np.abs(total[:, 1::3]).max() < 0.2
        sub = s.params(1, 2, frame=False)  # a range: the same rows
        for n in names:
            np.testing.assert_array_equal(sub[n], p[n][1:])
        assert s.segment_zernike(3, 0).shape == (0, 54)


def test_no_label_columns():
    """A set with neither has no such columns."""
    with psfsim.Set(os.path.join(SRC, "configs", "defocus.cfg"), backend="cpu") as s:
        assert s.segment_terms == [] and not s.has_field
        assert not [c for c in s.params_dtype().names if LABEL.fullmatch(c)]
        assert s.segment_zernike().shape == (9, 0)


@pytest.mark.skipif(not BIN, reason="PSFSIM_BIN (the psfsim command) not given")
def test_segment_columns_equal_manifest(tmp_path):
    cfg = jwst_piston_small(tmp_path)
    head, rows = manifest(cfg, tmp_path / "out", "jwst_piston")
    with psfsim.Set(str(cfg), backend="cpu") as s:
        p, labels = check_labels(s, head, rows)
        assert len(labels) == 54
        for k, row in enumerate(rows):
            assert int(row["draw"]) == p["draw"][k]


@pytest.mark.skipif(not BIN, reason="PSFSIM_BIN (the psfsim command) not given")
def test_field_and_segment_table_equal_manifest(tmp_path):
    """A table set of a segmented aperture with field columns and an
    s<k>_z<j> column, a fixed segment term added to it."""
    (tmp_path / "t.csv").write_text("field_x_px,field_y_px,z4,s2_z1\n"
                                    "10.5,-3,0,0.01\n2048,4096.25,0.05,0\n0.1,7,0,-0.02\n")
    cfg = tmp_path / "tf.cfg"
    cfg.write_text('name = "tf";\n'
                   'optics: { wavelength_nm = 1000.0; aperture: { shape = "segmented";\n'
                   '  segments: { flat_to_flat_m = 1.0; gap_m = 0.01; rings = 1;\n'
                   '    zernike = ( (2, 1, 0.03), (5, 3, 0.02) ); }; }; };\n'
                   'sampling: { pupil_samples = 32; };\n'
                   'sweep: { table = "t.csv"; };\n'
                   'output: { npix = 32; };\n')
    head, rows = manifest(cfg, tmp_path / "out", "tf")
    with psfsim.Set(str(cfg), backend="cpu") as s:
        p, labels = check_labels(s, head, rows)
        assert labels == ["s2_z1", "s5_z3", "field_x_px", "field_y_px"]
        assert s.has_field
        np.testing.assert_array_equal(p["field_x_px"], [10.5, 2048.0, 0.1])
        np.testing.assert_array_equal(p["field_y_px"], [-3.0, 4096.25, 7.0])
        assert p["s5_z3"].tolist() == [0.02] * 3
        assert math.isclose(p["s2_z1"][0], 0.04) and p["s2_z1"][1] == 0.03


ZLABEL = re.compile(r"z\d+|draw|seed")


@pytest.mark.skipif(not BIN, reason="PSFSIM_BIN (the psfsim command) not given")
def test_zernike_labels_equal_manifest(tmp_path):
    """params()' draw, seed and z<j> are the manifest's, cell for cell: a
    fixed term (Z11), a swept one (Z7), defocus (Z4) and a drawn one (Z5)
    in one set; a swept term whose values are all zero is no label, as in
    the manifest."""
    cfg = tmp_path / "zl.cfg"
    cfg.write_text(
        'name = "zl";\n'
        'optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n'
        'sampling: { pupil_samples = 32; padding = 2.0; };\n'
        'aberrations: { zernike = ((11, 0.02)); };\n'
        'sweep: { defocus = [0.0, 0.1]; zernike = ((7, [0.0, 0.05]), (8, [0.0])); '
        'random: { count = 3; seed = 7; zernike = ((5, "normal", 0.05)); }; };\n'
        'output: { png: { bits = 8; }; };\n')
    head, rows = manifest(cfg, tmp_path / "out", "zl")
    with psfsim.Set(str(cfg)) as s:
        p = s.params(frame=False)
        labels = [c for c in head if ZLABEL.fullmatch(c)]
        assert labels == ["draw", "seed", "z4", "z5", "z7", "z11"], head
        assert [c for c in p.dtype.names if ZLABEL.fullmatch(c)] == labels
        assert s.label_j == [4, 5, 7, 11]
        assert len(rows) == s.count == 12
        for k, row in enumerate(rows):
            for c in labels:
                assert float(row[c]) == p[c][k], (k, c)
        assert np.unique(p["z7"]).tolist() == [0.0, 0.05]
        assert np.all(p["z11"] == 0.02)


BROADBAND = ('name = "bb";\n'
             'optics: { wavelengths_nm = [500.0, 600.0]; weights = [0.25, 0.75]; f_number = 10.0;\n'
             '  aperture: { diameter_m = 1.0; }; };\n'
             'sampling: { pupil_samples = 32; };\n'
             'sweep: { defocus = [0.0, 0.2]; };\n'
             'output: { png: { enabled = false; }; fits: { enabled = true; cube = %s; };\n'
             '  hdf5: { enabled = %s; }; };\n')


@pytest.mark.skipif(not BIN, reason="PSFSIM_BIN (the psfsim command) not given")
@pytest.mark.parametrize("cube", [False, True], ids=["files", "cube"])
def test_broadband_wavelength_label(tmp_path, cube):
    """A broadband image's wavelength_nm is the band's weighted mean, as
    FITS WAVELEN, everywhere: the manifest, the library's params, NAME.h5's
    labels, the cube's PLANES; the pixel's reference (REFWAVE) stays the
    shortest, which pixel_scale_lambda_d refers to."""
    fits = pytest.importorskip("astropy.io.fits")
    cfg = tmp_path / "bb.cfg"
    cfg.write_text(BROADBAND % (str(cube).lower(), "false" if cube else "true"))
    out = tmp_path / "out"
    head, rows = manifest(cfg, out, "bb")
    mean = 0.25 * 500.0 + 0.75 * 600.0  # 575, exact
    assert [float(r["wavelength_nm"]) for r in rows] == [mean, mean]
    with psfsim.Set(str(cfg), backend="cpu") as s:
        p = s.params(frame=False)
        assert list(p["wavelength_nm"]) == [mean, mean]
        ld = p["pixel_scale_lambda_d"][0]
    assert ld == 0.5  # padding 2 at the shortest: lambda/D at 500 nm
    if cube:
        with fits.open(str(out / "bb_cube.fits")) as f:
            assert list(f["PLANES"].data["WAVELEN"]) == [mean / 1e9] * 2
        return
    for k in range(2):
        with fits.open(str(out / ("bb_%d.fits" % k))) as f:
            h = f[0].header
            assert h["WAVELEN"] == mean / 1e9 and h["REFWAVE"] == 500.0 / 1e9
            assert h["PIXSCLLD"] == ld
    h5py = pytest.importorskip("h5py")
    with h5py.File(str(out / "bb.h5"), "r") as f:
        assert list(f["labels/wavelength_nm"][:]) == [mean, mean]
