# SPDX-License-Identifier: BSD-3-Clause
# psfsim --probe: table, CSV and plot; an unwritable cache is reported once
# and does not stop the run; auto without a GPU picks the CPU silently.
source "$(dirname "$0")/lib_e2e.sh"
mkdir -p probe
PSFSIM_CACHE_DIR="$SCRATCH/cache" expect_exit 0 "--probe" -- "$PSFSIM" --probe -o probe
grep -q "crossover at batch 1" "$SCRATCH/stdout" && pass "--probe prints the crossover" || fail "no crossover line"
grep -Eq '^ +256 +[0-9.]+ ' "$SCRATCH/stdout" && pass "--probe table has N = 256" || fail "no 256 row"
[ "$(head -1 probe/psfsim_probe.csv)" = "npix,cpu_us,gpu_b1_us,winner_b1,big_batch,gpu_bb_us_per_image,winner_bb,cpu_create_us,gpu_create_us" ] &&
  pass "CSV header" || fail "CSV header: $(head -1 probe/psfsim_probe.csv)"
[ "$(wc -l <probe/psfsim_probe.csv)" -eq 6 ] && pass "CSV has 5 sizes" || fail "CSV rows"
if grep -q "plot not written" "$SCRATCH/stdout"; then pass "built without cairo: plot skipped with a message"; else
  head -c 8 probe/psfsim_probe.png | od -An -tx1 | grep -q "89 50 4e 47" && pass "PNG plot written" || fail "no PNG plot"; fi
[ -f cache/probe.txt ] && pass "figures cached" || fail "no cache file"

touch notadir
PSFSIM_CACHE_DIR="$SCRATCH/notadir/cache" expect_exit 0 "--probe with an unwritable cache" -- "$PSFSIM" --probe -o probe
[ "$(grep -c "cannot cache" "$SCRATCH/stderr")" -eq 1 ] && pass "unwritable cache: said once" || fail "unwritable cache message count"

if [ -d /proc/driver/nvidia/gpus ] && [ -n "$(ls /proc/driver/nvidia/gpus 2>/dev/null)" ]; then
  echo "a GPU is present: the no-GPU auto check does not apply"
else
  printf 'name = "tiny";\noptics: { wavelength_nm = 500; aperture: { diameter_m = 1; }; };\nsampling: { pupil_samples = 32; };\n' >tiny.cfg
  PSFSIM_CACHE_DIR="$SCRATCH/cache2" expect_exit 0 "auto without a GPU" -- "$PSFSIM" -c tiny.cfg -o tiny
  [ ! -s "$SCRATCH/stderr" ] && pass "auto without a GPU: no error output" || fail "stderr not empty"
  [ "$(awk -F, 'NR == 2 { print $16 }' tiny/tiny_manifest.csv)" = cpu ] && pass "auto chose the CPU" || fail "manifest backend"
  [ ! -e cache2/probe.txt ] && pass "no probe was run (no figures cached)" || fail "probe ran without a GPU"
fi
# No NVIDIA kernel driver: CUDA's own words ("CUDA driver version is
# insufficient for CUDA runtime version") would blame an old driver.
if [ ! -e /proc/driver/nvidia/version ] && "$PSFSIM" --version | grep -q 'GPU: CUDA'; then
  printf 'name = "nodrv";\noptics: { wavelength_nm = 500; aperture: { diameter_m = 1; }; };\nsampling: { pupil_samples = 32; };\n' >nodrv.cfg
  PSFSIM_CACHE_DIR="$SCRATCH/cache3" expect_exit 2 "--backend gpu without a driver" -- "$PSFSIM" --backend gpu -c nodrv.cfg -o nodrv
  expect_stderr '^psfsim: backend gpu: no NVIDIA GPU on this machine \(no CUDA device: no NVIDIA driver \(no /proc/driver/nvidia/version\)\)$' \
    "--backend gpu without a driver: says no NVIDIA driver"
  ! grep -q 'insufficient' "$SCRATCH/stderr" && pass "--backend gpu: no word of an old driver" || fail "blames the driver's version"
  PSFSIM_CACHE_DIR="$SCRATCH/cache3" expect_exit 0 "--probe without a driver" -- "$PSFSIM" --probe -o probe3
  expect_stderr 'no usable GPU: gpu probe: no CUDA device: no NVIDIA driver' "--probe without a driver: says no NVIDIA driver"
fi
finish
