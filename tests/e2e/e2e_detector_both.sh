#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# detector.write = "both" (docs/config.md, "detector"): each FITS file holds
# the oversampled image as the primary HDU OVERSAMP and the detector image
# as the extension DET_SAMP, WebbPSF's pair. DET_SAMP equals the
# "detector" run's image bit for bit (the host samples the grid with the
# backends' arithmetic), OVERSAMP the "oversampled" run's to float32
# rounding (the "peak" scale s^2 is applied in another order), and each
# HDU's keywords are its run's; the PNG and the manifest's rows are the
# "detector" run's; DET_SAMP is OVERSAMP as docs/conventions.md says (the
# sample at each pixel's centre in psfsim's frame, WebbPSF's s x s binning
# in POPPY's); the files are the same bytes on -j 1, -j 3 and 2 lanes;
# fitsverify finds them clean. FFT and MFT (odd M, "sum", POPPY's
# orientation; pixels in lambda/D, arcsec and um: the oversampled image's
# pixel, header, manifest and NAME.h5, is the detector's over s whichever
# key gave it, which a fixed angle once did not). Refused combinations (a cube, noise, neither FITS nor
# HDF5) exit 2 with FILE:LINE: KEY and write nothing; with HDF5 it runs. The HDF5 file and NAME.json record the detector's settings
# (root attributes, "detector" object) and have none without the group.
source "$(dirname "$0")/lib_e2e.sh"
export PSFSIM_CACHE_DIR="$SCRATCH/cache"
cd "$SCRATCH" || exit 1
PY=$(e2e_python numpy astropy h5py) || PY=""
[ -n "$PY" ] || { echo "skipped: no python3 imports numpy, astropy and h5py"; exit 77; }
# The three runs compared are on the CPU, or on the GPU with
# PSFSIM_E2E_BACKEND=gpu (a GPU machine's check of the same sampling).
BOTH_BACKEND=${PSFSIM_E2E_BACKEND:-cpu}
det_cfg() { # name write output-extra top-extra
  cat <<CFG
name = "$1";
optics: { wavelength_nm = 600.0; f_number = 10.0; aperture: { diameter_m = 1.0; obscuration = 0.2; }; };
sampling: { pupil_samples = 32; };
sweep: { defocus = [0.0, 0.3, 0.6]; };
${4:-}
output: { png: { enabled = true; }; fits: { enabled = true; }; ${3:-} };
detector: { oversample = 3; jitter_mas = [5.0, 8.0]; charge_diffusion_px = 0.25;
            ipc = [0.0, 0.02, 0.0, 0.02, 0.92, 0.02, 0.0, 0.02, 0.0]; write = "$2"; };
CFG
}
compare() { # case: runs d, o, b of it and compares them
  local c=$1
  for w in detector oversampled both; do
    expect_exit 0 "$c: write = $w" -- "$PSFSIM" -q --backend "$BOTH_BACKEND" -c ${c}_$w.cfg -o ${c}_$w
  done
  if "$PY" - "$c" "$BOTH_BACKEND" <<'PY'; then pass "$c: DET_SAMP = the detector run's, OVERSAMP = the oversampled run's, keywords"; else fail "$c: the HDUs"; fi
import sys
import numpy as np
from astropy.io import fits
c = sys.argv[1]
exact = sys.argv[2] == "cpu"
bad = 0
for k in range(3):
    b = fits.open(f"{c}_both/{c}_{k}.fits")
    d = fits.open(f"{c}_detector/{c}_{k}.fits")[0]
    o = fits.open(f"{c}_oversampled/{c}_{k}.fits")[0]
    if [h.name for h in b] != ["OVERSAMP", "DET_SAMP"]:
        print("HDUs", [h.name for h in b]); bad += 1
    if b[1].data.dtype != np.dtype(">f4") or b[0].data.dtype != np.dtype(">f4"):
        print("not float32"); bad += 1
    # The CPU samples the grid in both runs: the same bits. The GPU's
    # "detector" run folds the spectrum (gpu/detector.h) where "both"
    # samples the grid it returns: the same image to float rounding.
    if exact and not np.array_equal(b["DET_SAMP"].data, d.data) or \
            np.abs(b["DET_SAMP"].data - d.data).max() > 1e-5 * d.data.max():
        print(k, "DET_SAMP differs from the detector run's"); bad += 1
    # The documented relation (docs/conventions.md, "The detector"): in
    # psfsim's frame DET_SAMP = f OVERSAMP[i s + o][j s + o] (f = 1 for
    # "peak", s^2 for "sum"), in POPPY's the s x s blocks' sum from (0, 0),
    # WebbPSF's binning (times 1/s^2 for "peak"), in the written frames.
    s = b[0].header["OVERSAMP"]
    ov, de = b["OVERSAMP"].data.astype(np.float64), b["DET_SAMP"].data.astype(np.float64)
    m = de.shape[0]
    peak = b[0].header["NORMALIZ"] == "peak"
    if b[0].header.get("IMORIENT") == "poppy":
        want = ov.reshape(m, s, m, s).sum(axis=(1, 3)) / (s * s if peak else 1)
    else:
        o0 = (s * m) // 2 - s * (m // 2)
        want = ov[o0::s, o0::s] * (1 if peak else s * s)
    if np.abs(de - want).max() > 1e-6 * want.max():
        print(k, "DET_SAMP is not OVERSAMP as documented", np.abs(de - want).max() / want.max()); bad += 1
    if b[0].data.shape != o.data.shape or \
            np.abs(b["OVERSAMP"].data - o.data).max() > 1e-6 * o.data.max():
        print(k, "OVERSAMP differs from the oversampled run's"); bad += 1
    for h, r in ((b[0], o), (b[1], d)):
        for key in ("NPIX", "PIXSCLLD", "PIXELSCL", "PIXSCLUM", "CDELT1", "CRPIX1", "FOV", "PADDING",
                    "STREHL", "AXIALINT", "EXTNAME", "OVERSAMP", "DET_SAMP", "DETJITX", "DETDIFF",
                    "DETIPC", "DETPIXR", "NAXIS1"):
            x, y = h.header.get(key), r.header.get(key)
            if isinstance(y, float) and isinstance(x, float):
                ok = abs(x - y) <= 1e-5 * abs(y) + 1e-9  # metrics of float32 images
            else:
                ok = x == y
            if not ok:
                print(k, h.name, key, x, y); bad += 1
    if b[0].header["OVERSAMP"] != 3 or b[1].header["OVERSAMP"] != 1 or b[1].header["DET_SAMP"] != 3:
        print("OVERSAMP/DET_SAMP values"); bad += 1
    # The oversampled image's pixel is the detector pixel over s = 3, in
    # every unit, whichever key gave it (a fixed angle once said the
    # detector pixel there), and its field (FOV, 3 M of them) the same.
    for key in ("PIXSCLLD", "PIXELSCL", "PIXSCLUM", "CDELT1", "FOV"):
        x, y = o.header.get(key), d.header.get(key)
        f = 1 if key == "FOV" else 3
        if (x is None) != (y is None) or (x is not None and abs(f * x - y) > 1e-12 * abs(y)):
            print(k, "oversampled", key, x, "detector", y); bad += 1
import csv
rows = {w: list(csv.DictReader(open(f"{c}_{w}/{c}_manifest.csv"))) for w in ("detector", "oversampled")}
for rd, ro in zip(rows["detector"], rows["oversampled"]):
    for key in ("pixel_scale_lambda_d", "pixel_scale_arcsec", "pixel_scale_um"):
        if rd[key] and abs(3 * float(ro[key]) - float(rd[key])) > 1e-9 * float(rd[key]):
            print("manifest", key, ro[key], rd[key]); bad += 1
sys.exit(1 if bad else 0)
PY
  # PNG levels and the manifest's printed metrics: bit for bit on the CPU only.
  [ "$BOTH_BACKEND" = cpu ] || { echo "note: $BOTH_BACKEND: PNGs and manifest rows not compared"; return 0; }
  local d=0
  for f in ${c}_detector/*.png; do cmp -s "$f" "${c}_both/$(basename "$f")" || d=$((d + 1)); done
  [ "$d" -eq 0 ] && pass "$c: the PNGs are the detector run's" || fail "$c: $d PNG(s) differ"
  # The manifests differ only in config_hash (the configs differ in write).
  if diff <(cut -d, -f1-16 ${c}_detector/${c}_manifest.csv) <(cut -d, -f1-16 ${c}_both/${c}_manifest.csv) >/dev/null; then
    pass "$c: the manifest's rows are the detector run's"
  else
    fail "$c: manifests"; diff ${c}_detector/${c}_manifest.csv ${c}_both/${c}_manifest.csv | head
  fi
  command -v fitsverify >/dev/null || { echo "note: no fitsverify here: $c's files not verified"; return 0; }
  for f in ${c}_both/*.fits; do
    log=$(fitsverify "$f" 2>&1)
    echo "$log" | grep -q "found 0 warning(s) and 0 error(s)" && pass "fitsverify: $f clean" ||
      { fail "fitsverify: $f"; echo "$log" | tail -20; }
  done
}
for w in detector oversampled both; do
  det_cfg fft "$w" >fft_$w.cfg
  det_cfg mft "$w" 'npix = 21; pixel_scale = 0.4; orientation = "poppy";' 'normalization = "sum";' >mft_$w.cfg
  det_cfg mfta "$w" 'npix = 21; pixel_scale_arcsec = 0.04;' >mfta_$w.cfg
  det_cfg mftu "$w" 'npix = 21; pixel_scale_um = 2.5;' >mftu_$w.cfg
done
compare fft
compare mft
compare mfta # a fixed angle: the oversampled pixel is the key's over s
compare mftu
expect_exit 0 "both, -j 3" -- "$PSFSIM" -q --backend cpu -j 3 -c fft_both.cfg -o fft_j3
expect_exit 0 "both, 2 lanes" -- env PSFSIM_TEST_LANES=2 "$PSFSIM" -q --backend cpu -c fft_both.cfg -o fft_l2
# the -j 1 run to compare with: compare's own on the CPU, else one here
ref=fft_both
if [ "$BOTH_BACKEND" != cpu ]; then
  expect_exit 0 "both, -j 1 on the CPU" -- "$PSFSIM" -q --backend cpu -c fft_both.cfg -o fft_cpu
  ref=fft_cpu
fi
d=0
for f in $ref/*.fits $ref/*.png; do
  cmp -s "$f" "fft_j3/$(basename "$f")" || d=$((d + 1))
  cmp -s "$f" "fft_l2/$(basename "$f")" || d=$((d + 1))
done
[ "$d" -eq 0 ] && pass "both: the same bytes on -j 1, -j 3 and 2 lanes" || fail "both: $d file(s) differ"

# HDF5 and NAME.json record the detector's settings; without the group none.
for w in detector oversampled; do
  det_cfg h_$w "$w" 'hdf5: { enabled = true; };' >h_$w.cfg
  expect_exit 0 "hdf5, write = $w" -- "$PSFSIM" -q --backend cpu -c h_$w.cfg -o h_$w
done
sed '/^detector: {/,$d' h_detector.cfg | sed 's/name = "h_detector"/name = "h_none"/' >h_none.cfg
expect_exit 0 "hdf5, no detector group" -- "$PSFSIM" -q --backend cpu -c h_none.cfg -o h_none
if "$PY" - <<'PY'; then pass "HDF5 attributes and NAME.json: the detector's settings, none without the group"; else fail "HDF5/JSON detector settings"; fi
import json, sys
import h5py
bad = 0
for w in ("detector", "oversampled"):
    with h5py.File(f"h_{w}/h_{w}.h5", "r") as f:
        a = {k: f.attrs[k] for k in f.attrs if k.startswith("detector_")}
        j = json.load(open(f"h_{w}/h_{w}.json"))["detector"]
        ipc = "0,0.02,0,0.02,0.92,0.02,0,0.02,0"
        # jitter 5, 8 mas through the detector pixel (0.5 lambda/D at 600 nm, 1 m)
        pix_mas = 0.5 * 600e-9 / 1.0 * 180 / 3.141592653589793 * 3600e3
        want = {"detector_oversample": 3, "detector_write": w, "detector_pixel_response": 1,
                "detector_charge_diffusion_px": 0.25, "detector_ipc": ipc}
        for k, v in want.items():
            x = a.get(k)
            x = x.decode() if isinstance(x, bytes) else x
            if x != v:
                print(w, k, x, v); bad += 1
        for k, v in (("detector_jitter_x_px", 5.0 / pix_mas), ("detector_jitter_y_px", 8.0 / pix_mas)):
            if abs(a.get(k, -1) - v) > 1e-9 * v:
                print(w, k, a.get(k), v); bad += 1
        if j["oversample"] != 3 or j["write"] != w or j["pixel_response"] is not True or \
                j["charge_diffusion_px"] != 0.25 or len(j["ipc"]) != 9 or j["ipc"][4] != 0.92 or \
                abs(j["jitter_px"][0] - a["detector_jitter_x_px"]) > 0 or \
                abs(j["jitter_px"][1] - a["detector_jitter_y_px"]) > 0:
            print(w, "json", j); bad += 1
with h5py.File("h_none/h_none.h5", "r") as f:
    if any(k.startswith("detector") for k in f.attrs):
        print("attributes without the group"); bad += 1
if "detector" in json.load(open("h_none/h_none.json")):
    print("json detector without the group"); bad += 1
sys.exit(1 if bad else 0)
PY

# Refused: FILE:LINE: detector.write (line 8 holds it) and nothing written.
refuse() { # name sed-expression-on-the-config pattern
  det_cfg "$1" both | sed "$2" >bad_$1.cfg
  rm -rf out
  expect_exit 2 "both refused: $1" -- "$PSFSIM" -q --backend cpu -c bad_$1.cfg -o out
  expect_stderr "bad_$1.cfg:8: detector.write: \"both\" $3" "both refused: $1: message"
  if [ -z "$(ls -A out 2>/dev/null)" ]; then pass "$1: nothing written"; else fail "$1: files written"; fi
}
refuse cube 's/fits: { enabled = true; }/fits: { enabled = true; cube = true; }/' 'is not for output.fits.cube \(a plane holds one image\): give "detector" or "oversampled"'
# With HDF5 "both" is written (two datasets: tests/e2e/e2e_hdf5_detector.sh checks them).
det_cfg hb both 'hdf5: { enabled = true; };' >hb.cfg
expect_exit 0 "both with HDF5" -- "$PSFSIM" -q --backend cpu -c hb.cfg -o hb
[ -f hb/hb.h5 ] && [ -f hb/hb_0.fits ] && pass "both with HDF5: hb.h5 and the FITS files" || fail "hb: $(ls hb)"
det_cfg hba both 'npix = 21; pixel_scale_arcsec = 0.04; hdf5: { enabled = true; };' >hba.cfg
expect_exit 0 "both with HDF5, arcsec pixels" -- "$PSFSIM" -q --backend cpu -c hba.cfg -o hba
if "$PY" - <<'PY'; then pass "hba.h5: the oversampled dataset's pixel is the detector's over s"; else fail "hba.h5 pixel attributes"; fi
import sys
import h5py
with h5py.File("hba/hba.h5", "r") as f:
    i, o = f["images"].attrs, f["oversampled"].attrs
    bad = [k for k in ("pixel_scale_arcsec", "pixel_scale_lambda_d", "pixel_scale_um")
           if abs(3 * o[k] - i[k]) > 1e-12 * i[k]]
    bad += [] if abs(i["pixel_scale_arcsec"] - 0.04) < 1e-15 else ["images arcsec"]
print(bad)
sys.exit(1 if bad else 0)
PY
refuse nofits 's/fits: { enabled = true; }/fits: { enabled = false; }/' 'needs output.fits.enabled = true \(its two images are FITS HDUs\)'
refuse noise 's/^detector: {/detector: { noise: { seed = 1; };/' 'is not for detector.noise \(its NOISY extension is one image.s\): give "detector" or "oversampled"'
finish
