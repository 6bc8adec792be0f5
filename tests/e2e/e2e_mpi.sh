# SPDX-License-Identifier: BSD-3-Clause
# MPI mode (README, "Many hosts: MPI"): mpirun -n 3 on the CPU backend
# gives the same images and manifest as one process, byte for byte; killing
# one rank mid-run leaves complete files and a true manifest, and --resume
# finishes the set. Skips (77) without an MPI build or without mpirun.
source "$(dirname "$0")/lib_e2e.sh"
export PSFSIM_CACHE_DIR="$SCRATCH/cache"
if ! "$PSFSIM" --version | grep -q '^MPI'; then echo "skipped: psfsim built without MPI"; exit 77; fi
if ! command -v mpirun >/dev/null; then echo "skipped: no mpirun"; exit 77; fi
# Open MPI in a container, as root, without a network: shared memory only.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1
MPIRUN=(mpirun --oversubscribe -n 3)

sweep() { # name pupil_samples n_zernike_values
  local vals; vals=$(seq -s ', ' 0 $(($3 - 1)) | sed 's/\([0-9]\+\)/0.00\1/g')
  cat <<CFG
name = "$1";
optics: { wavelength_nm = 600; aperture: { diameter_m = 1.0; obscuration = 0.2; }; };
sampling: { pupil_samples = $2; padding = 2.0; };
aberrations: { zernike = ((8, 0.05)); };
sweep: { defocus = [-1.0, -0.5, 0.0, 0.5]; zernike = ((11, [$vals])); };
output: { png: { compression = 9; }; fits: { enabled = true; }; };
CFG
}
complete_png() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
  tail -c 8 "$1" | od -An -c | grep -q "I   E   N   D"; }
same_files() { # dirA dirB: every image of A equals B's
  local d=0 f
  for f in "$1"/*.png "$1"/*.fits; do cmp -s "$f" "$2/$(basename "$f")" || d=$((d + 1)); done
  echo $d
}

# 1. 200 images of 64x64 (estimated FFTW plans: deterministic).
sweep m 32 50 >m.cfg
expect_exit 0 "single-process reference" -- "$PSFSIM" -q --backend cpu -c m.cfg -o ref
expect_exit 0 "mpirun -n 3" -- "${MPIRUN[@]}" "$PSFSIM" -v --backend cpu -c m.cfg -o par
expect_stderr 'rank 2 of 3 .*images 128-199' "rank 2 takes images 128-199"
[ "$(ls par/*.png | wc -l)" -eq 200 ] && pass "200 PNGs" || fail "PNG count $(ls par/*.png | wc -l)"
[ "$(same_files ref par)" -eq 0 ] && pass "every image equals the single-process run's" ||
  fail "$(same_files ref par) images differ"
cut -d, -f1-15 ref/m_manifest.csv >a.csv
cut -d, -f1-15 par/m_manifest.csv >b.csv
cmp -s a.csv b.csv && pass "manifest equals the single-process run's (index..axial_intensity, order)" ||
  fail "manifest differs"
[ "$(grep -c '^[0-9]' par/m_timing.csv)" -eq 200 ] && grep -q '^rank_2,' par/m_timing.csv &&
  grep -q '^mpi_ranks,' par/m_timing.csv && pass "timing log: 200 rows and the ranks" || fail "timing log"
expect_exit 2 "an existing set without --force: every rank stops" -- "${MPIRUN[@]}" "$PSFSIM" --backend cpu -c m.cfg -o par
[ "$(grep -c 'already holds' "$SCRATCH/stderr")" -eq 1 ] && pass "said once (rank 0)" || fail "message count"

# 1b. A random set (sweep.random): the draws are a function of (seed, draw,
# term), so 3 ranks give the same images and manifest, label columns and
# all, byte for byte.
cat >rnd.cfg <<'CFG'
name = "rn";
optics: { wavelength_nm = 600; f_number = 12.0; aperture: { diameter_m = 1.0; obscuration = 0.2; }; };
sampling: { pupil_samples = 32; padding = 2.0; };
aberrations: { zernike = ((8, 0.05)); };
sweep: { defocus = [0.0, 0.2]; random: { count = 60; seed = 77; zernike = ((4, "normal", 0.05), (7, "uniform", 0.02));
  spectrum: { j_min = 9; j_max = 10; total_rms = 0.03; power = -2.0; }; focus_shift_um = [-40.0, 40.0]; }; };
output: { fits: { enabled = true; }; };
CFG
expect_exit 0 "random set, single process" -- "$PSFSIM" -q --backend cpu -c rnd.cfg -o rref
expect_exit 0 "random set, mpirun -n 3" -- "${MPIRUN[@]}" "$PSFSIM" -q --backend cpu -c rnd.cfg -o rpar
[ "$(ls rpar/*.png | wc -l)" -eq 120 ] && [ "$(same_files rref rpar)" -eq 0 ] &&
  pass "random set: 120 images equal the single-process run's" || fail "random set: $(same_files rref rpar) images differ"
cmp -s rref/rn_manifest.csv rpar/rn_manifest.csv && pass "random set: manifest equal byte for byte" ||
  fail "random set: manifest differs"

# 2. Kill rank 1 mid-run (SIGKILL, a crash): the others finish their files
# in flight; every file present is complete and the manifest lists only
# them; --resume completes the set, equal to one process's.
sweep k 64 150 >k.cfg # 600 images of 128x128; blocks 0-191, 192-383, 384-599
expect_exit 0 "single-process reference (600 images)" -- "$PSFSIM" -q --backend cpu -c k.cfg -o kref
# When a rank dies, mpirun sends SIGTERM to the others and SIGKILL after
# odls_base_sigkill_timeout seconds (default 1; mpirun waits that long even
# when they are gone): 3 s for them to finish the files in flight.
OMPI_MCA_odls_base_sigkill_timeout=3 "${MPIRUN[@]}" "$PSFSIM" -q --backend cpu -j 1 -c k.cfg -o kpart \
  >"$SCRATCH/stdout" 2>"$SCRATCH/stderr" &
mpid=$!
victim=""
for _ in $(seq 300); do # wait until rank 1 has written some images (at most ~30 s)
  n1=$(ls kpart 2>/dev/null | grep -cE '^k_(19[2-9]|2[0-9][0-9]|3[0-7][0-9]|38[0-3])\.png$')
  if [ "$n1" -ge 10 ]; then
    for p in $(pgrep -P $mpid); do
      tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && victim=$p
    done
    break
  fi
  sleep 0.1
done
[ -n "$victim" ] && kill -KILL "$victim"
wait $mpid
rc=$?
[ -n "$victim" ] && [ $rc -ne 0 ] && pass "rank 1 killed mid-run (mpirun exit $rc)" || fail "no rank killed (victim '$victim', exit $rc)"
bad=0
for f in kpart/*.png; do complete_png "$f" || bad=$((bad + 1)); done
[ $bad -eq 0 ] && pass "every PNG present is complete" || fail "$bad incomplete PNGs"
in_rank1() { local k=$((10#$1)); [ $k -ge 192 ] && [ $k -le 383 ]; }
listed=$(tail -n +2 kpart/k_manifest.csv | awk -F, '{print $2; print $3}' | sort)
present=$(ls kpart | grep -e '\.png$' -e '\.fits$' | sort)
missing=$(comm -23 <(echo "$listed") <(echo "$present"))
[ -z "$missing" ] && pass "the manifest is true: every file it lists is present" || fail "listed, absent: $missing"
others=0 # ranks 0 and 2 ended on SIGTERM: their files are exactly the listed ones
for f in $(comm -13 <(echo "$listed") <(echo "$present")); do
  k=${f#k_}; k=${k%%.*}; in_rank1 "$k" || others=$((others + 1))
done
[ $others -eq 0 ] && pass "ranks 0 and 2: the manifest lists exactly their files" || fail "$others unlisted files of ranks 0/2"
have=$(ls kpart | grep -c '\.png$')
[ "$have" -lt 600 ] && pass "mid-run: $have of 600 PNGs" || fail "the run was not interrupted"
expect_exit 0 "mpirun --resume completes the set" -- "${MPIRUN[@]}" "$PSFSIM" -q --backend cpu --resume -c k.cfg -o kpart
[ "$(ls kpart/*.png | wc -l)" -eq 600 ] && pass "600 PNGs" || fail "resumed PNG count"
[ "$(same_files kref kpart)" -eq 0 ] && pass "every image equals the single-process run's" ||
  fail "$(same_files kref kpart) images differ"
cut -d, -f1-15 kref/k_manifest.csv >a.csv
cut -d, -f1-15 kpart/k_manifest.csv >b.csv
cmp -s a.csv b.csv && pass "resumed manifest equals the single-process run's" || fail "resumed manifest differs"
[ -z "$(ls -A kpart | grep '^\.')" ] && pass "no temp files left" || fail "temp files left"

# output.hdf5 is one file of one process: refused with MPI, before any work.
sweep h 32 2 | sed 's/fits: { enabled = true; };/hdf5: { enabled = true; };/' >h.cfg
expect_exit 2 "output.hdf5 with mpirun -n 3" -- "${MPIRUN[@]}" "$PSFSIM" -q --backend cpu -c h.cfg -o hpar
expect_stderr 'h.cfg: output.hdf5: one HDF5 file cannot be written by 3 MPI ranks; run this set as one process' \
  "output.hdf5 with MPI: message"
[ ! -e hpar ] && pass "output.hdf5 with MPI: nothing written" || fail "hpar written"
finish
