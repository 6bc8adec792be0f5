#!/usr/bin/env python3
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


if __name__ == "__main__":
    main()
