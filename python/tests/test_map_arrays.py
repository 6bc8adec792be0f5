# SPDX-License-Identifier: BSD-3-Clause
"""Maps given as arrays in a dict (issue 27): optics.aperture.file and
aberrations.opd_map.file take a 2-D array instead of a path, and the
images equal those of the same map written to a FITS file, bit for bit;
an array counts in the config hash by its values; a value there that is no
2-D array of real numbers, and a map the file path would refuse, raise
ConfigError naming the key path, opening nothing.

Run by ctest (test_python) and scripts/test.sh with PSFSIM_LIBRARY."""
import copy
import pathlib

import numpy as np
import pytest

import psfsim

AR, AC = 30, 44  # the transmission map: rows x columns (not square: stretched)
OR, OC = 52, 36  # the OPD map, placed at 0.03 m per pixel


def base(aperture_file=None, opd_map=None):
    d = {"name": "maps",
         "optics": {"wavelength_nm": 600.0, "f_number": 10.0,
                    "aperture": {"diameter_m": 1.0, "shape": "file", "file": aperture_file}},
         "sampling": {"pupil_samples": 40, "padding": 2.0},
         "sweep": {"defocus": [0.0, 0.3]}}
    if opd_map is not None:
        d["aberrations"] = {"opd_map": opd_map}
    return d


def write_fits(path, values, bitpix):
    """A FITS file of one 2-D image (row 0 the first stored row), BITPIX
    -32 or -64 or 16, written by hand (no astropy needed)."""
    rows, cols = values.shape
    cards = ["SIMPLE  = %20s" % "T", "BITPIX  = %20d" % bitpix, "NAXIS   = %20d" % 2,
             "NAXIS1  = %20d" % cols, "NAXIS2  = %20d" % rows, "END"]
    head = "".join(c.ljust(80) for c in cards).encode("ascii")
    head += b" " * (-len(head) % 2880)
    dtype = {-32: ">f4", -64: ">f8", 16: ">i2"}[bitpix]
    data = np.ascontiguousarray(values, dtype=dtype).tobytes()
    data += b"\0" * (-len(data) % 2880)
    pathlib.Path(path).write_bytes(head + data)


def transmission():
    """Asymmetric (no flip or transpose is itself), one NaN (read as 0),
    values with fractions float32 rounds."""
    i, j = np.mgrid[0:AR, 0:AC]
    t = 0.2 + 0.8 * (i + 2.0 * j) / (AR + 2.0 * AC)
    t[: AR // 4, : AC // 3] = 0.0
    t[AR - 1, 2] = np.nan
    return t


def opd():
    i, j = np.mgrid[0:OR, 0:OC]
    return (0.7 * i * i - 0.4 * j + 0.1 * i * j) / (3.0 * OR * OC)  # waves, float64


OPD_KEYS = {"units": "waves", "scale": 0.5, "pixel_scale_m": 0.03}


def images(config, **kw):
    with psfsim.Set(config, backend="cpu", threads=2, **kw) as s:
        return s.compute()[0]


def cfghash(config, **kw):
    with psfsim.Set(config, backend="cpu", **kw) as s:
        cards = s.header_cards(0, {"strehl": 1.0, "axial_intensity": 1.0, "backend": "cpu"})
    return dict((k, v) for k, v, _ in cards)["CFGHASH"]


def same_bits(a, b):
    assert a.dtype == b.dtype == np.float32 and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("bitpix", [-64, -32])
def test_arrays_equal_files(tmp_path, bitpix):
    """A float64 array equals its float64 FITS file and (rounded to float32
    as the reader rounds a float64 file) a float32 file of the same values:
    the transmission stretched, the OPD placed at its pixel scale."""
    t, o = transmission(), opd()
    write_fits(tmp_path / "t.fits", t, bitpix)
    write_fits(tmp_path / "o.fits", o, bitpix)
    files = images(base("t.fits", dict(OPD_KEYS, file="o.fits")), base_dir=str(tmp_path))
    arrays = images(base(t, dict(OPD_KEYS, file=o)))
    same_bits(files, arrays)
    # float32 arrays of the same values, and nested lists
    same_bits(files, images(base(t.astype(np.float32), dict(OPD_KEYS, file=o.astype(np.float32)))))
    same_bits(files, images(base(t.tolist(), dict(OPD_KEYS, file=o.tolist()))))
    # the orientation: row 0 first, as the file's first stored row
    flipped = images(base(np.flipud(t), dict(OPD_KEYS, file=o)))
    assert np.abs(flipped - arrays).max() > 1e-3 * arrays.max()
    no_opd = images(base(t))
    assert np.abs(no_opd - arrays).max() > 1e-3 * arrays.max()


def test_mixed_paths_and_integer_maps(tmp_path):
    """An array beside a file (a pathlib.Path as a path), an integer OPD
    array as the 16-bit FITS image of the same values, an OPD group that
    holds only the array (its units nm and scale 1 by default), a boolean
    transmission as its 0.0 and 1.0."""
    t = transmission()
    write_fits(tmp_path / "t.fits", t, -64)
    o = np.round(opd() * 3.0e4).astype(np.int16)  # nm
    write_fits(tmp_path / "o.fits", o, 16)
    files = images(base(tmp_path / "t.fits", {"file": str(tmp_path / "o.fits")}))
    same_bits(files, images(base(tmp_path / "t.fits", {"file": o})))
    same_bits(files, images(base(t, {"file": "o.fits"}), base_dir=str(tmp_path)))
    # a boolean mask is its 0.0 and 1.0
    mask = t > 0.5
    same_bits(images(base(mask.astype(np.float64))), images(base(mask)))
    # psfsim.compute takes the dict as Set does
    same_bits(files, psfsim.compute(base(t, {"file": o}), backend="cpu", frame=False)[0])


def test_hash_counts_values():
    t = transmission()
    h = cfghash(base(t))
    assert cfghash(base(t.copy())) == h
    t2 = t.copy()
    t2[5, 5] = np.nextafter(np.float32(t2[5, 5]), np.float32(2.0))
    assert cfghash(base(t2)) != h
    assert cfghash(base(t.reshape(AC, AR))) != h  # the same values, another shape


def test_array_has_no_text():
    with pytest.raises(ValueError, match=r"^optics\.aperture\.file: an array \(a map given in "
                                         r"memory\) has no config text"):
        psfsim.config_text(base(transmission()))
    assert 'file = "t.fits";' in psfsim.config_text(base(pathlib.Path("t.fits")))


def test_config_unchanged_by_open():
    d = base(transmission(), dict(OPD_KEYS, file=opd()))
    before = copy.deepcopy(d)
    images(d)
    np.testing.assert_array_equal(d["optics"]["aperture"]["file"],
                                  before["optics"]["aperture"]["file"])
    assert d["aberrations"]["opd_map"]["units"] == "waves"


@pytest.fixture
def open_spy(monkeypatch):
    """The library's opens, counted: a refused array opens nothing."""
    calls = []
    real = psfsim._lib.lib.psfsim_open_text

    def spy(*args):
        calls.append(args)
        return real(*args)
    monkeypatch.setattr(psfsim._lib.lib, "psfsim_open_text", spy)
    return calls


@pytest.mark.parametrize("value, message", [
    (np.zeros(5), r"expected a 2-D array \(rows, columns\), got 1-D of shape \(5,\)"),
    (np.zeros((2, 3, 4)), r"expected a 2-D array \(rows, columns\), got 3-D of shape "
                          r"\(2, 3, 4\)"),
    (np.ones((4, 4), dtype=np.complex64), r"complex values \(dtype complex64\): a map is real"),
    (np.array([["a", "b"], ["c", "d"]]), r"expected a path or a 2-D array of real numbers, "
                                         r"got ndarray of dtype <U1"),
    ([[1.0, None], [0.5, 0.5]], r"expected a path or a 2-D array of real numbers, got list of "
                                r"dtype object"),
    (np.zeros((0, 4)), r"an array of 0 x 4 pixels is empty or too large"),
    (3.0, r"expected a 2-D array \(rows, columns\), got 0-D of shape \(\)"),
])
def test_not_a_map_array(open_spy, value, message):
    for config, key in ((base(value), "optics.aperture.file"),
                        (base(transmission(), {"file": value}), "aberrations.opd_map.file")):
        with pytest.raises(psfsim.ConfigError, match="^<dict>: " + key.replace(".", r"\.") +
                           ": " + message):
            psfsim.Set(config, backend="cpu")
    assert open_spy == []


def test_file_checks_name_the_key(open_spy):
    """The file path's checks, with "<array>" for the path, the dict's name
    and key path; the library opens nothing (each open fails)."""
    t = transmission()
    bad = t.copy()
    bad[3, 7] = 1.5
    with pytest.raises(psfsim.ConfigError) as e:
        psfsim.Set(base(bad), backend="cpu")
    assert str(e.value) == ("<dict>: optics.aperture.file: <array>: transmission 1.5 at row 3, "
                            "column 7 is outside [0, 1] (row 0 is the first stored row)")
    with pytest.raises(psfsim.ConfigError) as e:
        psfsim.Set(base(np.full((AR, AC), np.nan)), backend="cpu", name="m")
    assert str(e.value) == ("m: optics.aperture.file: <array>: every transmission of the map is "
                            "0 (NaN and BLANK pixels read as 0): the aperture is closed")
    o = opd()
    o[1, 0] = np.inf
    with pytest.raises(psfsim.ConfigError) as e:
        psfsim.Set(base(t, dict(OPD_KEYS, file=o)), backend="cpu")
    assert str(e.value) == ("<dict>: aberrations.opd_map.file: <array>: OPD value inf at row 1, "
                            "column 0 is not finite (times scale 0.5)")
    with pytest.raises(psfsim.ConfigError) as e:
        psfsim.Set(base(t, dict(OPD_KEYS, file=np.zeros((OR, OC)))), backend="cpu")
    assert str(e.value).startswith("<dict>: aberrations.opd_map.file: <array>: every OPD value "
                                   "of the map is 0")
    small = dict(OPD_KEYS, file=opd()[:20, :20])  # 0.6 m: less than D
    with pytest.raises(psfsim.ConfigError) as e:
        psfsim.Set(base(t, small), backend="cpu")
    assert str(e.value).startswith("<dict>: aberrations.opd_map.pixel_scale_m: <array>: the map "
                                   "covers 0.6 m x 0.6 m (20 x 20 pixels of 0.03 m")
    circ = base(t)
    circ["optics"]["aperture"]["shape"] = "circular"
    with pytest.raises(psfsim.ConfigError) as e:
        psfsim.Set(circ, backend="cpu")
    assert str(e.value) == ('<dict>: optics.aperture.file: only used with shape = "file" '
                            '(shape is "circular")')
    assert len(open_spy) == 6
