# SPDX-License-Identifier: BSD-3-Clause
# Per-segment wavefront terms of segmented apertures (docs/config.md,
# "Segmented apertures"): bad values of each new key give exit 2, a message
# naming file:line:key, and nothing written; the sweep axis's order and
# labels; a random set's labels against the documented recipe (Python, bit
# for bit), its images against one-image runs of the labels as fixed terms,
# and the same set with 1 and 2 threads.
source "$(dirname "$0")/lib_e2e.sh"
seg() { # $1: more segments keys; $2: the sweep block's body
  cat <<CFG
name = "s";
optics: { wavelength_nm = 1000.0; aperture: { shape = "segmented";
  segments: { flat_to_flat_m = 1.0; gap_m = 0.02; rings = 1; missing = [0]; $1 }; }; };
sampling: { pupil_samples = 48; padding = 2.0; };
sweep: { ${2:-} };
CFG
}
bad() { # name, config text, expected message (regex)
  echo "$2" >"$1.cfg"
  expect_exit 2 "$1" -- "$PSFSIM" -c "$1.cfg" -o "out_$1"
  expect_stderr "$3" "$1: message"
  [ ! -e "out_$1" ] && pass "$1: nothing written" || fail "$1: out_$1 was created"
}
FZ='optics.aperture.segments.zernike'
bad seg_range "$(seg 'zernike = ( (1, 1, 0.1), (7, 1, 0.1) );')" \
  "seg_range.cfg:3: $FZ\[1\]: the segment must be an index, an integer in \[0, 6\] for 1 ring \(got 7\)"
bad seg_missing "$(seg 'zernike = ( (0, 1, 0.1) );')" \
  "seg_missing.cfg:3: $FZ\[0\]: segment 0 is left out \(optics.aperture.segments.missing\): it has no wavefront"
bad seg_j "$(seg 'zernike = ( (2, 16, 0.1) );')" \
  "seg_j.cfg:3: $FZ\[0\]: j = 16 is of radial order 5: a segment's terms go up to radial order 4 \(Noll j <= 15; noll convention\)"
bad seg_j0 "$(seg 'zernike = ( (2, 0, 0.1) );')" "seg_j0.cfg:3: $FZ\[0\]: j must be >= 1 in the noll convention \(got 0\)"
bad seg_dup "$(seg 'zernike = ( (2, 1, 0.1),
  (2, 1, 0.2) );')" "seg_dup.cfg:4: $FZ\[1\]: duplicate term \(segment 2, j = 1\) \(first on line 3\)"
bad seg_pair "$(seg 'zernike = ( (2, 0.1) );')" "seg_pair.cfg:3: $FZ\[0\]: expected a triple \(segment, j, coefficient\) \(got 2 elements\)"
bad seg_big "$(seg 'zernike = ( (2, 1, 2e6) );')" "seg_big.cfg:3: $FZ\[0\]: the coefficient must be in \[-1000000, 1000000\]"
bad seg_type "$(seg 'zernike = 0.5;')" "seg_type.cfg:3: $FZ: "
bad sweep_range "$(seg '' 'segment_zernike = ( (3, 2, [0.0, 0.1]), (-1, 2, [0.1]) );')" \
  "sweep_range.cfg:5: sweep.segment_zernike\[1\]: the segment must be an index, an integer in \[0, 6\] for 1 ring \(got -1\)"
bad sweep_empty "$(seg '' 'segment_zernike = ( (3, 2, []) );')" "sweep_empty.cfg:5: sweep.segment_zernike\[0\]: must hold at least one value"
bad sweep_j "$(seg '' 'segment_zernike = ( (3, 21, [0.1]) );')" "sweep_j.cfg:5: sweep.segment_zernike\[0\]: j = 21 is of radial order 5"
bad random_j "$(seg '' 'random: { count = 2; seed = 1; segment_zernike = ( (1, "normal", 0.1), (16, "normal", 0.1) ); };')" \
  "random_j.cfg:5: sweep.random.segment_zernike\[1\]: j = 16 is of radial order 5"
bad random_dist "$(seg '' 'random: { count = 2; seed = 1; segment_zernike = ( (1, "gauss", 0.1) ); };')" \
  "random_dist.cfg:5: sweep.random.segment_zernike\[0\]: the distribution must be \"normal\" or \"uniform\" \(got \"gauss\"\)"
bad random_dup "$(seg '' 'random: { count = 2; seed = 1; segment_zernike = ( (1, "normal", 0.1), (1, "uniform", 0.1) ); };')" \
  "random_dup.cfg:5: sweep.random.segment_zernike\[1\]: duplicate term j = 1"
CIRC='name = "c"; optics: { wavelength_nm = 1000.0; aperture: { diameter_m = 1.0; }; };
sampling: { pupil_samples = 32; };'
bad circ_sweep "$CIRC
sweep: { segment_zernike = ( (0, 1, [0.1]) ); };" "circ_sweep.cfg:3: sweep.segment_zernike: only used with optics.aperture.shape = \"segmented\""
bad circ_random "$CIRC
sweep: { random: { count = 2; seed = 1; segment_zernike = ( (1, \"normal\", 0.1) ); }; };" \
  "circ_random.cfg:3: sweep.random.segment_zernike: only used with optics.aperture.shape = \"segmented\""
bad circ_fixed 'name = "c"; optics: { wavelength_nm = 1000.0; aperture: { diameter_m = 1.0;
  segments: { zernike = ( (0, 1, 0.1) ); }; }; }; sampling: { pupil_samples = 32; };' \
  'circ_fixed.cfg:2: optics.aperture.segments: only used with shape = "segmented"'

# The sweep axis: two entries, the last innermost, after sweep.zernike.
col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
seg 'zernike = ( (4, 1, 0.25) );' 'zernike = ( (4, [0.0, 0.1]) ); segment_zernike = ( (1, 1, [0.0, 0.5]), (2, 3, [-0.1, 0.0, 0.1]) );' >sw.cfg
expect_exit 0 "a segment sweep" -- "$PSFSIM" -q --backend cpu -c sw.cfg -o sw
M=sw/s_manifest.csv
[ "$(($(wc -l <$M) - 1))" -eq 12 ] && pass "2 x 2 x 3 images" || fail "$(($(wc -l <$M) - 1)) images, not 12"
h=$(head -1 $M | tr ',' '\n' | grep '^s[0-9]' | tr '\n' ' ')
[ "$h" = "s1_z1 s2_z3 s4_z1 " ] && pass "label columns s1_z1 s2_z3 s4_z1" || fail "label columns: $h"
got=$(awk -F, -v a=$(col $M zernike_coeff) -v b=$(col $M s1_z1) -v c=$(col $M s2_z3) -v d=$(col $M s4_z1) \
  'NR > 1 { printf "%s/%s/%s/%s ", $a, $b, $c, $d }' $M)
want="0/0/-0.1/0.25 0/0/0/0.25 0/0/0.1/0.25 0/0.5/-0.1/0.25 0/0.5/0/0.25 0/0.5/0.1/0.25 0.1/0/-0.1/0.25 0.1/0/0/0.25 0.1/0/0.1/0.25 0.1/0.5/-0.1/0.25 0.1/0.5/0/0.25 0.1/0.5/0.1/0.25 "
[ "$got" = "$want" ] && pass "axis order: sweep.zernike, then the segment entries, the last innermost" ||
  fail "axis order: $got"

# A random set: every present segment draws Noll 1 (normal, nm) and 3 (uniform).
RND='random: { count = 8; seed = 987654321; segment_zernike = ( (1, "normal", 60.0), (3, "uniform", 20.0) ); };'
seg '' "$RND" | sed 's/^sampling/aberrations: { units = "nm"; };\nsampling/' >rnd.cfg
expect_exit 0 "a random segment set, 1 thread" -- "$PSFSIM" -q --backend cpu -j 1 -c rnd.cfg -o r1
expect_exit 0 "a random segment set, 2 threads" -- "$PSFSIM" -q --backend cpu -j 2 -c rnd.cfg -o r2
M=r1/s_manifest.csv
same=0
for f in r1/*; do cmp -s "$f" "r2/$(basename "$f")" || case "$f" in *timing*) ;; *) same=$((same + 1)) ;; esac; done
[ $same -eq 0 ] && pass "1 and 2 threads: every file but the timing log identical" || fail "$same files differ"
h=$(head -1 $M | tr ',' '\n' | grep -c '^s[1-6]_z[13]$')
[ "$h" -eq 12 ] && pass "12 label columns (6 segments x 2 terms)" || fail "$h label columns"
if command -v python3 >/dev/null; then
  if python3 - "$SRC/tests/app/set" $M <<'PY'; then
import csv, sys
sys.path.insert(0, sys.argv[1])
import draws_reference as R
seed, bad = 987654321, 0
for row in csv.DictReader(open(sys.argv[2])):
    d = int(row["draw"])
    for s in range(1, 7):
        want1 = R.normal(seed, d, R.segment_term(s, 1), R.SEGMENT_ZERNIKE, 60.0)
        want3 = R.uniform(seed, d, R.segment_term(s, 3), R.SEGMENT_ZERNIKE, 20.0)
        bad += float(row["s%d_z1" % s]) != want1 or float(row["s%d_z3" % s]) != want3
sys.exit(bad > 0)
PY
    pass "segment labels equal the Python recipe's bit for bit"
  else fail "segment labels differ from the Python recipe"; fi
else echo "note: no python3, the recipe check skipped"; fi
# Each image against a run of its labels as fixed terms (same mode order).
bad=0
for d in 0 3 7; do
  row=$(awk -F, -v r=$((d + 2)) 'NR == r' $M)
  terms=""
  for s in 1 2 3 4 5 6; do
    for j in 1 3; do terms="$terms${terms:+, }($s, $j, $(echo "$row" | cut -d, -f"$(col $M s${s}_z$j)"))"; done
  done
  seg "zernike = ( $terms );" '' | sed 's/^sampling/aberrations: { units = "nm"; };\nsampling/' |
    sed 's/^name = "s"/name = "o"/' >one_$d.cfg
  "$PSFSIM" -q --backend cpu -c one_$d.cfg -o one_$d >/dev/null 2>&1 || { bad=$((bad + 1)); continue; }
  cmp -s one_$d/o_0.png r1/s_$d.png || bad=$((bad + 1))
done
[ $bad -eq 0 ] && pass "3 drawn images equal their one-image runs with the labels as fixed terms" ||
  fail "$bad drawn images differ from their one-image runs"
# A listed set: s<k>_z<j> table columns add to the fixed terms; each row's
# image equals a run of its totals as fixed terms; bad columns refused.
printf 's1_z1,s2_z3,z4\n0.5,0,0.1\n0.25,0.1,0\n' >t.csv
seg 'zernike = ( (1, 1, 0.1), (2, 3, 0.0) );' 'table = "t.csv";' >t.cfg
expect_exit 0 "a table of segment terms" -- "$PSFSIM" -q --backend cpu -c t.cfg -o tt
M=tt/s_manifest.csv
got=$(awk -F, -v b=$(col $M s1_z1) -v c=$(col $M s2_z3) 'NR > 1 { printf "%s/%s ", $b, $c }' $M)
[ "$got" = "0.6/0 0.35/0.1 " ] && pass "table cells added to the fixed terms: $got" || fail "table totals: $got"
bad=0
for r in 0 1; do
  row=$(awk -F, -v r=$((r + 2)) 'NR == r' $M)
  cell() { echo "$row" | cut -d, -f"$(col $M "$1")"; }
  seg "zernike = ( (1, 1, $(cell s1_z1)), (2, 3, $(cell s2_z3)) );" '' |
    sed "s/^sampling/aberrations: { zernike = ((4, $(cell z4))); };\nsampling/; s/^name = \"s\"/name = \"o\"/" >trow_$r.cfg
  "$PSFSIM" -q --backend cpu -c trow_$r.cfg -o trow_$r >/dev/null 2>&1 || { bad=$((bad + 1)); continue; }
  cmp -s trow_$r/o_0.png tt/s_$r.png || bad=$((bad + 1))
done
[ $bad -eq 0 ] && pass "each table row's image equals its one-image run" || fail "$bad table rows differ"
tbad() { # name, the column, the expected message (regex)
  printf '%s\n0.5\n' "$2" >"$1.csv"
  seg '' "table = \"$1.csv\";" >"$1.cfg"
  expect_exit 2 "$1" -- "$PSFSIM" -c "$1.cfg" -o "out_$1"
  expect_stderr "$3" "$1: message"
  [ ! -e "out_$1" ] && pass "$1: nothing written" || fail "$1: out_$1 was created"
}
tbad tab_missing s0_z1 "tab_missing.cfg:5: sweep.table: tab_missing.csv:1:1 \(s0_z1\): segment 0 is left out \(optics.aperture.segments.missing\)"
tbad tab_range s7_z1 "tab_range.cfg:5: sweep.table: tab_range.csv:1:1 \(s7_z1\): segment 7 is outside the 1 ring \(0 .. 6\)"
tbad tab_j s1_z16 "tab_j.cfg:5: sweep.table: tab_j.csv:1:1 \(s1_z16\): j = 16 is of radial order 5"
tbad tab_zero s01_z1 "tab_zero.cfg:5: sweep.table: tab_zero.csv:1:1 \(s01_z1\): unknown column \(allowed: wavelength_nm, defocus, focus_shift_um, field_x_px, field_y_px, z<j> and s<segment>_z<j> with j an index in the Noll convention\)"
# A cell past the coefficient bound is named by its line and column.
printf 's1_z1\n0.5\n-1e300\n' >tab_big.csv
seg '' 'table = "tab_big.csv";' >tab_big.cfg
expect_exit 2 "tab_big" -- "$PSFSIM" -c tab_big.cfg -o out_tab_big
expect_stderr "tab_big.cfg:5: sweep.table: tab_big.csv:3:1 \(s1_z1\): must be in \[-1e\+06, 1e\+06\] \(waves RMS\) \(got -1e\+300\)" "tab_big: message"
printf 's1_z1\n0.5\n' >tab_circ.csv
echo "$CIRC
sweep: { table = \"tab_circ.csv\"; };" >tab_circ.cfg
expect_exit 2 "tab_circ" -- "$PSFSIM" -c tab_circ.cfg -o out_tab_circ
expect_stderr "tab_circ.cfg:3: sweep.table: tab_circ.csv:1:1 \(s1_z1\): unknown column \(allowed: wavelength_nm, defocus, focus_shift_um, field_x_px, field_y_px, z<j> with j" "tab_circ: s<k>_z<j> without segments: message"
[ ! -e out_tab_circ ] && pass "tab_circ: nothing written" || fail "tab_circ: out_tab_circ was created"

# HDF5: labels/s<k>_z<j> equal the manifest's columns, the sidecar names them.
sed -e 's/^sweep/output: { hdf5: { enabled = true; }; };\nsweep/' \
  -e 's/units = "nm";/units = "nm"; zernike = ((4, 10.0));/' rnd.cfg >rh.cfg
expect_exit 0 "a random segment set into HDF5" -- "$PSFSIM" -q --backend cpu -c rh.cfg -o rh
PY=$(e2e_python h5py numpy) || PY=""
if [ -n "$PY" ]; then
  "$PY" "$SRC/tests/e2e/h5_check.py" check rh s none >py.out 2>&1 && pass "s.h5: labels/s<k>_z<j> equal the manifest" ||
    { fail "s.h5 against the manifest"; cat py.out; }
  "$PY" - rh/s.json <<'PY' && pass "s.json lists the 12 segment terms" || fail "s.json's segment_terms"
import json, sys
t = json.load(open(sys.argv[1]))["labels"]["segment_terms"]
want = [{"segment": s, "j": j, "column": "s%d_z%d" % (s, j)} for s in range(1, 7) for j in (1, 3)]
sys.exit(t != want)
PY
else echo "note: no python3 with h5py, the HDF5 check skipped"; fi
finish
