# SPDX-License-Identifier: BSD-3-Clause
# The multi-device queue (issue 7: one image set shared by several GPUs)
# exercised without GPUs: PSFSIM_TEST_LANES=n makes a CPU run compute with
# n CPU lanes taking batches from one queue, as n GPUs do. Checks: every
# image byte for byte equal to a one-lane run's, the manifest equal row for
# row (sorted by index at the end, though the lanes finish out of order),
# the lanes' image counts in the timing log adding up to the set, a FITS
# cube equal, and SIGINT then --resume completing the set.
source "$(dirname "$0")/lib_e2e.sh"
export PSFSIM_CACHE_DIR="$SCRATCH/cache"
vals=$(awk 'BEGIN { for (i = 0; i < 300; ++i) printf "%s%.5f", (i ? ", " : ""), -1 + 2 * i / 299 }')
cat >set.cfg <<CFG
name = "q";
optics: { wavelength_nm = 600; aperture: { diameter_m = 1.0; obscuration = 0.2; }; };
sampling: { pupil_samples = 32; padding = 2.0; };
aberrations: { zernike = ((8, 0.05)); };
sweep: { defocus = [ $vals ]; };
output: { png: { bits = 16; }; fits: { enabled = true; }; };
CFG
n=300
# The one-lane references not under the wrapper: their code paths are every
# plain run's (and the resume's).
expect_exit 0 "one lane (reference)" -- "$PSFSIM_UNWRAPPED" -q --backend cpu -c set.cfg -o one
expect_exit 0 "three lanes" -- env PSFSIM_TEST_LANES=3 "$PSFSIM" -v --backend cpu -c set.cfg -o three
diff -q <(cut -d, -f1-15 one/q_manifest.csv) <(cut -d, -f1-15 three/q_manifest.csv) >/dev/null &&
  pass "manifests equal (sorted by index)" || fail "manifests differ"
diff -q one/q_manifest.csv three/q_manifest.csv >/dev/null && pass "manifests equal byte for byte" ||
  fail "manifests differ in a later column"
bad=0
for f in one/*.png one/*.fits; do cmp -s "$f" "three/${f#one/}" || bad=$((bad + 1)); done
[ "$bad" -eq 0 ] && pass "all $((2 * n)) image files identical" || fail "$bad image files differ"
lanes=$(grep -c '^lane_' three/q_timing.csv)
sum=$(grep '^lane_' three/q_timing.csv | awk -F, '{ s += $7 } END { print s + 0 }')
[ "$lanes" -eq 3 ] && [ "$sum" -eq $n ] && pass "timing log: 3 lanes, $sum images in all" ||
  fail "timing log: $lanes lane rows, $sum images"
rows=$(grep -c '^[0-9]' three/q_timing.csv)
sorted=$(grep '^[0-9]' three/q_timing.csv | cut -d, -f1 | sort -n -c 2>&1 && echo yes)
[ "$rows" -eq $n ] && [ "$sorted" = yes ] && pass "timing log: $n rows in index order" ||
  fail "timing log: $rows rows, sorted: $sorted"
expect_stderr 'lane 2: [0-9]+ image' "-v names each lane's share"

# A FITS cube is written by plane index: equal whatever the lanes.
sed 's/fits: { enabled = true; }/fits: { enabled = true; cube = true; }/' set.cfg >cube.cfg
expect_exit 0 "cube, one lane" -- "$PSFSIM_UNWRAPPED" -q --backend cpu -c cube.cfg -o cube1
expect_exit 0 "cube, three lanes" -- env PSFSIM_TEST_LANES=3 "$PSFSIM" -q --backend cpu -c cube.cfg -o cube3
cmp -s cube1/q_cube.fits cube3/q_cube.fits && pass "FITS cubes identical" || fail "FITS cubes differ"

# Interrupted with lanes in flight (more images than the 3 x 2 batches of
# 64 they hold), then resumed with lanes again. Under the wrapper 640
# images (it stops once the 384 in flight are done).
nb=$(e2e_size 1200 640)
bvals=$(awk -v n=$nb 'BEGIN { for (i = 0; i < n; ++i) printf "%s%.6f", (i ? ", " : ""), -1 + 2 * i / (n - 1) }')
sed -e 's/pupil_samples = 32/pupil_samples = 64/' -e "s/defocus = \[.*\]/defocus = [ $bvals ]/" \
  -e 's/bits = 16;/bits = 16; compression = 9;/' set.cfg >big.cfg
expect_exit 0 "big set, one lane (reference)" -- "$PSFSIM_UNWRAPPED" -q --backend cpu -j 1 -c big.cfg -o bigref
PSFSIM_TEST_LANES=3 "$PSFSIM" -q --backend cpu -j 1 -c big.cfg -o part >"$SCRATCH/stdout" 2>"$SCRATCH/stderr" &
pid=$!
for _ in $(seq 300); do [ "$(ls part 2>/dev/null | grep -c '\.png$')" -ge 20 ] && break; sleep 0.1; done
kill -INT $pid
wait $pid
rc=$?
have=$(ls part | grep -c '\.png$')
[ $rc -eq 130 ] && pass "SIGINT with 3 lanes: exit 130" || fail "SIGINT: exit $rc"
[ "$have" -gt 0 ] && [ "$have" -lt $nb ] && pass "interrupted mid-set ($have of $nb PNGs)" || fail "not mid-set: $have"
listed=$(tail -n +2 part/q_manifest.csv | awk -F, '{print $2; print $3}' | sort)
present=$(ls part | grep -e '\.png$' -e '\.fits$' | sort)
[ "$listed" = "$present" ] && pass "manifest lists exactly the files present" || fail "manifest differs from the files"
expect_exit 0 "--resume with 3 lanes" -- env PSFSIM_TEST_LANES=3 "$PSFSIM" -q --resume --backend cpu -c big.cfg -o part
diff -q bigref/q_manifest.csv part/q_manifest.csv >/dev/null && pass "resumed manifest equals the reference" ||
  fail "resumed manifest differs"
bad=0
for f in bigref/*.png bigref/*.fits; do cmp -s "$f" "part/${f#bigref/}" || bad=$((bad + 1)); done
[ "$bad" -eq 0 ] && pass "resumed set identical to the reference" || fail "$bad files differ after --resume"
finish
