#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The GPU machine's measurements the open targets wait for, in one call of
# under ten minutes (bench/RESULTS.md, runs 21-23, says why each is open):
#   17  the whole-process auto table on this tree (bench/auto_bench.sh)
#   16  psfsim from Python on the GPU against the library, prysm-CuPy and
#       POPPY-CuPy, 10,000 images of 256^2 (bench/python_bench.py)
#   14  the detector stage's device cost (psfsim_gpu_micro detector)
#   13  1,000,000 x 64^2 and 100,000 x 256^2 into NAME.h5 on tmpfs
# Needs a Release build in BUILD and the peers' wheels installed into SITE
# (their PYTHONPATH). Writes CSV and text into OUTDIR; prints the ratios.
#   BUILD=build SITE=site bash bench/settle.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}
root="$(cd "$(dirname "$0")/.." && pwd)"
b=${BUILD:?BUILD}
mkdir -p "$out"
t0=$(date +%s)
stamp() { echo "[settle $(($(date +%s) - t0)) s] $*"; }
stamp "17: auto table"
BUILD="$b" REPEATS=4 timeout 220 bash "$root/bench/auto_bench.sh" "$out/auto_table.csv"
python3 - "$out/auto_table.csv" <<'PY'
import csv, statistics as st, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["backend"] in ("cpu", "gpu", "auto")]
cells = list(dict.fromkeys((int(r["npix"]), int(r["images"])) for r in rows))
worst = 0
for c in cells:
    sel = [r for r in rows if (int(r["npix"]), int(r["images"])) == c]
    m = {k: st.median(float(r["wall_s"]) for r in sel if r["backend"] == k) for k in ("cpu", "gpu", "auto")}
    q = m["auto"] / min(m["cpu"], m["gpu"])
    worst = max(worst, q)
    print("%5d x %-5d cpu %.4f gpu %.4f auto %.4f  auto/best %.3f" % (c + (m["cpu"], m["gpu"], m["auto"], q)))
print("worst auto/best %.3f (target <= 1.10)" % worst)
PY
stamp "16: Python on the GPU"
PYTHONPATH="${SITE:-}" PSFSIM_LIBRARY="$b/libpsfsim.so.0" timeout 200 python3 -W ignore \
  "$root/bench/python_bench.py" --backend auto --count 10000 --bin "$b/psfsim" \
  --lib-bench "$b/bench/psfsim_lib_bench" --repeat 3 --ref-count 20 --peer-backend cupy \
  --peers prysm,poppy >"$out/python_gpu.txt" 2>&1
grep "^# ratio\|agrees\|skipped" "$out/python_gpu.txt"
stamp "14: detector stage"
for n in 64 256; do
  timeout 60 "$b/bench/psfsim_gpu_micro" detector 10000 $n >"$out/micro_detector_$n.txt" 2>&1
  grep "^# detector all" "$out/micro_detector_$n.txt"
done
stamp "13: datasets on tmpfs"
for c in 1000000:32 100000:128; do
  BACKEND=gpu COUNTS="${c%%:*}" timeout 90 bash "$root/bench/datasets_bench.sh" "$b" /dev/shm/settle "$c" \
    >>"$out/datasets_tmpfs.csv" 2>&1
  cp /dev/shm/settle/ds*_timing.csv "$out/" 2>/dev/null
  rm -rf /dev/shm/settle
done
python3 - "$out/datasets_tmpfs.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 4 and r[0] != "case"]
for case in dict.fromkeys(r[0] for r in rows):
    t = {r[1]: float(r[4]) for r in rows if r[0] == case and r[4]}
    peer = next((v for k, v in t.items() if k not in ("psfsim", "dd_same_bytes")), float("nan"))
    print("%s: psfsim / dd %.2f (target <= 1.3), peer / psfsim %.2f" % (case, t["psfsim"] / t["dd_same_bytes"], peer / t["psfsim"]))
PY
stamp "done"
