#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A set of 256x256 PSFs (default 10,000) from Python against the library
itself, the command and other optics packages (bench/RESULTS.md):

  lib_*      bench/lib_bench.c (psfsim_lib_bench, --lib-bench): the library
             from C in a process of its own. lib_cold: open, a fresh buffer
             (allocated as NumPy allocates), compute with metrics, the
             parameters table, close (what psfsim.compute does);
             lib_fresh: the backend started, a fresh buffer; lib_touched:
             the backend started, a buffer written once before
  python_*   the same from Python: python_cold is psfsim.compute(config)
             in a process of its own (the import not counted;
             python_import is it); python_fresh: Set.compute() on a
             started backend (it makes the fresh array); python_touched:
             Set.compute(out=out) into an array written once
  command    the psfsim command writing the set as one FITS cube to tmpfs
             (/dev/shm), PNG off: psfsim -c CFG -o DIR --force -q
  peers      prysm, POPPY and HCIPy (--peers: those importable) on the
             first --ref-count images, each from the same pupil arrays
             (psfsim's grid, binary edges) with its own propagation, after
             one warm-up image; the per-image time of the fastest of
             --peer-repeat rounds (default 3: a peer's time varies from
             round to round, 0.42-0.78 ms an image for prysm-CuPy on the
             H200) scaled to the set.
             --peer-backend cupy (or numpy,cupy: both, one row each)
             runs prysm and POPPY in their documented
             GPU modes (prysm: mathops' shims set to CuPy and 32-bit
             precision, as its docs advise for GPUs; POPPY: conf.use_cupy),
             each image brought back to host memory. Each
             peer's last image is checked against psfsim's (both summed to
             1): max |difference| / psfsim's peak within --agree.

Rows: what,backend,images,seconds,us_per_psf,psf_per_s; "# ratio" lines
give python / lib for each condition (the target: <= 1.1) and the fastest
peer / python_cold and / python_touched (the peers' times leave out their
set-up and first image; python_cold has psfsim's). --repeat N runs the
library's and Python's rows N times, alternately, and the ratios take each
row's fastest.
    bench/python_bench.py [--backend auto|cpu|gpu] [--count 10000]
        [--bin build/psfsim] [--lib-bench build/bench/psfsim_lib_bench]
        [--peers prysm,poppy,hcipy] [--peer-backend numpy|cupy|numpy,cupy]
        [--repeat N] [--ref-count 50] [--peer-repeat 3]
PSFSIM_LIBRARY names the libpsfsim to load (else the package's own)."""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.join(os.path.dirname(HERE), "python")
sys.path.insert(0, PYDIR)
import psfsim  # noqa: E402

WAVELENGTH_NM = 550.0
DIAMETER_M = 2.4
OBSCURATION = 0.33
PUPIL = 128   # samples across D
NPIX = 256    # image (= FFT, Q = 2)


def config(count):
    """count images of 256 x 256: 128 pupil samples, Q = 2, a defocus
    sweep times an astigmatism (Z5) sweep, an obscured circle (the HST's
    ratio, no spiders) with binary edges, so that a peer's disk of sample
    centres is the same pupil."""
    nd = 100
    nz = max(1, count // nd)
    return {"name": "pybench",
            "optics": {"wavelength_nm": WAVELENGTH_NM, "f_number": 24.0,
                       "aperture": {"diameter_m": DIAMETER_M, "obscuration": OBSCURATION,
                                    "edge": "binary"}},
            "sampling": {"pupil_samples": PUPIL, "padding": NPIX / PUPIL},
            "sweep": {"defocus": [round(-0.5 + i / nd, 4) for i in range(nd)],
                      "zernike": [(5, [round(0.001 * i, 4) for i in range(nz)])]},
            "output": {"png": {"enabled": False}, "fits": {"enabled": True, "cube": True}}}


ROWS = {}


def row(what, backend, n, seconds):
    ROWS[what] = min(seconds, ROWS.get(what, float("inf")))
    print("%s,%s,%d,%.4f,%.2f,%.0f" % (what, backend, n, seconds, 1e6 * seconds / n, n / seconds),
          flush=True)


def bench_lib(binary, path, backend):
    cmd = [binary, path] + ([backend] if backend else [])
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        what, be, n, s = line.split(",")[:4]
        row(what, be, int(n), float(s))


# psfsim.compute in a process of its own, as lib_cold is: the import timed
# apart, then exactly the call a user makes.
COLD = r"""
import json, sys, time
t0 = time.perf_counter()
import psfsim
t1 = time.perf_counter()
images, params = psfsim.compute(sys.argv[1], backend=sys.argv[2] or None, frame=False)
t2 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "cold": t2 - t1, "n": len(images),
                  "backend": str(params["backend"][0])}))
"""


def bench_python_cold(path, backend):
    env = dict(os.environ)
    env["PYTHONPATH"] = PYDIR + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", COLD, path, backend or ""], check=True,
                         capture_output=True, text=True, env=env).stdout
    r = json.loads(out.strip().splitlines()[-1])
    row("python_import", r["backend"], r["n"], r["import"])
    row("python_cold", r["backend"], r["n"], r["cold"])


def bench_python_warm(path, backend):
    with psfsim.Set(path, backend=backend) as s:
        s.compute(0, 1)  # starts the backend (plans, CUDA context)
        t0 = time.perf_counter()
        out, metrics = s.compute()  # a fresh array
        t1 = time.perf_counter()
        s.compute(out=out)
        t2 = time.perf_counter()
        be = metrics["backend"][0]
        row("python_fresh", be, s.count, t1 - t0)
        row("python_touched", be, s.count, t2 - t1)
        print("# decision: %s" % s.decision["reason"], flush=True)


def bench_command(path, backend, binary, count):
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    tmp = tempfile.mkdtemp(prefix="psfsim-pybench-", dir=base)
    try:
        cmd = [binary, "-c", path, "-o", os.path.join(tmp, "out"), "--force", "-q"]
        if backend:
            cmd += ["--backend", backend]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        row("command_fits_cube_tmpfs", backend or "config", count, time.perf_counter() - t0)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -- peers: the same pupil, their propagation --

def pupil_arrays():
    """psfsim's pupil on the 256 x 256 grid (design.md, "Sampling"): sample
    (i, j) at ((i - 128) dx, (j - 128) dx), dx = D/128; the obscured disk's
    sample centres (binary edges), the Noll Z4 and Z5 (RMS 1) on it."""
    dx = DIAMETER_M / PUPIL
    c = (np.arange(NPIX) - NPIX // 2) * dx
    x, y = np.meshgrid(c, c)
    rho = np.hypot(x, y) / (DIAMETER_M / 2)
    amp = ((rho <= 1) & (rho >= OBSCURATION)).astype(np.float64)
    z4 = np.sqrt(3) * (2 * rho**2 - 1) * amp
    z5 = np.sqrt(6) * rho**2 * np.sin(2 * np.arctan2(y, x)) * amp
    return dx, amp, z4, z5


CROP = PUPIL + 2  # the disk's samples, rho = 1 at +-PUPIL/2 included


def crop(*arrays):
    lo = NPIX // 2 - CROP // 2
    return [v[lo:lo + CROP, lo:lo + CROP] for v in arrays]


def peer_prysm(xp, p, dx, amp, z4, z5):
    from prysm.propagation import Wavefront
    amp_x, z4_x, z5_x = xp.asarray(amp), xp.asarray(z4), xp.asarray(z5)
    dx_mm = dx * 1e3

    def one(k):
        phase_nm = WAVELENGTH_NM * (p["defocus"][k] * z4_x + p["z5"][k] * z5_x)
        wf = Wavefront.from_amp_and_phase(amp_x, phase_nm, WAVELENGTH_NM / 1e3, dx_mm)
        img = wf.focus(efl=24.0 * DIAMETER_M * 1e3, Q=1).intensity.data  # 256: Q = 1 here
        return img.get() if hasattr(img, "get") else np.asarray(img)
    return one, (0, NPIX)


def peer_poppy(xp, p, dx, amp, z4, z5):
    import astropy.units as u
    import poppy
    # Cropped to the disk's 130 x 130 (axis at 65; rho = 1 at +-64): the MFT
    # onto 255 pixels puts the axis on pixel 127 (POPPY centres an odd
    # field on a pixel), compared with psfsim's pixels 1..255 (axis 128).
    a, w4, w5 = (xp.asarray(v) for v in crop(amp, z4, z5))  # (CuPy: its arrays)
    pixscale = WAVELENGTH_NM * 1e-9 / (2 * DIAMETER_M) * 180 / np.pi * 3600  # lambda/(2D)

    def one(k):
        opd = WAVELENGTH_NM * 1e-9 * (p["defocus"][k] * w4 + p["z5"][k] * w5)
        osys = poppy.OpticalSystem(npix=CROP, pupil_diameter=CROP * dx * u.m)
        osys.add_pupil(poppy.ArrayOpticalElement(transmission=a, opd=opd,
                                                 pixelscale=dx * u.m / u.pixel))
        osys.add_detector(pixelscale=pixscale, fov_pixels=NPIX - 1, oversample=1)
        img = osys.calc_psf(WAVELENGTH_NM * 1e-9 * u.m)[0].data
        return img.get() if hasattr(img, "get") else np.asarray(img)
    return one, (1, NPIX)


def peer_hcipy(xp, p, dx, amp, z4, z5):
    import hcipy
    # Grids centred on a sample (has_center), as psfsim's: pupil (i - 65) dx
    # over the disk's 130 x 130, focal (i - 128) lambda/(2D) radians at
    # focal length 1.
    a, w4, w5 = (v.ravel() for v in crop(amp, z4, z5))
    pg = hcipy.make_uniform_grid([CROP, CROP], CROP * dx, has_center=True)
    lam = WAVELENGTH_NM * 1e-9
    fg = hcipy.make_uniform_grid([NPIX, NPIX], NPIX * lam / (2 * DIAMETER_M), has_center=True)
    prop = hcipy.FraunhoferPropagator(pg, fg, focal_length=1)

    def one(k):
        phase = 2 * np.pi * (p["defocus"][k] * w4 + p["z5"][k] * w5)
        wf = hcipy.Wavefront(hcipy.Field(a * np.exp(1j * phase), pg), lam)
        return np.asarray(prop.forward(wf).power).reshape(NPIX, NPIX)
    return one, (0, NPIX)


PEERS = {"prysm": peer_prysm, "poppy": peer_poppy, "hcipy": peer_hcipy}


def set_gpu_mode(name):
    """The peers' documented GPU modes; returns the array module."""
    import cupy as cp
    if name == "prysm":  # prysm docs, "GPU and Exascale Computing"
        from cupyx.scipy import fft as cpfft, ndimage as cpndimage, special as cpspecial
        from prysm import mathops
        mathops.np._srcmodule = cp
        mathops.fft._srcmodule = cpfft
        mathops.ndimage._srcmodule = cpndimage
        mathops.special._srcmodule = cpspecial
        from prysm.conf import config as prysm_config
        prysm_config.precision = 32  # the docs' advice for GPUs
    elif name == "poppy":
        import poppy
        poppy.conf.use_cupy = True
        poppy.accel_math.update_math_settings()
        if not poppy.accel_math._USE_CUPY:
            raise ImportError("POPPY does not use CuPy here")
    else:
        raise ImportError("no GPU mode")
    return cp


def bench_peer(name, mode, ref, params, total, agree, repeat):
    try:
        xp = set_gpu_mode(name) if mode == "cupy" else np
        if mode != "cupy" and name == "poppy":
            import poppy
            poppy.conf.use_cupy = False
            poppy.accel_math.update_math_settings()
        one, (lo, hi) = PEERS[name](xp, params, *pupil_arrays())
        one(0)  # warm-up: plans, kernels
    except ImportError as e:
        print("# %s (%s): not available (%s): skipped" % (name, mode, e), flush=True)
        return
    except Exception as e:  # a peer that fails leaves the other rows
        print("# %s (%s): failed: %s: %s" % (name, mode, type(e).__name__, e), flush=True)
        return
    n = len(ref)
    per = math.inf
    for _ in range(repeat):  # the peer's best round: its figure at its most favourable
        t0 = time.perf_counter()
        for k in range(n):
            img = one(k)
        per = min(per, (time.perf_counter() - t0) / n)
    row("%s_%s" % (name, mode), "scaled_from_%d" % n, total, per * total)
    mine = ref[n - 1][lo:hi, lo:hi].astype(np.float64)
    mine /= mine.sum()
    theirs = img / img.sum()
    diff = np.abs(theirs - mine).max() / mine.max()
    print("# %s (%s) image %d against psfsim's: max |difference| / peak %.2e (bound %.0e): %s"
          % (name, mode, n - 1, diff, agree, "agrees" if diff <= agree else "DIFFERS"),
          flush=True)


def versions(peers):
    out = []
    for name in ["scipy", "cupy"] + [p for p in peers.split(",") if p]:
        try:
            out.append("%s %s" % (name, __import__(name).__version__))
        except Exception as e:  # absent, or failing to import: said
            out.append("%s (%s)" % (name, type(e).__name__))
    return ", ".join(out)


def ratios(peers_done):
    def r(a, b):
        if a in ROWS and b in ROWS:
            print("# ratio %s / %s: %.3f" % (a, b, ROWS[a] / ROWS[b]), flush=True)
    r("python_cold", "lib_cold")
    r("python_fresh", "lib_fresh")
    r("python_touched", "lib_touched")
    peers = [(ROWS[p], p) for p in peers_done if p in ROWS]
    for mine in ("python_cold", "python_fresh", "python_touched"):
        if peers and mine in ROWS:
            print("# ratio fastest peer (%s) / %s: %.1f" % (min(peers)[1], mine,
                                                          min(peers)[0] / ROWS[mine]), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default=None, help="auto, cpu or gpu (default: the config's)")
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--bin", default=shutil.which("psfsim"), help="the psfsim command")
    ap.add_argument("--lib-bench", default=None, help="psfsim_lib_bench (bench/lib_bench.c)")
    ap.add_argument("--repeat", type=int, default=1, help="cold runs of lib and python each")
    ap.add_argument("--ref-count", type=int, default=50, help="images for each peer")
    ap.add_argument("--peer-repeat", type=int, default=3,
                    help="rounds of --ref-count images per peer; its fastest round is reported")
    ap.add_argument("--peers", default="prysm,poppy,hcipy")
    ap.add_argument("--peer-backend", default="numpy",
                    help="numpy, cupy, or both in that order: numpy,cupy")
    ap.add_argument("--agree", type=float, default=1e-5,
                    help="bound on max |peer - psfsim| / peak, both summed to 1")
    args = ap.parse_args()
    lib_bench = args.lib_bench
    if not lib_bench and args.bin:
        cand = os.path.join(os.path.dirname(os.path.abspath(args.bin)), "bench", "psfsim_lib_bench")
        lib_bench = cand if os.path.exists(cand) else None
    tmp = tempfile.mkdtemp(prefix="psfsim-pybench-cfg-")
    try:
        path = os.path.join(tmp, "pybench.cfg")
        with open(path, "w") as f:
            f.write(psfsim.config_text(config(args.count)))
        print("# python %s, numpy %s, psfsim %s; peers: %s" % (
            sys.version.split()[0], np.__version__, psfsim.version(), versions(args.peers)),
            flush=True)
        print("what,backend,images,seconds,us_per_psf,psf_per_s", flush=True)
        for _ in range(max(1, args.repeat)):
            if lib_bench:
                bench_lib(lib_bench, path, args.backend)
            bench_python_cold(path, args.backend)
            bench_python_warm(path, args.backend)
        if not lib_bench:
            print("# no psfsim_lib_bench (--lib-bench): lib_* skipped", flush=True)
        if args.bin:
            bench_command(path, args.backend, args.bin, args.count)
        else:
            print("# no psfsim command (--bin): skipped", flush=True)
        with psfsim.Set(path, backend=args.backend) as s:
            n = min(args.ref_count, s.count)
            ref, metrics = s.compute(0, n)
            params = s.params(0, n, metrics, frame=False)
        names = [p for p in args.peers.split(",") if p]
        modes = [m for m in args.peer_backend.split(",") if m]
        for mode in modes:  # (numpy first: the GPU modes switch the packages over)
            for name in names:
                bench_peer(name, mode, ref, params, args.count, args.agree, args.peer_repeat)
        ratios(["%s_%s" % (p, m) for p in names for m in modes])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
