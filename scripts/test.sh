#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The README's second command: build and run the whole test suite, in five
# stages (each stops the script at its first failure):
#  1. a format check (clang-format --dry-run --Werror over the sources), the
#     layering check (scripts/include_graph.py --check: no include from a
#     folder to one above it, no include cycle), the paths check
#     (scripts/check_paths.sh: no tracked file names a machine's path), then
#     the default build (with the CUDA backend when nvcc is present; GPU
#     tests skip without a GPU), warnings as errors; its ctest includes
#     libpsfsim's tests (tests/lib: the C API, the installed tree with the
#     example built by pkg-config and find_package, the Python package's
#     pytest); then `pip install ./python` into a scratch virtual
#     environment, whose psfsim computes a shipped config;
#  2. a CPU-only build (-DPSFSIM_CUDA=OFF) under AddressSanitizer and
#     UndefinedBehaviorSanitizer, the whole suite again;
#  3. the end-to-end tests (ctest -L e2e) of a CPU-only build under
#     valgrind memcheck: no error, no definite leak (tests/e2e/lib_e2e.sh runs
#     psfsim under PSFSIM_WRAPPER); libpsfsim's C API tests under it too;
#  4. a short fuzz run (ctest -L fuzz): the libFuzzer targets of fuzz/ built
#     with clang, ASan and UBSan, PSFSIM_FUZZ_SECONDS (default 45) seconds
#     each, two at a time on two cores.
# Third-party leaks are suppressed by fuzz/lsan.supp and tests/e2e/valgrind.supp
# (libconfig's lexer only).
#  mpi. the MPI build (-DPSFSIM_MPI=ON, CPU only) and its test, ctest -R mpi:
#     mpirun --oversubscribe -n 3 equals one process byte for byte; a rank
#     killed mid-run (tests/e2e/e2e_mpi.sh). About half a minute on 2 cores.
# PSFSIM_TEST_STAGES="1 2 3 4 mpi" picks stages.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
stages=${PSFSIM_TEST_STAGES:-1 2 3 4 mpi}
want() { [[ " $stages " == *" $1 "* ]]; }
stage() { echo "test.sh: stage $1: $2 ($(date +%T))"; }
run_suite() { # build-dir, cmake options...
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja -DPSFSIM_WERROR=ON "$@"
  cmake --build "$dir" -j "$jobs"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs"
}
if want 1; then
  stage 1 "format and layering checks, default build"
  clang-format --dry-run --Werror $(git ls-files '*.c' '*.h' '*.cu')
  python3 scripts/include_graph.py --check
  bash scripts/check_paths.sh
  run_suite build-test -DCMAKE_BUILD_TYPE=Release
  # The README's `pip install ./python`, reusing build-test's libpsfsim
  # (PSFSIM_CMAKE_BUILD_DIR), Debian's numpy and setuptools (no download).
  venv=$PWD/build-test/venv
  rm -rf "$venv"
  py=/usr/bin/python3 # Debian's, whose site-packages hold python3-numpy
  [ -x "$py" ] || py=python3
  "$py" -m venv --system-site-packages "$venv"
  PSFSIM_CMAKE_BUILD_DIR=$PWD/build-test "$venv/bin/pip" install -q --no-build-isolation --no-deps ./python
  cfg=$PWD/configs/keck_segment.cfg
  (cd / && "$venv/bin/python" -c "import psfsim, sys; im, p = psfsim.compute(sys.argv[1], backend='cpu', frame=False); assert im.shape == (3, 384, 384) and p['strehl'][0] > 0.99; print('test.sh: pip install ./python: psfsim', psfsim.version(), 'computes', sys.argv[1])" "$cfg")
fi
if want 2; then
  stage 2 "ASan + UBSan"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS=suppressions=$PWD/fuzz/lsan.supp \
    run_suite build-asan -DCMAKE_BUILD_TYPE=Debug -DPSFSIM_CUDA=OFF -DPSFSIM_SANITIZE=ON \
    -DPSFSIM_CAIRO=OFF # fontconfig, under cairo, keeps caches LeakSanitizer reports
fi
if want 3; then
  stage 3 "end-to-end tests under valgrind memcheck"
  cmake -S . -B build-valgrind -G Ninja -DPSFSIM_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPSFSIM_CUDA=OFF -DPSFSIM_BENCH=OFF -DPSFSIM_CAIRO=OFF
  cmake --build build-valgrind -j "$jobs" --target psfsim psfsim_fault_shim psfsim_stale_gpu_module \
    test_lib_api test_lib_compute
  # The C API tests run beside ctest (test_lib_compute, some 100 s under
  # valgrind, on the core ctest's last tests leave idle), their output after it.
  lib_log=build-valgrind/valgrind_lib_tests.log
  (for t in test_lib_api test_lib_compute; do
    PSFSIM_SOURCE_DIR=$PWD PSFSIM_BIN=$PWD/build-valgrind/psfsim PSFSIM_CACHE_DIR=$PWD/build-valgrind/tests/cache \
      valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite \
      --errors-for-leak-kinds=definite --suppressions="$PWD/tests/e2e/valgrind.supp" "build-valgrind/tests/$t" ||
      exit 1
  done) >"$lib_log" 2>&1 &
  lib_pid=$!
  rc=0
  PSFSIM_WRAPPER="valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite \
--errors-for-leak-kinds=definite --suppressions=$PWD/tests/e2e/valgrind.supp" \
    ctest --test-dir build-valgrind --output-on-failure -j "$jobs" -L e2e || rc=$?
  wait "$lib_pid" || rc=$((rc ? rc : 1))
  cat "$lib_log"
  [ "$rc" -eq 0 ] || { echo "test.sh: stage 3 failed"; exit "$rc"; }
fi
if want 4; then
  stage 4 "fuzz smoke run"
  command -v clang >/dev/null || { echo "test.sh: the fuzz stage needs clang (scripts/install-deps.sh)"; exit 1; }
  cmake -S . -B build-fuzz -G Ninja -DPSFSIM_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DPSFSIM_FUZZ=ON -DPSFSIM_CUDA=OFF -DPSFSIM_SANITIZE=ON \
    -DPSFSIM_BENCH=OFF -DPSFSIM_CAIRO=OFF -DPSFSIM_FUZZ_SECONDS="${PSFSIM_FUZZ_SECONDS:-45}"
  cmake --build build-fuzz -j "$jobs" --target fuzz_config fuzz_png_map fuzz_fits_map fuzz_cli
  LSAN_OPTIONS=suppressions=$PWD/fuzz/lsan.supp \
    ctest --test-dir build-fuzz --output-on-failure -j "$jobs" -L fuzz
  # What each target ran: libFuzzer's last status line (executions, cov, ft).
  awk '/ Testing: fuzz_/ { t = $NF } /^#[0-9]+[ \t]+DONE/ { print "test.sh: " t ": " $0 }' \
    build-fuzz/Testing/Temporary/LastTest.log || true
fi
if want mpi; then
  stage mpi "MPI build, mpirun -n 3"
  command -v mpirun >/dev/null || { echo "test.sh: the mpi stage needs openmpi-bin libopenmpi-dev (scripts/install-deps.sh)"; exit 1; }
  cmake -S . -B build-mpi -G Ninja -DPSFSIM_WERROR=ON -DCMAKE_BUILD_TYPE=Release -DPSFSIM_MPI=ON \
    -DPSFSIM_CUDA=OFF -DPSFSIM_BENCH=OFF
  cmake --build build-mpi -j "$jobs" --target psfsim
  ctest --test-dir build-mpi --output-on-failure -R mpi --no-tests=error
fi
echo "test.sh: all suites passed"
