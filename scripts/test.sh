#!/usr/bin/env bash
# The README's second command: build and run the whole test suite, twice:
#  1. the default build (with the CUDA backend when nvcc is present; GPU
#     tests skip without a GPU), warnings as errors;
#  2. a CPU-only build (-DPSFSIM_CUDA=OFF) under AddressSanitizer and
#     UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
run_suite() { # build-dir, cmake options...
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja -DPSFSIM_WERROR=ON "$@"
  cmake --build "$dir" -j "$jobs"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs"
}
run_suite build-test -DCMAKE_BUILD_TYPE=Release
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_suite build-asan -DCMAKE_BUILD_TYPE=Debug -DPSFSIM_CUDA=OFF -DPSFSIM_SANITIZE=ON \
  -DPSFSIM_CAIRO=OFF # fontconfig, under cairo, keeps caches LeakSanitizer reports
echo "test.sh: all suites passed"
