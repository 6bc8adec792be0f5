# A set's files and what psfsim trusts about them: one run at a time on a
# set (its lock), which files are the set's (--force and the existence check
# touch nothing else), the output directory removed under a run, the
# manifest's rows on --resume, what the fingerprint covers, and rows and
# headers written whole.
source "$(dirname "$0")/lib_e2e.sh"
SHIM=${PSFSIM_FAULT_SHIM:-}
[ -f "$SHIM" ] || SHIM=""
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

# cfg NAME NIMAGES PUPIL OUTPUT [SWEEP-EXTRA] [ABERRATIONS]: NIMAGES defocus steps.
cfg() {
  local values
  values=$(awk -v n="$2" 'BEGIN { for (i = 0; i < n; ++i) printf "%s%.3f", (i ? ", " : ""), i * 0.01 }')
  cat <<CFG
name = "$1";
optics: { wavelength_nm = 550.0; aperture: { diameter_m = 1.0; obscuration = 0.2; }; };
sampling: { pupil_samples = $3; };
${6:-}
sweep: { defocus = [$values]; ${5:-} };
output: { $4 };
CFG
}

# stop PID: SIGSTOP, and wait until every thread has stopped.
stop() {
  kill -STOP "$1" 2>/dev/null
  for _ in $(seq 500); do
    grep -qv '^T' <(for t in /proc/$1/task/*/stat; do awk '{ print $3 }' "$t" 2>/dev/null; done) || break
    sleep 0.01
  done
}

# rows FILE: the manifest's data rows.
rows() { tail -n +2 "$1" | wc -l; }

# ---- one run at a time on a set: the lock ----
# A run holds the set's lock while it runs: a second run on the same set,
# --resume or --force with another config, exits 2 naming the holder and
# touches nothing; the first one's set is whole.
cfg l 300 32 '' >l.cfg
sed 's/obscuration = 0.2/obscuration = 0.3/' l.cfg >l2.cfg
rm -rf lk
"$PSFSIM" -q -j 1 -c l.cfg -o lk 2>"$SCRATCH/first.err" &
pid=$!
for _ in $(seq 3000); do [ -s lk/l_manifest.csv ] && break; sleep 0.01; done
stop $pid
before=$(ls -A lk | sort | md5sum)
expect_exit 2 "--resume while another run writes the set" -- "$PSFSIM" -q -j 1 --resume -c l.cfg -o lk
expect_stderr "set l in lk is in use by psfsim pid $pid on host $(hostname)" "--resume: names the holder"
expect_exit 2 "--force with another config while another run writes the set" -- \
  "$PSFSIM" -q -j 1 --force -c l2.cfg -o lk
expect_stderr "set l in lk is in use by psfsim pid $pid" "--force: names the holder"
expect_exit 2 "a plain run while another run writes the set" -- "$PSFSIM" -q -j 1 -c l.cfg -o lk
expect_stderr "is in use by psfsim pid $pid" "plain run: names the holder"
[ "$(ls -A lk | sort | md5sum)" = "$before" ] && pass "the refused runs touched nothing" ||
  fail "the refused runs changed the directory"
kill -CONT $pid
wait $pid
rc=$?
[ $rc -eq 0 ] && pass "the first run ends well (exit 0)" || fail "the first run: exit $rc"
[ "$(rows lk/l_manifest.csv)" -eq 300 ] && pass "its manifest lists all 300 images" ||
  fail "its manifest lists $(rows lk/l_manifest.csv) images"
[ ! -e lk/.l.lock ] && pass "the lock file is removed at the end" || fail "lock file left"
expect_exit 0 "--resume once the set is free" -- "$PSFSIM" -v -j 1 --resume -c l.cfg -o lk
expect_stderr "resuming: 300 image\(s\) done earlier" "--resume once free: every image kept"

# A lock file a killed run left (not locked) is taken over.
echo "psfsim pid 1 on host gone" >lk/.l.lock
expect_exit 0 "a stale lock file does not stop a run" -- "$PSFSIM" -q -j 1 --force -c l.cfg -o lk

finish
