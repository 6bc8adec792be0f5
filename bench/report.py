#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Turn bench/run.sh's CSV files into the Markdown tables of bench/RESULTS.md.
Every ratio is between figures measured in the same run."""
import csv
import sys
from collections import defaultdict
from pathlib import Path


def rows(path):
    p = Path(path)
    if not p.exists():
        return []
    with p.open() as f:
        return [r for r in csv.reader(f) if r and not r[0].startswith("pipeline")]


def main():
    out = Path(sys.argv[1])
    t = defaultdict(dict)  # pipeline -> npix -> (images, us_per_psf)
    for name in ("psfsim.csv", "ceiling.csv", "cupy.csv", "numpy.csv"):
        for r in rows(out / name):
            if len(r) == 5:
                t[r[0]][int(r[1])] = (int(r[2]), float(r[4]))
    machine = {r[0]: ",".join(r[1:]) for r in rows(out / "machine.csv")}
    print(f"Run {machine.get('date', '?')} on {machine.get('gpu', '?')}; "
          f"CPU {machine.get('cpu', '?')}; {machine.get('cuda', '')}\n")

    def us(p, n):
        return t[p].get(n, (0, float("nan")))[1]

    sizes = sorted(set(t["psfsim_gpu_single"]) | set(t["psfsim_cpu_single"]))
    print("### One PSF to host memory (us per PSF; median)\n")
    print("| N | psfsim GPU | psfsim CPU | CuPy | NumPy | CuPy / psfsim GPU | NumPy / psfsim CPU | NumPy / best psfsim |")
    print("|---|---|---|---|---|---|---|---|")
    for n in sizes:
        g, c, cu, nu = (us(p, n) for p in ("psfsim_gpu_single", "psfsim_cpu_single", "cupy_single", "numpy_single"))
        best = min(g, c)
        print(f"| {n} | {g:.1f} | {c:.1f} | {cu:.1f} | {nu:.1f} | {cu / g:.1f}x | {nu / c:.1f}x | {nu / best:.1f}x |")
    print("\n### Batches to host memory (PSFs per second)\n")
    print("| N | images | psfsim GPU | psfsim CPU | CuPy loop | CuPy batched | NumPy loop | psfsim GPU / CuPy batched | psfsim GPU / ceiling |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in sizes:
        def rate(p):
            v = us(p, n)
            return 1e6 / v if v == v and v > 0 else float("nan")
        g = rate("psfsim_gpu_batch")
        imgs = t["psfsim_gpu_batch"].get(n, (0, 0))[0]
        ceil = rate("ceiling")
        print(f"| {n} | {imgs} | {g:,.0f} | {rate('psfsim_cpu_batch'):,.0f} | {rate('cupy_loop'):,.0f} | "
              f"{rate('cupy_batch'):,.0f} | {rate('numpy_batch'):,.0f} | {g / rate('cupy_batch'):.1f}x | {g / ceil:.2f} |")
    dev = t.get("psfsim_gpu_device", {})
    if dev:
        print("\n### Device-side compute against the cuFFT + |.|^2 ceiling (us per PSF)\n")
        print("| N | images | psfsim device compute | ceiling | psfsim throughput / ceiling |")
        print("|---|---|---|---|---|")
        for n in sorted(dev):
            print(f"| {n} | {dev[n][0]} | {dev[n][1]:.2f} | {us('ceiling', n):.2f} | {us('ceiling', n) / dev[n][1]:.2f} |")
    micro = out / "gpu_micro.txt"
    if micro.exists():
        print("\n### GPU backend stages (bench/gpu_micro.cu, CUDA events)\n")
        print("```")
        print(micro.read_text().rstrip())
        print("```")
    sets = rows(out / "sets.csv")
    if sets:
        print("\n### 10,000 images of 256x256, 16-bit PNG, whole run\n")
        print("| pipeline | images | seconds | us per image |")
        print("|---|---|---|---|")
        for r in sets:
            if r[0].startswith("#"):
                continue
            print(f"| {r[0]} | {r[2]} | {float(r[3]):.2f} | {float(r[4]):.1f} |")
        print("\n```")
        for r in sets:
            if r[0].startswith("#"):
                print(",".join(r))
        print("```")
    auto = rows(out / "auto.csv")
    if auto:
        print("\n### Whole psfsim processes (wall seconds; 16-bit PNG output)\n")
        cells = defaultdict(lambda: defaultdict(list))
        for r in auto:
            if r[2] in ("cpu", "gpu", "auto"):
                cells[(int(r[0]), int(r[1]))][r[2]].append((float(r[3]), r[4]))

        def med(v):
            v = sorted(v)
            return v[len(v) // 2] if v else (float("nan"), "-")
        print("Median of the repeats in each cell.\n")
        print("| N | images | cpu | gpu | auto (chose) | auto / faster forced |")
        print("|---|---|---|---|---|---|")
        for (n, k), c in sorted(cells.items()):
            cpu, gpu, auto_ = med(c["cpu"]), med(c["gpu"]), med(c["auto"])
            best = min(cpu[0], gpu[0])
            print(f"| {n} | {k} | {cpu[0]:.3f} | {gpu[0]:.3f} | {auto_[0]:.3f} ({auto_[1]}) | {auto_[0] / best:.2f} |")
        warm = [r for r in auto if r[2].startswith("auto-warm")]
        if warm:
            print("\n64x64, one image, warm probe cache (auto):\n")
            for r in warm:
                print(f"- {r[2]}: {float(r[3]) * 1e3:.1f} ms, {r[4]}")
    ranks_table(out)


def ranks_table(out):
    """bench/ranks_bench.sh: 1, 2, 4 MPI ranks sharing one GPU."""
    p = out / "ranks.csv"
    if not p.exists():
        return
    with p.open() as f:
        lines = f.read().splitlines()
    notes = [l for l in lines if l.startswith("#")]
    recs = list(csv.DictReader(l for l in lines if not l.startswith("#")))
    if not recs:
        return
    cells = defaultdict(list)
    for r in recs:
        cells[(r["case"], r["launcher"], int(r["ranks"]))].append(r)

    def num(r, k, scale=1.0):
        try:
            return float(r[k]) * scale
        except (KeyError, TypeError, ValueError):
            return float("nan")

    def median(rs):  # the repeat with the median wall time (its stage totals too)
        ok = sorted((r for r in rs if num(r, "wall_s") == num(r, "wall_s")), key=lambda r: num(r, "wall_s"))
        return ok[len(ok) // 2] if ok else rs[0]
    images = max(int(r["images"]) for r in recs)
    print(f"\n### Several MPI ranks on one GPU: {images:,} images of 256x256 (bench/ranks_bench.sh)\n")
    print("`mpirun -n R --bind-to none psfsim -c set.cfg`, every rank on GPU 0; \"none\": psfsim without "
          "mpirun. The repeat with the median wall time of each cell; stage totals from psfsim's timing "
          "log, summed over the ranks (compute, wait) or over all writer threads (encode + write).\n")
    print("| output | launcher | ranks | repeats | wall s | images/s | vs mpirun 1 rank | backend | compute s | "
          "encode + write s | compute loop waited for writers s | slowest rank s | bound |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (case, launcher, ranks), rs in sorted(cells.items(), key=lambda kv: (kv[0][0] != "png", kv[0][1] == "none", kv[0][2])):
        m = median(rs)
        one = cells.get((case, "mpirun", 1))
        base = num(median(one), "wall_s") if one else float("nan")
        wall = num(m, "wall_s")
        enc = num(m, "png_encode_write_us", 1e-6) if case == "png" else num(m, "fits_encode_write_us", 1e-6)
        slow = num(m, "max_rank_wall_us", 1e-6)
        print(f"| {case} | {launcher} | {ranks} | {len(rs)} | {wall:.2f} | {num(m, 'images_per_s'):,.0f} | "
              f"{base / wall:.2f}x | {m['backends']} | {num(m, 'compute_us', 1e-6):.2f} | {enc:.2f} | "
              f"{num(m, 'wait_for_writers_us', 1e-6):.2f} | {'-' if slow != slow else f'{slow:.2f}'} | {m['bound']} |")
    if notes:
        print("\n```")
        for n in notes:
            print(n)
        print("```")


if __name__ == "__main__":
    main()
