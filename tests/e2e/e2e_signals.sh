# SPDX-License-Identifier: BSD-3-Clause
# SIGINT and SIGTERM while the config loads end psfsim at once: exit 130,
# nothing written (a run interrupted later: e2e_resume.sh). A config read
# from a FIFO waits for its writer and its data: the slow load here.
source "$(dirname "$0")/lib_e2e.sh"
# Time for psfsim to start and reach the wait (more under a wrapper such as
# valgrind), and the most the signal may take to end it.
settle=0.5 limit_ms=2000
if [ -n "${PSFSIM_WRAPPER:-}" ]; then settle=5 limit_ms=10000; fi

# signal_during_load SIGNAL DESCRIPTION -- COMMAND...: start the command
# (standard input from $STDIN, default /dev/null), send the signal once it
# waits, expect exit 130 within limit_ms.
signal_during_load() {
  local sig=$1 what=$2
  shift 3
  "$@" <"${STDIN:-/dev/null}" >"$SCRATCH/stdout" 2>"$SCRATCH/stderr" &
  local pid=$!
  # A psfsim that ignores the signal must not hang the test (the watchdog's
  # sleep, left behind when it is killed, holds no output of the test).
  (sleep 30 && kill -KILL $pid) >/dev/null 2>&1 &
  local watchdog=$!
  sleep $settle
  local t0=$(date +%s%N)
  kill -s "$sig" $pid
  wait $pid
  local rc=$? ms=$((($(date +%s%N) - t0) / 1000000))
  kill $watchdog 2>/dev/null
  wait $watchdog 2>/dev/null
  if [ $rc -eq 130 ]; then pass "$what: exit 130"; else
    fail "$what: exit $rc, expected 130"; sed 's/^/  stderr: /' "$SCRATCH/stderr"; fi
  [ $ms -le $limit_ms ] && pass "$what: ended in $ms ms" || fail "$what: took $ms ms"
}
nothing_written() {
  [ ! -e "$SCRATCH/out" ] && pass "$1: nothing written" || { fail "$1: out was created"; ls -la out; }
}

mkfifo never.fifo
signal_during_load TERM "SIGTERM while a FIFO config waits for a writer" -- "$PSFSIM" -c never.fifo -o out
expect_stderr '^psfsim: never.fifo: interrupted while loading the config' "SIGTERM: message"
nothing_written "SIGTERM, FIFO"
signal_during_load INT "SIGINT while a FIFO config waits for a writer" -- "$PSFSIM" -c never.fifo -o out
nothing_written "SIGINT, FIFO"

# A writer that holds the FIFO open and never writes; then standard input.
mkfifo held.fifo
exec 3<>held.fifo
signal_during_load TERM "SIGTERM while a FIFO config waits for data" -- "$PSFSIM" -c held.fifo -o out
nothing_written "SIGTERM, no data"
STDIN=held.fifo signal_during_load TERM "SIGTERM while -c - waits for standard input" -- "$PSFSIM" -c - -o out
expect_stderr '^psfsim: <stdin>: interrupted while loading the config' "-c -: message"
nothing_written "SIGTERM, standard input"
exec 3>&-
finish
