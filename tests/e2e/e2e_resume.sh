# SPDX-License-Identifier: BSD-3-Clause
# Interrupt a run with SIGINT mid-set: every file present is complete, the
# manifest lists exactly those, exit 130; --resume completes the set and the
# final files equal an uninterrupted run's, byte for byte.
source "$(dirname "$0")/lib_e2e.sh"
export PSFSIM_CACHE_DIR="$SCRATCH/cache"
# 5 defocus values x 80 of term 11 (under the wrapper 48: 240 images; it
# stops after the batches of 64 in flight, 128 or 192).
nz=$(e2e_size 80 48)
values=$(awk -v n=$nz 'BEGIN { for (i = 0; i < n; ++i) printf "%s%.2f", (i ? ", " : ""), i * 0.01 }')
cat >set.cfg <<CFG
name = "r";
optics: { wavelength_nm = 600; aperture: { diameter_m = 1.0; obscuration = 0.2; }; };
sampling: { pupil_samples = 128; padding = 2.0; };
aberrations: { zernike = ((8, 0.05)); };
sweep: { defocus = [-1.0, -0.5, 0.0, 0.5, 1.0]; zernike = ((11, [$values])); };
output: { png: { compression = 6; }; fits: { enabled = true; }; };
CFG
n=$((5 * nz))
# The reference not under the wrapper: its code paths are the resume's.
expect_exit 0 "uninterrupted reference run" -- "$PSFSIM_UNWRAPPED" -q --backend cpu -j 1 -c set.cfg -o ref
[ "$(ls ref/*.png | wc -l)" -eq $n ] && pass "reference: $n PNGs" || fail "reference PNG count"

complete_png() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
  tail -c 8 "$1" | od -An -c | grep -q "I   E   N   D"; }
complete_fits() { local s; s=$(stat -c %s "$1"); [ $((s % 2880)) -eq 0 ] && [ "$(head -c 6 "$1")" = SIMPLE ]; }

"$PSFSIM" -q --backend cpu -j 1 -c set.cfg -o part >"$SCRATCH/stdout" 2>"$SCRATCH/stderr" &
pid=$!
# Interrupt once some images exist (at most ~20 s of waiting).
for _ in $(seq 200); do [ "$(ls part 2>/dev/null | grep -c '\.png$')" -ge 20 ] && break; sleep 0.1; done
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 130 ] && pass "SIGINT: exit 130" || fail "SIGINT: exit $rc"
grep -q "interrupted:.*--resume" "$SCRATCH/stderr" && pass "SIGINT: says how to resume" || fail "no resume hint"
have=$(ls part | grep -c '\.png$')
[ "$have" -gt 0 ] && [ "$have" -lt $n ] && pass "interrupted mid-set ($have of $n PNGs)" || fail "not mid-set: $have"
bad=0
for f in part/*.png; do complete_png "$f" || bad=$((bad + 1)); done
for f in part/*.fits; do complete_fits "$f" || bad=$((bad + 1)); done
[ $bad -eq 0 ] && pass "every file present is complete" || fail "$bad incomplete files"
[ -z "$(ls -A part | grep '^\.')" ] && pass "no temp files left" || fail "temp files left: $(ls -A part | grep '^\.')"
listed=$(tail -n +2 part/r_manifest.csv | awk -F, '{print $2; print $3}' | sort)
present=$(ls part | grep -e '\.png$' -e '\.fits$' | sort)
[ "$listed" = "$present" ] && pass "manifest lists exactly the files present" || fail "manifest differs from the files"

expect_exit 0 "--resume" -- "$PSFSIM" -q --backend cpu -j 1 --resume -c set.cfg -o part
[ "$(ls part/*.png | wc -l)" -eq $n ] && pass "resumed set complete" || fail "resumed PNG count"
diffs=0
for f in ref/*.png ref/*.fits; do cmp -s "$f" "part/$(basename "$f")" || diffs=$((diffs + 1)); done
[ $diffs -eq 0 ] && pass "all $((2 * n)) files equal the uninterrupted run's" || fail "$diffs files differ"
cut -d, -f1-15 ref/r_manifest.csv >a.csv
cut -d, -f1-15 part/r_manifest.csv >b.csv
cmp -s a.csv b.csv && pass "manifest equals the uninterrupted run's (index..axial_intensity)" || fail "manifest differs"

expect_exit 0 "--resume of a complete set computes nothing" -- "$PSFSIM" -v --backend cpu --resume -c set.cfg -o part
grep -q "resuming: $n image(s) done earlier" "$SCRATCH/stderr" && pass "nothing to redo" || fail "resume count"

sed 's/0.05)); };/0.06)); };/' set.cfg >other.cfg
sed -i 's/name = "r"/name = "r"/' other.cfg
expect_exit 2 "--resume with another config" -- "$PSFSIM" --resume -c other.cfg -o part
expect_stderr 'written for another config.*--force' "another config: message"
expect_exit 2 "--force with --resume" -- "$PSFSIM" --force --resume -c set.cfg -o part
finish
