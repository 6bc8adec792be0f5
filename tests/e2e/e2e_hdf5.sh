# SPDX-License-Identifier: BSD-3-Clause
# output.hdf5 end to end, read with h5py (tests/e2e/h5_check.py): NAME.h5's
# shapes, dtypes and attributes, its labels equal to the manifest row for
# row, its images equal to the run's FITS files (float32) or PNG levels
# (uint16); the sidecar NAME.json parses and holds its keys; an earlier
# NAME.h5 is a set that exists (--force replaces it, and removes it when
# HDF5 is off); a missing HDF5 module is exit 2 with nothing written;
# kill -9 mid-run then --resume gives the datasets of an uninterrupted run,
# byte for byte, with and without gzip. Skipped (77) without a python3
# that imports h5py and numpy.
source "$(dirname "$0")/lib_e2e.sh"
export PSFSIM_CACHE_DIR="$SCRATCH/cache"

PY=$(e2e_python h5py numpy) || PY=""
[ -n "$PY" ] || { echo "skipped: no python3 imports h5py and numpy"; exit 77; }
h5() { "$PY" "$SRC/tests/e2e/h5_check.py" "$@" >"$SCRATCH/py.out" 2>&1; }
h5_ok() { if h5 "$@"; then pass "$(tail -1 "$SCRATCH/py.out")"; else
  fail "h5_check.py $*"; sed 's/^/  /' "$SCRATCH/py.out"; fi; }

# defocus x a swept wavelength (a pixel per image) x a focus shift, FITS, PNG, HDF5 float32.
cat >f.cfg <<'CFG'
name = "f";
optics: { f_number = 12.0; aperture: { diameter_m = 1.0; obscuration = 0.2; }; };
sampling: { pupil_samples = 32; padding = 2.0; };
aberrations: { zernike = ((8, 0.05), (5, -0.02)); };
sweep: { wavelength_nm = [500.0, 650.0]; defocus = [-0.5, 0.0, 0.5]; focus_shift_um = [0.0, 20.0]; };
output: { fits: { enabled = true; }; hdf5: { enabled = true; }; };
CFG
expect_exit 0 "float32 set with FITS and PNG" -- "$PSFSIM" -q --backend cpu -c f.cfg -o f
h5_ok check f f fits
h5_ok sidecar f f
"$PY" -m json.tool f/f.json >/dev/null && pass "f.json: python3 -m json.tool parses it" ||
  fail "f.json does not parse"
[ -z "$(ls -A f | grep '^\.')" ] && pass "no temp file left" || fail "temp files: $(ls -A f | grep '^\.')"
# Two runs a second apart under SOURCE_DATE_EPOCH: the same bytes (the
# date attribute and the sidecar's date are the set's, as FITS DATE is).
# Not under the wrapper: f's run above takes their code paths under it.
expect_exit 0 "SOURCE_DATE_EPOCH run 1" -- env SOURCE_DATE_EPOCH=1700000000 "$PSFSIM_UNWRAPPED" -q --backend cpu -c f.cfg -o fd1
sleep 1.1
expect_exit 0 "SOURCE_DATE_EPOCH run 2" -- env SOURCE_DATE_EPOCH=1700000000 "$PSFSIM_UNWRAPPED" -q --backend cpu -c f.cfg -o fd2
cmp -s fd1/f.h5 fd2/f.h5 && cmp -s fd1/f.json fd2/f.json &&
  grep -q '"date": "2023-11-14T22:13:20Z"' fd1/f.json &&
  pass "SOURCE_DATE_EPOCH: f.h5 and f.json byte for byte the same, dated 2023-11-14T22:13:20Z" ||
  fail "SOURCE_DATE_EPOCH: f.h5 or f.json differ between runs, or the date is not the epoch's"

# Random draws taking their wavelengths from a list (they replace
# optics.wavelength_nm): each image has its own pixel, so the set states
# none (h5_check.py sidecar), and the draw's key is in the attributes.
cat >r.cfg <<'CFG'
name = "r";
optics: { wavelength_nm = 1000.0; aperture: { diameter_m = 1.0; }; };
sampling: { pupil_samples = 32; padding = 2.0; };
sweep: { random: { count = 60; seed = 42; zernike = ((2, "normal", 0.1), (4, "normal", 0.1));
  wavelength_nm = [900.0, 1000.0, 1100.0]; }; };
output: { png: { enabled = false; }; hdf5: { enabled = true; }; };
CFG
expect_exit 0 "random set drawing its wavelengths" -- "$PSFSIM" -q --backend cpu -c r.cfg -o r
h5_ok check r r none
h5_ok sidecar r r
# output.hdf5.chunk_images (issue 27): by default the whole images in
# 64 KiB, at least one (h5set_auto_chunk_images: 4 of 64 x 64 float32, 16
# of 32 x 32, 1 of 128 x 128), for shuffled readers; the key's c images
# otherwise (1: a shuffled reader's f["images"][k] reads and inflates one
# image), at most K; 0 refused naming file:line:key, nothing written.
chunks() { "$PY" -c 'import h5py, sys; f = h5py.File(sys.argv[1], "r")
print(*(f[n].chunks for n in ("images",)), f.attrs["chunk_images"])' "$1" 2>&1; }
[ "$(chunks r/r.h5)" = "(4, 64, 64) 4" ] && pass "default: 64 x 64 float32, 4 images (64 KiB) a chunk" ||
  fail "default chunks: $(chunks r/r.h5)"
for m in 16 64; do # pupil_samples: 32 x 32 and 128 x 128 images
  sed -e 's/name = "r"/name = "rp'$m'"/' -e 's/pupil_samples = 32;/pupil_samples = '$m';/' r.cfg >rp$m.cfg
  expect_exit 0 "default chunks, pupil_samples = $m" -- "$PSFSIM" -q --backend cpu -c rp$m.cfg -o rp$m
done
[ "$(chunks rp16/rp16.h5)" = "(16, 32, 32) 16" ] && pass "default: 32 x 32 float32, 16 images (64 KiB) a chunk" ||
  fail "default chunks of 32 x 32: $(chunks rp16/rp16.h5)"
[ "$(chunks rp64/rp64.h5)" = "(1, 128, 128) 1" ] && pass "default: 128 x 128 float32, 1 image (64 KiB) a chunk" ||
  fail "default chunks of 128 x 128: $(chunks rp64/rp64.h5)"
sed -e 's/name = "rp64"/name = "rp64c"/' -e 's/hdf5: { enabled = true; }/hdf5: { enabled = true; chunk_images = 3; }/' rp64.cfg >rp64c.cfg
expect_exit 0 "chunk_images = 3 of 128 x 128" -- "$PSFSIM" -q --backend cpu -c rp64c.cfg -o rp64c
[ "$(chunks rp64c/rp64c.h5)" = "(3, 128, 128) 3" ] && pass "chunk_images = 3 wins over the default's 1 for 128 x 128" ||
  fail "chunk_images = 3 of 128 x 128: $(chunks rp64c/rp64c.h5)"
for c in 1 7 1000; do
  sed -e 's/name = "r"/name = "r'$c'"/' -e 's/hdf5: { enabled = true; }/hdf5: { enabled = true; chunk_images = '$c'; }/' r.cfg >r$c.cfg
  expect_exit 0 "chunk_images = $c" -- "$PSFSIM" -q --backend cpu -c r$c.cfg -o r$c
  want=$([ $c = 1000 ] && echo 60 || echo $c)
  [ "$(chunks r$c/r$c.h5)" = "($want, 64, 64) $want" ] && pass "chunk_images = $c: chunks of $want images" ||
    fail "chunk_images = $c: $(chunks r$c/r$c.h5)"
done
"$PY" -c 'import h5py, numpy as np, sys; a, *b = (h5py.File(p, "r") for p in sys.argv[1:])
assert all(np.array_equal(a["images"][()], f["images"][()]) for f in b) and a["images"].shape[0] == 60' r/r.h5 r1/r1.h5 r7/r7.h5 &&
  pass "chunk_images = 1, 7: the same 60 images as the default's" || fail "chunk_images = 1, 7: the images differ"
sed -e 's/hdf5: { enabled = true; }/hdf5: { enabled = true; chunk_images = 0; }/' r.cfg >r0.cfg
expect_exit 2 "chunk_images = 0 refused" -- "$PSFSIM" -q --backend cpu -c r0.cfg -o r0
expect_stderr 'r0.cfg:6(:[0-9]+)?: output.hdf5.chunk_images: must be >= 1 \(got 0\)' "chunk_images = 0: file:line:key"
[ ! -e r0 ] || [ -z "$(ls -A r0)" ] && pass "chunk_images = 0: nothing written" || fail "r0 written: $(ls -A r0)"
# A chunk over HDF5's 4 GiB: refused before anything is computed.
sed -e 's/count = 60;/count = 300000;/' -e 's/hdf5: { enabled = true; }/hdf5: {\n  enabled = true; chunk_images = 300000; }/' r.cfg >rbig.cfg
expect_exit 2 "chunk_images: a chunk over 4 GiB refused" -- "$PSFSIM" -q --backend cpu -c rbig.cfg -o rbig
expect_stderr 'rbig.cfg:7: output.hdf5.chunk_images: 300000 images of 16.0 KiB are more than one HDF5 chunk holds \(under 4 GiB\): at most 262143' \
  "chunk over 4 GiB: file:line:key, the bound"
[ ! -e rbig ] && pass "chunk over 4 GiB: nothing written" || fail "rbig written: $(ls -A rbig)"

# uint16 with gzip: the PNG stretch's levels (8-bit sqrt here).
sed -e 's/name = "f"/name = "u"/' -e 's/fits: { enabled = true; }; hdf5: { enabled = true; }/png: { bits = 8; stretch = "sqrt"; }; hdf5: { enabled = true; dtype = "uint16"; compression = "gzip"; level = 6; }/' f.cfg >u.cfg
expect_exit 0 "uint16 gzip set with PNG" -- "$PSFSIM" -q --backend cpu -c u.cfg -o u
h5_ok check u u png
# The same without PNG: HDF5 alone, the same datasets (the levels made all the same).
sed -e 's/name = "u"/name = "o"/' -e 's/png: { bits = 8;/png: { enabled = false; bits = 8;/' u.cfg >o.cfg
expect_exit 0 "HDF5 as the only output" -- "$PSFSIM" -q --backend cpu -c o.cfg -o o
[ "$(ls o | grep -c '\.png$')" -eq 0 ] && pass "no PNG written" || fail "PNGs written"
h5_ok same u/u.h5 o/o.h5
expect_exit 0 "--force over an earlier NAME.h5" -- "$PSFSIM" -q --backend cpu --force -c u.cfg -o u
h5_ok check u u png

# An earlier NAME.h5 is a set that exists.
expect_exit 2 "a second run without --force" -- "$PSFSIM" -q --backend cpu -c f.cfg -o f
expect_stderr 'already holds image set "f"' "the set exists: message"
mkdir -p only && cp o/o.h5 only/
expect_exit 2 "NAME.h5 alone is a set" -- "$PSFSIM" -q --backend cpu -c o.cfg -o only
expect_stderr 'already holds image set "o" \(o.h5 and 0 more' "NAME.h5 alone: message"
sed 's/hdf5: { enabled = true; }/hdf5: { enabled = false; }/' f.cfg >f_off.cfg
expect_exit 0 "--force without HDF5" -- "$PSFSIM" -q --backend cpu --force -c f_off.cfg -o f
[ ! -e f/f.h5 ] && [ ! -e f/f.json ] && pass "--force removed the earlier f.h5 and f.json" ||
  fail "f.h5 or f.json left: $(ls f | grep -v _)"

# The HDF5 module missing: exit 2 before any work.
PSFSIM_HDF5_MODULE="$SCRATCH/none/libpsfsim-hdf5.so" expect_exit 2 "no HDF5 module" -- \
  "$PSFSIM" -q --backend cpu -c o.cfg -o nomod
expect_stderr 'o.cfg: output.hdf5: cannot load HDF5 support' "no HDF5 module: message"
[ ! -e nomod ] && pass "no HDF5 module: nothing written" || fail "nomod written"

# kill -9 mid-run, then --resume: NAME.h5 equals an uninterrupted run's.
# kcfg NAME NIMAGES HDF5-KEYS: NIMAGES images of 128 x 128, PNG at level 9
# (slow enough to be caught mid-set with one writer thread).
kcfg() {
  local values
  values=$(awk -v n="$(($2 / 5))" 'BEGIN { for (i = 0; i < n; ++i) printf "%s%.4f", (i ? ", " : ""), i * 0.001 }')
  cat <<CFG
name = "$1";
optics: { wavelength_nm = 600.0; aperture: { diameter_m = 1.0; obscuration = 0.2; }; };
sampling: { pupil_samples = 64; padding = 2.0; };
aberrations: { zernike = ((8, 0.05)); };
sweep: { defocus = [-1.0, -0.5, 0.0, 0.5, 1.0]; zernike = ((11, [$values])); };
output: { png: { compression = 9; }; hdf5: { enabled = true; $3 }; };
CFG
}
# kill_and_resume NAME NIMAGES HDF5-KEYS LANES: the killed run and the
# resume compute with LANES CPU lanes (PSFSIM_TEST_LANES: batches retire out
# of order), the reference with one, not under the wrapper (its code paths
# are the resume's).
kill_and_resume() {
  local name=$1 n=$2 lanes=(env PSFSIM_TEST_LANES="$4")
  kcfg "$name" "$n" "$3" >"$name.cfg"
  expect_exit 0 "$name: uninterrupted reference" -- "$PSFSIM_UNWRAPPED" -q --backend cpu -j 1 -c "$name.cfg" -o "$name.ref"
  "${lanes[@]}" "$PSFSIM" -q --backend cpu -j 1 -c "$name.cfg" -o "$name.part" >/dev/null 2>&1 &
  local pid=$! rows=0
  for _ in $(seq 400); do
    rows=$(($(wc -l 2>/dev/null <"$name.part/${name}_manifest.csv" || echo 1) - 1))
    [ "$rows" -ge $((n / 5)) ] && break
    sleep 0.01
  done
  kill -9 $pid
  wait $pid
  local rc=$?
  rows=$(($(wc -l <"$name.part/${name}_manifest.csv") - 1))
  [ $rc -eq 137 ] && [ "$rows" -lt "$n" ] && pass "$name: killed mid-set ($rows of $n rows)" ||
    fail "$name: not killed mid-set (exit $rc, $rows rows)"
  [ ! -e "$name.part/$name.h5" ] && [ -f "$name.part/.$name.h5.part" ] &&
    pass "$name: no $name.h5, its temp file kept" || fail "$name: $(ls -A "$name.part" | grep h5)"
  expect_exit 0 "$name: --resume ($4 lane(s))" -- "${lanes[@]}" "$PSFSIM" -v --backend cpu -j 1 --resume -c "$name.cfg" -o "$name.part"
  local held
  held=$(sed -n "s/.*resuming: $name.h5 holds \([0-9]*\) image.*/\1/p" "$SCRATCH/stderr")
  # A kill while HDF5 flushed its metadata (a short moment of each block)
  # leaves a temp file that is started afresh, as it says; else it goes on,
  # holding the images whose written flags were flushed before the kill
  # (none when the writer, which follows the manifest, had flushed none yet:
  # under valgrind, say).
  if [ -n "$held" ]; then pass "$name: the temp file was continued ($held images in it)"
  elif grep -q "was not resumed: it was interrupted while HDF5 wrote its metadata\|was not resumed: HDF5 cannot open it" "$SCRATCH/stderr"; then
    pass "$name: killed mid-flush: the temp file was started afresh, as it says"
  else fail "$name: the temp file was not continued: $(grep resuming "$SCRATCH/stderr")"; fi
  h5_ok same "$name.ref/$name.h5" "$name.part/$name.h5"
  h5_ok check "$name.part" "$name" none
  cut -d, -f1-15 "$name.ref/${name}_manifest.csv" >a.csv
  cut -d, -f1-15 "$name.part/${name}_manifest.csv" >b.csv
  cmp -s a.csv b.csv && pass "$name: manifest equals the uninterrupted run's" || fail "$name: manifest differs"
  local diffs=0 f
  for f in "$name.ref"/*.png; do cmp -s "$f" "$name.part/$(basename "$f")" || diffs=$((diffs + 1)); done
  [ $diffs -eq 0 ] && pass "$name: every PNG equals the uninterrupted run's" || fail "$name: $diffs PNGs differ"
  cp "$name.part/$name.h5" "$name.kept.h5"
  expect_exit 0 "$name: --resume of the complete set" -- "$PSFSIM" -v --backend cpu --resume -c "$name.cfg" -o "$name.part"
  grep -q "resuming: $n image(s) done earlier" "$SCRATCH/stderr" && grep -q "$name.h5 is complete, kept" "$SCRATCH/stderr" &&
    cmp -s "$name.kept.h5" "$name.part/$name.h5" && pass "$name: nothing computed, $name.h5 kept as it was" ||
    fail "$name: the complete set was not kept: $(grep resuming "$SCRATCH/stderr")"
  h5_ok sidecar "$name.part" "$name"
  [ $failures -eq 0 ] && rm -rf "$name.ref" "$name.part" "$name.kept.h5"
}
# Under the wrapper kz has 300 images (its resume computed 1200 in a minute).
kill_and_resume kz "$(e2e_size 1200 300)" 'compression = "gzip";' 1
kill_and_resume kn 600 '' 3
finish
