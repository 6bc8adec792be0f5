#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# detector.noise (docs/config.md): each FITS file keeps the noiseless image
# and gets a NOISY extension whose ADU are the same bits on -j 1, -j 3 and
# 3 lanes (a pure function of seed, image and pixel); another seed changes
# them; bad keys exit 2 with FILE:LINE: KEY and write nothing.
source "$(dirname "$0")/lib_e2e.sh"
export PSFSIM_CACHE_DIR="$SCRATCH/cache"
cd "$SCRATCH" || exit 1
noise_cfg() { # name noise-group output-extra
  cat <<CFG
name = "$1";
optics: { wavelength_nm = 600.0; aperture: { diameter_m = 1.0; }; };
sampling: { pupil_samples = 32; padding = 2.0; };
sweep: { defocus = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]; };
normalization = "sum";
detector: { noise: { $2 }; };
output: { png: { enabled = false; }; fits: { enabled = true; }; ${3:-} };
CFG
}
noise_cfg nz 'flux_photons = 1e5; background_e = 100.0; read_noise_e = 5.0; gain_e_per_adu = 2.0; bits = 16; seed = 1;' >nz.cfg
expect_exit 0 "noise, -j 1" -- "$PSFSIM" -q --backend cpu -j 1 -c nz.cfg -o j1
expect_exit 0 "noise, -j 3" -- "$PSFSIM" -q --backend cpu -j 3 -c nz.cfg -o j3
expect_exit 0 "noise, 3 lanes" -- env PSFSIM_TEST_LANES=3 "$PSFSIM" -q --backend cpu -c nz.cfg -o l3
d=0
for f in j1/*.fits; do
  cmp -s "$f" "j3/$(basename "$f")" || d=$((d + 1))
  cmp -s "$f" "l3/$(basename "$f")" || d=$((d + 1))
done
[ "$d" -eq 0 ] && pass "noisy files the same bits on -j 1, -j 3 and 3 lanes" || fail "$d file(s) differ"
noise_cfg nz 'background_e = 100.0; seed = 2;' >nz2.cfg
expect_exit 0 "noise, seed 2" -- "$PSFSIM" -q --backend cpu -c nz2.cfg -o s2
noise_cfg nz '' '' | sed '/^detector/d' >plain.cfg
expect_exit 0 "without noise" -- "$PSFSIM" -q --backend cpu -c plain.cfg -o plain
if command -v python3 >/dev/null && python3 -c 'import numpy, astropy' 2>/dev/null; then
  if python3 - j1 s2 plain <<'PY'; then pass "the extension holds the model's ADU; the primary is the noiseless image"; else fail "NOISY extension"; fi
import sys
import numpy as np
from astropy.io import fits
j1, s2, plain = sys.argv[1:]
for k in range(6):
    a = fits.open("%s/nz_%d.fits" % (j1, k))
    b = fits.open("%s/nz_%d.fits" % (s2, k))
    p = fits.open("%s/nz_%d.fits" % (plain, k))
    assert len(p) == 1 and len(a) == 2 and a[1].header["EXTNAME"] == "NOISY"
    assert np.array_equal(a[0].data, p[0].data)  # the noiseless image stays
    h = a[1].header
    assert h["BITPIX"] == 16 and h["BZERO"] == 32768 and h["NSEED"] == 1 and h["NIMAGE"] == k
    adu = a[1].data.astype(float)
    assert a[1].data.dtype == np.uint16 and adu.min() >= 0 and adu.max() <= 65535
    mu = 1e5 * a[0].data.astype(float) + 100.0
    # sum over the image: mean sum(mu)/gain, variance sum(mu + 25)/gain^2 (+ rounding 1/12 each)
    n = adu.size
    se = np.sqrt((mu + 25.0).sum() / 4.0 + n / 12.0)
    assert abs(adu.sum() - mu.sum() / 2.0) < 5 * se, (adu.sum(), mu.sum() / 2)
    # residuals over the background pixels: variance (100 + 25) / 4 + 1/12
    # (the background keeps the clamp at 0 nine sigmas away)
    bg = mu < 100.5
    r = adu[bg] - mu[bg] / 2.0
    assert bg.sum() > 1000 and abs(r.var() - (125.0 / 4 + 1.0 / 12)) < 0.1 * (125.0 / 4), r.var()
    assert not np.array_equal(a[1].data, b[1].data)
PY
else echo "skip: python3 with numpy and astropy not found"; fi

nothing_written() {
  if [ -z "$(ls -A "$SCRATCH/out" 2>/dev/null)" ]; then pass "$1: nothing written"; else
    fail "$1: files were written:"; ls -la "$SCRATCH/out"; fi
}
bad_case() { # WHAT CFG PATTERN: CFG exits 2, its message matches, nothing is written
  expect_exit 2 "$1" -- "$PSFSIM" -c "$2" -o out
  expect_stderr "$3" "$1: message"
  nothing_written "$1"
}
noise_cfg bad 'gain_e_per_adu = 0.0;' >bad1.cfg
bad_case "gain 0" bad1.cfg 'bad1.cfg:6: detector.noise.gain_e_per_adu: must be >= 1e-06 \(got 0\)'
noise_cfg bad 'bits = 17;' >bad2.cfg
bad_case "17 bits" bad2.cfg 'bad2.cfg:6: detector.noise.bits: must be <= 16 \(got 17\)'
noise_cfg bad 'read_nosie_e = 3.0;' >bad3.cfg
bad_case "misspelt key" bad3.cfg \
  'bad3.cfg:6: detector.noise.read_nosie_e: unknown key \(did you mean detector.noise.read_noise_e\?\)'
noise_cfg bad 'seed = -1;' >bad4.cfg
bad_case "negative seed" bad4.cfg 'bad4.cfg:6: detector.noise.seed: must be >= 0 \(got -1\)'
noise_cfg bad 'flux_photons = -5.0;' >bad5.cfg
bad_case "negative flux" bad5.cfg 'bad5.cfg:6: detector.noise.flux_photons: must be >= 0 \(got -5\)'
noise_cfg bad 'seed = 3;' | sed 's/fits: { enabled = true; }; /fits: { enabled = true; cube = true; }; /' >bad6.cfg
bad_case "with a cube" bad6.cfg 'bad6.cfg:6: detector.noise: not with output.fits.cube'
noise_cfg bad 'seed = 3;' | sed 's/png: { enabled = false; }; fits: { enabled = true; }; /png: { enabled = true; }; /' >bad7.cfg
bad_case "PNG only" bad7.cfg 'bad7.cfg:6: detector.noise: needs output.fits.enabled = true or output.hdf5.enabled = true'
finish
