# Shared by the e2e_*.sh tests: PSFSIM (binary), SRC (source tree) and
# SCRATCH (a directory of the test's own) come from ctest.
set -u
: "${PSFSIM:?}" "${SRC:?}" "${SCRATCH:?}"
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH"
cd "$SCRATCH"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
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
finish() {
  if [ "$failures" -eq 0 ]; then echo "all checks passed"; exit 0; fi
  echo "$failures check(s) failed"; exit 1
}
