# SPDX-License-Identifier: BSD-3-Clause
"""Read speed of NAME.h5 as ML loaders read it (issue 27).

Writes random sets with psfsim (sweep.random, output.hdf5, PNG off) at
several output.hdf5.chunk_images and compression settings (by default: the
1 MiB chunks of before issue 27, psfsim's default with the key unset, and 1
image a chunk), then reads each with h5py at its default chunk cache (1 MiB):

  sequential: f["images"][i:i+B] over the whole set, batches of B images;
  shuffled:   f["images"][k] one image at a time, k over a random permutation.

The page cache is warm: each file is read once whole before it is timed.
Prints one line per (size, compression, chunk) with images/s, the ratios
to the first chunk setting of the same size and compression, and the
shuffled rate's ratio to the last one's (measured in the same run).

  python3 bench/hdf5_read_bench.py build/psfsim [WORKDIR [CHUNKS]]

CHUNKS: comma-separated chunk settings, each an integer, "old" (the 1 MiB
chunks) or "default" (the key unset); default "old,default,1".
"""
import os
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

# (npix, images, pupil_samples, padding): 64^2 and 256^2 float32.
SIZES = [(64, 20000, 32, 2.0), (256, 2000, 128, 2.0)]
BATCH = 256
SHUFFLED_MAX = 20000  # shuffled reads timed over at most this many images


def old_chunk(npix):
    """The chunk before issue 27: the most images in 1 MiB (float32)."""
    return max(1, (1 << 20) // (npix * npix * 4))


def write(psfsim, work, npix, k, pupil, pad, gzip, chunk):
    name = f"s{npix}_{'gz' if gzip else 'raw'}_c{chunk}"
    out = os.path.join(work, name)
    cfg = os.path.join(work, name + ".cfg")
    comp = 'compression = "gzip";' if gzip else ""
    key = "" if chunk == "default" else f"chunk_images = {chunk};"
    with open(cfg, "w") as f:
        f.write(f'name = "{name}";\n'
                'optics: { wavelength_nm = 1000.0; aperture: { diameter_m = 1.0; }; };\n'
                f"sampling: {{ pupil_samples = {pupil}; padding = {pad}; }};\n"
                f"sweep: {{ random: {{ count = {k}; seed = 1; "
                'zernike = ((4, "normal", 0.1), (5, "normal", 0.1), (6, "normal", 0.1)); }; };\n'
                "output: { png: { enabled = false; }; "
                f"hdf5: {{ enabled = true; {comp} {key} }}; }};\n")
    subprocess.run([psfsim, "-q", "--backend", "cpu", "-c", cfg, "-o", out], check=True)
    return os.path.join(out, name + ".h5")


def rate(path, rng):
    with h5py.File(path, "r") as f:
        d = f["images"]
        k = d.shape[0]
        assert d.chunks[0] >= 1
        for i in range(0, k, BATCH):  # warm the page cache
            d[i:i + BATCH]
        t = time.perf_counter()
        for i in range(0, k, BATCH):
            d[i:i + BATCH]
        seq = k / (time.perf_counter() - t)
        order = rng.permutation(k)[:SHUFFLED_MAX]
        t = time.perf_counter()
        for j in order:
            d[j]
        shuf = len(order) / (time.perf_counter() - t)
        return d.chunks[0], seq, shuf, os.path.getsize(path)


def main():
    psfsim = os.path.abspath(sys.argv[1])
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="h5read")
    chunks = (sys.argv[3] if len(sys.argv) > 3 else "old,default,1").split(",")
    rng = np.random.default_rng(27)
    print(f"h5py {h5py.__version__}, HDF5 {h5py.version.hdf5_version}; batch {BATCH}; "
          "page cache warm; h5py's default chunk cache")
    print("npix images compression setting chunk  seq_img/s  shuffled_img/s  seq_ratio  "
          "shuf_ratio  shuf_vs_last  MB")
    for npix, k, pupil, pad in SIZES:
        for gzip in (False, True):
            rows = []
            for name in chunks:
                chunk = old_chunk(npix) if name == "old" else name
                path = write(psfsim, work, npix, k, pupil, pad, gzip, chunk)
                rows.append((name,) + rate(path, rng))
            base, last = rows[0], rows[-1]
            for name, c, seq, shuf, size in rows:
                print(f"{npix:4d} {k:6d} {'gzip' if gzip else 'none':>11s} {name:>7s} {c:5d} "
                      f"{seq:10.0f} {shuf:15.0f} {seq / base[2]:10.2f} {shuf / base[3]:11.2f} "
                      f"{shuf / last[3]:13.2f} {size / 1e6:6.1f}", flush=True)


if __name__ == "__main__":
    main()
