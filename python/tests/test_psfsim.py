# SPDX-License-Identifier: BSD-3-Clause
"""The psfsim package (python/psfsim): its images equal the psfsim command's
FITS files for every shipped config, a dict becomes the same set as its
config file, errors carry the library's messages, a Set iterated in batches
equals compute() and keeps memory flat.

Run by ctest (test_python) and scripts/test.sh with PSFSIM_LIBRARY (the
build's libpsfsim.so.0), PSFSIM_BIN (its psfsim) and PSFSIM_SOURCE_DIR."""
import glob
import math
import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

import psfsim

SRC = os.environ.get("PSFSIM_SOURCE_DIR",
                     os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BIN = os.environ.get("PSFSIM_BIN")
CONFIGS = sorted(glob.glob(os.path.join(SRC, "configs", "*.cfg")))


def read_fits(path):
    """The primary HDU of a float32 FITS file: (header dict, image)."""
    with open(path, "rb") as f:
        data = f.read()
    header, pos = {}, 0
    while True:
        card = data[pos:pos + 80].decode("ascii")
        pos += 80
        key = card[:8].strip()
        if key == "END":
            break
        if card[8:10] == "= ":
            value = card[10:].split(" /")[0].strip()
            if value.startswith("'"):
                value = value.strip("'").rstrip()
            elif value in ("T", "F"):
                value = value == "T"
            else:
                value = float(value) if any(c in value for c in ".EeD") else int(value)
            header[key] = value
    pos = (pos + 2879) // 2880 * 2880
    assert header["BITPIX"] == -32
    n1, n2 = header["NAXIS1"], header["NAXIS2"]
    img = np.frombuffer(data, dtype=">f4", count=n1 * n2, offset=pos).reshape(n2, n1)
    return header, img.astype(np.float32)


# The file's own keywords (read_fits keeps the last of repeated ones), not
# psfsim_fits_header's: its structure, and HISTORY, which only the command writes.
FITS_OWN = {"SIMPLE", "BITPIX", "NAXIS", "NAXIS1", "NAXIS2", "EXTEND", "HISTORY", "COMMENT",
            "END"}


def with_fits(text):
    """The config text with FITS output on (one file per image)."""
    if "fits:" in text:
        return text
    assert "output: {" in text
    return text.replace("output: {", "output: { fits: { enabled = true; };", 1)


@pytest.mark.skipif(not BIN, reason="PSFSIM_BIN (the psfsim command) not given")
@pytest.mark.parametrize("config", CONFIGS, ids=os.path.basename)
def test_images_equal_command_fits(config, tmp_path):
    name = os.path.basename(config)
    cfg = tmp_path / name
    cfg.write_text(with_fits(open(config).read()))
    subprocess.run([BIN, "-c", str(cfg), "-o", str(tmp_path / "out"), "-q", "--backend", "cpu"],
                   check=True, cwd=os.path.dirname(config))
    with psfsim.Set(config, backend="cpu") as s:
        images, metrics = s.compute()
        assert images.shape == s.shape and images.dtype == np.float32
        digits = len(str(s.count - 1))
        for k in range(s.count):
            path = tmp_path / "out" / ("%s_%0*d.fits" % (s.name, digits, k))
            header, ref = read_fits(str(path))
            scale = float(np.abs(ref).max())
            np.testing.assert_allclose(images[k], ref, rtol=0, atol=scale * 2.0**-24)
            # the header, as psfsim_fits_header_image gives it, is the file's:
            # the same keywords (but the file's structure and HISTORY), the same values
            cards = s.header_cards(k, metrics[k], images[k])
            assert {c[0] for c in cards} == set(header) - FITS_OWN, config
            for key, value, _ in cards:
                if key == "CFGHASH":  # the command ran a copy with FITS on: another config
                    assert re.fullmatch("[0-9a-f]{16}", value) and key in header, key
                elif isinstance(value, float):
                    assert math.isclose(header[key], value, rel_tol=1e-12, abs_tol=1e-300), key
                else:
                    assert header[key] == value, key


RANDOM = ('name = "r";\n'
          'optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };\n'
          'sampling: { pupil_samples = 32; };\n'
          'sweep: { defocus = [-0.2, 0.2];\n'
          '  random: { count = 3; seed = 7; zernike = ((5, "normal", 0.1)); }; };\n')


def test_random_set_labels(tmp_path):
    """A random set's params carry the manifest's draw and seed; its
    zernike() totals are the manifest's z<j> labels."""
    with psfsim.Set(RANDOM, backend="cpu") as s:
        p = s.params(frame=False)
        np.testing.assert_array_equal(p["draw"], [0, 1, 2, 0, 1, 2])
        assert (p["seed"] == 7).all()
        total = s.zernike()
        if not BIN:
            return
        cfg = tmp_path / "r.cfg"
        cfg.write_text(RANDOM)
        subprocess.run([BIN, "-c", str(cfg), "-o", str(tmp_path / "out"), "-q", "--backend",
                        "cpu"], check=True)
        with open(tmp_path / "out" / "r_manifest.csv") as f:
            rows = [line.rstrip("\n").split(",") for line in f]
        head = rows[0]
        for k, row in enumerate(rows[1:]):
            assert int(row[head.index("draw")]) == p["draw"][k]
            assert int(row[head.index("seed")]) == p["seed"][k]
            for col in (c for c in head if c.startswith("z") and c[1:].isdigit()):
                assert float(row[head.index(col)]) == total[k, s.term_j.index(int(col[1:]))]


HST = {
    "name": "defocus",
    "optics": {"wavelength_nm": 550.0, "f_number": 24.0,
               "aperture": {"shape": "circular", "diameter_m": 2.4, "obscuration": 0.33,
                            "spiders": {"count": 4, "width_m": 0.0264, "angle_deg": 45.0}}},
    "sampling": {"pupil_samples": 256, "padding": 2.0},
    "sweep": {"focus_shift_um": [-2000.0, -1500.0, -1000.0, -500.0, 0.0, 500.0, 1000.0, 1500.0,
                                 2000.0]},
    "output": {"png": {"bits": 16, "stretch": "log", "dynamic_range": 1.0e5},
               "fits": {"enabled": True}},
}


def test_dict_round_trip():
    """configs/defocus.cfg written as a dict: the same set, the same images."""
    text = psfsim.config_text(HST)
    assert 'name = "defocus";' in text and "enabled = true;" in text
    assert "focus_shift_um = [-2000.0, -1500.0" in text
    path = os.path.join(SRC, "configs", "defocus.cfg")
    with psfsim.Set(HST, backend="cpu") as a, psfsim.Set(path, backend="cpu") as b:
        assert a.shape == b.shape and a.info == b.info
        pa, pb = a.params(frame=False), b.params(frame=False)
        assert pa.dtype == pb.dtype
        for f in pa.dtype.names:
            np.testing.assert_array_equal(pa[f], pb[f])
        np.testing.assert_array_equal(a.compute(0, 2)[0], b.compute(0, 2)[0])
    # the values come back as written: types kept (a Zernike term's j stays an integer)
    d = {"name": "t", "optics": {"wavelength_nm": 600, "aperture": {"diameter_m": 1.0}},
         "sampling": {"pupil_samples": np.int64(32)},
         "aberrations": {"zernike": [(4, 0.1), (11, np.float32(0.05))], "units": "waves"},
         "sweep": {"defocus": [0, 0.25, 0.5], "zernike": [(6, [0.0, 0.1])]}}
    with psfsim.Set(d, backend="cpu") as s:
        assert s.count == 6 and s.swept_j == [6] and s.term_j == [4, 11, 6]
        p = s.params(frame=False)
        np.testing.assert_array_equal(np.unique(p["defocus"]), [0, 0.25, 0.5])
        np.testing.assert_array_equal(np.unique(p["z6"]), [0.0, 0.1])
        assert p["wavelength_nm"][0] == 600.0
        assert abs(s.zernike()[0, 1] - 0.05) < 1e-8
    assert psfsim.config_text({"s": 'a"b\\c\n'}) == 's = "a\\"b\\\\c\\n";\n'
    assert psfsim.config_text({"big": 2**40, "f": 1e-5}) == "big = 1099511627776L;\nf = 1e-05;\n"
    with pytest.raises(ValueError, match="not a finite number"):
        psfsim.config_text({"x": float("nan")})
    with pytest.raises(ValueError, match="not a config key"):
        psfsim.config_text({"bad key": 1})


def test_errors_carry_messages(tmp_path):
    with pytest.raises(psfsim.ConfigError) as e:
        psfsim.Set('name = "x";\noptics: { wavelenght_nm = 550.0; };\n', name="typo.cfg")
    assert str(e.value) == ("typo.cfg:2: optics.wavelenght_nm: unknown key (did you mean "
                            "optics.wavelength_nm?)")
    assert e.value.status == "config"
    bad = tmp_path / "bad.cfg"
    bad.write_text(with_fits(open(CONFIGS[0]).read()).replace("padding = 2.0", "padding = 0.5"))
    if "padding = 0.5" in bad.read_text():
        with pytest.raises(psfsim.ConfigError, match=r"bad.cfg:\d+: sampling.padding: must be >= 1"):
            psfsim.Set(bad)
    d = dict(HST, sampling={"pupil_samples": 4})
    with pytest.raises(psfsim.ConfigError, match=r"^<dict>: sampling.pupil_samples: "):
        psfsim.compute(d)
    with pytest.raises(psfsim.ArgumentError, match="backend: expected auto, cpu or gpu"):
        psfsim.Set(HST, backend="fast")
    with pytest.raises(psfsim.ConfigError, match="cannot read: No such file"):
        psfsim.Set("/nonexistent.cfg")
    with psfsim.Set(HST, backend="cpu") as s:
        with pytest.raises(psfsim.RangeError, match=r"images 8..9 \(first 8, count 2\)"):
            s.compute(8, 2)
        with pytest.raises(ValueError, match="C-contiguous"):
            s.compute(0, 1, out=np.zeros((1, 512, 512), dtype=np.float64).astype(np.float32).T)
        with pytest.raises(psfsim.ArgumentError, match="the buffer holds"):
            s.compute(0, 2, out=np.zeros((1, 512, 512), dtype=np.float32))


SWEEP = {"name": "many", "optics": {"wavelength_nm": 700.0,
                                    "aperture": {"diameter_m": 1.0, "obscuration": 0.2}},
         "sampling": {"pupil_samples": 32},
         "sweep": {"defocus": [round(-1 + 0.001 * i, 3) for i in range(2000)]}}


def test_batches_equal_compute():
    images, params = psfsim.compute(SWEEP, backend="cpu", frame=False)
    assert images.shape == (2000, 64, 64)
    assert params["backend"][0] == "cpu" and np.all(params["strehl"] > 0)
    with psfsim.Set(SWEEP, backend="cpu") as s:
        seen = 0
        for b in s.batches(300):
            assert b.first == seen
            np.testing.assert_array_equal(b.images, images[b.first:b.first + len(b.images)])
            np.testing.assert_array_equal(b.params["strehl"],
                                          params["strehl"][b.first:b.first + len(b.images)])
            seen += len(b.images)
        assert seen == 2000
        # into a caller's buffer, without a copy
        out = np.empty((10, 64, 64), dtype=np.float32)
        got, _ = s.compute(100, 10, out=out)
        assert got is out
        np.testing.assert_array_equal(out, images[100:110])
        levels, _ = s.compute(0, 3, dtype=np.uint16)
        assert levels.dtype == np.uint16 and levels.max() == 65535


def test_memory_flat():
    """A set of 20,000 64x64 images (330 MB of float32) in batches of 200:
    the peak memory grows by a few batches, not by the set."""
    code = r"""
import resource, sys, psfsim
cfg = {"name": "flat", "optics": {"wavelength_nm": 700.0, "aperture": {"diameter_m": 1.0}},
       "sampling": {"pupil_samples": 32},
       "sweep": {"defocus": [0.0001 * i for i in range(100)],
                 "zernike": [(5, [0.001 * i for i in range(200)])]}}
s = psfsim.Set(cfg, backend="cpu")
assert s.count == 20000
it = s.batches(200)
next(it)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
n = 200 + sum(len(b.images) for b in it)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(n, before, after)
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, env=os.environ).stdout.split()
    n, before, after = int(out[0]), int(out[1]), int(out[2])
    assert n == 20000
    assert after - before < 40 * 1024, "peak grew by %d kB iterating the set" % (after - before)


def test_progress_cancel_and_gil():
    # 4 threads: the CPU's batch of 128 on any machine, two slots of 64 (16 images a
    # thread each)
    with psfsim.Set(SWEEP, backend="cpu", threads=4) as s:
        calls = []

        def progress(done, total):
            calls.append(done)
            return done >= 128

        with pytest.raises(psfsim.Cancelled, match="cancelled after 128 of 2000 image"):
            s.compute(progress=progress)
        assert calls == [64, 128]
        # the library computes with the GIL released: a Python thread runs meanwhile
        ticks = []
        stop = threading.Event()

        def tick():
            while not stop.is_set():
                ticks.append(1)
                stop.wait(0.001)

        t = threading.Thread(target=tick)
        t.start()
        s.compute()
        stop.set()
        t.join()
        assert len(ticks) > 3
        # cancel from another thread
        big = dict(SWEEP, sampling={"pupil_samples": 128})
        with psfsim.Set(big, backend="cpu", threads=2) as b:  # ~0.5 s or more anywhere
            threading.Timer(0.05, b.cancel).start()
            with pytest.raises(psfsim.Cancelled):
                b.compute()


def test_cpu_batch_grows_with_threads():
    """A CPU set's batch is 64 images, or 32 per thread with more than 2
    threads (lib/lanes.c, cpu_batch: the threads' wait for a batch's last
    image spread over more images), in two slots of half of it, a progress
    call after each (lib/compute.c, lane_slots: one slot's jobs are made
    while the other computes)."""
    for threads, batch in ((1, 32), (4, 64), (8, 128), (12, 192)):
        with psfsim.Set(SWEEP, backend="cpu", threads=threads) as s:
            calls = []
            s.compute(0, 400, progress=lambda done, total: calls.append(done))
            assert calls == list(range(batch, 400, batch)) + [400], threads


def test_decision_and_frames():
    with psfsim.Set(HST, backend="auto") as s:
        d = s.decision
        assert d["backend"] in ("cpu", "gpu") and d["reason"].startswith("backend ")
    try:
        import pandas  # noqa: F401
    except ImportError:
        pytest.skip("pandas not installed")
    _, frame = psfsim.compute(SWEEP, backend="cpu")
    assert list(frame.index[:3]) == [0, 1, 2] and "strehl" in frame.columns


def test_hdulist():
    fits = pytest.importorskip("astropy.io.fits")
    with psfsim.Set(HST, backend="cpu") as s:
        images, metrics = s.compute(4, 1)
        hdul = s.hdulist(4, images[0], metrics[0])
        assert isinstance(hdul, fits.HDUList)
        h = hdul[0].header
        assert h["NPIX"] == 512 and h["BACKEND"] == "cpu" and h["WAVELEN"] == 550e-9
        assert h["STREHL"] == metrics[0]["strehl"]


def test_example_runs():
    """examples/python/through_focus.py: psfsim equals its NumPy PSFs (and
    prysm's, when installed) to float32 rounding."""
    example = os.path.join(SRC, "examples", "python", "through_focus.py")
    out = subprocess.run([sys.executable, example], check=True, capture_output=True, text=True,
                         env=os.environ).stdout
    assert "through focus: 5 images of 256x256" in out and "random aberrations: 5" in out


def test_messages_to_logging(caplog):
    """What the command would log goes to the logger "psfsim" (here the
    decision's probe, or nothing on a machine without a GPU)."""
    import logging
    with caplog.at_level(logging.DEBUG, logger="psfsim"):
        with psfsim.Set(SWEEP, backend="auto") as s:
            s.compute(0, 1)
    assert all(r.name == "psfsim" for r in caplog.records)
