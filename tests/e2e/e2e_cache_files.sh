# SPDX-License-Identifier: BSD-3-Clause
# The cache directory's file (the probe's probe.txt) is a hint from a
# directory that may be shared: a FIFO or a link to /dev/zero at its name
# must not hang psfsim (it ends within the timeout, exit 0, with a warning
# naming the file), and a symbolic link planted at the temp name of its
# update must not be written through (backend/cache_file.h). FFTW wisdom
# (fftw-wisdom-float, which psfsim kept there before issue 26) is neither
# read nor written: the CPU's plans are estimated (cpu/plan_cache.h).
source "$(dirname "$0")/lib_e2e.sh"
limit=20
[ -n "${PSFSIM_WRAPPER:-}" ] && limit=300 # valgrind is some 50x slower
# A 128 x 128 FFT: the CPU backend read the wisdom from N = 128 up.
printf 'name = "c";\noptics: { wavelength_nm = 500; aperture: { diameter_m = 1; }; };\nsampling: { pupil_samples = 64; padding = 2.0; };\n' >c.cfg
have_gpu=0
[ -n "$(ls /proc/driver/nvidia/gpus 2>/dev/null)" ] && have_gpu=1

# plant KIND FILE: a FIFO, or a symbolic link to /dev/zero, at cache/FILE.
plant() {
  rm -rf cache && mkdir cache
  case $1 in
  fifo) mkfifo "cache/$2" ;;
  zero) ln -s /dev/zero "cache/$2" ;;
  esac
}
for kind in fifo zero; do
  what="fftw-wisdom-float as a $kind"
  plant $kind fftw-wisdom-float
  PSFSIM_CACHE_DIR="$SCRATCH/cache" expect_exit 0 "$what: --backend cpu ends" -- \
    timeout -k 5 $limit "$PSFSIM" --backend cpu -c c.cfg -o "out_$kind" --force
  [ "$(grep -c 'wisdom' "$SCRATCH/stderr")" -eq 0 ] && pass "$what: not read, nothing said" ||
    fail "$what: $(grep 'wisdom' "$SCRATCH/stderr")"
  # --probe measures no plans: the FIFO or link is left as it was.
  PSFSIM_CACHE_DIR="$SCRATCH/cache" expect_exit 0 "$what: --probe ends" -- \
    timeout -k 5 $limit "$PSFSIM" --probe -o "probe_$kind"
  { [ $kind = fifo ] && [ -p cache/fftw-wisdom-float ]; } || { [ $kind = zero ] && [ -L cache/fftw-wisdom-float ]; } &&
    pass "$what: not written" || fail "$what: written: $(ls -l cache)"

  what="probe.txt as a $kind"
  plant $kind probe.txt
  PSFSIM_CACHE_DIR="$SCRATCH/cache" expect_exit 0 "$what: auto ends" -- \
    timeout -k 5 $limit "$PSFSIM" -c c.cfg -o "auto_$kind" --force
  if [ $have_gpu -eq 1 ]; then # auto reads the probe's figures only with a GPU
    expect_stderr 'cache/probe.txt: (not a regular file \(a FIFO\)|a symbolic link \(not followed\)); not used as the probe cache' \
      "$what: a warning names the file"
  fi
  PSFSIM_CACHE_DIR="$SCRATCH/cache" expect_exit 0 "$what: --probe ends" -- \
    timeout -k 5 $limit "$PSFSIM" --probe -o "probe2_$kind"
  [ -f cache/probe.txt ] && [ ! -L cache/probe.txt ] && pass "$what: replaced by the figures" ||
    fail "$what: not replaced"
done

# A link planted at a temp name psfsim could once be made to use
# (probe.txt.tmp.PID: the shell's pid is psfsim's after exec) and at the
# unique temp name's pattern: the update writes neither target.
rm -rf cache && mkdir cache
echo precious >victim
echo precious >victim2
PSFSIM_CACHE_DIR="$SCRATCH/cache" expect_exit 0 "--probe with links planted at the temp names" -- \
  timeout -k 5 $limit sh -c 'ln -s "$1/victim" "$1/cache/probe.txt.tmp.$$" &&
    ln -s "$1/victim2" "$1/cache/.probe.txt.tmp.$$" && exec "$2" --probe -o probe3' sh "$SCRATCH" "$PSFSIM"
[ "$(cat victim)" = precious ] && [ "$(cat victim2)" = precious ] && pass "the planted links were not written through" ||
  fail "a planted link was written through: $(head -c 60 victim | tr '\n' ' ')"
[ -f cache/probe.txt ] && [ ! -L cache/probe.txt ] && pass "probe.txt is a regular file" ||
  fail "probe.txt is a link or missing: $(ls -l cache)"
[ ! -e cache/fftw-wisdom-float ] && pass "no FFTW wisdom written" || fail "FFTW wisdom written"
[ -z "$(find cache -name '*.tmp.*' ! -type l)" ] && pass "no temp file left" || fail "temp files left: $(ls -a cache)"
finish
