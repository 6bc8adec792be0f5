# SPDX-License-Identifier: BSD-3-Clause
# End to end: every shipped config runs and writes exactly what its manifest
# lists, with no temp file left, and a timing log.
source "$(dirname "$0")/lib_e2e.sh"
# Under the wrapper each config runs with sampling.pupil_samples and
# output.npix over 8 (at least 32 and 8: no undersampling warning), the
# same keys and branches on fewer pixels: wide_field_imager's 25 field
# points of 640 x 640 took over 25 minutes under valgrind.
shrink() {
  awk '{ if (match($0, /pupil_samples = [0-9]+/)) {
           v = int(substr($0, RSTART + 16, RLENGTH - 16) / 8); sub(/pupil_samples = [0-9]+/, "pupil_samples = " (v < 32 ? 32 : v)) }
         if (match($0, /npix = [0-9]+/)) {
           v = int(substr($0, RSTART + 7, RLENGTH - 7) / 8); sub(/npix = [0-9]+/, "npix = " (v < 8 ? 8 : v)) }
         print }' "$1"
}
for cfg in "$SRC"/configs/*.cfg; do
  name=$(basename "$cfg" .cfg)
  out="$SCRATCH/$name"
  if wrapped; then
    shrink "$cfg" >"$SCRATCH/$name.cfg"
    cfg="$SCRATCH/$name.cfg"
  fi
  expect_exit 0 "$name runs" -- "$PSFSIM" -q -c "$cfg" -o "$out"
  manifest="$out/${name}_manifest.csv"
  [ -f "$manifest" ] || { fail "$name: no manifest"; continue; }
  [ -f "$out/${name}_timing.csv" ] || fail "$name: no timing log"
  rows=$(($(wc -l <"$manifest") - 1))
  [ "$rows" -ge 1 ] || fail "$name: manifest has no rows"
  # Every file the manifest names exists, and nothing else is in the directory.
  listed=$(tail -n +2 "$manifest" | awk -F, '{ if ($2 != "") print $2; if ($3 != "") print $3 }' | sort -u)
  present=$(ls "$out" | grep -v -e '_manifest.csv$' -e '_timing.csv$' | sort)
  if [ "$listed" = "$present" ]; then pass "$name: $rows image(s), files match the manifest"; else
    fail "$name: files differ from the manifest"; diff <(echo "$listed") <(echo "$present"); fi
  # Manifest strehl values are numbers in (0, 1.0001].
  bad=$(tail -n +2 "$manifest" | awk -F, '{ if (!($14 > 0 && $14 <= 1.0001)) print $1 }')
  [ -z "$bad" ] && pass "$name: Strehl values in (0, 1]" || fail "$name: bad Strehl in rows $bad"
  timing_rows=$(grep -c '^[0-9]' "$out/${name}_timing.csv")
  [ "$timing_rows" -eq "$rows" ] && pass "$name: one timing row per image" ||
    fail "$name: $timing_rows timing rows for $rows images"
done
finish
