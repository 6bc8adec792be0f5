#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A detector stage where the PSF is dark (the rings' zeros of an obscured,
# nearly unaberrated pupil, N = 256, the pixel response alone): the
# transforms' rounding made pixels of -1e-7 of the peak, which psfsim's
# check of every image refused ("NaN/negative pixels ... not written",
# exit 3: a user's random set lost a whole batch of images). The stage
# clamps its image at 0 (backend/detector.h, psf_detector_clamp): every
# image is written, the manifest lists all, and no pixel is negative. On
# the CPU, or on the GPU with PSFSIM_E2E_BACKEND=gpu (its separable path:
# N = 256 is a power of two).
source "$(dirname "$0")/lib_e2e.sh"
export PSFSIM_CACHE_DIR="$SCRATCH/cache"
cd "$SCRATCH" || exit 1
BACKEND=${PSFSIM_E2E_BACKEND:-cpu}
cat >dark.cfg <<'CFG'
name = "dark";
optics: { wavelength_nm = 700; aperture: { diameter_m = 2.0; obscuration = 0.3;
  spiders: { count = 4; width_m = 0.03; }; }; };
sampling: { pupil_samples = 128; padding = 2.0; };
sweep: { random: { count = 8; seed = 7; zernike = ((4, "normal", 0.02)); }; };
detector: { oversample = 2; pixel_response = true; };
output: { png: { enabled = false; }; fits: { enabled = true; }; };
CFG
expect_exit 0 "a dark detector set ($BACKEND)" -- "$PSFSIM" -q --backend "$BACKEND" -c dark.cfg -o out
n=$(ls out/dark_*.fits 2>/dev/null | wc -l)
rows=$(($(wc -l <out/dark_manifest.csv) - 1))
if [ "$n" -eq 8 ] && [ "$rows" -eq 8 ]; then pass "8 images written, 8 manifest rows"; else fail "$n images, $rows manifest rows (want 8)"; fi
PY=$(e2e_python numpy astropy) || PY=""
if [ -n "$PY" ]; then
  if "$PY" - <<'PY'; then pass "no negative pixel; zeros where the stage clamped"; else fail "pixel values"; fi
import glob, sys
import numpy as np
from astropy.io import fits
zeros = 0
for f in sorted(glob.glob("out/dark_*.fits")):
    d = fits.open(f)[0].data.astype(np.float64)
    if not np.all(np.isfinite(d)) or d.min() < 0:
        print(f, d.min()); sys.exit(1)
    zeros += int((d == 0).sum())
print("pixels clamped to 0:", zeros)
sys.exit(0 if zeros > 0 else 1)
PY
else
  echo "(no python3 with numpy and astropy: pixel values not read)"
fi
finish
