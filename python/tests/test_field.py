# SPDX-License-Identifier: BSD-3-Clause
"""Field-dependent aberrations (docs/config.md, "Field-dependent
aberrations"): the field group's positions as the set's outermost axis,
the polynomial model (field.zernike) and the measured one (field.table,
linear over Qhull's Delaunay triangles). End to end through the psfsim
command: every image's labels (manifest, HDF5, FITS) equal the model at
its position (the polynomial bit for bit, as Python's float ** int
computes it; the table exact at its points and linear fields exact
inside), a rotationally symmetric model gives images related by the
rotation and the reflection, and each bad value is refused with
FILE:LINE: KEY and nothing written. Run with PSFSIM_BIN, the psfsim
command."""
import csv
import os
import subprocess

import numpy as np
import pytest

BIN = os.environ.get("PSFSIM_BIN")
pytestmark = pytest.mark.skipif(not BIN, reason="PSFSIM_BIN (the psfsim command) not given")

CENTRE = (1023.5, 1023.5)
RADIUS = 1448.2
# (j, [(p, q, c), ...]): defocus with a field curvature, coma linear in h
TERMS = [(4, [(0, 0, 0.02), (2, 0, 0.05), (0, 2, 0.05)]), (7, [(1, 0, 0.03)]),
         (11, [(1, 1, -0.013), (3, 0, 0.007)])]


def field_block(positions, terms=TERMS, table=None, extra=""):
    if isinstance(positions, dict):
        g = positions
        pos = "grid = { nx = %d; ny = %d; x_px = [%r, %r]; y_px = [%r, %r]; };" % (
            g["nx"], g["ny"], g["x"][0], g["x"][1], g["y"][0], g["y"][1])
    else:
        pos = "positions_px = ( %s );" % ", ".join("(%r, %r)" % p for p in positions)
    model = ""
    if terms:
        model = "zernike = ( %s );" % ", ".join(
            "(%d, ( %s ))" % (j, ", ".join("(%d, %d, %r)" % m for m in mono)) for j, mono in terms)
    if table:
        model = 'table = "%s";' % table
    return ("field: {\n  %s\n  centre_px = [%r, %r];\n  radius_px = %r;\n  %s\n%s};\n"
            % (pos, CENTRE[0], CENTRE[1], RADIUS, model, extra))


def write_cfg(tmp_path, name, field, output="fits: { enabled = true; }; hdf5: { enabled = true; };",
              extra=""):
    cfg = tmp_path / (name + ".cfg")
    cfg.write_text(
        'name = "%s";\n'
        "optics: { wavelength_nm = 1000.0; aperture: { diameter_m = 2.0; }; };\n"
        "sampling: { pupil_samples = 32; padding = 2.0; };\n"
        'aberrations: { units = "waves"; };\n'
        "%s"
        'output: { png: { enabled = false; }; %s };\n%s'
        % (name, extra, output, field))
    return cfg


def run(cfg, out):
    return subprocess.run([BIN, "-c", str(cfg), "-o", str(out), "-q", "--backend", "cpu",
                           "--force"], capture_output=True, text=True)


def poly(mono, x, y):
    """The model's value, as docs/config.md states it: sum of c hx^p hy^q in
    the order written, from 0.0 (C's pow and Python's ** are one libm pow)."""
    hx, hy = (x - CENTRE[0]) / RADIUS, (y - CENTRE[1]) / RADIUS
    v = 0.0
    for p, q, c in mono:
        v += c * hx ** p * hy ** q
    return v


def manifest(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_polynomial_labels(tmp_path):
    """Each image's z<j>, position and (hx, hy) in the manifest, NAME.h5 and
    its FITS header equal the polynomial at its position, bit for bit; the
    positions are the grid's, x fastest, the field axis outermost."""
    grid = {"nx": 3, "ny": 2, "x": (0.0, 2047.0), "y": (10.0, 2000.0)}
    cfg = write_cfg(tmp_path, "poly", field_block(grid), extra="sweep: { defocus = [0.0, 0.1]; };\n")
    r = run(cfg, tmp_path / "o")
    assert r.returncode == 0, r.stderr
    xs, ys = [0.0, 1023.5, 2047.0], [10.0, 2000.0]
    want = [(x, y) for y in ys for x in xs for _ in range(2)]  # defocus innermost
    rows = manifest(tmp_path / "o" / "poly_manifest.csv")
    assert len(rows) == 12
    assert [k for k in rows[0] if k.startswith("z") or k.startswith("field")] == \
        ["zernike_j", "zernike_coeff", "z4", "z7", "z11", "field_x_px", "field_y_px", "field_hx",
         "field_hy"]
    h5py = pytest.importorskip("h5py")
    fits = pytest.importorskip("astropy.io.fits")
    with h5py.File(tmp_path / "o" / "poly.h5") as f:
        zl = f["labels/zernike"][:]
        assert list(f["labels/zernike"].attrs["noll_j"]) == [4, 7, 11]
        fx, fy = f["labels/field_x_px"][:], f["labels/field_y_px"][:]
        hx, hy = f["labels/field_hx"][:], f["labels/field_hy"][:]
    for k, (row, (x, y)) in enumerate(zip(rows, want)):
        defocus = 0.1 if k % 2 else 0.0
        z = {j: poly(m, x, y) for j, m in TERMS}
        z[4] = 0.0 + defocus + z[4]  # jobs_coefficients: the sweep, then the field
        assert (float(row["field_x_px"]), float(row["field_y_px"])) == (x, y)
        assert float(row["field_hx"]) == (x - CENTRE[0]) / RADIUS
        assert float(row["field_hy"]) == (y - CENTRE[1]) / RADIUS
        for j in (4, 7, 11):
            assert float(row["z%d" % j]) == z[j], (k, j)
        assert list(zl[k]) == [z[4], z[7], z[11]]
        assert (fx[k], fy[k]) == (x, y)
        assert (hx[k], hy[k]) == ((x - CENTRE[0]) / RADIUS, (y - CENTRE[1]) / RADIUS)
        h = fits.getheader(tmp_path / "o" / ("poly_%02d.fits" % k))
        assert (h["FIELDX"], h["FIELDY"]) == (x, y)
        assert h["FIELDHX"] == (x - CENTRE[0]) / RADIUS and h["Z7"] == z[7]
    import json
    side = json.load(open(tmp_path / "o" / "poly.json"))["config"]["field"]
    assert side == {"grid": {"nx": 3, "ny": 2, "x_px": [0.0, 2047.0], "y_px": [10.0, 2000.0]},
                    "centre_px": list(CENTRE), "radius_px": RADIUS,
                    "zernike": [[j, [list(m) for m in mono]] for j, mono in TERMS],
                    "segment_zernike": [], "table": None}


def images(tmp_path, name, positions, terms):
    fits = pytest.importorskip("astropy.io.fits")
    cfg = write_cfg(tmp_path, name, field_block(positions, terms),
                    output="npix = 63; pixel_scale = 0.4; fits: { enabled = true; };")
    r = run(cfg, tmp_path / name)
    assert r.returncode == 0, r.stderr
    return [fits.getdata(tmp_path / name / ("%s_%d.fits" % (name, k)))
            for k in range(len(positions))]


def test_rotational_symmetry(tmp_path):
    """A rotationally symmetric field (field curvature c |h|^2 on Z4 and
    Seidel coma, Z8 (x, cos) ~ hx and Z7 (y, sin) ~ hy, i.e. (h . rho) rho^2)
    makes the wavefront at the field point rotated by 90 degrees the pupil's
    rotation of the first: its PSF is the first's turned by 90 degrees in
    the image; the point mirrored in y gives the image mirrored in y."""
    terms = [(4, [(2, 0, 0.2), (0, 2, 0.2)]), (8, [(1, 0, 0.3)]), (7, [(0, 1, 0.3)])]
    dx, dy = 500.0, 200.0
    pos = [(CENTRE[0] + dx, CENTRE[1] + dy),   # h
           (CENTRE[0] - dy, CENTRE[1] + dx),   # h turned by +90 degrees
           (CENTRE[0] + dx, CENTRE[1] - dy),   # h mirrored in y
           (CENTRE[0] + dy, CENTRE[1] - dx)]   # h turned by -90 degrees
    a, b, c, d = images(tmp_path, "rot", pos, terms)
    peak = a.max()
    assert np.abs(a - np.rot90(a)).max() > 0.05 * peak  # not symmetric by itself
    # image rows are y, columns x: +90 degrees in (x, y) is np.rot90(a, k=1)
    # of a [y, x] array read with y upwards (rot90 turns row-major arrays
    # counter-clockwise as displayed with row 0 at the top, clockwise with
    # y up: psfsim's images have y up, the optical axis at pixel 31)
    turned = [np.abs(b - np.rot90(a, k)).max() for k in (1, 3)]
    assert min(turned) < 1e-6 * peak and max(turned) > 0.05 * peak
    k = (1, 3)[int(np.argmin(turned))]
    assert np.abs(d - np.rot90(a, 4 - k)).max() < 1e-6 * peak  # the other way: the inverse
    assert np.abs(c - a[::-1, :]).max() < 1e-6 * peak  # y mirrored: rows reversed


TABLE_PTS = [(0.0, 0.0), (2047.0, 0.0), (0.0, 2047.0), (2047.0, 2047.0), (1023.5, 1023.5),
             (300.0, 1700.0), (1500.0, 400.0)]


def linear(x, y):
    return {4: 0.01 + 2e-5 * x - 1e-5 * y, 8: -0.02 + 1.5e-5 * y}


def write_table(tmp_path, pts, f, name="field.csv"):
    lines = ["x_px,y_px,z4,z8"] + ["%r,%r,%r,%r" % (x, y, f(x, y)[4], f(x, y)[8]) for x, y in pts]
    (tmp_path / name).write_text("\n".join(lines) + "\n")
    return name


def test_table_exact_and_linear(tmp_path):
    """field.table: at the table's points the row's values exactly; a field
    linear in (x, y) is reproduced everywhere inside the hull (to 1e-12);
    a regular grid of points (Qhull's cocircular case) too."""
    write_table(tmp_path, TABLE_PTS, linear)
    inside = [(10.0, 20.0), (2000.0, 1000.0), (700.5, 1800.25), (1023.5, 0.0), (2047.0, 2047.0)]
    pos = TABLE_PTS + inside
    cfg = write_cfg(tmp_path, "tab", field_block(pos, terms=None, table="field.csv"),
                    output="fits: { enabled = true; };")
    r = run(cfg, tmp_path / "o")
    assert r.returncode == 0, r.stderr
    rows = manifest(tmp_path / "o" / "tab_manifest.csv")
    text = (tmp_path / "field.csv").read_text().splitlines()[1:]
    for k, (x, y) in enumerate(pos):
        got = (float(rows[k]["z4"]), float(rows[k]["z8"]))
        if k < len(TABLE_PTS):
            cells = text[k].split(",")
            assert got == (float(cells[2]), float(cells[3]))  # exact at the points
        want = linear(x, y)
        assert abs(got[0] - want[4]) < 1e-12 and abs(got[1] - want[8]) < 1e-12, (x, y, got)
    # a regular 4 x 4 grid of points: every 4 of a cell on one circle
    grid = [(x, y) for y in (0.0, 700.0, 1400.0, 2100.0) for x in (0.0, 700.0, 1400.0, 2100.0)]
    write_table(tmp_path, grid, linear, "grid.csv")
    pos = [(350.0, 350.0), (1000.0, 1234.5), (2099.0, 1.0), (700.0, 700.0)]
    cfg = write_cfg(tmp_path, "tg", field_block(pos, terms=None, table="grid.csv"),
                    output="fits: { enabled = true; };")
    r = run(cfg, tmp_path / "g")
    assert r.returncode == 0, r.stderr
    for row, (x, y) in zip(manifest(tmp_path / "g" / "tg_manifest.csv"), pos):
        assert abs(float(row["z4"]) - linear(x, y)[4]) < 1e-12
        assert abs(float(row["z8"]) - linear(x, y)[8]) < 1e-12


BAD = [
    # (description, field block, expected stderr)
    ("nx zero", "grid = { nx = 0; ny = 2; x_px = [0.0, 1.0]; y_px = [0.0, 1.0]; };",
     "field.grid.nx: must be >= 1"),
    ("x_px one value", "grid = { nx = 2; ny = 2; x_px = [0.0]; y_px = [0.0, 1.0]; };",
     "field.grid.x_px: expected \\[first, last\\], two numbers \\(got 1\\)"),
    ("x_px reversed", "grid = { nx = 2; ny = 2; x_px = [5.0, 1.0]; y_px = [0.0, 1.0]; };",
     "field.grid.x_px: must be \\[first, last\\] with first < last"),
    ("nx 1 span", "grid = { nx = 1; ny = 2; x_px = [0.0, 1.0]; y_px = [0.0, 1.0]; };",
     "field.grid.x_px: nx = 1 makes one position"),
    ("ny missing", "grid = { nx = 2; x_px = [0.0, 1.0]; y_px = [0.0, 1.0]; };",
     "field.grid.ny: required key missing"),
    ("radius missing", "positions_px = ((1.0, 2.0)); radius_px = None;",
     "field.radius_px: required key missing"),
    ("both", "grid = { nx = 1; ny = 1; x_px = [0.0, 0.0]; y_px = [0.0, 0.0]; };\n"
     "positions_px = ((1.0, 2.0));", "field.positions_px: give field.grid or field.positions_px"),
    ("position triple", "positions_px = ((1.0, 2.0, 3.0));",
     "field.positions_px\\[0\\]: expected a position \\(x, y\\)"),
    ("position huge", "positions_px = ((1e9, 2.0));",
     "field.positions_px\\[0\\]\\[0\\]: must be in \\[-10000000, 10000000\\]"),
    ("radius zero", "positions_px = ((1.0, 2.0)); radius_px = 0.0;", "field.radius_px: must be > 0"),
    ("power", "positions_px = ((1.0, 2.0)); zernike = ((4, ((11, 0, 0.1))));",
     "field.zernike\\[0\\]\\[0\\]: the power p must be an integer in \\[0, 10\\] \\(got 11\\)"),
    ("j", "positions_px = ((1.0, 2.0)); zernike = ((0, ((1, 0, 0.1))));",
     "field.zernike\\[0\\]: j must be >= 1 in the noll convention"),
    ("dup j", "positions_px = ((1.0, 2.0)); zernike = ((4, ((1, 0, 0.1))), (4, ((0, 1, 0.1))));",
     "field.zernike\\[1\\]: duplicate term j = 4"),
    ("dup pq", "positions_px = ((1.0, 2.0)); zernike = ((4, ((1, 0, 0.1), (1, 0, 0.2))));",
     "field.zernike\\[0\\]\\[1\\]: duplicate monomial \\(p, q\\) = \\(1, 0\\)"),
    ("coefficient", "positions_px = ((1.0, 2.0)); zernike = ((4, ((1, 0, 1e9))));",
     "field.zernike\\[0\\]\\[0\\]: the coefficient c must be in"),
    ("value at a position", "positions_px = ((1e6, 2.0)); zernike = ((4, ((4, 0, 100.0))));",
     "field.zernike: term j = 4 at the position \\(1000000, 2\\) px"),
    ("both models", "positions_px = ((1.0, 2.0)); zernike = ((4, ((1, 0, 0.1)))); "
     'table = "t.csv";', "field.table: give field.zernike or field.table, not both"),
    ("table missing", 'positions_px = ((1.0, 2.0)); table = "nope.csv";', "field.table: .*nope.csv"),
    ("table outside", 'positions_px = ((3000.0, 2.0)); table = "t.csv";',
     "field.table: .*t.csv: the position \\(3000, 2\\) px is outside the convex hull of the "
     "table's 7 points"),
    ("table column", 'positions_px = ((1.0, 2.0)); table = "u.csv";',
     "field.table: .*u.csv:1:3 \\(defocus\\): unknown column \\(allowed: x_px, y_px, z<j>"),
    ("table line", 'positions_px = ((1.0, 2.0)); table = "l.csv";',
     "field.table: .*l.csv: the table's 3 points are collinear \\(or coincide\\): a "
     "triangulation needs three points not on one line \\(Qhull QH6154\\)$"),
    ("table no rows", 'positions_px = ((1.0, 2.0)); table = "h.csv";',
     "field.table: .*h.csv: no data rows after the header \\(one measured field point per "
     "row\\)$"),
    ("monomial short", "positions_px = ((1.0, 2.0)); zernike = ((4, ((0, 0, 0.1), (1, 0))));",
     "field.zernike\\[0\\]\\[1\\]: expected a monomial \\(p, q, c\\): c hx\\^p hy\\^q, three "
     "values \\(got 2\\)$"),
    ("monomial number", "positions_px = ((1.0, 2.0)); zernike = ((4, (0.5)));",
     "field.zernike\\[0\\]\\[0\\]: expected a monomial \\(p, q, c\\): c hx\\^p hy\\^q \\(got a "
     "float\\)$"),
    ("monomial long", "positions_px = ((1.0, 2.0)); zernike = ((4, ((1, 0, 0.05, 1.0))));",
     "field.zernike\\[0\\]\\[0\\]: expected a monomial \\(p, q, c\\): c hx\\^p hy\\^q, three "
     "values \\(got 4\\)$"),
    ("unknown key", "positions_px = ((1.0, 2.0)); radius = 3.0;",
     "field.radius: unknown key \\(did you mean field.radius_px\\?\\)"),
]


@pytest.mark.parametrize("case", [b[0] for b in BAD])
def test_bad_values(tmp_path, case):
    import re
    _, block, want = next(b for b in BAD if b[0] == case)
    write_table(tmp_path, TABLE_PTS, linear, "t.csv")
    (tmp_path / "u.csv").write_text("x_px,y_px,defocus\n0,0,1\n1,0,1\n0,1,1\n")
    (tmp_path / "l.csv").write_text("x_px,y_px,z4\n0,0,1\n1,1,1\n2,2,1\n")
    (tmp_path / "h.csv").write_text("x_px,y_px,z4\n")
    if "radius_px" not in block:
        block += " radius_px = 100.0;"
    block = block.replace("radius_px = None;", "")
    body = "field: {\n  centre_px = [0.0, 0.0];\n  %s\n};\n" % block.replace(";", ";\n  ")
    cfg = write_cfg(tmp_path, "bad", body)
    line = None
    key = re.match(r"([a-z_.]+)", want).group(1).rstrip(".")
    for i, text in enumerate(cfg.read_text().splitlines(), 1):
        leaf = key.split(".")[-1]
        if re.search(r"\b%s\b\s*[=:]" % re.escape(leaf), text) or (
                leaf in ("grid", "field") and text.strip().startswith(leaf)):
            line = i
            break
    for i, text in enumerate(cfg.read_text().splitlines(), 1):  # a missing key: its group
        if line is None and text.strip().startswith(
                "grid" if key.startswith("field.grid.") else "field"):
            line = i
            break
    r = run(cfg, tmp_path / "o")
    assert r.returncode != 0
    assert re.search("bad.cfg:%d: %s" % (line, want), r.stderr, re.M), (line, r.stderr)
    assert not (tmp_path / "o").exists()  # nothing written


def test_table_columns_with_field(tmp_path):
    """A sweep.table's field_x_px column and the field group: one place."""
    (tmp_path / "s.csv").write_text("field_x_px,field_y_px,z5\n1,2,0.1\n")
    cfg = write_cfg(tmp_path, "bad", field_block([(1.0, 2.0)]),
                    extra='sweep: { table = "s.csv"; };\n')
    r = run(cfg, tmp_path / "o")
    assert r.returncode != 0
    assert "bad.cfg:5: sweep.table: %s:1:1 (field_x_px): the positions are also given by field " \
        "(%s:7)" % (tmp_path / "s.csv", tmp_path / "bad.cfg") in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


def test_library_positions_and_labels(tmp_path):
    """The library (psfsim.Set): params()' field_x_px, field_y_px
    (psfsim_field_positions), field_hx, field_hy (psfsim_field_h) and
    zernike totals equal the manifest's."""
    psfsim = pytest.importorskip("psfsim")
    pos = [(100.0, 200.0), (1500.5, 30.0), (1023.5, 1023.5)]
    cfg = write_cfg(tmp_path, "lib", field_block(pos), output="fits: { enabled = true; };")
    r = run(cfg, tmp_path / "o")
    assert r.returncode == 0, r.stderr
    rows = manifest(tmp_path / "o" / "lib_manifest.csv")
    with psfsim.Set(str(cfg), backend="cpu") as s:
        assert s.count == 3 and s.has_field
        p = s.params()
        np.testing.assert_array_equal(p["field_x_px"], [x for x, _ in pos])
        np.testing.assert_array_equal(p["field_y_px"], [y for _, y in pos])
        # field_hx, field_hy (psfsim_field_h): the manifest's, to its 17 digits, and
        # ((x, y) - centre) / radius in binary64
        np.testing.assert_array_equal(p["field_hx"], [float(r["field_hx"]) for r in rows])
        np.testing.assert_array_equal(p["field_hy"], [float(r["field_hy"]) for r in rows])
        np.testing.assert_array_equal(p["field_hx"], [(x - CENTRE[0]) / RADIUS for x, _ in pos])
        np.testing.assert_array_equal(p["field_hy"], [(y - CENTRE[1]) / RADIUS for _, y in pos])
        names = list(s.params_dtype().names)  # the manifest's order
        assert names.index("field_hx") == names.index("field_y_px") + 1
        assert names.index("field_hy") == names.index("field_hx") + 1
        q = s.params(1, 2, frame=False)
        np.testing.assert_array_equal(q["field_hx"], p["field_hx"][1:])
        for k, (x, y) in enumerate(pos):
            for j, mono in TERMS:
                assert float(rows[k]["z%d" % j]) == poly(mono, x, y)


def grid_cfg(tmp_path, name, grid, output, terms=TERMS, extra=""):
    return write_cfg(tmp_path, name, field_block(grid, terms),
                     output="npix = 25; " + output, extra='normalization = "sum";\n' + extra)


def test_psf_grid_fits(tmp_path):
    """output.psf_grid over a field set of <= 100 positions: NAME_cube.fits,
    DET_YX<i> = '(y, x)' of position i, the planes the set's images."""
    fits = pytest.importorskip("astropy.io.fits")
    h5py = pytest.importorskip("h5py")
    grid = {"nx": 3, "ny": 2, "x": (0.0, 2047.0), "y": (0.0, 2047.0)}
    cfg = grid_cfg(tmp_path, "gf", grid, "psf_grid = true; fits: { enabled = true; cube = true; "
                   "}; hdf5: { enabled = true; };")
    r = run(cfg, tmp_path / "o")
    assert r.returncode == 0, r.stderr
    with fits.open(tmp_path / "o" / "gf_cube.fits") as h:
        hdr, cube, planes = h[0].header, h[0].data, h["PLANES"].data
    assert "FIELDHX" not in hdr  # per plane: the PLANES table's
    with h5py.File(tmp_path / "o" / "gf.h5") as f:
        images = f["images"][:]
        assert f.attrs["psf_grid"] == 1 and f.attrs["psf_grid_oversampling"] == 1
        assert (f.attrs["field_grid_nx"], f.attrs["field_grid_ny"]) == (3, 2)
    assert hdr["NUM_PSFS"] == 6 and cube.shape == (6, 25, 25)
    xs, ys = [0.0, 1023.5, 2047.0], [0.0, 2047.0]
    for i, (x, y) in enumerate([(x, y) for y in ys for x in xs]):
        yx = hdr["DET_YX%d" % i].strip("()").split(",")
        assert (float(yx[0]), float(yx[1])) == (y, x)
        assert np.array_equal(cube[i], images[i])
        assert (planes["FIELDX"][i], planes["FIELDY"][i]) == (x, y)
        assert planes["FIELDHX"][i] == (x - CENTRE[0]) / RADIUS
        assert planes["FIELDHY"][i] == (y - CENTRE[1]) / RADIUS
        assert planes["Z7"][i] == poly(TERMS[1][1], x, y)


def test_psf_grid_beyond_100(tmp_path):
    """A field grid of 11 x 11 = 121 positions (more than a FITS grid file
    holds) with the detector stage (oversample 2, charge diffusion) as
    NAME.h5: every position's PSF with its position; psf_grid_nddata gives
    photutils' grid (oversampling 2, "sum" images x 4); position 60's PSF
    equals a run of that position alone; the FITS cube is refused."""
    h5py = pytest.importorskip("h5py")
    pytest.importorskip("astropy")
    from psfsim.grid import psf_grid_nddata
    grid = {"nx": 11, "ny": 11, "x": (0.0, 2000.0), "y": (0.0, 2000.0)}
    det = 'detector: { oversample = 2; charge_diffusion_px = 0.3; write = "oversampled"; };\n'
    cfg = grid_cfg(tmp_path, "big", grid, "psf_grid = true; hdf5: { enabled = true; };",
                   extra=det)
    r = run(cfg, tmp_path / "o")
    assert r.returncode == 0, r.stderr
    with h5py.File(tmp_path / "o" / "big.h5") as f:
        images = f["images"][:]
        assert f.attrs["psf_grid_oversampling"] == 2 and f.attrs["field_npos"] == 121
    assert images.shape == (121, 50, 50)
    nd = psf_grid_nddata(tmp_path / "o" / "big.h5")
    assert nd.meta["oversampling"] == 2 and nd.data.shape == (121, 50, 50)
    np.testing.assert_array_equal(nd.data, images.astype(np.float64) * 4)
    xs = [200.0 * i for i in range(11)]
    np.testing.assert_array_equal(nd.meta["grid_xypos"],
                                  [(x, y) for y in xs for x in xs])
    one = grid_cfg(tmp_path, "one", [(1000.0, 1000.0)], "hdf5: { enabled = true; };", extra=det)
    assert run(one, tmp_path / "p").returncode == 0
    with h5py.File(tmp_path / "p" / "one.h5") as f:
        np.testing.assert_allclose(f["images"][0], images[60], rtol=0, atol=1e-7 * images[60].max())
    bad = grid_cfg(tmp_path, "bad", grid, "psf_grid = true; fits: { enabled = true; cube = true; };")
    r = run(bad, tmp_path / "b")
    assert r.returncode == 2
    assert "bad.cfg:6: output.psf_grid: 121 field positions, more than the 100 positions a FITS " \
        "grid file holds" in r.stderr, r.stderr
    assert not (tmp_path / "b").exists()


def between_points(tmp_path):
    """A 5 x 5 grid (512 px apart) of a field with curvature and coma, the
    detector stage on, and the direct PSF at (x0, y0) inside the cell of
    positions 18, 19, 23, 24: (grid path, x0, y0, bilinear, direct)."""
    h5py = pytest.importorskip("h5py")
    terms = [(4, [(2, 0, 0.1), (0, 2, 0.1)]), (8, [(1, 0, 0.1)]), (7, [(0, 1, 0.1)])]
    grid = {"nx": 5, "ny": 5, "x": (0.0, 2047.0), "y": (0.0, 2047.0)}
    det = "detector: { charge_diffusion_px = 0.3; };\n"
    cfg = grid_cfg(tmp_path, "g", grid, "psf_grid = true; hdf5: { enabled = true; };", terms,
                   extra=det)
    assert run(cfg, tmp_path / "o").returncode == 0
    tx, ty = 0.3, 0.6
    x0, y0 = 1535.25 + tx * 511.75, 1535.25 + ty * 511.75
    one = grid_cfg(tmp_path, "one", [(x0, y0)], "hdf5: { enabled = true; };", terms, extra=det)
    assert run(one, tmp_path / "p").returncode == 0
    with h5py.File(tmp_path / "o" / "g.h5") as f:
        g = f["images"][:].astype(np.float64)
    with h5py.File(tmp_path / "p" / "one.h5") as f:
        direct = f["images"][0].astype(np.float64)
    bilinear = ((1 - tx) * (1 - ty) * g[18] + tx * (1 - ty) * g[19] +
                (1 - tx) * ty * g[23] + tx * ty * g[24])
    return tmp_path / "o" / "g.h5", x0, y0, bilinear, direct, g


def test_psf_grid_between_points(tmp_path):
    """Between grid points the grid's bilinear interpolation (what
    GriddedPSFModel does) is within 6% of the peak of psfsim's direct PSF
    there (4.5% measured), where the nearest grid PSF is 21% off."""
    _, _, _, bilinear, direct, g = between_points(tmp_path)
    err = np.abs(bilinear - direct).max() / direct.max()
    assert err < 0.06, err
    assert np.abs(g[18] - direct).max() / direct.max() > 3 * err  # the field matters


def test_psf_grid_photutils(tmp_path):
    """photutils' GriddedPSFModel of NAME.h5 (psfsim.grid.psf_grid_model)
    gives that interpolation, within 6% of the direct PSF."""
    pytest.importorskip("photutils", minversion="1.10")  # the "webbpsf" reader
    psf = pytest.importorskip("photutils.psf")
    from psfsim.grid import psf_grid_model
    path, x0, y0, bilinear, direct, _ = between_points(tmp_path)
    model = psf_grid_model(path)
    assert isinstance(model, psf.GriddedPSFModel)
    y, x = np.mgrid[-12:13, -12:13]
    img = model.evaluate(x + x0, y + y0, 1.0, x0, y0)
    assert np.abs(img - bilinear).max() < 1e-3 * direct.max()
    assert np.abs(img - direct).max() < 0.06 * direct.max()


def test_shipped_imager(tmp_path):
    """configs/wide_field_imager.cfg: its cited figures at the corner (Z4
    159 nm RMS x |h|^2, coma 750 nm RMS x h) and each coma flare pointing
    away from the axis (the light's centroid beyond the peak, outwards)."""
    src = os.environ.get("PSFSIM_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
    cfg = os.path.join(src, "configs", "wide_field_imager.cfg")
    fits = pytest.importorskip("astropy.io.fits")
    text = open(cfg).read().replace("png: { stretch = \"sqrt\"; };",
                                    "png: { enabled = false; }; fits: { enabled = true; };")
    (tmp_path / "w.cfg").write_text(text)
    r = run(tmp_path / "w.cfg", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    rows = manifest(tmp_path / "o" / "wide_field_imager_manifest.csv")
    assert len(rows) == 25
    corner = rows[24]  # (2047, 2047): h = (0.7071, 0.7071), |h| = 1
    assert abs(float(corner["z4"]) - 159.0) < 0.01
    assert abs(float(corner["z8"]) - 750.0 / 2 ** 0.5) < 0.01
    assert abs(float(corner["z7"]) - 750.0 / 2 ** 0.5) < 0.01
    y, x = np.mgrid[:64, :64]
    for k in (14, 22, 10, 2):  # +x, +y, -x, -y of the axis, h = 0.71
        with fits.open(tmp_path / "o" / ("wide_field_imager_%02d.fits" % k)) as h:
            d, hdr = h[0].data.astype(np.float64), h[0].header
        r0, c0 = np.unravel_index(d.argmax(), d.shape)
        cx, cy = (d * x).sum() / d.sum(), (d * y).sum() / d.sum()
        out = np.array([hdr["FIELDHX"], hdr["FIELDHY"]])
        assert np.dot([cx - c0, cy - r0], out) > 1.0  # pixels, outwards


def big_grid(tmp_path, n=11):
    grid = {"nx": n, "ny": n, "x": (0.0, 2000.0), "y": (0.0, 2000.0)}
    det = 'detector: { oversample = 2; write = "oversampled"; };\n'
    cfg = grid_cfg(tmp_path, "big", grid, "psf_grid = true; hdf5: { enabled = true; };",
                   extra=det)
    r = run(cfg, tmp_path / "o")
    assert r.returncode == 0, r.stderr
    return tmp_path / "o" / "big.h5"


def test_fits_grid_tiles(tmp_path):
    """psfsim.grid.write_fits_grids: 121 positions as 4 FITS grid files of
    at most 10 x 10 positions sharing their edges; every position in one
    at least, each plane the NAME.h5 image x s^2, DET_YX its position."""
    fits = pytest.importorskip("astropy.io.fits")
    pytest.importorskip("h5py")
    from psfsim.grid import psf_grid_nddata, write_fits_grids
    path = big_grid(tmp_path)
    nd = psf_grid_nddata(path)
    files = write_fits_grids(path, tmp_path)
    assert [os.path.basename(f) for f in files] == ["big_grid_%d_%d.fits" % t
                                                    for t in ((0, 0), (0, 1), (1, 0), (1, 1))]
    seen = set()
    pos = [tuple(p) for p in nd.meta["grid_xypos"]]
    for f in files:
        with fits.open(f) as h:
            hdr, data = h[0].header, h[0].data
        assert hdr["NUM_PSFS"] == data.shape[0] <= 100 and hdr["OVERSAMP"] == 2
        assert hdr["FOVPIXEL"] == 25
        for i in range(hdr["NUM_PSFS"]):
            y, x = (float(v) for v in hdr["DET_YX%d" % i].strip("()").split(","))
            k = pos.index((x, y))
            np.testing.assert_array_equal(data[i], nd.data[k].astype(np.float32))
            seen.add(k)
    assert seen == set(range(121))
    with fits.open(files[0]) as h:  # tile (0, 0): columns 0..9 and rows 0..9
        assert (h[0].header["XMAX_PX"], h[0].header["YMAX_PX"]) == (1800.0, 1800.0)
    with fits.open(files[3]) as h:  # tile (1, 1): the shared edge 9, and 10
        assert h[0].header["NUM_PSFS"] == 4 and h[0].header["XMIN_PX"] == 1800.0


def test_fits_grid_tiles_photutils(tmp_path):
    """photutils reads a tile written by write_fits_grids: its 100 PSFs."""
    pytest.importorskip("photutils", minversion="1.10")  # the "webbpsf" reader
    psf = pytest.importorskip("photutils.psf")
    pytest.importorskip("h5py")
    from psfsim.grid import write_fits_grids
    files = write_fits_grids(big_grid(tmp_path), tmp_path)
    model = psf.GriddedPSFModel.read(files[0], format="webbpsf")
    assert len(model.grid_xypos) == 100


def test_eigen_psfs(tmp_path):
    """psfsim.grid.eigen_psfs: an orthonormal basis, weights that rebuild
    the images exactly with every term and, with fewer, to the error the
    dropped singular values give (Eckart-Young), written to NAME_eigen.h5."""
    h5py = pytest.importorskip("h5py")
    from psfsim.grid import eigen_psfs
    path = big_grid(tmp_path, n=4)
    with h5py.File(path) as f:
        x = f["images"][:].astype(np.float64)
    b, w, sv = eigen_psfs(path, 16)
    flat = b.reshape(16, -1)
    np.testing.assert_allclose(flat @ flat.T, np.eye(16), atol=1e-12)
    np.testing.assert_allclose(np.einsum("ki,imn->kmn", w, b), x, atol=1e-12 * x.max())
    b3, w3, _ = eigen_psfs(path, 3)
    err = np.sqrt(((np.einsum("ki,imn->kmn", w3, b3) - x) ** 2).sum())
    assert abs(err - np.sqrt((sv[3:] ** 2).sum())) < 1e-9 * np.sqrt((sv ** 2).sum())
    assert sv[0] ** 2 / (sv ** 2).sum() > 0.5  # the mean PSF's share
    with h5py.File(tmp_path / "o" / "big_eigen.h5") as f:
        np.testing.assert_array_equal(f["basis"][:], b3)
        np.testing.assert_array_equal(f["weights"][:], w3)
        assert f.attrs["count"] == 3


SEG = ('optics: { wavelength_nm = 1000.0; aperture: { shape = "segmented";\n'
       '  segments: { flat_to_flat_m = 1.0; gap_m = 0.01; rings = 1;%s }; }; };\n'
       'sampling: { pupil_samples = 32; };\n'
       'output: { npix = 32; png: { enabled = false; }; fits: { enabled = true; }; };\n')


def seg_cfg(tmp_path, name, fixed="", field=""):
    cfg = tmp_path / (name + ".cfg")
    cfg.write_text('name = "%s";\n' % name + SEG % fixed + field)
    return cfg


def test_segment_terms_over_field(tmp_path):
    """field.segment_zernike: segment 2's piston c hx and segment 5's
    tilt c' hy, added after the fixed terms: the manifest's s<k>_z<j> equal
    the polynomials bit for bit, and the image where the field gives
    segment 2 a piston of 0.2 equals the set with that piston fixed."""
    fits = pytest.importorskip("astropy.io.fits")
    pos = [(1023.5 + 0.2 * RADIUS / 0.5, 1023.5), (1023.5, 1023.5 - 300.0)]
    field = ("field: { positions_px = ( %s ); centre_px = [1023.5, 1023.5]; radius_px = %r;\n"
             "  segment_zernike = ( (2, 1, ( (1, 0, 0.5) )), (5, 3, ( (0, 1, 0.04), (0, 0, 0.01) )) ); };\n"
             % (", ".join("(%r, %r)" % p for p in pos), RADIUS))
    cfg = seg_cfg(tmp_path, "sf", fixed=" zernike = ( (2, 1, 0.03) );", field=field)
    r = run(cfg, tmp_path / "o")
    assert r.returncode == 0, r.stderr
    rows = manifest(tmp_path / "o" / "sf_manifest.csv")
    for row, (x, y) in zip(rows, pos):
        assert float(row["s2_z1"]) == 0.0 + 0.03 + poly([(1, 0, 0.5)], x, y)
        assert float(row["s5_z3"]) == 0.0 + poly([(0, 1, 0.04), (0, 0, 0.01)], x, y)
    assert abs(float(rows[0]["s2_z1"]) - 0.23) < 1e-12
    ref = seg_cfg(tmp_path, "sr", fixed=" zernike = ( (2, 1, %r), (5, 3, %r) );"
                  % (float(rows[0]["s2_z1"]), float(rows[0]["s5_z3"])))
    r = run(ref, tmp_path / "r")
    assert r.returncode == 0, r.stderr
    a = fits.getdata(tmp_path / "o" / "sf_0.fits")
    b = fits.getdata(tmp_path / "r" / "sr_0.fits")
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-6 * b.max())
    c = fits.getdata(tmp_path / "o" / "sf_1.fits")
    assert np.abs(a - c).max() > 0.01 * b.max()  # the other position's segments differ


@pytest.mark.parametrize("case", ["circular", "segment", "order", "dup"])
def test_segment_terms_errors(tmp_path, case):
    terms = {"circular": "(2, 1, ((1, 0, 0.1)))", "segment": "(9, 1, ((1, 0, 0.1)))",
             "order": "(2, 16, ((1, 0, 0.1)))",
             "dup": "(2, 1, ((1, 0, 0.1))), (2, 1, ((0, 1, 0.1)))"}[case]
    field = ("field: { positions_px = ((1.0, 2.0)); centre_px = [0.0, 0.0]; radius_px = 10.0;\n"
             "  segment_zernike = ( %s ); };\n" % terms)
    if case == "circular":
        cfg = write_cfg(tmp_path, "bad", field)
        want = 'bad.cfg:7: field.segment_zernike: only used with optics.aperture.shape = "segmented"'
    else:
        cfg = seg_cfg(tmp_path, "bad", field=field)
        want = {"segment": "bad.cfg:7: field.segment_zernike[0]: the segment must be an index, "
                           "an integer in [0, 6]",
                "order": "bad.cfg:7: field.segment_zernike[0]: j = 16 is of radial order 5",
                "dup": "bad.cfg:7: field.segment_zernike[1]: duplicate term (segment 2, j = 1)"}[case]
    r = run(cfg, tmp_path / "o")
    assert r.returncode == 2 and want in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


def test_segment_terms_table(tmp_path):
    """field.table's s<segment>_z<j> columns (segmented apertures): the
    segment's term interpolated as the z<j> are, exact at the points and
    linear inside, beside field.segment_zernike's polynomial of another
    term; the same (segment, j) in both is refused."""
    pts = [(0.0, 0.0), (2000.0, 0.0), (0.0, 2000.0), (2000.0, 2000.0)]
    lines = ["x_px,y_px,z4,s3_z1"] + ["%r,%r,%r,%r" % (x, y, 0.01 + 1e-5 * x, 0.02 - 2e-5 * y)
                                      for x, y in pts]
    (tmp_path / "s.csv").write_text("\n".join(lines) + "\n")
    pos = [(0.0, 2000.0), (500.0, 1500.0), (1999.0, 3.0)]
    field = ("field: { positions_px = ( %s ); centre_px = [1000.0, 1000.0]; radius_px = 1000.0;\n"
             '  table = "s.csv"; segment_zernike = ( (4, 2, ( (1, 0, 0.01) )) ); };\n'
             % ", ".join("(%r, %r)" % p for p in pos))
    cfg = seg_cfg(tmp_path, "st", field=field)
    r = run(cfg, tmp_path / "o")
    assert r.returncode == 0, r.stderr
    rows = manifest(tmp_path / "o" / "st_manifest.csv")
    assert float(rows[0]["s3_z1"]) == 0.0 + float(lines[3].split(",")[3])  # a table point
    for row, (x, y) in zip(rows, pos):
        assert abs(float(row["s3_z1"]) - (0.02 - 2e-5 * y)) < 1e-12
        assert abs(float(row["z4"]) - (0.01 + 1e-5 * x)) < 1e-12
        assert float(row["s4_z2"]) == 0.0 + 0.01 * ((x - 1000.0) / 1000.0)
    bad = seg_cfg(tmp_path, "bad", field=field.replace("(4, 2,", "(3, 1,"))
    r = run(bad, tmp_path / "b")
    assert r.returncode == 2
    assert "bad.cfg:7: field.segment_zernike: segment 3's term j = 1 is also a column of " \
        "field.table (s3_z1)" in r.stderr, r.stderr
    (tmp_path / "s.csv").write_text("x_px,y_px,s9_z1\n0,0,1\n1,0,1\n0,1,1\n")
    r = run(cfg, tmp_path / "c")
    assert r.returncode == 2
    assert "st.cfg:7: field.table: %s:1:3 (s9_z1): segment 9 is outside the 1 ring (0 .. 6)" % (
        tmp_path / "s.csv") in r.stderr, r.stderr
    assert not (tmp_path / "b").exists() and not (tmp_path / "c").exists()


@pytest.mark.parametrize("case", ["repeat", "other_axis"])
def test_psf_grid_field_errors(tmp_path, case):
    """output.psf_grid over a field set: a position given twice, or other
    axes making several images a position, refused before any work."""
    pos = [(1.0, 2.0), (3.0, 4.0), (1.0, 2.0)] if case == "repeat" else [(1.0, 2.0)]
    extra = "sweep: { defocus = [0.0, 0.1]; };\n" if case == "other_axis" else ""
    cfg = grid_cfg(tmp_path, "bad", pos, "psf_grid = true; hdf5: { enabled = true; };",
                   extra=extra)
    r = run(cfg, tmp_path / "o")
    want = {"repeat": "output.psf_grid: the field position 2 (1, 2) repeats position 0",
            "other_axis": "output.psf_grid: the other axes make 2 images per field position"}[case]
    assert r.returncode == 2 and want in r.stderr, r.stderr
    assert "bad.cfg:%d: output.psf_grid" % (6 if case == "repeat" else 7) in r.stderr
    assert not (tmp_path / "o").exists()


def test_field_montage_script(tmp_path):
    """scripts/field_montage.py: --help prints its usage (argparse), too few
    arguments are refused with it (exit 2), and a 2 x 2 grid's montage is
    2 x 2 tiles of 40 x 40 pixels x 3 framed by 2: 248 x 248, the tile of
    (x0, y1) top left (y up)."""
    import sys
    src = os.environ.get("PSFSIM_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
    script = os.path.join(src, "scripts", "field_montage.py")
    sys.path.insert(0, os.path.join(src, "scripts"))
    from montage import read_png
    r = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: field_montage.py [-h] OUT.png DIR NAME")
    r = subprocess.run([sys.executable, script, "a.png", "d"], capture_output=True, text=True)
    assert r.returncode == 2 and "required: NAME" in r.stderr, r.stderr
    grid = {"nx": 2, "ny": 2, "x": (0.0, 2047.0), "y": (0.0, 2047.0)}
    cfg = write_cfg(tmp_path, "mt", field_block(grid), output="png: { enabled = true; };")
    cfg.write_text(cfg.read_text().replace("png: { enabled = false; }; ", ""))
    r = run(cfg, tmp_path / "o")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "m.png"
    r = subprocess.run([sys.executable, script, str(out), str(tmp_path / "o"), "mt"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    img = read_png(str(out))
    assert img.shape == (248, 248)
    assert img[:2].max() == 0 and img[:, :2].max() == 0  # the frames
    rows = manifest(tmp_path / "o" / "mt_manifest.csv")
    k = next(i for i, row in enumerate(rows)
             if float(row["field_x_px"]) == 0.0 and float(row["field_y_px"]) == 2047.0)
    tile = read_png(str(tmp_path / "o" / rows[k]["png"]))
    o = (tile.shape[0] - 40) // 2
    want = np.kron(tile[o:o + 40, o:o + 40], np.ones((3, 3)))[::-1]
    np.testing.assert_array_equal(np.round(img[2:122, 2:122] * 255),  # read_png: levels / 255
                                  np.clip(want * 255 + 0.5, 0, 255).astype(np.uint8))


def rect_grid(tmp_path):
    """A 3 x 2 field.grid whose x and y positions differ (NAME.h5)."""
    grid = {"nx": 3, "ny": 2, "x": (0.0, 2000.0), "y": (0.0, 1000.0)}
    cfg = grid_cfg(tmp_path, "rect", grid, "psf_grid = true; hdf5: { enabled = true; };")
    r = run(cfg, tmp_path / "o")
    assert r.returncode == 0, r.stderr
    return tmp_path / "o" / "rect.h5"


def test_fits_grid_yx_keywords(tmp_path):
    """write_fits_grids' yx_keywords: "webbpsf" (the default) writes
    DET_YX<i> = '(y, x)', "photutils" '(x, y)' of the same PSF plane;
    anything else is refused."""
    fits = pytest.importorskip("astropy.io.fits")
    pytest.importorskip("h5py")
    from psfsim.grid import psf_grid_nddata, write_fits_grids
    path = rect_grid(tmp_path)
    pos = [tuple(p) for p in psf_grid_nddata(path).meta["grid_xypos"]]
    assert pos == [(0.0, 0.0), (1000.0, 0.0), (2000.0, 0.0), (0.0, 1000.0), (1000.0, 1000.0),
                   (2000.0, 1000.0)]
    (tmp_path / "w").mkdir()
    (tmp_path / "p").mkdir()
    [fw] = write_fits_grids(path, tmp_path / "w")
    [fp] = write_fits_grids(path, tmp_path / "p", yx_keywords="photutils")
    with fits.open(fw) as hw, fits.open(fp) as hp:
        np.testing.assert_array_equal(hw[0].data, hp[0].data)
        for i, (x, y) in enumerate(pos):
            assert hw[0].header["DET_YX%d" % i] == "(%.17g, %.17g)" % (y, x)
            assert hp[0].header["DET_YX%d" % i] == "(%.17g, %.17g)" % (x, y)
    with pytest.raises(ValueError, match="yx_keywords must be \"webbpsf\" .* \\(got 'xy'\\)"):
        write_fits_grids(path, tmp_path, yx_keywords="xy")


def test_fits_grid_yx_keywords_photutils(tmp_path):
    """photutils 1.12's webbpsf reader takes DET_YX's first value as x: a
    grid whose x and y positions differ comes back transposed from the
    default tiles (docs/config.md's warning) and right from
    yx_keywords="photutils": each position's PSF the NAME.h5 image there."""
    photutils = pytest.importorskip("photutils", minversion="1.10")
    psf = pytest.importorskip("photutils.psf")
    pytest.importorskip("h5py")
    from psfsim.grid import psf_grid_nddata, write_fits_grids
    path = rect_grid(tmp_path)
    nd = psf_grid_nddata(path)
    pos = [tuple(p) for p in nd.meta["grid_xypos"]]
    (tmp_path / "p").mkdir()
    [fw] = write_fits_grids(path, tmp_path)
    [fp] = write_fits_grids(path, tmp_path / "p", yx_keywords="photutils")
    mw = psf.GriddedPSFModel.read(fw, format="webbpsf")
    mp = psf.GriddedPSFModel.read(fp, format="webbpsf")
    got_w = {tuple(p) for p in np.asarray(mw.grid_xypos, dtype=float).tolist()}
    if photutils.__version__.startswith("1."):  # 1.12 tested: the reader takes (x, y)
        assert got_w == {(y, x) for x, y in pos}  # transposed
    got = np.asarray(mp.grid_xypos, dtype=float).tolist()
    assert {tuple(p) for p in got} == set(pos)
    for i, p in enumerate(got):
        np.testing.assert_array_equal(np.asarray(mp.data[i]),
                                      nd.data[pos.index(tuple(p))].astype(np.float32))
