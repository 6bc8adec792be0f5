# SPDX-License-Identifier: BSD-3-Clause
# Faults: a full disk, an unwritable or vanishing output directory, failing
# renames, truncated maps, and sets too large for this machine. Each must
# end in a clear message and exit 3 (run time) or 2 (before any work), with
# no temp file or half image left, and a true manifest: every file it lists
# exists and is complete, every image file present is listed.
#
# Faults come from tests/e2e/fault_shim.c (LD_PRELOAD: PSFSIM_FAULT_*), from
# ulimit (-f: writes fail with EFBIG past a size; -v: address space), and,
# where this shell may mount (root), from small tmpfs file systems: a real
# ENOSPC and a read-only directory. What cannot run here is skipped, said so.
source "$(dirname "$0")/lib_e2e.sh"

SHIM=${PSFSIM_FAULT_SHIM:-}
[ -f "$SHIM" ] || SHIM=""
# gcc's ASan wants its runtime first in the library list; the shim is not
# instrumented, so the order is harmless.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

# complete FILE NPIX: a PNG ends in its IEND chunk; a FITS holds whole 2880-byte
# blocks, starts with SIMPLE and has room for NPIX^2 float32 values.
complete() {
  case "$1" in
  *.png) [ "$(tail -c 12 "$1" | od -An -tx1 | tr -d ' \n')" = "0000000049454e44ae426082" ] ;;
  *.fits)
    local size
    size=$(stat -c %s "$1")
    [ $((size % 2880)) -eq 0 ] && [ "$size" -ge $((2 * 1440 + 4 * $2 * $2)) ] &&
      [ "$(head -c 6 "$1")" = "SIMPLE" ]
    ;;
  *) return 1 ;;
  esac
}

# set_true DIR NAME NPIX WHAT: no temp file; the manifest (if any) is whole
# lines of the header's width and lists exactly the complete images present.
set_true() {
  local dir=$1 name=$2 npix=$3 what=$4
  if [ ! -d "$dir" ]; then pass "$what: directory gone, nothing half-written"; return; fi
  local temps
  temps=$(find "$dir" -name '.*tmp*' | head -5)
  [ -z "$temps" ] && pass "$what: no temp file" || fail "$what: temp files left: $temps"
  local manifest="$dir/${name}_manifest.csv" listed="" present
  present=$(ls "$dir" | grep -E "^${name}_[0-9]+\.(png|fits)$" | sort)
  if [ -f "$manifest" ]; then
    local width bad
    width=$(head -1 "$manifest" | awk -F, '{ print NF }')
    bad=$(awk -F, -v w="$width" 'NF != w { print NR }' "$manifest" | head -3)
    [ -z "$bad" ] && [ -z "$(tail -c 1 "$manifest")" ] && pass "$what: manifest of whole rows" ||
      fail "$what: manifest rows cut (lines $bad)"
    listed=$(tail -n +2 "$manifest" | awk -F, '{ if ($2 != "") print $2; if ($3 != "") print $3 }' | sort)
  fi
  if [ "$listed" = "$present" ]; then
    pass "$what: manifest lists exactly the $(echo "$present" | grep -c .) image file(s) present"
  else
    fail "$what: manifest and directory differ"
    diff <(echo "$listed") <(echo "$present") | head -10 | sed 's/^/  /'
  fi
  local f incomplete=""
  for f in $present; do complete "$dir/$f" "$npix" || incomplete="$incomplete $f"; done
  [ -z "$incomplete" ] && pass "$what: every image complete" || fail "$what: incomplete:$incomplete"
}

nothing_written() { # DIR WHAT
  if [ ! -e "$1" ] || [ -z "$(ls -A "$1")" ]; then pass "$2: nothing written"; else
    fail "$2: files were written:"; ls -la "$1" | head; fi
}

# shim_run WHAT WANT_EXIT PATTERN DIR VAR=VALUE... -- PSFSIM-ARGS...: psfsim
# with the shim acting on DIR.
shim_run() {
  local what=$1 want=$2 pattern=$3 dir=$4
  shift 4
  local vars=()
  while [ "$1" != "--" ]; do vars+=("$1"); shift; done
  shift
  rm -rf "$dir"
  expect_exit "$want" "$what" -- env LD_PRELOAD="$SHIM" PSFSIM_FAULT_DIR="$dir" "${vars[@]}" \
    "$PSFSIM" "$@" -o "$dir"
  [ -n "$pattern" ] && expect_stderr "$pattern" "$what: message"
}

cfg f 10 32 'fits: { enabled = true; };' >f.cfg # 10 images of 64 x 64, PNG + FITS

# ---- disk full (ENOSPC on every write from the k-th file on) ----
if [ -n "$SHIM" ]; then
  # Files in order: manifest 1, timing 2, then per image k: PNG 3 + 2k, FITS
  # 4 + 2k (cfitsio encodes it in memory; psfsim creates the one file).
  for k in 1 2 3 4 5 7 12 18; do
    shim_run "disk full from file $k" 3 'No space left on device' "$SCRATCH/full$k" \
      PSFSIM_FAULT_FULL_AT=$k -- -j 1 -c f.cfg
    set_true "$SCRATCH/full$k" f 64 "disk full from file $k"
  done
  shim_run "disk full, 2 writer threads" 3 'No space left on device' "$SCRATCH/fullj2" \
    PSFSIM_FAULT_FULL_AT=12 -- -j 2 -c f.cfg
  set_true "$SCRATCH/fullj2" f 64 "disk full, 2 writer threads"
  shim_run "disk full after the set (control)" 0 '' "$SCRATCH/full99" \
    PSFSIM_FAULT_FULL_AT=99 -- -j 1 -c f.cfg
  set_true "$SCRATCH/full99" f 64 "control"
  [ "$(tail -n +2 "$SCRATCH/full99/f_manifest.csv" | wc -l)" -eq 10 ] &&
    pass "control: 10 images listed" || fail "control: not 10 images"

  # ---- the directory becomes unwritable (EACCES) or is removed mid-run ----
  shim_run "directory unwritable from image 1" 3 'f_1\.png: Permission denied' "$SCRATCH/acc" \
    PSFSIM_FAULT_EACCES_AT=5 -- -j 1 -c f.cfg
  set_true "$SCRATCH/acc" f 64 "unwritable mid-run"
  shim_run "directory removed before image 1" 3 'No such file or directory' "$SCRATCH/rm6" \
    PSFSIM_FAULT_RMDIR_AT=5 -- -j 1 -c f.cfg
  set_true "$SCRATCH/rm6" f 64 "directory removed mid-run"
  shim_run "directory removed before the manifest" 3 'f_manifest\.csv: No such file' \
    "$SCRATCH/rm1" PSFSIM_FAULT_RMDIR_AT=1 -- -j 1 -c f.cfg
  set_true "$SCRATCH/rm1" f 64 "directory removed at the start"
  # Removed after an image is in place: noticed after the batch and at the
  # end (its descriptor's link count is 0), and said as it is. Renames: the
  # manifest 1, the timing log 2, then PNG k 3 + k (a PNG-only set).
  cfg p 10 32 'fits: { enabled = false; };' >p.cfg
  for n in 12 7; do # after image 9 (the set's last) and after image 4
    shim_run "directory removed after rename $n" 3 \
      "the output directory $SCRATCH/rmr$n was removed during the run; $((n - 2)) image\(s\) were lost" \
      "$SCRATCH/rmr$n" PSFSIM_FAULT_RMDIR_RENAME_AT=$n -- -j 1 -c p.cfg
    grep -q 'lists them\|written to' "$SCRATCH/stderr" && fail "rename $n: claims images exist" ||
      pass "rename $n: claims no image exists"
  done

  # ---- renames into the directory fail (a directory that cannot grow) ----
  shim_run "rename fails from image 0" 3 'f_0\.png: No space left on device' "$SCRATCH/ren" \
    PSFSIM_FAULT_RENAME_AT=3 -- -j 1 -c f.cfg
  set_true "$SCRATCH/ren" f 64 "rename fails"
  shim_run "rename fails from image 4" 3 'No space left on device' "$SCRATCH/ren4" \
    PSFSIM_FAULT_RENAME_AT=11 -- -j 1 -c f.cfg
  set_true "$SCRATCH/ren4" f 64 "rename fails later"

  # ---- links planted in the directory (another user of a shared one) ----
  # Just before the n-th file is created, a symbolic link to outside/n
  # appears at the very name being created (a temp file's); just before the
  # n-th rename, at the final name. psfsim makes every file through its own
  # descriptor of the directory (O_CREAT | O_EXCL | O_NOFOLLOW: a taken name
  # is never opened, another is drawn) and renames within it, so nothing is
  # written outside and the set is whole. (cfitsio creating the FITS temp by
  # name followed the link: file 4 or 5, the cube's 3 or 4.)
  cfg fc 4 32 'fits: { enabled = true; cube = true; };' >fc.cfg
  mkdir -p "$SCRATCH/outside"
  links_ok() { # WHAT DIR NAME: nothing outside; the planted links go, then the set is true
    [ -z "$(ls -A "$SCRATCH/outside")" ] && pass "$1: nothing written outside $2" ||
      fail "$1: written outside: $(ls "$SCRATCH/outside")"
    find "$2" -type l -delete
    if [ "$3" = fc ]; then # a cube: no image files of their own to list
      [ -z "$(find "$2" -name '.*tmp*')" ] && pass "$1: no temp file" || fail "$1: temp files left"
    else
      set_true "$2" "$3" 64 "$1"
    fi
  }
  for n in 1 2 3 4 5 6; do
    rm -rf "$SCRATCH/outside"/*
    shim_run "link planted at the name of file $n" 0 '' "$SCRATCH/link$n" PSFSIM_FAULT_LINK_AT=$n \
      PSFSIM_FAULT_LINK_TO="$SCRATCH/outside" PSFSIM_FAULT_LOG="$SCRATCH/link$n.log" -- -j 1 -c f.cfg
    grep -q '^link ' "$SCRATCH/link$n.log" 2>/dev/null && pass "file $n: the link was planted" ||
      fail "file $n: no link planted"
    links_ok "link at file $n" "$SCRATCH/link$n" f
    [ "$(tail -n +2 "$SCRATCH/link$n/f_manifest.csv" | wc -l)" -eq 10 ] &&
      pass "link at file $n: 10 images listed" || fail "link at file $n: not 10 images"
  done
  for n in 1 2 3 4; do
    rm -rf "$SCRATCH/outside"/*
    shim_run "cube: link planted at the name of file $n" 0 '' "$SCRATCH/clink$n" \
      PSFSIM_FAULT_LINK_AT=$n PSFSIM_FAULT_LINK_TO="$SCRATCH/outside" -- -j 1 -c fc.cfg
    links_ok "cube: link at file $n" "$SCRATCH/clink$n" fc
    [ -f "$SCRATCH/clink$n/fc_cube.fits" ] && [ ! -L "$SCRATCH/clink$n/fc_cube.fits" ] &&
      pass "cube: link at file $n: the cube is a file" || fail "cube: link at file $n: no cube file"
  done
  for n in 3 4; do
    rm -rf "$SCRATCH/outside"/*
    shim_run "link planted at the final name of rename $n" 0 '' "$SCRATCH/rlink$n" \
      PSFSIM_FAULT_LINK_RENAME_AT=$n PSFSIM_FAULT_LINK_TO="$SCRATCH/outside" -- -j 1 -c f.cfg
    [ -z "$(find "$SCRATCH/rlink$n" -type l)" ] && pass "rename $n: the link was replaced" ||
      fail "rename $n: a link is left: $(find "$SCRATCH/rlink$n" -type l)"
    links_ok "link at the final name of rename $n" "$SCRATCH/rlink$n" f
  done
else
  echo "skip: no fault shim (PSFSIM_FAULT_SHIM): disk-full, EACCES, rmdir, rename and link checks"
fi

# ---- the output directory given as a symbolic link: resolved once, used ----
rm -rf real_out link_out && mkdir real_out && ln -s real_out link_out
expect_exit 0 "output directory given as a symbolic link" -- "$PSFSIM" -q -c f.cfg -o link_out
[ -f real_out/f_9.fits ] && [ -f real_out/f_manifest.csv ] &&
  pass "symbolic link to the output directory: the set is in its target" ||
  fail "symbolic link to the output directory: set not in its target"

# ---- the manifest itself hits a write limit mid-row (EFBIG past ulimit -f) ----
# 55 swept terms make 700-byte rows: the manifest passes 40 KiB after ~60
# rows, the images (3 KiB) never do. The rows of the batch that did not fit
# must go, and their images with them.
terms=$(awk 'BEGIN { for (j = 5; j < 60; ++j) printf "%s(%d, [0.0])", (j > 5 ? ", " : ""), j }')
cfg big 200 16 '' "zernike = ( $terms );" >big.cfg
rm -rf "$SCRATCH/fsize"
expect_exit 3 "manifest over ulimit -f" -- bash -c \
  'trap "" XFSZ; ulimit -f 40; exec "$0" -j 1 -c big.cfg -o "$1"' "$PSFSIM" "$SCRATCH/fsize"
expect_stderr 'big_manifest\.csv: File too large' "manifest over ulimit -f: message"
set_true "$SCRATCH/fsize" big 32 "manifest over ulimit -f"
[ "$(tail -n +2 "$SCRATCH/fsize/big_manifest.csv" | wc -l)" -ge 1 ] &&
  pass "manifest over ulimit -f: earlier rows kept" || fail "manifest over ulimit -f: no rows kept"

# ---- truncated maps: refused before any work (exit 2), nothing written ----
rm -rf maps && mkdir maps
cfg m 1 32 'fits: { enabled = true; };' >m.cfg
if "$PSFSIM" -q -c m.cfg -o maps/src; then
  cp maps/src/m_0.png maps/good.png && cp maps/src/m_0.fits maps/good.fits
  png_size=$(stat -c %s maps/good.png)
  fits_size=$(stat -c %s maps/good.fits)
  for kind in png fits; do
    if [ $kind = png ]; then cuts="20 40 $((png_size / 2)) $((png_size - 12))"; else
      cuts="100 2880 $((2880 + 4000)) $((fits_size - 2880))"; fi
    for cut in $cuts; do
      head -c "$cut" maps/good.$kind >maps/cut$cut.$kind
      for use in aperture opd; do
        if [ $use = aperture ]; then
          key="optics.aperture.file"
          extra="aperture: { shape = \"file\"; file = \"cut$cut.$kind\"; diameter_m = 1.0; };"
          sed "s|aperture: { diameter_m = 1.0; obscuration = 0.2; };|$extra|" m.cfg >maps/$use.cfg
        else
          key="aberrations.opd_map"
          sed "s|^sampling|aberrations: { opd_map: { file = \"cut$cut.$kind\"; }; };\nsampling|" \
            m.cfg >maps/$use.cfg
        fi
        what="$use map $kind cut at $cut bytes"
        expect_exit 2 "$what" -- "$PSFSIM" -c maps/$use.cfg -o maps/out
        expect_stderr "cut$cut\.$kind.*(truncated|corrupt|not a PNG|not a FITS|cannot open|cannot read)" \
          "$what: message names the file and the damage"
        nothing_written maps/out "$what"
      done
    done
  done
  # The whole files are accepted (the cuts above are the only difference).
  sed 's|^sampling|aberrations: { opd_map: { file = "good.fits"; scale = 10.0; }; };\nsampling|' \
    m.cfg >maps/whole.cfg
  expect_exit 0 "whole FITS OPD map accepted" -- "$PSFSIM" -q -c maps/whole.cfg -o maps/whole
else
  fail "could not make the maps to truncate"
fi

# ---- limits: refused before any work, with both numbers ----
cat >huge.cfg <<'CFG'
name = "huge";
optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };
sampling: { pupil_samples = 32768;
  padding = 2.0; };
CFG
mem_kb=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
if [ "${mem_kb:-0}" -lt 150000000 ]; then
  expect_exit 2 "65536^2 grid on this machine" -- "$PSFSIM" -c huge.cfg -o out_huge
  expect_stderr 'huge\.cfg:3: sampling\.pupil_samples: a 65536 x 65536 FFT grid .* needs [0-9.]+ GiB of memory .*more than this machine can give: [0-9.]+ [GM]iB available \(MemAvailable\) of [0-9.]+ [GM]iB physical' \
    "65536^2 grid: message with both numbers"
  nothing_written out_huge "65536^2 grid"
else
  echo "skip: this machine has ${mem_kb} kB, enough for a 65536^2 grid"
fi

sed 's/32768;/8192;/' huge.cfg >addr.cfg # N = 16384: 4 GiB of FFT buffers
if (ulimit -v 3000000 && "$PSFSIM" --version >/dev/null 2>&1); then
  expect_exit 2 "16384^2 grid under ulimit -v 3000000" -- \
    bash -c 'ulimit -v 3000000; exec "$0" -c addr.cfg -o out_addr' "$PSFSIM"
  expect_stderr 'addr\.cfg:3: sampling\.pupil_samples: .* needs [0-9.]+ GiB of memory .*address space limited to 2\.9 GiB \(ulimit -v\)' \
    "ulimit -v: message"
  nothing_written out_addr "ulimit -v"
else
  echo "skip: psfsim does not start under ulimit -v here (sanitizer or valgrind)"
fi

sed 's/32768;/1000000000;/' huge.cfg >absurd.cfg
expect_exit 2 "pupil_samples = 10^9" -- "$PSFSIM" -c absurd.cfg -o out_absurd
expect_stderr 'absurd\.cfg:3: sampling\.pupil_samples: must be <= 65536 \(got 1000000000\)' \
  "pupil_samples = 10^9: message"
nothing_written out_absurd "pupil_samples = 10^9"

# 10^7 images (10000 defocus x 1000 values of Z7) of 256 x 256: ~1.3 TiB.
d1=$(awk 'BEGIN { for (i = 0; i < 10000; ++i) printf "%s%.2f", (i ? ", " : ""), i * 0.01 }')
d2=$(awk 'BEGIN { for (i = 0; i < 1000; ++i) printf "%s%.1f", (i ? ", " : ""), i * 0.1 }')
cat >many.cfg <<CFG
name = "many";
optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; }; };
sampling: { pupil_samples = 128; };
sweep: { defocus = [$d1];
  zernike = ( (7, [$d2]) ); };
CFG
free_kb=$(df -Pk . | awk 'NR == 2 { print $4 }')
if [ "${free_kb:-0}" -lt 1000000000 ]; then
  expect_exit 2 "10^7 images" -- "$PSFSIM" -c many.cfg -o out_many
  expect_stderr 'many\.cfg:4: sweep: 10000000 image\(s\) of 256 x 256 \(PNG 16-bit\) need up to [0-9.]+ TiB in out_many, but its file system \(.*\) has [0-9.]+ [KMGT]iB free' \
    "10^7 images: message with both numbers"
  nothing_written out_many "10^7 images"
else
  echo "skip: ${free_kb} kB free here, room for 10^7 images"
fi
sed 's/zernike = ( (7, \[/zernike = ( (8, [0.0, 1.0]), (7, [/' many.cfg >toomany.cfg
expect_exit 2 "2 x 10^7 images" -- "$PSFSIM" -c toomany.cfg -o out_toomany
expect_stderr 'toomany\.cfg:4: sweep: makes 20000000 images .*more than the limit of 10000000' \
  "2 x 10^7 images: message"
nothing_written out_toomany "2 x 10^7 images"

# ---- real file systems (root with mount(8) only) ----
mounts=()
cleanup_mounts() { for m in "${mounts[@]}"; do umount "$m" 2>/dev/null; done; }
trap cleanup_mounts EXIT
try_mount() { # DIR OPTIONS
  mkdir -p "$1" && mount -t tmpfs -o "$2" psfsim_test "$1" 2>/dev/null && mounts+=("$1")
}

if try_mount "$SCRATCH/ro" ro,size=1m; then
  expect_exit 2 "read-only output directory" -- "$PSFSIM" -c f.cfg -o "$SCRATCH/ro"
  expect_stderr "output directory $SCRATCH/ro: not writable: Read-only file system" \
    "read-only output directory: message"
  expect_exit 2 "output directory inside a read-only one" -- \
    "$PSFSIM" -c f.cfg -o "$SCRATCH/ro/sub/dir"
  expect_stderr "cannot create it in $SCRATCH/ro: Read-only file system" \
    "inside a read-only directory: message"
  nothing_written "$SCRATCH/ro" "read-only output directory"
elif [ "$(id -u)" -ne 0 ]; then
  mkdir -p "$SCRATCH/ro" && chmod 555 "$SCRATCH/ro"
  expect_exit 2 "unwritable output directory" -- "$PSFSIM" -c f.cfg -o "$SCRATCH/ro"
  expect_stderr "output directory $SCRATCH/ro: not writable: Permission denied" \
    "unwritable output directory: message"
  nothing_written "$SCRATCH/ro" "unwritable output directory"
  chmod 755 "$SCRATCH/ro"
else
  echo "skip: root without mount: no unwritable directory to try"
fi

if try_mount "$SCRATCH/small" size=256k; then
  # 20 PNGs of 256 x 256 need ~2.7 MiB at worst: refused up front.
  cfg s 20 128 '' >s.cfg
  expect_exit 2 "set larger than the free space" -- "$PSFSIM" -c s.cfg -o "$SCRATCH/small/out"
  expect_stderr "s\.cfg:4: sweep: 20 image\(s\) of 256 x 256 \(PNG 16-bit\) need up to [0-9.]+ MiB in $SCRATCH/small/out, but its file system \($SCRATCH/small\) has [0-9.]+ KiB free" \
    "set larger than the free space: message with both numbers"
  nothing_written "$SCRATCH/small" "set larger than the free space"
else
  echo "skip: no tmpfs: the up-front disk check is covered by test_limits"
fi
if try_mount "$SCRATCH/fit" size=3m; then
  # 200 PNGs of 64 x 64 (16-bit): at worst 8340 bytes, 3 blocks, each; with
  # the logs 2.6 MiB: it fits in 3 MiB, and is written. (The estimate was
  # 8 KiB and a block more per file and 1 KiB per row: 5 MiB, refused.)
  cfg t 200 32 '' >t.cfg
  expect_exit 0 "a set that fits the free space" -- "$PSFSIM" -q -j 1 -c t.cfg -o "$SCRATCH/fit/out"
  set_true "$SCRATCH/fit/out" t 64 "a set that fits the free space"
  [ "$(tail -n +2 "$SCRATCH/fit/out/t_manifest.csv" | wc -l)" -eq 200 ] &&
    pass "a set that fits: 200 images listed" || fail "a set that fits: not 200 images"
fi

# A real ENOSPC mid-run: once the run has started, another process fills the
# file system (psfsim is stopped meanwhile, so the fill lands between two of
# its writes).
stop_fill_cont() { # WHAT DIR NAME NPIX ACTION: run psfsim on c.cfg, ACTION while it is stopped
  local what=$1 dir=$2 name=$3 npix=$4 action=$5
  "$PSFSIM" -j 1 -c c.cfg -o "$dir" 2>"$SCRATCH/stderr" &
  local pid=$! i=0
  while [ ! -s "$dir/${name}_manifest.csv" ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i + 1)); done
  # (every thread stopped: a writer could else still rename a file into
  # the directory being removed)
  stop_all $pid
  $action
  kill -CONT $pid 2>/dev/null
  wait $pid
  local got=$?
  if [ $got -eq 0 ]; then
    echo "skip: $what: the run ended before the fault"
  elif [ $got -eq 3 ]; then
    pass "$what (exit 3)"
  else
    fail "$what: exit $got, expected 3"; sed 's/^/  stderr: /' "$SCRATCH/stderr"
  fi
  set_true "$dir" "$name" "$npix" "$what"
}
cfg c 400 32 '' >c.cfg
fill() { dd if=/dev/zero of="$SCRATCH/full/fill" bs=64k 2>/dev/null; }
if try_mount "$SCRATCH/full" size=16m; then
  stop_fill_cont "real ENOSPC mid-run" "$SCRATCH/full/out" c 64 fill
  grep -q 'No space left on device' "$SCRATCH/stderr" && pass "real ENOSPC: message" ||
    { grep -q . "$SCRATCH/stderr" && fail "real ENOSPC: message lacks the reason"; }
else
  echo "skip: no tmpfs: the mid-run ENOSPC is covered by the shim"
fi
remove_dir() { rm -rf "$SCRATCH/gone"; }
stop_fill_cont "output directory removed mid-run (rm -rf)" "$SCRATCH/gone" c 64 remove_dir

# ---- a garbage image (the shim leaves a NaN in one FFT's output) ----
# exit 3 naming the image; no file of its batch (the CPU computes 64 images
# a batch: the 80th FFT is in the second), the manifest true.
if [ -n "$SHIM" ]; then
  cfg n 100 32 '' >n.cfg
  shim_run "NaN image" 3 'image [0-9]+ \(n_[0-9]+\): NaN/negative pixels \(1 NaN, 0 infinite, 0 negative of 4096\); not written' \
    "$SCRATCH/nan" PSFSIM_FAULT_NAN_AT=80 -- -q --backend cpu -c n.cfg
  set_true "$SCRATCH/nan" n 64 "NaN image"
  [ -z "$(ls "$SCRATCH/nan" | grep -E '^n_(6[4-9]|[7-9][0-9])\.png$')" ] &&
    pass "NaN image: no file of its batch" || fail "NaN image: files of its batch written"
  # the levels path (issue 17): the backend's counts give the same message and outcome
  shim_run "NaN image, levels path" 3 'image [0-9]+ \(n_[0-9]+\): NaN/negative pixels \(1 NaN, 0 infinite, 0 negative of 4096\); not written' \
    "$SCRATCH/nanlev" PSFSIM_FAULT_NAN_AT=80 PSFSIM_LEVELS=on -- -q --backend cpu -c n.cfg
  set_true "$SCRATCH/nanlev" n 64 "NaN image, levels path"
  [ -z "$(ls "$SCRATCH/nanlev" | grep -E '^n_(6[4-9]|[7-9][0-9])\.png$')" ] &&
    pass "NaN image, levels path: no file of its batch" || fail "NaN image, levels path: files of its batch written"
fi

# ---- the PNG's deflate fails (the shim's isal_deflate_stateless) ----
# Once: the encoder's retry gives the file the bytes of every other run (it
# was once streamed through libpng instead: the same pixels, other bytes).
# From the 4th call on: exit 3 naming the file and the reason, nothing
# false in the manifest; never a PNG from the other encoder.
if [ -n "$SHIM" ]; then
  expect_exit 0 "deflate reference run" -- "$PSFSIM" -q -j 1 -c f.cfg -o "$SCRATCH/defl_ref"
  shim_run "one failed deflate" 0 '' "$SCRATCH/defl1" PSFSIM_FAULT_DEFLATE_AT=3 -- -q -j 2 -c f.cfg
  same=1
  for p in "$SCRATCH"/defl_ref/f_*.png; do
    cmp -s "$p" "$SCRATCH/defl1/$(basename "$p")" || { same=0; echo "differs: $(basename "$p")"; }
  done
  [ "$same" = 1 ] && pass "one failed deflate: every PNG the reference's bytes" ||
    fail "one failed deflate: PNGs differ from the reference run's"
  shim_run "lasting deflate failure" 3 'f_[0-9]+\.png: cannot encode the PNG: igzip.s isal_deflate_stateless returned -9' \
    "$SCRATCH/deflall" PSFSIM_FAULT_DEFLATE_FROM=4 -- -q -j 1 -c f.cfg
  set_true "$SCRATCH/deflall" f 64 "lasting deflate failure"
  n=$(ls "$SCRATCH/deflall" | grep -c '\.png$')
  [ "$n" -le 3 ] && pass "lasting deflate failure: $n PNGs written (those encoded before the failures)" ||
    fail "lasting deflate failure: $n PNGs written"
fi

finish
