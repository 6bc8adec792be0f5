# SPDX-License-Identifier: BSD-3-Clause
# Shared by the e2e_*.sh tests: PSFSIM (binary), SRC (source tree) and
# SCRATCH (a directory of the test's own) come from ctest.
set -u
: "${PSFSIM:?}" "${SRC:?}" "${SCRATCH:?}"
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH"
cd "$SCRATCH"
# The FITS DATE from a fixed SOURCE_DATE_EPOCH: the files of two runs compare
# byte for byte (e2e_fitsverify.sh checks the date it gives).
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-1700000000}"
# PSFSIM_WRAPPER, when set in the environment (scripts/test.sh's valgrind
# stage), runs every psfsim of the test under it, e.g.
#   PSFSIM_WRAPPER="valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite"
# $PSFSIM becomes a script that execs "$PSFSIM_WRAPPER psfsim ARGS"; valgrind
# writes one report per process to $SCRATCH.vg/, and finish() fails the test
# when any holds an error (exit codes a test ignores included).
PSFSIM_VG_DIR=""
PSFSIM_UNWRAPPED="$PSFSIM"
if [ -n "${PSFSIM_WRAPPER:-}" ]; then
  PSFSIM_VG_DIR="$SCRATCH.vg"
  rm -rf "$PSFSIM_VG_DIR"
  mkdir -p "$PSFSIM_VG_DIR"
  vg_log=""
  case "$PSFSIM_WRAPPER" in *valgrind*) vg_log="--log-file=$PSFSIM_VG_DIR/vg.%p.log" ;; esac
  printf '#!/bin/sh
exec %s %s "%s" "$@"
' "$PSFSIM_WRAPPER" "$vg_log" "$PSFSIM" \
    >"$PSFSIM_VG_DIR/psfsim"
  chmod +x "$PSFSIM_VG_DIR/psfsim"
  PSFSIM="$PSFSIM_VG_DIR/psfsim"
fi
# Under the wrapper (valgrind: some 50 to 1000 times slower) a test does
# less work where no code path is lost, every check kept:
#  - wrapped: true under the wrapper;
#  - e2e_size NORMAL WRAPPED: NORMAL, or WRAPPED under the wrapper (fewer
#    images or pixels, the same branches);
#  - $PSFSIM_UNWRAPPED: psfsim itself, not under the wrapper, for a run
#    whose code paths other runs of the test take under it (a reference
#    that a wrapped run's files are compared with, one more bad value of a
#    key checked once under it); its exit and output are checked as ever.
#    (A manifest cell of 16 or 17 digits, a random set's drawn term, can
#    differ from a wrapped run's: under valgrind a long double is a double,
#    and app/output/csv_exact.c's digits can tell.)
wrapped() { [ -n "$PSFSIM_VG_DIR" ]; }
e2e_size() { if wrapped; then echo "$2"; else echo "$1"; fi; }
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
# e2e_python MODULE...: the first of $PSFSIM_PYTHON, python3 and
# /usr/bin/python3 that imports every MODULE, printed; status 1 when none does.
e2e_python() {
  local p mods
  mods=$(printf '%s, ' "$@")
  for p in "${PSFSIM_PYTHON:-}" python3 /usr/bin/python3; do
    [ -n "$p" ] && "$p" -c "import ${mods%, }" 2>/dev/null && { echo "$p"; return 0; }
  done
  return 1
}
# expect_exit CODE DESCRIPTION -- COMMAND...: run, keep stderr in $SCRATCH/stderr.
expect_exit() {
  local want=$1 what=$2; shift 3
  "$@" >"$SCRATCH/stdout" 2>"$SCRATCH/stderr"
  local got=$?
  if [ "$got" -eq "$want" ]; then pass "$what (exit $got)"; else
    fail "$what: exit $got, expected $want"; sed 's/^/  stderr: /' "$SCRATCH/stderr"; fi
}
# expect_stderr PATTERN DESCRIPTION: the last command's stderr matches (grep -E).
expect_stderr() {
  if grep -Eq -- "$1" "$SCRATCH/stderr"; then pass "$2"; else
    fail "$2: stderr lacks /$1/"; sed 's/^/  stderr: /' "$SCRATCH/stderr"; fi
}
# wrapper_clean: 0 when no valgrind report of this test holds an error: a
# report is bad when its summary counts errors, or, under valgrind -q (which
# prints errors only, and no summary without them), when it is not empty.
wrapper_clean() {
  [ -n "$PSFSIM_VG_DIR" ] || return 0
  local bad="" f
  for f in "$PSFSIM_VG_DIR"/vg.*.log; do
    [ -s "$f" ] || continue
    if grep -q 'ERROR SUMMARY: [1-9]' "$f" || ! grep -q 'ERROR SUMMARY' "$f"; then bad="$bad $f"; fi
  done
  [ -z "$bad" ] && return 0
  for f in $bad; do echo "  valgrind: $f"; sed 's/^/    /' "$f" | tail -40; done
  return 1
}
# cfg NAME NIMAGES PUPIL OUTPUT [SWEEP-EXTRA]: a config of NIMAGES defocus
# steps, N = 2 PUPIL, output block OUTPUT (e2e_faults.sh, e2e_sets.sh).
cfg() {
  local values
  values=$(awk -v n="$2" 'BEGIN { for (i = 0; i < n; ++i) printf "%s%.3f", (i ? ", " : ""), i * 0.01 }')
  cat <<CFG
name = "$1";
optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; obscuration = 0.2; }; };
sampling: { pupil_samples = $3; };
sweep: { defocus = [$values]; ${5:-} };
output: { $4 };
CFG
}
# stop_all PID: SIGSTOP, then wait until every thread of PID has stopped
# (kill returns before they all have).
stop_all() {
  kill -STOP "$1" 2>/dev/null
  for _ in $(seq 500); do
    grep -qv '^T' <(for t in /proc/$1/task/*/stat; do awk '{ print $3 }' "$t" 2>/dev/null; done) || break
    sleep 0.01
  done
}
# kill_mid_set PID MANIFEST ROWS TOTAL NAME: kill -9 PID once MANIFEST has
# ROWS rows (polled), then pass when it died of the signal before all TOTAL
# rows and left its temp file NAME's .NAME.h5.part (no NAME.h5) in the
# manifest's directory (e2e_hdf5_detector.sh, e2e_hdf5_held.sh).
kill_mid_set() {
  local pid=$1 manifest=$2 want=$3 total=$4 name=$5 rows=0 rc dir
  dir=$(dirname "$manifest")
  for _ in $(seq 1000); do
    rows=$(($(wc -l 2>/dev/null <"$manifest" || echo 1) - 1))
    [ "$rows" -ge "$want" ] && break
    sleep 0.005
  done
  kill -9 "$pid"
  wait "$pid"
  rc=$?
  rows=$(($(wc -l <"$manifest") - 1))
  [ $rc -eq 137 ] && [ "$rows" -lt "$total" ] && pass "$name: killed mid-set ($rows of $total rows)" ||
    fail "$name: not killed mid-set (exit $rc, $rows rows)"
  [ ! -e "$dir/$name.h5" ] && [ -f "$dir/.$name.h5.part" ] && pass "$name: no $name.h5, its temp file kept" ||
    fail "$name: $(ls -A "$dir" | grep h5)"
}
finish() {
  wrapper_clean || fail "valgrind reported errors (above)"
  if [ "$failures" -eq 0 ]; then echo "all checks passed"; exit 0; fi
  echo "$failures check(s) failed"; exit 1
}
