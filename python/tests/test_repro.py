# SPDX-License-Identifier: BSD-3-Clause
"""Reproducibility (issue 26, README "Reproducibility"): image k of a
seeded random set is the same bytes whatever the set's size and the call
that computes it (the whole set, one image, the last few), so whatever
the batch it lands in and the size of that batch: on the CPU and, where
a GPU is, on the GPU, for an FFT set, an MFT set and a set with the
detector stage (its cuFFT paths, its separable path fused with the
intensity, and unfused for images of several wavelengths), and whatever
the CPU's threads (issue 27). Run by ctest (test_python); the GPU cases
skip without a GPU."""
import os
import signal
import time

import numpy as np
import pytest

import psfsim


def config(count, kind):
    cfg = {"name": "repro",
           "optics": {"wavelength_nm": 600.0, "f_number": 12.0,
                      "aperture": {"diameter_m": 1.0, "obscuration": 0.2}},
           "sampling": {"pupil_samples": 48, "padding": 2.0},
           "sweep": {"random": {"count": count, "seed": 7,
                                "zernike": [(4, "normal", 0.05), (7, "uniform", 0.02)],
                                "wavelength_nm": [550.0, 650.0]}}}
    if kind == "mft":
        cfg["output"] = {"npix": 50, "pixel_scale": 0.37}
    if kind.startswith("detector"):  # N = 96: the cuFFT paths; 128: the separable one
        cfg["detector"] = {"oversample": 2, "jitter_lambda_d": 0.1,
                           "charge_diffusion_px": 0.2}
    if kind == "detector128":
        cfg["sampling"]["pupil_samples"] = 64
    if kind == "detector-broadband":  # several components an image: unfused
        cfg["sampling"]["pupil_samples"] = 64
        cfg["optics"]["wavelengths_nm"] = [550.0, 600.0, 650.0]
        del cfg["optics"]["wavelength_nm"]
        del cfg["sweep"]["random"]["wavelength_nm"]
    return cfg


_GPU = []


def gpu_missing():
    """Why the GPU cannot compute here (its lanes start at the first
    compute), or None."""
    if not _GPU:
        try:
            with psfsim.Set(config(1, "fft"), backend="gpu") as s:
                s.compute(0, 1)
            _GPU.append(None)
        except psfsim.BackendError as e:
            _GPU.append(str(e))
    return _GPU[0]


def open_set(count, kind, backend):
    if backend == "gpu" and gpu_missing():
        pytest.skip("no GPU here: %s" % gpu_missing())
    return psfsim.Set(config(count, kind), backend=backend)


@pytest.mark.parametrize("backend", ["cpu", "gpu"])
@pytest.mark.parametrize("kind", ["fft", "mft", "detector", "detector128", "detector-broadband"])
def test_image_is_its_own_job(backend, kind):
    big_count = 2500 if backend == "gpu" else 300  # past the GPU's batch of 1024
    with open_set(big_count, kind, backend) as big, open_set(40, kind, backend) as small:
        whole, _ = big.compute()
        few, _ = small.compute()
        ks = [0, 7, 39]
        singles = np.stack([big.compute(k, 1)[0][0] for k in ks])
        tail, _ = big.compute(big_count - 10, 10)
        assert np.array_equal(whole[:40], few), "a set of 40 against a larger set"
        assert np.array_equal(whole[ks], singles), "one image a call against the whole set"
        assert np.array_equal(whole[-10:], tail), "the last images alone against the whole set"
        assert float(whole.max()) > 0


@pytest.mark.parametrize("hand_out", [None, "share", "shuffle"])
@pytest.mark.parametrize("kind", ["fft", "detector-broadband"])
def test_same_bytes_whatever_the_threads(kind, hand_out, monkeypatch):
    """The CPU's image-parallel lanes (cpu/backend.c's pool: threads kept
    from call to call, each taking the next image not taken) give the
    same bytes at 1, 2, 3 and 8 threads, for a set whose images switch
    pupils (two drawn wavelengths; three components an image), and the
    same again from the kept threads at a second call; and so under the
    test hook's other hand-outs (PSFSIM_TEST_CPU_HANDOUT: a fixed share
    of the images each, the share over a shuffled order)."""
    if hand_out:
        monkeypatch.setenv("PSFSIM_TEST_CPU_HANDOUT", hand_out)
    else:
        monkeypatch.delenv("PSFSIM_TEST_CPU_HANDOUT", raising=False)
    ref = None
    for t in (1, 2, 3, 8):
        with psfsim.Set(config(300, kind), backend="cpu", threads=t) as s:
            first, _ = s.compute()
            again, _ = s.compute(5, 200)
        if ref is None:
            ref = first
        assert np.array_equal(first, ref), "threads %d against one thread" % t
        assert np.array_equal(again, ref[5:205]), "threads %d, a second call" % t


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_fork_child_computes():
    """A fork's child has none of its parent's threads: a Set whose CPU
    threads started in the parent computes in the child (its own threads
    started there) the parent's bytes, and does not wait for the parent's
    threads."""
    with psfsim.Set(config(200, "fft"), backend="cpu", threads=3) as s:
        ref, _ = s.compute()
        rd, wr = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: compute, say whether the bytes agree, leave at once
            ok = b"0"
            try:
                ok = b"1" if np.array_equal(s.compute()[0], ref) else b"2"
            finally:
                os.write(wr, ok)
                os._exit(0)
        os.close(wr)
        deadline = time.monotonic() + 120
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail("the fork's child did not finish its compute in 120 s")
            time.sleep(0.05)
        got = os.read(rd, 1)
        os.close(rd)
        assert got == b"1", "the child's images %s" % ("differ" if got == b"2" else "failed")
