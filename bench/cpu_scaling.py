#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""How the CPU backend's sets scale with the threads (issue 27), from
Python: 256x256 PSFs (128 pupil samples across D, Q = 2, a clear circle
with binary edges) with 8 random Zernike terms (Noll 4..11, normal, 0.05
waves RMS each), computed by psfsim.Set(..., backend="cpu", threads=t) at
t = 1, 2, 4, 8, 16 (those <= os.cpu_count(); --threads to choose), each
into a fresh np.empty array (Set.compute(): the buffer's page faults are
taken while the images are written) and into an array written before
(Set.compute(out=out)). Images per row: min(--count, --per-thread x t), the
fastest of --repeat rounds. efficiency = rate(t) / (t rate(1)) (the target:
>= 0.60 at 16 threads on 16 cores).

Also a NumPy pipeline of the same PSFs (the basis times the set's own
coefficients, exp, fft2, |.|^2, fftshift; one image at a time, its
--numpy-count first images), checked against psfsim's (both summed to 1:
max |difference| / peak <= --agree) and timed: "ratio psfsim(t) / numpy"
(the target: >= 15 with t = 2 on a 2-core machine). Every row's images are
checked bit-identical to the one-thread row's (the library's promise:
python/tests/test_repro.py).

    PSFSIM_LIBRARY=build/libpsfsim.so.0 python3 bench/cpu_scaling.py \\
        [--count 10000] [--per-thread 1000] [--threads 1,2,4,8,16] [--repeat 3] \\
        [--ceiling build/bench/psfsim_cpu_ceiling]

--ceiling: the host's own ceiling measured just before and just after
psfsim's rows (bench/cpu_ceiling.c: FFTW's 256 x 256 transform and a
clock-bound chain on the same thread counts, each thread on its own
buffers), and psfsim's efficiency as a share of it: what the host itself
loses at t threads (all-core clock, shared caches) is not psfsim's.

Needs NumPy only (and the psfsim package beside this directory, or
installed). Rows: threads,buffer,images,seconds,us_per_image,
images_per_s,us_per_image_per_thread,efficiency,user_us_per_image,
sys_us_per_image,busy. user and sys: the process's CPU time (all its
threads) per image: growing with t where the threads contend (sys: page
faults of the fresh buffer; user: memory, caches, a lower all-core
clock); busy = (user + sys) / (seconds x t): the share of the t threads'
time on a CPU (below 1: threads waiting, for work, a lock, or a CPU that
another process holds). "# ratio" lines."""
import argparse
import math
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
import psfsim  # noqa: E402

PUPIL = 128   # samples across D
NPIX = 256    # image (= FFT, Q = 2)
DIAMETER_M = 2.4
TERMS = list(range(4, 12))  # Noll 4..11: 8 terms
WIDTH = 0.05  # waves RMS, normal draws


def config(count, seed):
    return {"name": "cpuscale",
            "optics": {"wavelength_nm": 550.0, "f_number": 24.0,
                       "aperture": {"diameter_m": DIAMETER_M, "edge": "binary"}},
            "sampling": {"pupil_samples": PUPIL, "padding": NPIX / PUPIL},
            "sweep": {"random": {"count": count, "seed": seed,
                                 "zernike": [(j, "normal", WIDTH) for j in TERMS]}},
            "output": {"png": {"enabled": False}, "fits": {"enabled": True, "cube": True}}}


def noll_nm(j):
    """Noll's index j -> (n, m), m signed: even j cos (m > 0), odd j sin."""
    n, k = 0, j
    while k > n + 1:
        k -= n + 1
        n += 1
    # the m of the k-th term of order n (k = 1 .. n + 1): |m| ascending in pairs
    ms = [m for m in range(n % 2, n + 1, 2) for _ in ((0,) if m == 0 else (0, 1))]
    m = ms[k - 1]
    return n, (m if j % 2 == 0 or m == 0 else -m)


def zernike(j, rho, theta):
    """Noll's unit-RMS Z_j on the unit disk."""
    n, m = noll_nm(j)
    am = abs(m)
    r = sum((-1) ** s * math.factorial(n - s)
            / (math.factorial(s) * math.factorial((n + am) // 2 - s)
               * math.factorial((n - am) // 2 - s)) * rho ** (n - 2 * s)
            for s in range((n - am) // 2 + 1))
    if m == 0:
        return math.sqrt(n + 1) * r
    return math.sqrt(2 * (n + 1)) * r * (np.cos(am * theta) if m > 0 else np.sin(am * theta))


class NumpyPipeline:
    """The same PSFs in NumPy: psfsim's pupil grid (design.md, "Sampling":
    sample (i, j) at ((j - N/2) dx, (i - N/2) dx), dx = D / PUPIL, binary
    edges: the sample centres with rho <= 1), the open samples' basis
    [open, 8]; an image: phase = basis @ c (waves), field = exp(2 pi i
    phase) scattered into N x N zeros, |fft2|^2, fftshift (axis at N/2)."""

    def __init__(self):
        c = (np.arange(NPIX) - NPIX // 2) * (DIAMETER_M / PUPIL)
        x, y = np.meshgrid(c, c)
        rho = np.hypot(x, y) / (DIAMETER_M / 2)
        self.open = np.flatnonzero(rho <= 1)
        r, t = rho.ravel()[self.open], np.arctan2(y, x).ravel()[self.open]
        self.basis = np.stack([zernike(j, r, t) for j in TERMS], axis=1)

    def image(self, coeff):
        field = np.zeros(NPIX * NPIX, dtype=np.complex128)
        field[self.open] = np.exp(2j * np.pi * (self.basis @ coeff))
        f = np.fft.fft2(field.reshape(NPIX, NPIX))
        return np.fft.fftshift(f.real ** 2 + f.imag ** 2)


def best(f, repeat):
    """The fastest of repeat calls of f: (wall seconds, its user and
    system CPU seconds, all of the process's threads)."""
    t = (math.inf, 0.0, 0.0)
    for _ in range(repeat):
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        f()
        w, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
        if w < t[0]:
            t = (w, r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime)
    return t


def ceiling(path, threads):
    """psfsim_cpu_ceiling's efficiencies, one round on these thread counts:
    {(kind, threads): efficiency}; its rows echoed as comments."""
    out = subprocess.run([path, ",".join(str(t) for t in threads), "1"], check=True,
                         capture_output=True, text=True).stdout
    eff = {}
    for line in out.splitlines()[1:]:
        kind, t, _, _, e = line.split(",")
        eff[(kind, int(t))] = float(e)
        print("# ceiling %s" % line, flush=True)
    return eff


def check_numpy(s, pipe, n, agree):
    ref, _ = s.compute(0, n)
    coeff = s.zernike(0, n)
    worst = 0.0
    for k in range(n):
        mine = ref[k].astype(np.float64)
        mine /= mine.sum()
        theirs = pipe.image(coeff[k])
        theirs /= theirs.sum()
        worst = max(worst, np.abs(theirs - mine).max() / mine.max())
    print("# numpy pipeline against psfsim, %d images: max |difference| / peak %.2e "
          "(bound %.0e): %s" % (n, worst, agree, "agrees" if worst <= agree else "DIFFERS"),
          flush=True)
    return worst <= agree


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=10000, help="images at most per row")
    ap.add_argument("--per-thread", type=int, default=1000,
                    help="images per thread in a row (then at most --count)")
    ap.add_argument("--threads", default=None,
                    help="comma-separated thread counts (default 1,2,4,8,16 up to the CPUs)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds per row: the fastest is kept")
    ap.add_argument("--numpy-count", type=int, default=100, help="images for the NumPy pipeline")
    ap.add_argument("--agree", type=float, default=1e-4,
                    help="bound on max |numpy - psfsim| / peak, both summed to 1")
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--ceiling", default=None,
                    help="psfsim_cpu_ceiling's path: the host's own ceiling, before and after")
    a = ap.parse_args()
    ncpu = os.cpu_count() or 1
    threads = ([int(t) for t in a.threads.split(",")] if a.threads else
               [t for t in (1, 2, 4, 8, 16) if t <= ncpu])
    if 1 not in threads:
        threads = [1] + threads
    count = a.count
    tmp = tempfile.mkdtemp(prefix="psfsim-cpuscale-")
    path = os.path.join(tmp, "cpuscale.cfg")
    with open(path, "w") as f:
        f.write(psfsim.config_text(config(count, a.seed)))
    print("# python %s, numpy %s, psfsim %s, %d CPUs; 256x256, 8 random Zernike terms"
          % (sys.version.split()[0], np.__version__, psfsim.version(), ncpu), flush=True)
    print("threads,buffer,images,seconds,us_per_image,images_per_s,"
          "us_per_image_per_thread,efficiency,user_us_per_image,sys_us_per_image,busy",
          flush=True)
    rate1, rates, ref, identical = {}, {}, None, True
    ceilings = [ceiling(a.ceiling, threads)] if a.ceiling else []
    try:
        for t in threads:
            n = min(count, a.per_thread * t)
            with psfsim.Set(path, backend="cpu", threads=t) as s:
                s.compute(0, 1)  # the backend started (plans, pupil)
                out = np.empty((n, NPIX, NPIX), dtype=np.float32)
                out.fill(0.0)  # written before: its pages are there
                def fresh():
                    s.compute(0, n)  # a new np.empty each round, dropped after it

                for buf, f in (("fresh", fresh), ("touched", lambda: s.compute(0, n, out=out))):
                    sec, user, sys_ = best(f, a.repeat)
                    rate = n / sec
                    rate1.setdefault(buf, rate if t == 1 else None)
                    rates[(t, buf)] = rate
                    eff = rate / (t * rate1[buf]) if rate1[buf] else float("nan")
                    print("%d,%s,%d,%.4f,%.1f,%.0f,%.1f,%.3f,%.1f,%.1f,%.2f" % (
                        t, buf, n, sec, 1e6 * sec / n, rate, 1e6 * sec * t / n, eff,
                        1e6 * user / n, 1e6 * sys_ / n, (user + sys_) / (sec * t)), flush=True)
                if ref is None:
                    ref = out.copy()
                else:
                    m = min(len(ref), n)
                    if not np.array_equal(ref[:m], out[:m]):
                        identical = False
                        print("# threads %d: images DIFFER from one thread's" % t, flush=True)
        if a.ceiling:
            ceilings.append(ceiling(a.ceiling, threads))
        print("# images bit-identical at every thread count: %s"
              % ("yes" if identical else "NO"), flush=True)
        pipe = NumpyPipeline()
        with psfsim.Set(path, backend="cpu", threads=1) as s:
            nn = min(a.numpy_count, count)
            agrees = check_numpy(s, pipe, min(nn, 20), a.agree)
            coeff = s.zernike(0, nn)
        pipe.image(coeff[0])  # warm-up
        sec, user, sys_ = best(lambda: [pipe.image(c) for c in coeff], max(1, a.repeat - 1))
        npr = nn / sec
        print("numpy,pipeline,%d,%.4f,%.1f,%.0f,%.1f,nan,%.1f,%.1f,%.2f" % (
            nn, sec, 1e6 * sec / nn, npr, 1e6 * sec / nn, 1e6 * user / nn, 1e6 * sys_ / nn,
            (user + sys_) / sec), flush=True)
        for t in threads:
            for buf in ("fresh", "touched"):
                print("# ratio psfsim(%d threads, %s) / numpy: %.1f"
                      % (t, buf, rates[(t, buf)] / npr), flush=True)
        top = max(threads)
        print("# efficiency at %d threads: fresh %.3f, touched %.3f (target >= 0.60)"
              % (top, rates[(top, "fresh")] / (top * rate1["fresh"]),
                 rates[(top, "touched")] / (top * rate1["touched"])), flush=True)
        if ceilings:
            top_fft = [c[("fft", top)] for c in ceilings]
            top_clock = [c[("clock", top)] for c in ceilings]
            mean = sum(top_fft) / len(top_fft)
            print("# host ceiling at %d threads (before, after): FFTW's transforms %s, "
                  "clock %s; psfsim touched / FFTW's mean: %.2f" % (
                      top, ", ".join("%.3f" % e for e in top_fft),
                      ", ".join("%.3f" % e for e in top_clock),
                      rates[(top, "touched")] / (top * rate1["touched"]) / mean), flush=True)
        return 0 if identical and agrees else 1
    finally:
        os.remove(path)
        os.rmdir(tmp)


if __name__ == "__main__":
    sys.exit(main())
