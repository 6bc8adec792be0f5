# SPDX-License-Identifier: BSD-3-Clause
# The PSF of a segmented aperture (18 segments, gaps, struts) against an
# independent NumPy rasterisation and FFT (segments_reference.py): relative
# L2 difference <= 1e-6 with binary edges (the same point test, so only
# float rounding differs), <= 1e-3 with grey edges (psfsim's exact cell
# fractions against 16 x 16 points per sample). Skipped (77) without NumPy.
source "$(dirname "$0")/lib_e2e.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
"$PY" -c 'import numpy' 2>/dev/null || { echo "skipped: no NumPy"; exit 77; }
for edge in binary grey; do
  cat >seg_$edge.cfg <<CFG
name = "seg_$edge";
optics: { wavelength_nm = 2000.0; f_number = 20.0;
  aperture: { shape = "segmented"; edge = "$edge";
    segments: { flat_to_flat_m = 1.32; gap_m = 0.007; rings = 2; missing = [0]; };
    spiders: { count = 3; width_m = 0.1; angle_deg = 90.0; }; }; };
sampling: { pupil_samples = 128; padding = 2.0; };
output: { png: { enabled = false; }; fits: { enabled = true; }; };
CFG
  expect_exit 0 "$edge edges: psfsim runs" -- "$PSFSIM" -q -c seg_$edge.cfg -o out_$edge --backend cpu
  l2=$("$PY" "$SRC/tests/e2e/segments_reference.py" out_$edge/seg_${edge}_0.fits $edge)
  bound=$([ $edge = binary ] && echo 1e-6 || echo 1e-3)
  awk -v a="$l2" -v b="$bound" 'BEGIN { exit !(a + 0 <= b + 0) }' &&
    pass "$edge edges: relative L2 to NumPy $l2 <= $bound" || fail "$edge edges: relative L2 to NumPy $l2 > $bound"
done
finish
