# SPDX-License-Identifier: BSD-3-Clause
# Random and listed sets (sweep.random, sweep.table; docs/config.md):
#  1. a random set is the same bits on -j 1, -j 4 and 3 lanes, and after
#     SIGINT + --resume (images and manifests byte for byte);
#  2. every sampled image of a random set equals the one-image run of its
#     own total coefficients (the manifest's z<j>) as fixed terms;
#  3. the manifest's z<j> equal the FITS headers' Z<j> for every image, and
#     the labels are what the Python recipe (draws_reference.py) gives;
#  4. a listed set from a CSV equals the fixed configs of its rows.
source "$(dirname "$0")/lib_e2e.sh"
export PSFSIM_CACHE_DIR="$SCRATCH/cache"

# 200 draws: two explicit terms, a spectrum, a focus shift and a wavelength
# chosen per draw, on top of a fixed term. Modes in the set's order
# (jobs.h): 11 (fixed), 4, 7 (random.zernike), 5, 6 (spectrum).
random_cfg() { # name count pupil_samples
  cat <<CFG
name = "$1";
optics: { wavelength_nm = 600.0; f_number = 12.0; aperture: { diameter_m = 1.0; obscuration = 0.2; }; };
sampling: { pupil_samples = $3; padding = 2.0; };
aberrations: { zernike = ((11, 0.03)); };
sweep: {
  random: {
    count = $2; seed = 20240607;
    zernike = ((4, "normal", 0.05), (7, "uniform", 0.02));
    spectrum: { j_min = 5; j_max = 6; total_rms = 0.04; power = -2.0; };
    focus_shift_um = [-60.0, 0.0, 60.0];
    wavelength_nm = [550.0, 650.0];
  };
};
output: { png: { bits = 16; compression = 6; }; fits: { enabled = true; }; };
CFG
}
same_files() { # dirA dirB: how many of A's images differ from B's
  local d=0 f
  for f in "$1"/*.png "$1"/*.fits; do cmp -s "$f" "$2/$(basename "$f")" || d=$((d + 1)); done
  echo $d
}
random_cfg rn 200 32 >rn.cfg
n=200

# 1. Determinism.
expect_exit 0 "random set, -j 1" -- "$PSFSIM" -q --backend cpu -j 1 -c rn.cfg -o j1
expect_exit 0 "random set, -j 4" -- "$PSFSIM" -q --backend cpu -j 4 -c rn.cfg -o j4
expect_exit 0 "random set, 3 lanes" -- env PSFSIM_TEST_LANES=3 "$PSFSIM" -q --backend cpu -c rn.cfg -o l3
[ "$(ls j1/*.png | wc -l)" -eq $n ] && pass "$n PNGs" || fail "PNG count $(ls j1/*.png | wc -l)"
for d in j4 l3; do
  [ "$(same_files j1 $d)" -eq 0 ] && pass "$d: every image equals -j 1's" || fail "$d: $(same_files j1 $d) images differ"
  cmp -s j1/rn_manifest.csv $d/rn_manifest.csv && pass "$d: manifest equals -j 1's byte for byte" ||
    fail "$d: manifest differs"
done
head -1 j1/rn_manifest.csv | grep -q ',config_hash,draw,seed,z4,z5,z6,z7,z11$' &&
  pass "manifest header: draw, seed, then z<j> ascending" || fail "header: $(head -1 j1/rn_manifest.csv)"
awk -F, 'NR > 1 && ($18 != NR - 2 || $19 != 20240607) { bad++ } END { exit bad > 0 }' j1/rn_manifest.csv &&
  pass "draw = index, seed on every row" || fail "draw/seed cells"

# Interrupted and resumed (400 images of 256 x 256, one writer: slow enough
# to stop mid-set). Under the wrapper 256 images: it stops after the batches
# of 64 in flight, 128 or 192 images. (The reference runs under it too: the
# manifests compared byte for byte are valgrind's, whose long double is a
# double's, which csv_exact's digits can tell.)
nr=$(e2e_size 400 256)
random_cfg rr $nr 128 >rr.cfg
expect_exit 0 "big random set (reference)" -- "$PSFSIM" -q --backend cpu -j 1 -c rr.cfg -o rref
"$PSFSIM" -q --backend cpu -j 1 -c rr.cfg -o rpart >"$SCRATCH/stdout" 2>"$SCRATCH/stderr" &
pid=$!
for _ in $(seq 300); do [ "$(ls rpart 2>/dev/null | grep -c '\.png$')" -ge 20 ] && break; sleep 0.1; done
kill -INT $pid
wait $pid
rc=$?
have=$(ls rpart | grep -c '\.png$')
[ $rc -eq 130 ] && [ "$have" -lt $nr ] && pass "SIGINT mid-set ($have of $nr)" || fail "SIGINT: exit $rc, $have PNGs"
expect_exit 0 "--resume" -- "$PSFSIM" -v --backend cpu -j 1 --resume -c rr.cfg -o rpart
expect_stderr "resuming: $have image\(s\) done earlier" "--resume keeps the $have rows with label columns"
[ "$(same_files rref rpart)" -eq 0 ] && pass "resumed: every image equals the reference's" ||
  fail "resumed: $(same_files rref rpart) images differ"
cmp -s rref/rr_manifest.csv rpart/rr_manifest.csv && pass "resumed manifest equals the reference's byte for byte" ||
  fail "resumed manifest differs"

# 2. Twenty images, each against one run of its own coefficients. The fixed
# terms are written in the set's mode order (11, 4, 7, 5, 6) so that the
# pupil's sum runs in the same order; the wavelength is the one drawn.
# Under the wrapper the first one-image run only: the others take its code
# paths with other numbers.
col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
M=j1/rn_manifest.csv
cw=$(col $M wavelength_nm)
bad=0
one=$PSFSIM
for d in $(seq 0 10 190); do
  row=$(awk -F, -v r=$((d + 2)) 'NR == r' $M)
  z() { echo "$row" | cut -d, -f"$(col $M "z$1")"; }
  wl=$(echo "$row" | cut -d, -f$cw)
  cat >one_$d.cfg <<CFG
name = "o";
optics: { wavelength_nm = $wl; f_number = 12.0; aperture: { diameter_m = 1.0; obscuration = 0.2; }; };
sampling: { pupil_samples = 32; padding = 2.0; };
aberrations: { zernike = ((11, $(z 11)), (4, $(z 4)), (7, $(z 7)), (5, $(z 5)), (6, $(z 6))); };
output: { png: { bits = 16; compression = 6; }; fits: { enabled = true; }; };
CFG
  "$one" -q --backend cpu -c one_$d.cfg -o one_$d >/dev/null 2>&1 || { bad=$((bad + 1)); continue; }
  one=$PSFSIM_UNWRAPPED
  k=$(printf '%03d' $d)
  cmp -s one_$d/o_0.png j1/rn_$k.png || bad=$((bad + 1))
  # FITS: the data (64 x 64 float32, padded to 2880) byte for byte.
  cmp -s <(tail -c 17280 one_$d/o_0.fits) <(tail -c 17280 j1/rn_$k.fits) || bad=$((bad + 1))
done
[ $bad -eq 0 ] && pass "20 sampled images equal their one-image runs (PNG and FITS data)" ||
  fail "$bad sampled images differ from their one-image runs"

# 3. The manifest's z<j> against the FITS headers' Z<j>, every image.
fits_z() { # file j: the header's Z<j> value
  head -c 5760 "$1" | fold -w 80 | awk -v k="Z$2" '$1 == k { sub(/^[^=]*= */, ""); sub(/ *\/.*/, ""); print; exit }'
}
bad=0
for j in 4 5 6 7 11; do
  c=$(col $M "z$j")
  for k in $(seq 0 $((n - 1))); do
    mv=$(awk -F, -v r=$((k + 2)) -v c=$c 'NR == r { print $c }' $M)
    fv=$(fits_z "j1/rn_$(printf '%03d' $k).fits" $j)
    awk -v a="$mv" -v b="$fv" 'BEGIN { exit !(a + 0 == b + 0 && a != "") }' || bad=$((bad + 1))
  done
done
[ $bad -eq 0 ] && pass "z<j> equal the FITS headers' Z<j> ($n images, 5 terms)" || fail "$bad z<j> cells differ from Z<j>"

# The labels regenerated with the documented recipe (docs/config.md): the
# drawn terms, the choices, and z4 where the focus shift chosen is 0.
if command -v python3 >/dev/null; then
  if python3 - "$SRC/tests/app/set" $M <<'PY'; then
import csv, sys
sys.path.insert(0, sys.argv[1])
import draws_reference as R
seed, bad = 20240607, 0
sig = R.spectrum_sigma("noll", 5, 6, 0.04, -2.0)
for row in csv.DictReader(open(sys.argv[2])):
    d = int(row["draw"])
    want = {"z7": R.uniform(seed, d, 7, 0, 0.02), "z5": R.normal(seed, d, 5, 0, sig[0]),
            "z6": R.normal(seed, d, 6, 0, sig[1]), "z11": 0.03}
    fs = [-60.0, 0.0, 60.0][R.choice(seed, d, 0, 1, 3)]
    wl = [550.0, 650.0][R.choice(seed, d, 0, 2, 2)]
    if fs == 0.0:
        want["z4"] = R.normal(seed, d, 4, 0, 0.05)
    bad += sum(float(row[k]) != v for k, v in want.items())
    bad += float(row["focus_shift_um"]) != fs or float(row["wavelength_nm"]) != wl
sys.exit(bad > 0)
PY
    pass "labels equal the Python recipe's bit for bit"
  else fail "labels differ from the Python recipe"; fi
else echo "note: no python3, the recipe check skipped"; fi

# 4. A listed set: 2 swept values of term 8 x 4 table rows (rows inner),
# against one fixed config per image (under the wrapper the first only:
# the others take its code paths). Modes: 11 (fixed), 8 (swept), 5, 7
# (table columns), 4 (the defocus column).
cat >rows.csv <<'CSV'
wavelength_nm, defocus, z5, z7
550, 0.1, 0.02, 0
650, -0.15, 0, 0.03
600.5, 0, -0.04, 0.01
500, 0.25, 0.01, -0.02
CSV
cat >ls.cfg <<'CFG'
name = "ls";
optics: { aperture: { diameter_m = 1.0; obscuration = 0.2; }; };
sampling: { pupil_samples = 32; padding = 2.0; };
aberrations: { zernike = ((11, 0.03)); };
sweep: { zernike = ((8, [0.0, 0.02])); table = "rows.csv"; };
output: { png: { bits = 16; }; fits: { enabled = true; }; };
CFG
expect_exit 0 "listed set" -- "$PSFSIM" -q --backend cpu -c ls.cfg -o lsout
bad=0
k=0
fixed=$PSFSIM
for v8 in 0.0 0.02; do
  while IFS=, read -r wl df z5 z7; do
    cat >fix.cfg <<CFG
name = "f";
optics: { wavelength_nm = $wl; aperture: { diameter_m = 1.0; obscuration = 0.2; }; };
sampling: { pupil_samples = 32; padding = 2.0; };
aberrations: { zernike = ((11, 0.03), (8, $v8), (5, $z5), (7, $z7), (4, $df)); };
output: { png: { bits = 16; }; fits: { enabled = true; }; };
CFG
    # Each failure named (the run's exit, or which file differs), and the
    # files kept beside the set's for a look after a failure.
    "$fixed" -q --backend cpu --force -c fix.cfg -o fix >fix_$k.log 2>&1 ||
      { bad=$((bad + 1)); echo "note: listed image $k: the fixed config's run failed: $(tail -3 fix_$k.log)"; }
    fixed=$PSFSIM_UNWRAPPED
    cmp -s fix/f_0.png lsout/ls_$k.png || { bad=$((bad + 1)); echo "note: listed image $k: PNG differs"; }
    cmp -s <(tail -c 17280 fix/f_0.fits) <(tail -c 17280 lsout/ls_$k.fits) ||
      { bad=$((bad + 1)); echo "note: listed image $k: FITS data differ"; }
    cp fix/f_0.png fix_$k.png 2>/dev/null
    cp fix/f_0.fits fix_$k.fits 2>/dev/null
    k=$((k + 1))
  done < <(tail -n +2 rows.csv | tr -d ' ')
done
[ $bad -eq 0 ] && [ $k -eq 8 ] && pass "listed set: 8 images equal their fixed configs" ||
  fail "listed set: $bad of $k images differ"
head -1 lsout/ls_manifest.csv | grep -q ',config_hash,z4,z5,z7,z8,z11$' &&
  pass "listed set: z<j> columns, no draw/seed" || fail "listed header: $(head -1 lsout/ls_manifest.csv)"
awk -F, 'NR == 4 { exit !($4 == "600.5" && $5 == "0" && $7 == "8" && $8 == "0") }' lsout/ls_manifest.csv &&
  pass "listed set: row 2's wavelength and defocus in their columns" || fail "listed set: row 2's cells"
finish
