# SPDX-License-Identifier: BSD-3-Clause
# psfsim's optional modules (app/base/module_loader.h, issue 4): a PNG-only run
# never maps cfitsio, libcurl, cairo, CUDA or a BLAS/LAPACK (loaded by the
# retrieval's Fisher step alone: lib/fit/lapack.h); FITS output loads the FITS
# module; and a psfsim without its modules beside it still makes PNG
# images, fails FITS with a message naming the missing module, and skips
# the --probe plot with a message.
bin=$PSFSIM # the binary itself (lib_e2e.sh may wrap PSFSIM in valgrind)
source "$(dirname "$0")/lib_e2e.sh"
export PSFSIM_CACHE_DIR="$SCRATCH/cache"
unset PSFSIM_FITS_MODULE PSFSIM_PLOT_MODULE PSFSIM_GPU_MODULE
cfg() { # name extra-output-keys
  printf 'name = "%s";\noptics: { wavelength_nm = 500; aperture: { diameter_m = 1; }; };\n' "$1"
  printf 'sampling: { pupil_samples = 32; };\noutput: { %s };\n' "$2"
}
cfg png '' >png.cfg
cfg fits 'fits: { enabled = true; };' >fits.cfg

# Which libraries a run maps: the dynamic linker's own list (LD_DEBUG=libs),
# with a warm probe cache (the probe itself starts CUDA and writes FITS): on
# a GPU machine the cached figures then say the CPU wins this tiny set.
"$bin" -q --probe -o probe >/dev/null 2>&1 || fail "psfsim --probe"
LD_DEBUG=libs LD_DEBUG_OUTPUT="$SCRATCH/ld" "$bin" -q -c png.cfg -o png >/dev/null 2>&1
rc=$?
[ "$rc" -eq 0 ] && pass "PNG-only run (exit 0)" || fail "PNG-only run: exit $rc"
maps=$(cat "$SCRATCH"/ld.* 2>/dev/null | grep -c "calling init")
[ "$maps" -gt 0 ] && pass "LD_DEBUG=libs lists the libraries ($maps)" || fail "no LD_DEBUG output"
bad=$(cat "$SCRATCH"/ld.* 2>/dev/null | grep "calling init" | grep -Ei "cfitsio|curl|cairo|libcuda|cufft|psfsim-|blas|lapack")
[ -z "$bad" ] && pass "PNG-only run maps no cfitsio, curl, cairo, CUDA or BLAS" || fail "PNG-only run maps: $bad"
rm -f "$SCRATCH"/ld.*
LD_DEBUG=libs LD_DEBUG_OUTPUT="$SCRATCH/ld" "$bin" -q -c fits.cfg -o fits >/dev/null 2>&1
rc=$?
[ "$rc" -eq 0 ] && [ -s fits/fits_0.fits ] && pass "FITS run writes fits_0.fits" || fail "FITS run: exit $rc"
cat "$SCRATCH"/ld.* 2>/dev/null | grep "calling init" | grep -q "libpsfsim-fits.so" &&
  pass "FITS run loads libpsfsim-fits.so" || fail "FITS run: no libpsfsim-fits.so in LD_DEBUG"
rm -f "$SCRATCH"/ld.*

# The same binary with no module beside it (nor one or two levels up).
mkdir -p lone/a/b
cp "$bin" lone/a/b/psfsim
lone="$SCRATCH/lone/a/b/psfsim"
expect_exit 0 "lone psfsim: PNG-only run" -- "$lone" -q -c png.cfg -o lone_png
expect_exit 2 "lone psfsim: FITS output is refused before any work" -- "$lone" -q -c fits.cfg -o lone_fits
expect_stderr "fits\.cfg: output\.fits: cannot load FITS support: no libpsfsim-fits\.so in $SCRATCH/lone/a/b" \
  "lone psfsim: the message names the config, the key and the missing module"
[ ! -e lone_fits ] && pass "lone psfsim: nothing written" || fail "lone psfsim: the output directory was made"
printf 'aberrations: { opd_map: { file = "%s"; scale = 1.0; }; };\n' "$SCRATCH/fits/fits_0.fits" >>png.cfg
expect_exit 2 "lone psfsim: a FITS OPD map is a config error" -- "$lone" -q -c png.cfg -o lone_map
expect_stderr "fits_0\.fits: cannot load FITS support: no libpsfsim-fits\.so" \
  "lone psfsim: the map message names the file and the missing module"
module=$(dirname "$bin")/libpsfsim-fits.so
PSFSIM_FITS_MODULE="$module" expect_exit 0 "lone psfsim, PSFSIM_FITS_MODULE: FITS output" -- \
  "$lone" -q -c fits.cfg -o lone_fits2
[ -s lone_fits2/fits_0.fits ] && pass "PSFSIM_FITS_MODULE: fits_0.fits written" || fail "no FITS"
PSFSIM_FITS_MODULE="$SCRATCH/png.cfg" expect_exit 2 "lone psfsim, a module that is no library" -- \
  "$lone" -q -c fits.cfg -o lone_fits3
expect_stderr "output\.fits: cannot load FITS support: .*png\.cfg" "not a library: dlopen's reason"
expect_exit 0 "lone psfsim: --probe" -- "$lone" --probe -o lone_probe
grep -Eq "plot not written: (psfsim was built without cairo|the plot module is missing) \(no libpsfsim-plot.so" "$SCRATCH/stdout" &&
  pass "lone psfsim: --probe skips the plot with a message" || fail "--probe: $(grep plot "$SCRATCH/stdout")"
[ -s lone_probe/psfsim_probe.csv ] && pass "lone psfsim: probe CSV written" || fail "no probe CSV"
if "$bin" --version | grep -q 'GPU: CUDA'; then # built with CUDA: the lone copy says what is missing
  "$lone" --version | grep -q 'the GPU module, libpsfsim-gpu.so, is missing' &&
    pass "lone psfsim --version: the GPU module is missing, not 'built without'" ||
    fail "lone --version: $("$lone" --version | head -1)"
  cfg plain '' >plain.cfg
  expect_exit 2 "lone psfsim --backend gpu" -- "$lone" -q --backend gpu -c plain.cfg -o lone_gpu
  expect_stderr "the CUDA backend's module is missing: no libpsfsim-gpu.so in" \
    "lone --backend gpu: names the missing module"
fi

# A GPU module of another psfsim version (its table's abi is not this
# psfsim's: tests/support/stale_gpu_module.c) is refused with a message,
# never called through.
if [ -n "${PSFSIM_STALE_GPU_MODULE:-}" ]; then
  cfg stale '' >stale.cfg
  PSFSIM_GPU_MODULE="$PSFSIM_STALE_GPU_MODULE" expect_exit 2 "a stale GPU module: --backend gpu" -- \
    "$bin" -q --backend gpu -c stale.cfg -o stale_gpu
  expect_stderr "backend gpu: cannot load the CUDA backend: .*stale_gpu_module\.so is of another psfsim version" \
    "a stale GPU module: the message names it and says why"
  PSFSIM_GPU_MODULE="$PSFSIM_STALE_GPU_MODULE" expect_exit 0 "a stale GPU module: auto computes on the CPU" -- \
    "$bin" -q -c stale.cfg -o stale_auto
  [ -s stale_auto/stale_0.png ] && pass "a stale GPU module: stale_0.png written" || fail "no PNG"
fi

# --version says what it checked: the module is loaded and its table
# checked (no device), so a file at $PSFSIM_GPU_MODULE that is no GPU
# module, or one of another version, is no GPU backend.
echo "not a library" >notamodule.so
PSFSIM_GPU_MODULE="$SCRATCH/notamodule.so" expect_exit 0 "--version, a GPU module path naming no module" -- \
  "$bin" --version
! grep -q 'GPU: CUDA' "$SCRATCH/stdout" && grep -q '(CPU: FFTW3; the GPU module cannot be used)' "$SCRATCH/stdout" &&
  pass "--version claims no GPU backend for a file that is no module" || fail "--version: $(head -1 "$SCRATCH/stdout")"
grep -q "^GPU module: cannot load the CUDA backend: .*notamodule\.so" "$SCRATCH/stdout" &&
  pass "--version says why the file is no GPU module" || fail "--version: $(cat "$SCRATCH/stdout")"
if [ -n "${PSFSIM_STALE_GPU_MODULE:-}" ]; then
  PSFSIM_GPU_MODULE="$PSFSIM_STALE_GPU_MODULE" expect_exit 0 "--version, a stale GPU module" -- "$bin" --version
  ! grep -q 'GPU: CUDA' "$SCRATCH/stdout" && grep -q "^GPU module: .*stale_gpu_module\.so is of another psfsim version" "$SCRATCH/stdout" &&
    pass "--version claims no GPU backend for a stale module" || fail "--version: $(cat "$SCRATCH/stdout")"
fi
if "$bin" --version | grep -q 'GPU: CUDA'; then
  "$bin" --version | grep -q "^GPU module: .*libpsfsim-gpu\.so (loaded, its table checked; no device checked)" &&
    pass "--version names the GPU module it loaded" || fail "--version: $("$bin" --version)"
fi

# A module path the user gives is the only one tried, even with a module
# beside psfsim: a wrong one is an error, not silently another module.
PSFSIM_FITS_MODULE="$SCRATCH/none.so" expect_exit 2 "PSFSIM_FITS_MODULE naming no file" -- \
  "$bin" -q -c fits.cfg -o wrong_module
expect_stderr "no libpsfsim-fits\.so at $SCRATCH/none\.so \(\\\$PSFSIM_FITS_MODULE\)" \
  "the message names the variable and its path"
finish
