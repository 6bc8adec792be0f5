#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""10,000 256x256 PSFs three ways, for the GPU machine (bench/RESULTS.md):

  python   psfsim.compute(config): open, compute into one NumPy array
           [K, 256, 256] float32, the parameters table; wall time
  library  Set.compute alone (the set already open, the backend started by
           a first one-image call): libpsfsim's own compute time
  command  the psfsim command writing the set as one FITS cube to tmpfs
           (/dev/shm), PNG off: psfsim -c CFG -o DIR --force -q

and, when importable, prysm and POPPY on --ref-count images (per-image
time scaled to the set). Prints CSV rows
    what,backend,images,seconds,us_per_psf,psf_per_s
    bench/python_bench.py [--backend auto|cpu|gpu] [--count 10000] [--bin build/psfsim]
PSFSIM_LIBRARY names the libpsfsim to load (else the package's own)."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
import psfsim  # noqa: E402


def config(count):
    """count images of 256 x 256: 128 pupil samples, Q = 2, a defocus
    sweep times an astigmatism sweep (the HST aperture, no spiders)."""
    nd = 100
    nz = max(1, count // nd)
    return {"name": "pybench",
            "optics": {"wavelength_nm": 550.0, "f_number": 24.0,
                       "aperture": {"diameter_m": 2.4, "obscuration": 0.33}},
            "sampling": {"pupil_samples": 128, "padding": 2.0},
            "sweep": {"defocus": [round(-0.5 + i / nd, 4) for i in range(nd)],
                      "zernike": [(5, [round(0.001 * i, 4) for i in range(nz)])]},
            "output": {"png": {"enabled": False}, "fits": {"enabled": True, "cube": True}}}


def row(what, backend, n, seconds):
    print("%s,%s,%d,%.4f,%.2f,%.0f" % (what, backend, n, seconds, 1e6 * seconds / n, n / seconds),
          flush=True)


def bench_python(cfg, backend):
    t0 = time.perf_counter()
    images, params = psfsim.compute(cfg, backend=backend, frame=False)
    t = time.perf_counter() - t0
    row("python", params["backend"][0], len(images), t)
    return images


def bench_library(cfg, backend):
    with psfsim.Set(cfg, backend=backend) as s:
        out = np.empty(s.shape, dtype=np.float32)
        s.compute(0, 1, out=out[:1])  # starts the backend (plans, CUDA context)
        t0 = time.perf_counter()
        _, metrics = s.compute(out=out)
        t = time.perf_counter() - t0
        row("library", metrics["backend"][0], s.count, t)
        print("# decision: %s" % s.decision["reason"], flush=True)


def bench_command(cfg, backend, binary):
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    tmp = tempfile.mkdtemp(prefix="psfsim-pybench-", dir=base)
    try:
        path = os.path.join(tmp, "pybench.cfg")
        with open(path, "w") as f:
            f.write(psfsim.config_text(cfg))
        cmd = [binary, "-c", path, "-o", os.path.join(tmp, "out"), "--force", "-q"]
        if backend:
            cmd += ["--backend", backend]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        t = time.perf_counter() - t0
        n = psfsim.Set(cfg).count
        row("command_fits_cube_tmpfs", backend or "config", n, t)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bench_prysm(n, total):
    try:
        from prysm.coordinates import cart_to_polar, make_xy_grid
        from prysm.geometry import circle
        from prysm.polynomials import zernike_nm
        from prysm.propagation import Wavefront
    except ImportError:
        print("# prysm not installed: skipped", flush=True)
        return
    x, y = make_xy_grid(256, dx=2.4e3 / 128)
    r, t = cart_to_polar(x, y)
    amp = (circle(1.2e3, r) & ~circle(0.33 * 1.2e3, r)).astype(float)
    z4 = zernike_nm(2, 0, r / 1.2e3, t)
    t0 = time.perf_counter()
    for i in range(n):
        wf = Wavefront.from_amp_and_phase(amp, (-0.5 + i / n) * 550.0 * z4 * amp, 0.55, 2.4e3 / 128)
        wf.focus(efl=24 * 2.4e3, Q=1).intensity
    per = (time.perf_counter() - t0) / n
    row("prysm_scaled", "numpy", total, per * total)


def bench_poppy(n, total):
    try:
        import astropy.units as u
        import poppy
    except ImportError:
        print("# poppy not installed: skipped", flush=True)
        return
    osys = poppy.OpticalSystem(npix=128, oversample=2)
    osys.add_pupil(poppy.CircularAperture(radius=1.2))
    osys.add_pupil(poppy.SecondaryObscuration(secondary_radius=0.396, n_supports=0))
    osys.add_detector(pixelscale=0.0236, fov_pixels=256)
    t0 = time.perf_counter()
    for _ in range(n):
        osys.calc_psf(550e-9 * u.m)
    per = (time.perf_counter() - t0) / n
    row("poppy_scaled", "numpy", total, per * total)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default=None, help="auto, cpu or gpu (default: auto)")
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--bin", default=shutil.which("psfsim"), help="the psfsim command")
    ap.add_argument("--ref-count", type=int, default=50, help="images for prysm and POPPY")
    args = ap.parse_args()
    cfg = config(args.count)
    print("what,backend,images,seconds,us_per_psf,psf_per_s", flush=True)
    bench_python(cfg, args.backend)
    bench_library(cfg, args.backend)
    if args.bin:
        bench_command(cfg, args.backend, args.bin)
    else:
        print("# no psfsim command (--bin): skipped", flush=True)
    bench_prysm(args.ref_count, args.count)
    bench_poppy(args.ref_count, args.count)


if __name__ == "__main__":
    main()
