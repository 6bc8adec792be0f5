# SPDX-License-Identifier: BSD-3-Clause
"""The package against misuse (issue 26): two threads on one Set, indices
ctypes would wrap, batches of no images, NUL characters, a dict's errors
named by its keys, Batch.params of compute()'s type, and the library's
header with the command's EEFIELD. Run by ctest (test_python)."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import psfsim

BIN = os.environ.get("PSFSIM_BIN")

SMALL = {"name": "small", "optics": {"wavelength_nm": 550.0,
                                     "aperture": {"diameter_m": 1.0, "obscuration": 0.2}},
         "sampling": {"pupil_samples": 32},
         "aberrations": {"zernike": [(11, 0.05)]},
         "sweep": {"defocus": [-0.2, 0.0, 0.2, 0.4]}}

MANY = dict(SMALL, sweep={"defocus": [round(0.001 * i, 3) for i in range(256)]})


def test_second_call_is_busy():
    """While a compute runs (here: inside its progress callback), every
    other call on the Set, from another thread or from the callback,
    raises BusyError; the library refuses it too (PSFSIM_ERR_BUSY) when
    the Python lock is bypassed; afterwards the Set is free."""
    with psfsim.Set(MANY, backend="cpu", threads=4) as s:  # batches of 64 on any machine
        ref, _ = s.compute()
        seen = {}

        def others(tag):
            calls = {"compute": lambda: s.compute(0, 1), "params": lambda: s.params(0, 1),
                     "zernike": lambda: s.zernike(0, 1), "decision": lambda: s.decision,
                     "close": s.close,
                     "header_cards": lambda: s.header_cards(0, {"strehl": 1.0,
                                                               "axial_intensity": 1.0,
                                                               "backend": "cpu"})}
            for name, call in calls.items():
                try:
                    call()
                    seen[tag, name] = "ran"
                except psfsim.BusyError as e:
                    seen[tag, name] = str(e)
            # the library's own flag, under the package's lock
            out = np.empty((1, 64, 64), dtype=np.float32)
            err = psfsim.ctypes.create_string_buffer(512)
            seen[tag, "C"] = psfsim._lib.lib.psfsim_compute(
                s._h, 0, 1, out.ctypes.data_as(psfsim.ctypes.POINTER(psfsim.ctypes.c_float)),
                out.size, None, err, 512)

        def progress(done, total):
            if done == 64:
                t = threading.Thread(target=others, args=("thread",))
                t.start()
                t.join()
                others("callback")
            return False

        images, _ = s.compute(progress=progress)
        np.testing.assert_array_equal(images, ref)  # the refused calls did nothing
        for tag in ("thread", "callback"):
            for name in ("compute", "params", "zernike", "decision", "close", "header_cards"):
                assert seen[tag, name] == (
                    "psfsim.Set.%s: the Set is busy with another call (from another thread, or "
                    "from a progress callback): a Set takes one call at a time; open one Set "
                    "per thread" % name), (tag, name)
            assert seen[tag, "C"] == 9  # PSFSIM_ERR_BUSY
        assert psfsim.BusyError.__mro__[1] is psfsim.Error
        # free again
        assert s.compute(0, 1)[0].shape == (1, 64, 64) and len(s.params(0, 2)) == 2


def test_threads_racing_on_one_set():
    """Four threads computing one Set, unsynchronised (the interpreter died,
    exit 139, before the busy flag): each call computes right or raises
    BusyError. In a child process, so that a crash fails the test."""
    code = r"""
import threading, numpy as np, psfsim, sys
cfg = %r
s = psfsim.Set(cfg, backend="cpu")
ref, _ = s.compute()
counts = {"ok": 0, "busy": 0, "bad": 0}
lock = threading.Lock()
def work():
    for _ in range(30):
        try:
            img, _ = s.compute()
            key = "ok" if np.array_equal(img, ref) else "bad"
        except psfsim.BusyError:
            key = "busy"
        with lock:
            counts[key] += 1
ts = [threading.Thread(target=work) for _ in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
print(counts["ok"], counts["busy"], counts["bad"])
""" % (MANY,)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=os.environ, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    ok, busy, bad = map(int, r.stdout.split())
    assert ok + busy == 120 and bad == 0 and ok >= 1


def test_ranges_checked_before_ctypes():
    with psfsim.Set(SMALL, backend="cpu") as s:
        for k in (2**64, 2**64 + 1, 2**63, -1, 5):
            with pytest.raises(psfsim.RangeError,
                               match=r"^first: %d is not an image index of the set of 4 \(0..3\)$"
                               % k) as e:
                s.compute(k, 1)
            assert isinstance(e.value, ValueError) and isinstance(e.value, IndexError)
        with pytest.raises(ValueError, match=r"^count: images 1..18446744073709551616 \(first 1, "
                                             r"count 18446744073709551616\) are not in the set "
                                             r"of 4 \(0..3\)$"):
            s.compute(1, 2**64)
        with pytest.raises(ValueError, match=r"^count: images 0..-2 \(first 0, count -1\)"):
            s.params(0, -1)
        with pytest.raises(ValueError, match="^first: 18446744073709551617 "):
            s.zernike(2**64 + 1, 1)
        with pytest.raises(ValueError, match="^first: 18446744073709551617 "):
            s.header_cards(2**64 + 1, {"strehl": 1.0, "axial_intensity": 1.0, "backend": "cpu"})
        with pytest.raises(TypeError, match="^first: expected an integer, got float$"):
            s.compute(1.0, 1)
        with pytest.raises(TypeError, match="^count: expected an integer, got str$"):
            s.compute(0, "1")
        # NumPy integers are integers; an empty range at the end is fine
        img, _ = s.compute(np.int64(3), np.uint8(1))
        assert img.shape == (1, 64, 64)
        assert s.compute(4, 0)[0].shape == (0, 64, 64)
        with pytest.raises(psfsim.ArgumentError, match=r"^threads: expected 0 \(one per CPU\) "
                                                       r"or 1..1024 \(got -5\)$"):
            psfsim.Set(SMALL, threads=-5)
        with pytest.raises(psfsim.ArgumentError, match=r"\(got 1099511627776\)$"):
            psfsim.Set(SMALL, threads=2**40)  # not wrapped into a C int


def test_batches_size():
    with psfsim.Set(SMALL, backend="cpu") as s:
        for size in (0, -1):
            with pytest.raises(ValueError, match=r"^size: images per batch must be 1 or more "
                                                 r"\(got %d\)$" % size):
                s.batches(size)
        with pytest.raises(TypeError, match="^size: expected an integer, got float$"):
            s.batches(2.5)
        assert [b.first for b in s.batches(3)] == [0, 3]


def test_nul_refused():
    with pytest.raises(ValueError, match=r"^config: contains a NUL character"):
        psfsim.Set("configs/defocus.cfg\0ignored")
    with pytest.raises(ValueError, match=r"^config: contains a NUL character"):
        psfsim.Set('name = "x";\n\0optics: { wavelength_nm = 550.0; };\n')
    with pytest.raises(ValueError, match=r"^config: contains a NUL character"):
        psfsim.Set(b'name = "x";\n\0')
    with pytest.raises(ValueError, match=r"^name: a config string cannot hold a NUL character$"):
        psfsim.Set(dict(SMALL, name="a\0b"))
    with pytest.raises(ValueError, match=r"^base_dir: contains a NUL character$"):
        psfsim.Set(SMALL, base_dir="/\0x")


def test_batch_params_as_compute():
    """Batch.params is what compute() returns as params (a DataFrame when
    pandas is installed), with the same values."""
    _, params = psfsim.compute(SMALL, backend="cpu")
    with psfsim.Set(SMALL, backend="cpu") as s:
        batches = list(s.batches(3))
        assert [type(b.params) for b in batches] == [type(params)] * 2
        try:
            import pandas
        except ImportError:
            assert isinstance(params, np.ndarray)
            return
        assert isinstance(params, pandas.DataFrame)
        joined = pandas.concat([b.params for b in batches])
        pandas.testing.assert_frame_equal(joined, params)
        assert isinstance(next(iter(s.batches(2, frame=False))).params, np.ndarray)


def test_dict_errors_name_keys():
    """A dict's config errors name its key paths, not lines of the text
    made from it, which the user never saw."""
    bad = dict(SMALL, optics={"wavelength_nm": 550.0,
                              "aperture": {"diameter_m": -1.0, "obscuration": 0.2}})
    with pytest.raises(psfsim.ConfigError) as e:
        psfsim.Set(bad)
    assert str(e.value).startswith("<dict>: optics.aperture.diameter_m: ")
    typo = dict(SMALL, optics={"wavelength_nm": 550.0, "aperture": {"diamter_m": 1.0}})
    with pytest.raises(psfsim.ConfigError) as e:
        psfsim.Set(typo, name="mine")
    assert str(e.value).startswith("mine: optics.aperture.diamter_m: unknown key")
    # two settings: the other one's line is its key path too
    both = dict(SMALL, optics={"wavelengths_nm": [500.0, 600.0], "aperture": {"diameter_m": 1.0}},
                sweep={"wavelength_nm": [500.0]})
    with pytest.raises(psfsim.ConfigError) as e:
        psfsim.Set(both)
    msg = str(e.value)
    assert msg.startswith("<dict>: ") and "<dict>:" + "1" not in msg
    assert not any(("<dict>:%d" % n) in msg or ("line %d" % n) in msg for n in range(1, 30))
    # the paths of the text's lines
    text, paths = psfsim.config_text_paths({"a": 1, "g": {"b": [1, 2], "h": {"c": "x"}}})
    assert text == 'a = 1;\ng = {\n  b = [1, 2];\n  h = {\n    c = "x";\n  };\n};\n'
    assert paths == ["a", "g", "g.b", "g.h", "g.h.c", "g.h", "g"]


PUPIL = ('name = "pup";\n'
         'optics: { wavelength_nm = 550.0; f_number = 10.0;\n'
         '  aperture: { diameter_m = 1.0; obscuration = 0.2; }; };\n'
         'sampling: { pupil_samples = 32; };\n'
         'normalization = "pupil";\n'
         'output: { npix = 24; pixel_scale = 0.5; orientation = "%s";\n'
         '  fits: { enabled = true; }; png: { enabled = false; }; };\n'
         'sweep: { defocus = [0.0, 0.3]; };\n')


@pytest.mark.skipif(not BIN, reason="PSFSIM_BIN (the psfsim command) not given")
@pytest.mark.parametrize("orientation", ["psfsim", "poppy"])
def test_hdulist_has_eefield(tmp_path, orientation):
    """Set.hdulist's header is the command's file's (HISTORY aside),
    EEFIELD included (normalization "pupil": the image's sum, bit for bit
    in either orientation)."""
    fits = pytest.importorskip("astropy.io.fits")
    cfg = tmp_path / "pup.cfg"
    cfg.write_text(PUPIL % orientation)
    subprocess.run([BIN, "-c", str(cfg), "-o", str(tmp_path / "out"), "-q", "--backend", "cpu"],
                   check=True)
    with psfsim.Set(str(cfg), backend="cpu") as s:
        images, metrics = s.compute()
        for k in range(s.count):
            mine = s.hdulist(k, images[k], metrics[k])[0].header
            with fits.open(str(tmp_path / "out" / ("pup_%d.fits" % k))) as f:
                theirs = f[0].header
                np.testing.assert_array_equal(f[0].data, images[k])
            own = {"SIMPLE", "BITPIX", "NAXIS", "NAXIS1", "NAXIS2", "EXTEND", "HISTORY", "COMMENT"}
            assert set(mine) - own == set(theirs) - own
            assert 0.5 < theirs["EEFIELD"] < 1.0
            for key in set(theirs) - own:
                if key != "DATE" or "SOURCE_DATE_EPOCH" in os.environ:  # else: opened apart
                    assert mine[key] == theirs[key], key
        # without the image: no EEFIELD (psfsim_fits_header cannot know the sum)
        keys = [c[0] for c in s.header_cards(0, metrics[0])]
        assert "EEFIELD" not in keys and "STREHL" in keys
