#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# output.hdf5 with detector.write = "both" and with detector.noise
# (docs/config.md, "NAME.h5"): "both" writes the detector images as images
# and the oversampled ones as oversampled, equal bit for bit to the FITS
# files' DET_SAMP and OVERSAMP HDUs of the same run, with WebbPSF's
# EXTNAME/OVERSAMP/DET_SAMP and each dataset's pixel as attributes; without
# FITS the same datasets; uint16: each the stretch of its own image.
# detector.noise: images stays the noiseless images, noisy (uint16) equals
# the FITS NOISY extension bit for bit, with its keywords as attributes. A
# "both" set killed mid-run (kill -9) and resumed equals an uninterrupted
# run byte for byte in every dataset. Skipped (77) without a python3 that
# imports h5py, numpy and astropy.
source "$(dirname "$0")/lib_e2e.sh"
export PSFSIM_CACHE_DIR="$SCRATCH/cache"
cd "$SCRATCH" || exit 1
PY=$(e2e_python numpy astropy h5py) || PY=""
[ -n "$PY" ] || { echo "skipped: no python3 imports numpy, astropy and h5py"; exit 77; }
h5() { "$PY" "$SRC/tests/e2e/h5_check.py" "$@" >"$SCRATCH/py.out" 2>&1; }
h5_ok() { if h5 "$@"; then pass "$(tail -1 "$SCRATCH/py.out")"; else
  fail "h5_check.py $*"; sed 's/^/  /' "$SCRATCH/py.out"; fi; }
cfg() { # name detector-extra output-extra
  cat <<CFG
name = "$1";
optics: { wavelength_nm = 600.0; f_number = 10.0; aperture: { diameter_m = 1.0; obscuration = 0.2; }; };
sampling: { pupil_samples = 32; };
sweep: { defocus = [0.0, 0.3, 0.6, 0.9, 1.2]; };
output: { png: { enabled = false; }; $3 };
detector: { oversample = 3; jitter_mas = [5.0, 8.0]; charge_diffusion_px = 0.25; $2 };
CFG
}
cfg b 'write = "both";' 'fits: { enabled = true; }; hdf5: { enabled = true; compression = "gzip"; };' >b.cfg
cfg h 'write = "both";' 'hdf5: { enabled = true; compression = "gzip"; };' >h.cfg
cfg n 'noise: { background_e = 50.0; seed = 7; };' 'fits: { enabled = true; }; hdf5: { enabled = true; };' >n.cfg
cfg m 'noise: { background_e = 50.0; seed = 7; };' 'hdf5: { enabled = true; dtype = "uint16"; };' >m.cfg
cfg u 'write = "both";' 'png: { enabled = false; bits = 16; stretch = "log"; }; hdf5: { enabled = true; dtype = "uint16"; };' |
  sed 's/output: { png: { enabled = false; }; /output: { /' >u.cfg
cfg d 'write = "detector";' 'png: { enabled = false; bits = 16; stretch = "log"; }; hdf5: { enabled = true; dtype = "uint16"; };' |
  sed 's/output: { png: { enabled = false; }; /output: { /' >d.cfg
for c in b h n m u d; do
  expect_exit 0 "$c: the set" -- "$PSFSIM" -q --backend cpu -c $c.cfg -o $c
done
if "$PY" - <<'PY'; then pass "both: images = DET_SAMP, oversampled = OVERSAMP bit for bit, attributes; noisy = NOISY bit for bit"; else fail "the HDF5 datasets against the FITS HDUs"; fi
import sys
import h5py
import numpy as np
from astropy.io import fits
bad = 0
def le(a):  # the FITS data as little-endian bytes
    return np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes()
with h5py.File("b/b.h5", "r") as f, h5py.File("h/h.h5", "r") as g:
    im, ov = f["images"], f["oversampled"]
    if im.shape != (5, 64, 64) or ov.shape != (5, 192, 192) or ov.dtype != np.float32:
        print("shapes", im.shape, ov.shape, ov.dtype); bad += 1
    if ov.chunks[0] != im.chunks[0] or ov.compression != "gzip" or not ov.shuffle:
        print("chunks/filters", ov.chunks, im.chunks, ov.compression); bad += 1
    for k in range(5):
        h = fits.open(f"b/b_{k}.fits")
        if le(h["DET_SAMP"].data) != im[k].tobytes(): print(k, "images != DET_SAMP"); bad += 1
        if le(h["OVERSAMP"].data) != ov[k].tobytes(): print(k, "oversampled != OVERSAMP"); bad += 1
        for ds, hdu in ((im, h["DET_SAMP"]), (ov, h["OVERSAMP"])):
            a, hd = ds.attrs, hdu.header
            for key in ("EXTNAME", "OVERSAMP", "DET_SAMP"):
                if a[key] != hd[key]: print(key, a[key], hd[key]); bad += 1
            for key, fk in (("pixel_scale_lambda_d", "PIXSCLLD"), ("pixel_scale_arcsec", "PIXELSCL"),
                            ("pixel_scale_um", "PIXSCLUM")):
                if abs(a[key] - hd[fk]) > 1e-9 * hd[fk]: print(key, a[key], hd[fk]); bad += 1
    if ov.attrs["npix"] != 192 or f.attrs["detector_write"] != "both": print("npix, detector_write"); bad += 1
    for n in ("images", "oversampled"):
        if f[n][()].tobytes() != g[n][()].tobytes(): print(n, "differs without FITS"); bad += 1
with h5py.File("n/n.h5", "r") as f, h5py.File("m/m.h5", "r") as g:
    nz = f["noisy"]
    if nz.dtype != np.uint16 or nz.shape != (5, 64, 64) or "oversampled" in f: print("noisy", nz); bad += 1
    for k in range(5):
        h = fits.open(f"n/n_{k}.fits")
        if le(h[0].data) != f["images"][k].tobytes(): print(k, "images != the primary HDU"); bad += 1
        if le(h["NOISY"].data) != nz[k].tobytes(): print(k, "noisy != NOISY"); bad += 1
        for key in ("EXTNAME", "BUNIT", "NFLUX", "NBACKGR", "NREADN", "NGAIN", "NBITS", "NSEED"):
            if nz.attrs[key] != h["NOISY"].header[key]: print(key); bad += 1
    # uint16 images, noisy from the float image: the same draws
    if g["noisy"][()].tobytes() != nz[()].tobytes(): print("noisy differs with uint16 images"); bad += 1
with h5py.File("u/u.h5", "r") as f, h5py.File("d/d.h5", "r") as g:
    ov = f["oversampled"]
    if ov.dtype != np.uint16 or f["images"][()].tobytes() != g["images"][()].tobytes():
        print("uint16: images are not the detector run's levels"); bad += 1
    if any(int(ov[k].max()) != 65535 for k in range(5)) or ov.attrs["stretch"] != "log":
        print("uint16: oversampled is not its own image's stretch"); bad += 1
sys.exit(1 if bad else 0)
PY
h5_ok check b b none
h5_ok check n n none

# Still refused: a cube plane holds one image; "both" and noise together.
cfg c 'write = "both";' 'fits: { enabled = true; cube = true; }; hdf5: { enabled = true; };' >c.cfg
expect_exit 2 "both with a cube and HDF5" -- "$PSFSIM" -q --backend cpu -c c.cfg -o c
expect_stderr 'c.cfg:6: detector.write: "both" is not for output.fits.cube' "both with a cube: message"
[ ! -e c ] && pass "both with a cube: nothing written" || fail "c written"
cfg e 'write = "both"; noise: { seed = 1; };' 'hdf5: { enabled = true; };' >e.cfg
expect_exit 2 "both with noise" -- "$PSFSIM" -q --backend cpu -c e.cfg -o e
expect_stderr 'e.cfg:6: detector.write: "both" is not for detector.noise' "both with noise: message"
[ ! -e e ] && pass "both with noise: nothing written" || fail "e written"

# kill -9 mid-run of a "both" set, then --resume: every dataset equals an
# uninterrupted run's. PNG at level 9 slows the writers enough to be
# caught mid-set. The reference not under the wrapper: its code paths are
# the resume's. Under the wrapper 480 images, not 1200 (killed within
# seconds, before its first row, it left the resume all 1200).
nv=$(e2e_size 240 96)
values=$(awk -v n=$nv 'BEGIN { for (i = 0; i < n; ++i) printf "%s%.4f", (i ? ", " : ""), i * 0.001 }')
cat >k.cfg <<CFG
name = "k";
optics: { wavelength_nm = 600.0; aperture: { diameter_m = 1.0; obscuration = 0.2; }; };
sampling: { pupil_samples = 32; padding = 2.0; };
sweep: { defocus = [-1.0, -0.5, 0.0, 0.5, 1.0]; zernike = ((11, [$values])); };
output: { png: { compression = 9; }; hdf5: { enabled = true; compression = "gzip"; }; };
detector: { oversample = 2; write = "both"; };
CFG
expect_exit 0 "k: uninterrupted reference" -- "$PSFSIM_UNWRAPPED" -q --backend cpu -j 1 -c k.cfg -o k.ref
env PSFSIM_TEST_LANES=2 "$PSFSIM" -q --backend cpu -j 1 -c k.cfg -o k.part >/dev/null 2>&1 &
kill_mid_set $! k.part/k_manifest.csv $((5 * nv / 2)) $((5 * nv)) k
expect_exit 0 "k: --resume (2 lanes)" -- env PSFSIM_TEST_LANES=2 "$PSFSIM" -v --backend cpu -j 1 --resume -c k.cfg -o k.part
held=$(sed -n 's/.*resuming: k.h5 holds \([0-9]*\) image.*/\1/p' "$SCRATCH/stderr")
if [ -n "$held" ]; then pass "k: the temp file was continued ($held images in it)"
elif grep -q "was not resumed: it was interrupted while HDF5 wrote its metadata\|was not resumed: HDF5 cannot open it" "$SCRATCH/stderr"; then
  pass "k: killed mid-flush: the temp file was started afresh, as it says"
else fail "k: the temp file was not continued: $(grep resuming "$SCRATCH/stderr")"; fi
h5_ok same k.ref/k.h5 k.part/k.h5
h5_ok check k.part k none
finish
