#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Python package builds CMake's target psfsim_shared alone
# (python/setup.py): that target builds libpsfsim and the modules it loads,
# the GPU module (when CUDA is built) and FITS, and nothing of the command:
# not its HDF5 and plot modules, not app/run, app/dataset or app/main.c,
# no test or benchmark. The command's target still builds every module.
# Read from Ninja's build graph (ninja -t commands: every command a target
# needs, built or not). BUILD, GENERATOR and MAKE_PROGRAM come from
# ctest, and MODULES: the module targets this build has (psfsim-gpu, ...).
# Another generator skips (77).
set -euo pipefail
fail() { echo "FAIL: $*"; exit 1; }
[ "$GENERATOR" = Ninja ] || { echo "skipped: generator $GENERATOR, not Ninja"; exit 77; }
# outputs TARGET: the shared objects and executables TARGET's commands link.
outputs() { "$MAKE_PROGRAM" -C "$BUILD" -t commands "$1" | grep -o -- ' -o [^ ]*' | sed 's/^ -o //' |
  grep -v '\.o$' | sed 's|.*/||' | sort -u; }
lib=$(outputs psfsim_shared)
echo "psfsim_shared links:" $lib
want="libpsfsim.so.0.1.0"
for m in $MODULES; do
  case $m in psfsim-gpu | psfsim-fits) want="$want lib$m.so" ;; esac
done
got=$(echo "$lib" | grep -v '\.a$' | tr '\n' ' ' | sed 's/ $//')
[ "$(echo $want | tr ' ' '\n' | sort | tr '\n' ' ')" = "$(echo $got | tr ' ' '\n' | sort | tr '\n' ' ')" ] ||
  fail "psfsim_shared links '$got', want '$want'"
# Its compiles: none of the command's own folders, tests or benchmarks.
if "$MAKE_PROGRAM" -C "$BUILD" -t commands psfsim_shared |
  grep -E -- "-c [^ ]*/(app/run|app/dataset|app/select/plot|app/formats/hdf5|tests|bench)/|-c [^ ]*/app/main\.c"; then
  fail "psfsim_shared compiles the files above, which libpsfsim does not need"
fi
cmd=$(outputs psfsim)
echo "psfsim links:" $cmd
for m in $MODULES; do
  echo "$cmd" | grep -qx "lib$m.so" || fail "the command's target does not build lib$m.so"
done
echo "$cmd" | grep -qx psfsim || fail "the command's target does not link psfsim"
echo "ok: psfsim_shared builds libpsfsim and" $(echo "$lib" | grep -c '^libpsfsim-') "modules; psfsim all $(echo $MODULES | wc -w)"
