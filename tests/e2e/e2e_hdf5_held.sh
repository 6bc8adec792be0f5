#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# NAME.h5 written from the batch buffers in place (app/dataset/hdf5_writer.h,
# hdf5_writer_add_held: an HDF5-only set whose batches are larger than
# the writer's group, here 64 CPU images of 256 x 256 float32, or 64 x 64
# detector images with their 256 x 256 oversampled ones) equals the same
# set written with PNG on (the writer threads have work: each batch's
# rows are copied, as before) in every dataset, byte for byte; with two
# lanes too; and killed (kill -9) mid-set and resumed it equals the
# uninterrupted run. Skipped (77) without a python3 that imports h5py.
source "$(dirname "$0")/lib_e2e.sh"
export PSFSIM_CACHE_DIR="$SCRATCH/cache"
cd "$SCRATCH" || exit 1
PY=$(e2e_python numpy h5py) || PY=""
[ -n "$PY" ] || { echo "skipped: no python3 imports numpy and h5py"; exit 77; }
h5() { "$PY" "$SRC/tests/e2e/h5_check.py" "$@" >"$SCRATCH/py.out" 2>&1; }
h5_ok() { if h5 "$@"; then pass "$(tail -1 "$SCRATCH/py.out")"; else
  fail "h5_check.py $*"; sed 's/^/  /' "$SCRATCH/py.out"; fi; }

# hcfg NAME PUPIL COUNT OUTPUT-EXTRA DETECTOR: a random set, HDF5 float32
hcfg() {
  cat <<CFG
name = "$1";
optics: { wavelength_nm = 600.0; f_number = 10.0; aperture: { diameter_m = 1.0; obscuration = 0.2; }; };
sampling: { pupil_samples = $2; padding = 2.0; };
sweep: { random: { count = $3; seed = 3; zernike = ((4, "normal", 0.05), (7, "normal", 0.05), (11, "normal", 0.05)); }; };
output: { png: { enabled = false; }; hdf5: { enabled = true; }; $4 };
$5
CFG
}
# p and bp, the references, not under the wrapper: their code paths
# (rows copied for the writers, PNG) are those of the sets with PNG of
# e2e_hdf5.sh and e2e_hdf5_detector.sh, which run under it.
hcfg h 128 200 '' '' >h.cfg
hcfg h 128 200 'png: { enabled = true; };' '' | sed 's/png: { enabled = false; }; //' >p.cfg
det='detector: { oversample = 4; jitter_mas = [5.0, 8.0]; write = "both"; };'
hcfg b 32 200 '' "$det" >b.cfg
hcfg b 32 200 'png: { enabled = true; };' "$det" | sed 's/png: { enabled = false; }; //' >bp.cfg
for c in h p b bp; do
  run=$PSFSIM
  case $c in p | bp) run=$PSFSIM_UNWRAPPED ;; esac
  expect_exit 0 "$c: the set" -- "$run" -q --backend cpu -c $c.cfg -o $c
done
h5_ok same p/h.h5 h/h.h5
h5_ok same bp/b.h5 b/b.h5
expect_exit 0 "h: two lanes" -- env PSFSIM_TEST_LANES=2 "$PSFSIM" -q --backend cpu -c h.cfg -o h2
h5_ok same p/h.h5 h2/h.h5

# kill -9 mid-set, then --resume (two lanes): equal to the uninterrupted set,
# whose run is not under the wrapper (its code paths are h's and the
# resume's). Under the wrapper 600 images, not 1200.
nk=$(e2e_size 1200 600)
hcfg k 128 $nk '' '' >k.cfg
expect_exit 0 "k: uninterrupted reference" -- "$PSFSIM_UNWRAPPED" -q --backend cpu -j 1 -c k.cfg -o k.ref
env PSFSIM_TEST_LANES=2 "$PSFSIM" -q --backend cpu -j 1 -c k.cfg -o k.part >/dev/null 2>&1 &
kill_mid_set $! k.part/k_manifest.csv $((nk / 4)) $nk k
expect_exit 0 "k: --resume (2 lanes)" -- env PSFSIM_TEST_LANES=2 "$PSFSIM" -v --backend cpu -j 1 --resume -c k.cfg -o k.part
grep -q "resuming: k.h5 holds" "$SCRATCH/stderr" && pass "k: resumed" || fail "k: not resumed: $(grep resuming "$SCRATCH/stderr")"
h5_ok same k.ref/k.h5 k.part/k.h5
rm -rf k.ref k.part
finish
