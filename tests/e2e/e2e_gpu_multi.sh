# SPDX-License-Identifier: BSD-3-Clause
# Every GPU of a host (issue 7): one image set shared by two GPUs through
# one queue. The images and the manifest equal a one-GPU run's byte for
# byte; both GPUs take batches (timing log lane rows); a GPU that fails in
# its first batch hands the rest to the other; one that cannot start is
# left out; --gpus naming a device that is not there is a usage error.
# Skipped without the GPU backend or with fewer than two GPUs.
source "$(dirname "$0")/lib_e2e.sh"
if ! "$PSFSIM" --version | grep -q 'GPU: CUDA'; then
  echo "skipped: $("$PSFSIM" --version)"
  exit 77
fi
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
if [ -n "${CUDA_VISIBLE_DEVICES+x}" ]; then
  ngpu=$(awk -F, '{ print ($0 == "" ? 0 : NF) }' <<<"$CUDA_VISIBLE_DEVICES")
fi
if [ "${ngpu:-0}" -lt 2 ]; then
  echo "skipped: ${ngpu:-0} GPU(s) visible; this test needs two"
  exit 77
fi
export PSFSIM_CACHE_DIR="$SCRATCH/cache"
n=4000
vals=$(awk -v n=$n 'BEGIN { for (i = 0; i < n; ++i) printf "%s%.6f", (i ? ", " : ""), -1 + 2 * i / (n - 1) }')
cat >set.cfg <<CFG
name = "m";
optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; obscuration = 0.2;
  spiders: { count = 4; width_m = 0.01; }; }; };
sampling: { pupil_samples = 64; padding = 2.0; };
aberrations: { zernike = ((7, 0.05), (11, 0.02)); };
sweep: { defocus = [ $vals ]; };
output: { png: { enabled = false; }; fits: { enabled = true; }; };
CFG
expect_exit 0 "one GPU (--gpus 0)" -- "$PSFSIM" -q --backend gpu --gpus 0 -c set.cfg -o one
expect_exit 0 "two GPUs (--gpus 0,1)" -- "$PSFSIM" -v --backend gpu --gpus 0,1 -c set.cfg -o two
expect_stderr 'shared by GPUs 0,1' "-v names the GPUs"
same_set() { # DIR WHAT: manifest and every FITS equal to one/'s
  diff -q one/m_manifest.csv "$1/m_manifest.csv" >/dev/null && pass "$2: manifest equal" ||
    fail "$2: manifest differs"
  local bad=0 f
  for f in one/*.fits; do cmp -s "$f" "$1/${f#one/}" || bad=$((bad + 1)); done
  [ "$bad" -eq 0 ] && pass "$2: all $n images identical" || fail "$2: $bad images differ"
}
same_set two "two GPUs"
for l in 0 1; do
  got=$(awk -F, -v name="lane_$l" '$1 == name { print $7 + 0 }' two/m_timing.csv)
  [ "${got:-0}" -gt 0 ] && pass "GPU $l computed $got images" || fail "GPU $l computed none"
done
expect_exit 0 "default (all GPUs)" -- "$PSFSIM" -q --backend gpu -c set.cfg -o all
same_set all "all GPUs"

# GPU 1 fails in its first batch (a fault at its 40th CUDA call): GPU 0
# takes the rest, nothing is lost, its images equal the one-GPU run's.
expect_exit 0 "GPU 1 fails mid-set" -- env PSFSIM_GPU_FAIL_DEVICE=1 PSFSIM_GPU_FAIL_AT=40 \
  "$PSFSIM" --backend gpu --gpus 0,1 -c set.cfg -o fail1
expect_stderr 'GPU 1: .*injected fault at CUDA call 40.*on the CPU, the other GPUs take the rest' \
  "the failing GPU is named"
rows=$(($(wc -l <fail1/m_manifest.csv) - 1))
[ "$rows" -eq $n ] && pass "all $n images listed" || fail "$rows of $n images listed"
bad=0
while IFS=, read -r idx png fits rest; do
  [ -f "fail1/$fits" ] || bad=$((bad + 1))
done < <(tail -n +2 fail1/m_manifest.csv)
[ "$bad" -eq 0 ] && pass "every listed image present" || fail "$bad images missing"
gpu_same=0 gpu_rows=0
while IFS=, read -r -a f; do
  [ "${f[15]}" = gpu ] || continue
  gpu_rows=$((gpu_rows + 1))
  cmp -s "fail1/${f[2]}" "one/${f[2]}" && gpu_same=$((gpu_same + 1))
done < <(tail -n +2 fail1/m_manifest.csv)
[ "$gpu_same" -eq "$gpu_rows" ] && [ "$gpu_rows" -gt 0 ] &&
  pass "the $gpu_rows GPU images equal the one-GPU run's" || fail "$gpu_same of $gpu_rows GPU images equal"

# GPU 1 cannot start (a fault at its 3rd call, in create): left out.
expect_exit 0 "GPU 1 cannot start" -- env PSFSIM_GPU_FAIL_DEVICE=1 PSFSIM_GPU_FAIL_AT=3 \
  "$PSFSIM" --backend gpu --gpus 0,1 -c set.cfg -o nostart
expect_stderr 'GPU 1: .*the other GPUs take its images' "the GPU left out is named"
same_set nostart "GPU 1 left out"

expect_exit 2 "--gpus naming a missing device" -- "$PSFSIM" --backend gpu --gpus 0,99 -c set.cfg -o bad
expect_stderr 'device 99 asked for, but [0-9]+ are visible' "the missing device is named"
[ ! -e bad ] && pass "nothing written" || fail "the output directory was made"
finish
