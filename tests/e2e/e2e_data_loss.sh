# SPDX-License-Identifier: BSD-3-Clause
# Lost data and false success (issue 26): each case once made psfsim lose or
# corrupt a set and still exit 0. --resume of a complete set with a FITS
# cube (kept only when it is this set's, whole), files of the set removed under the run, temp files swapped for
# links, a kept NAME.h5 that is not this set's, a sweep.table replaced
# before --resume, a damaged NAME.h5 temp file, lock files that are not
# psfsim's or held with flock(1), and --force with no manifest. Races come
# from tests/e2e/fault_shim.c (LD_PRELOAD: PSFSIM_FAULT_*), planted at a
# chosen moment.
source "$(dirname "$0")/lib_e2e.sh"

SHIM=${PSFSIM_FAULT_SHIM:-}
[ -f "$SHIM" ] || SHIM=""
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

# ---- --resume of a complete set with output.fits.cube keeps the cube ----
cfg c 4 16 'png: { enabled = false; }; fits: { enabled = true; cube = true; };' >c.cfg
expect_exit 0 "cube: the set" -- "$PSFSIM" -q -j 1 -c c.cfg -o cube
cp cube/c_cube.fits c_cube.ref
expect_exit 0 "cube: --resume of the complete set" -- "$PSFSIM" -v -j 1 --resume -c c.cfg -o cube
expect_stderr 'c_cube.fits is complete, kept' "cube: kept, said so"
cmp -s c_cube.ref cube/c_cube.fits && pass "cube: unchanged by --resume (planes, PLANES table)" ||
  fail "cube: --resume changed the cube"
# A manifest listing only part of the set (cut by hand): the cube is made
# again whole, the same bytes.
head -3 cube/c_manifest.csv >m.csv && mv m.csv cube/c_manifest.csv
expect_exit 0 "cube: --resume of a set listed in part" -- "$PSFSIM" -v -j 1 --resume -c c.cfg -o cube
expect_stderr 'c_cube.fits is written whole: every image is computed again' "cube: partial, said so"
cmp -s c_cube.ref cube/c_cube.fits && pass "cube: made again whole, the same bytes" ||
  fail "cube: the remade cube differs"
[ "$(tail -n +2 cube/c_manifest.csv | wc -l)" -eq 4 ] && pass "cube: 4 rows" || fail "cube: not 4 rows"
# A complete set whose cube is damaged or not this config's: the cube is
# checked (its HDUs walked, CFGHASH, size) and not kept; the set is done
# again whole, the same bytes.
sed 's/550.0/600.0/' c.cfg >c2.cfg # the same layout, another config
expect_exit 0 "cube: another config's set" -- "$PSFSIM" -q -j 1 -c c2.cfg -o cube2
for how in other cut long link fifo; do
  rm -f cube/c_cube.fits
  case $how in
    other) cp cube2/c_cube.fits cube/c_cube.fits ;;
    cut) head -c 9000 c_cube.ref >cube/c_cube.fits ;;
    long) cp c_cube.ref cube/c_cube.fits && truncate -s +2880 cube/c_cube.fits ;;
    link) ln -s "$SCRATCH/c_cube.ref" cube/c_cube.fits ;;
    fifo) mkfifo cube/c_cube.fits ;;
  esac
  expect_exit 0 "cube $how: --resume" -- "$PSFSIM" -v -j 1 --resume -c c.cfg -o cube
  case $how in # a link or a FIFO: the manifest's rows are not trusted already
    other | cut | long)
      expect_stderr 'c_cube.fits is not kept \((its CFGHASH is not this config|it is cut short|.*the file ends inside|.*HDU 3: the header does not begin with XTENSION).*\); every image is computed again' \
        "cube $how: not kept, said why"
      ;;
  esac
  grep -q 'is complete, kept' "$SCRATCH/stderr" && fail "cube $how: said kept" || pass "cube $how: not said kept"
  [ -f cube/c_cube.fits ] && [ ! -L cube/c_cube.fits ] && cmp -s c_cube.ref cube/c_cube.fits &&
    pass "cube $how: made again whole, the set's bytes" || fail "cube $how: the cube differs"
done
expect_exit 0 "cube: --resume of the remade set" -- "$PSFSIM" -v -j 1 --resume -c c.cfg -o cube
expect_stderr 'c_cube.fits is complete, kept' "cube: the remade cube kept"

# ---- lock files that are not psfsim's, and a flock(1) holder ----
cfg l 2 16 '' >l.cfg
for kind in link dir; do
  rm -rf "lock$kind" && mkdir "lock$kind"
  if [ $kind = link ]; then ln -s "$SCRATCH/nowhere" "lock$kind/.l.lock"; else mkdir "lock$kind/.l.lock"; fi
  expect_exit 2 "lock file that is a $kind" -- "$PSFSIM" -q -c l.cfg -o "lock$kind"
  expect_stderr "lock file .l.lock is a (symbolic link|directory), not psfsim's" "lock $kind: message"
  [ -z "$(ls "lock$kind")" ] && pass "lock $kind: nothing written" || fail "lock $kind: files written"
done
if command -v flock >/dev/null; then
  rm -rf lockf && mkdir lockf && : >lockf/.l.lock
  flock -o lockf/.l.lock sleep 30 & # -o: the lock is flock(1)'s own, not sleep's
  holder=$!
  for _ in $(seq 100); do flock -n lockf/.l.lock true || break; sleep 0.02; done
  expect_exit 2 "lock held with flock(1)" -- "$PSFSIM" -q -c l.cfg -o lockf
  expect_stderr "set l in lockf is in use by another process \\(a psfsim run, or a holder of its lock file .l.lock\\); wait until it ends" \
    "flock holder: message"
  grep -q 'another psfsim run' "$SCRATCH/stderr" && fail "flock holder: called a psfsim run" ||
    pass "flock holder: not called a psfsim run"
  kill $(pgrep -P "$holder") 2>/dev/null # its sleep: then flock(1) ends, the lock with it
  wait "$holder" 2>/dev/null
  [ -z "$(ls lockf)" ] && pass "flock holder: nothing written" || fail "flock holder: files written"
  expect_exit 0 "lock released by flock(1)" -- "$PSFSIM" -q -c l.cfg -o lockf
else
  echo "skip: no flock(1)"
fi

# ---- --force with no manifest removes only the files the set writes ----
expect_exit 0 "force: the set" -- "$PSFSIM" -q -c l.cfg -o force
rm force/l_manifest.csv
cp force/l_1.png force/l_7.png # a user's file beyond the set's 2 images
expect_exit 0 "force: no manifest, a user's l_7.png" -- "$PSFSIM" -q --force -c l.cfg -o force
[ -f force/l_7.png ] && pass "force: l_7.png (beyond the set) kept" || fail "force: l_7.png removed"

# ---- a sweep.table replaced before --resume: another config ----
printf 'defocus, z5\n0.1, 0.02\n-0.1, 0\n' >rows.csv
cat >t.cfg <<'CFG'
name = "t";
optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; obscuration = 0.2; }; };
sampling: { pupil_samples = 16; };
sweep: { table = "rows.csv"; };
output: { png: { enabled = true; }; };
CFG
expect_exit 0 "table: the set" -- "$PSFSIM" -q -c t.cfg -o tbl
printf 'defocus, z5\n0.3, 0.02\n-0.1, 0.05\n' >rows.csv
expect_exit 2 "table: replaced, then --resume" -- "$PSFSIM" -q --resume -c t.cfg -o tbl
expect_stderr 't_manifest.csv was written for another config' "table replaced: message"

# ---- --resume keeps a complete NAME.h5 only when it is this set's ----
# One backend named for every run: NAME.h5 records the backend decision,
# whose reason differs between auto's first and later runs on a GPU machine.
cfg h 4 16 'png: { enabled = false; }; hdf5: { enabled = true; };' >h.cfg
sed 's/550.0/600.0/' h.cfg >h2.cfg # the same layout, another config
"$PSFSIM" -q -b cpu -c h.cfg -o h >"$SCRATCH/stdout" 2>"$SCRATCH/stderr"
if grep -q 'cannot load HDF5 support' "$SCRATCH/stderr"; then
  echo "skip: no HDF5 module: the NAME.h5 cases"
else
  expect_exit 0 "h5: the set (another config's too)" -- "$PSFSIM" -q -b cpu -c h2.cfg -o h2
  cp h/h.h5 h.ref
  for how in cut other; do
    if [ $how = cut ]; then head -c 3000 h.ref >h/h.h5; else cp h2/h.h5 h/h.h5; fi
    expect_exit 0 "h5 $how: --resume" -- "$PSFSIM" -v -j 1 -b cpu --resume -c h.cfg -o h
    expect_stderr "h.h5 is not kept \\((HDF5 cannot open it|its config_hash is not this config's|it was made by another run)" \
      "h5 $how: not kept, said why"
    cmp -s h.ref h/h.h5 && pass "h5 $how: made again, the set's bytes" || fail "h5 $how: NAME.h5 differs"
  done
  expect_exit 0 "h5: --resume of the complete set" -- "$PSFSIM" -v -j 1 -b cpu --resume -c h.cfg -o h
  expect_stderr 'h.h5 is complete, kept' "h5: a true NAME.h5 kept"

  # A NAME.h5 of this config in other chunks (output.hdf5.chunk_images = 2
  # where this config's 4 images make one chunk): its layout is not this
  # run's, so --resume says so and makes it again.
  PY=$(e2e_python h5py) || PY=""
  if [ -z "$PY" ]; then echo "skip: no python3 imports h5py: the older chunks' case"; else
    sed 's/hdf5: { enabled = true; }/hdf5: { enabled = true; chunk_images = 2; }/' h.cfg >h4.cfg
    expect_exit 0 "h5 old chunks: a set in chunks of 2" -- "$PSFSIM" -q -b cpu -c h4.cfg -o h4
    "$PY" -c 'import h5py, sys
r = h5py.File(sys.argv[2], "r")
with h5py.File(sys.argv[1], "r+") as f:
    assert f["images"].chunks[0] == 2
    for k in ("resume_key", "config_hash"): f.attrs[k] = r.attrs[k]' h4/h.h5 h.ref &&
      cp h4/h.h5 h/h.h5
    expect_exit 0 "h5 old chunks: --resume" -- "$PSFSIM" -v -j 1 -b cpu --resume -c h.cfg -o h
    expect_stderr "h.h5 is not kept \\(it was made with other parameters \\(K, M, dtype, gzip, chunks" \
      "h5 old chunks: not kept, said why"
    cmp -s h.ref h/h.h5 && pass "h5 old chunks: made again in this config's chunks" ||
      fail "h5 old chunks: NAME.h5 differs"
  fi

  # A temp file .d.h5.part whose metadata is damaged yet opens: images
  # 20..39 not written yet, and the dataspace version of an attribute
  # message (labels/zernike's noll_j) broken, which HDF5 finds only when it
  # writes that object's header. The first --resume fails (exit 3) and
  # removes it; the next makes d.h5 afresh (once it failed every time).
  cfg d 40 16 'png: { enabled = false; }; hdf5: { enabled = true; };' >d.cfg
  expect_exit 0 "damaged temp: the set" -- "$PSFSIM" -q -j 1 -c d.cfg -o d
  cp d/d.h5 d.ref
  if command -v python3 >/dev/null && python3 - <<'PY'; then
d = bytearray(open("d/d.h5", "rb").read())
flags = d.find(b"\x01" * 40)  # the written flags: K = 40 ones
attr = d.find(b"noll_j\x00")
assert flags > 0 and d.find(b"\x01" * 40, flags + 1) < 0 and attr > 0 and d[attr + 24] == 1
d[flags + 20 : flags + 40] = b"\x00" * 20
d[attr + 24] ^= 0x5A  # the attribute's dataspace message version
open("d/.d.h5.part", "wb").write(d)
PY
    rm d/d.h5 d/d.json
    expect_exit 3 "damaged temp: --resume" -- "$PSFSIM" -q -j 1 --resume -c d.cfg -o d
    expect_stderr 'its temp file .d.h5.part, resumed from an earlier run, was removed' \
      "damaged temp: removed, said so"
    expect_exit 0 "damaged temp: --resume again" -- "$PSFSIM" -q -j 1 --resume -c d.cfg -o d
    cmp -s d.ref d/d.h5 && pass "damaged temp: d.h5 made afresh, the set's bytes" ||
      fail "damaged temp: d.h5 differs"
  else
    echo "skip: the damaged temp file case (no python3, or another HDF5 file layout)"
  fi
fi

if [ -n "$SHIM" ]; then
  # ---- files of the set removed under the run (a failed rm -rf) ----
  # Renames: the manifest 1, the timing log 2, then PNG k 3 + k. After
  # rename 5 every file goes but the directory stays; images keep coming,
  # the batch's rows are appended to a manifest nobody can open.
  cfg p 6 16 'fits: { enabled = false; };' >p.cfg
  rm -rf gone
  expect_exit 3 "files removed mid-run" -- env LD_PRELOAD="$SHIM" PSFSIM_FAULT_DIR="$SCRATCH/gone" \
    PSFSIM_FAULT_UNLINK_RENAME_AT=5 "$PSFSIM" -j 1 -c p.cfg -o "$SCRATCH/gone"
  expect_stderr 'p_manifest.csv: it was removed or replaced during the run' "files removed: message"
  expect_stderr 'nothing lists its images; rerun with --force' "files removed: what it means"
  grep -q 'lists them' "$SCRATCH/stderr" && fail "files removed: claims a manifest lists images" ||
    pass "files removed: claims no manifest"

  # ---- a temp file swapped for a link before its rename ----
  # Creations: the manifest 1, the timing log 2, then PNG 0's temp 3.
  mkdir -p outside
  rm -rf swap
  expect_exit 3 "temp file swapped for a link" -- env LD_PRELOAD="$SHIM" \
    PSFSIM_FAULT_DIR="$SCRATCH/swap" PSFSIM_FAULT_SWAP_AT=3 PSFSIM_FAULT_LINK_TO="$SCRATCH/outside" \
    "$PSFSIM" -j 1 -c p.cfg -o "$SCRATCH/swap"
  expect_stderr 'p_0.png: its temp file .*was replaced or removed by another process' \
    "swapped temp: message"
  [ -z "$(find swap -type l ! -name '.*tmp*')" ] && pass "swapped temp: no set file is a link" ||
    fail "swapped temp: links: $(find swap -type l)"
  listed=$(tail -n +2 swap/p_manifest.csv | cut -d, -f2)
  bad=""
  for f in $listed; do [ -f "swap/$f" ] && [ ! -L "swap/$f" ] || bad="$bad $f"; done
  [ -z "$bad" ] && pass "swapped temp: every row names a file" || fail "swapped temp: rows name:$bad"
else
  echo "skip: no fault shim (PSFSIM_FAULT_SHIM): removed files, swapped temp files"
fi
finish
