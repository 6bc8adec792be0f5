# SPDX-License-Identifier: BSD-3-Clause
# The FFT libraries' versions: psfsim --version prints FFTW's and cuFFT's
# (from the GPU module, which needs no device for it; "not loaded" without
# the module), and the timing log's summary has fftw_version and
# cufft_version rows (a CPU run does not load the module for it).
source "$(dirname "$0")/lib_e2e.sh"
export PSFSIM_CACHE_DIR="$SCRATCH/cache"
unset PSFSIM_GPU_MODULE
expect_exit 0 "--version" -- "$PSFSIM" --version
grep -Eq '^FFTW: fftw-3\.[0-9]+' "$SCRATCH/stdout" && pass "--version: FFTW's version" || fail "--version: $(cat "$SCRATCH/stdout")"
if grep -q 'GPU: CUDA' "$SCRATCH/stdout"; then
  grep -Eq '^cuFFT: [0-9]+\.[0-9]+\.[0-9]+ \(built with [0-9]+\.[0-9]+\.[0-9]+, CUDA runtime [0-9]+\.[0-9]+\)$' "$SCRATCH/stdout" &&
    pass "--version: cuFFT's version from the GPU module" || fail "--version: $(cat "$SCRATCH/stdout")"
else
  grep -q '^cuFFT: not loaded$' "$SCRATCH/stdout" && pass "--version without a GPU module: cuFFT not loaded" ||
    fail "--version: $(cat "$SCRATCH/stdout")"
fi
PSFSIM_GPU_MODULE="$SCRATCH/none.so" expect_exit 0 "--version, no GPU module at the path given" -- "$PSFSIM" --version
grep -q '^cuFFT: not loaded$' "$SCRATCH/stdout" && pass "--version, no module: cuFFT not loaded" ||
  fail "--version: $(cat "$SCRATCH/stdout")"

printf 'name = "v";\noptics: { wavelength_nm = 500; aperture: { diameter_m = 1; }; };\nsampling: { pupil_samples = 32; };\n' >v.cfg
expect_exit 0 "a CPU run" -- "$PSFSIM" --backend cpu -c v.cfg -o v
fftw=$(grep '^FFTW: ' <("$PSFSIM" --version) | cut -d' ' -f2)
grep -qx "fftw_version,,,,,,,\"$fftw\"" v/v_timing.csv && pass "timing log: fftw_version row ($fftw)" ||
  fail "timing log: no fftw_version row: $(grep version v/v_timing.csv)"
grep -qx 'cufft_version,,,,,,,"not loaded"' v/v_timing.csv && pass "timing log of a CPU run: cuFFT not loaded" ||
  fail "timing log: $(grep version v/v_timing.csv)"
finish
