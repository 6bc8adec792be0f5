#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The datasets benchmark: random-aberration sets (12 Zernike terms, Noll
# 4..15, normal, sigma 0.05 waves) written as one NAME.h5 (float32), whole
# psfsim process, against in the same run
#  (a) the bytes-to-disk bound: the same number of bytes written
#      sequentially to the same file system by dd (bs 16 MiB, no sync:
#      psfsim does not sync either);
#  (b) the Python peer (bench/reference_h5py.py): one batched FFT per chunk
#      in CuPy (NumPy without a GPU), written with h5py;
# and psfsim's own compute time (the timing log's compute_us), its host time
# (whole process less compute: what the host adds), its peak memory
# (ru_maxrss) at N/10 and N images (flat in the number of images).
#   bench/datasets_bench.sh BUILD DIR CASES     DIR: where the files go (a disk, or tmpfs)
#   CASES: space-separated IMAGES:PUPIL pairs, e.g. "1000000:32 100000:128"
#   BACKEND=cpu|gpu|auto (default auto): psfsim's --backend
#   COUNTS="10000 100000 300000": psfsim's image counts for every case
#     (default N/10 and N); dd and the peer at the case's N
#   PEER_ARGS: more arguments for the peer (--numpy); no peer without h5py
#   SYNC=1: every timed command (the peer too) is followed by sync(2) inside its time, so
#     a disk's figures are bytes on the disk, not in the page cache (whose
#     dirty limit throttles a writer by what the kernel has learnt of the
#     disk so far: the first of two equal unsynced dd runs took 7.6 s, the
#     second 4.8 s); dd then runs before psfsim too (dd_before row)
# Prints CSV rows: case,what,images,npix,seconds,images_per_s,peak_rss_mb,note
set -euo pipefail
build=$1 dir=$2 cases=$3
root="$(cd "$(dirname "$0")/.." && pwd)"
py=${PYTHON:-python3}
mkdir -p "$dir"
rss() { # command... : run it, print "seconds peak_rss_mb" on fd 3
  "$py" - "$@" 3>&1 1>&2 <<'EOF'
import os, resource, subprocess, sys, time
t = time.perf_counter()
rc = subprocess.run(sys.argv[1:]).returncode
if os.environ.get("SYNC") == "1":
    os.sync()
t = time.perf_counter() - t
m = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"{t:.3f} {m:.0f}", file=open(3, "w", closefd=False))
sys.exit(rc)
EOF
}
cfg() { # name images pupil
  cat <<EOF
name = "$1";
optics: { wavelength_nm = 1000.0; aperture: { diameter_m = 1.0; }; };
sampling: { pupil_samples = $3; padding = 2.0; };
sweep: { random: { count = $2; seed = 1;
  zernike = ((4, "normal", 0.05), (5, "normal", 0.05), (6, "normal", 0.05), (7, "normal", 0.05),
             (8, "normal", 0.05), (9, "normal", 0.05), (10, "normal", 0.05), (11, "normal", 0.05),
             (12, "normal", 0.05), (13, "normal", 0.05), (14, "normal", 0.05), (15, "normal", 0.05)); }; };
output: { png: { enabled = false; }; hdf5: { enabled = true; dtype = "float32"; }; };
EOF
}
echo "case,what,images,npix,seconds,images_per_s,peak_rss_mb,note"
for c in $cases; do
  k=${c%%:*} n=${c##*:} npix=$((2 * n)) name="ds${n}"
  tag="${k}x${npix}"
  if [ "${SYNC:-0}" = 1 ]; then # bytes of a float32 set: K M^2 4 and the labels (~1%)
    bytes=$((k * npix * npix * 4))
    read -r t m < <(rss dd if=/dev/zero of="$dir/dd.bin" bs=16M count=$(((bytes + 16777215) / 16777216)) status=none)
    echo "$tag,dd_before,$k,$npix,$t,$(awk -v k="$k" -v t="$t" 'BEGIN { printf "%.0f", k / t }'),$m,$bytes bytes (images only)"
    rm -f "$dir/dd.bin"
    sync
  fi
  for kk in ${COUNTS:-$((k / 10)) $k}; do
    cfg "$name" "$kk" "$n" >"$dir/$name.cfg"
    rm -f "$dir/$name".h5 "$dir/$name"_*.csv "$dir/$name".json
    read -r t m < <(rss "$build/psfsim" -q --force --backend "${BACKEND:-auto}" -c "$dir/$name.cfg" -o "$dir")
    cu=$(awk -F, '$1 == "compute_us" { print $7 }' "$dir/${name}_timing.csv")
    echo "$tag,psfsim,$kk,$npix,$t,$(awk -v k="$kk" -v t="$t" 'BEGIN { printf "%.0f", k / t }'),$m,compute $(awk -v c="$cu" 'BEGIN { printf "%.3f", c / 1e6 }') s; host $(awk -v c="$cu" -v t="$t" 'BEGIN { printf "%.3f", t - c / 1e6 }') s; $(grep -m1 '^backend,' "$dir/${name}_timing.csv" | cut -d, -f8- | tr -d '"' | tr , ';')"
    bytes=$(stat -c %s "$dir/$name.h5")
    [ "$kk" = "$k" ] && kbytes=$bytes
    rm -f "$dir/$name.h5"
  done
  bytes=${kbytes:-$((bytes / kk * k))} # without a run of N images: scaled
  read -r t m < <(rss dd if=/dev/zero of="$dir/dd.bin" bs=16M count=$(((bytes + 16777215) / 16777216)) status=none)
  echo "$tag,dd_same_bytes,$k,$npix,$t,$(awk -v k="$k" -v t="$t" 'BEGIN { printf "%.0f", k / t }'),$m,$bytes bytes"
  rm -f "$dir/dd.bin"
  if ! "$py" -c "import h5py" 2>/dev/null; then
    echo "$tag,peer,$k,$npix,,,,not run: no h5py"
    continue
  fi
  row=$("$py" "$root/bench/reference_h5py.py" "$dir/ref.h5" --images "$k" --pupil "$n" ${PEER_ARGS:-})
  IFS=, read -r peer _ _ t rate <<<"$row"
  echo "$tag,$peer,$k,$npix,$t,$rate,,h5py"
  rm -f "$dir/ref.h5"
done
