#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The installed tree is a library users know: cmake --install into a
# scratch prefix puts the header, the library, psfsim.pc, the CMake package,
# the modules, the man page, the configs and the docs; examples/c then
# builds against it with pkg-config alone and with find_package(psfsim),
# and runs. BUILD (the build tree), SRC, SCRATCH and CC come from ctest.
set -euo pipefail
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH"
prefix=$SCRATCH/prefix
cmake --install "$BUILD" --prefix "$prefix" >"$SCRATCH/install.log"
for f in bin/psfsim include/psfsim.h lib/libpsfsim.so lib/libpsfsim.so.0 lib/pkgconfig/psfsim.pc \
  lib/cmake/psfsim/psfsimConfig.cmake lib/cmake/psfsim/psfsimConfigVersion.cmake \
  lib/cmake/psfsim/psfsimTargets.cmake lib/psfsim/libpsfsim-fits.so share/man/man1/psfsim.1 \
  share/psfsim/configs/defocus.cfg share/doc/psfsim/README.md share/doc/psfsim/config.md \
  share/doc/psfsim/examples/c/psfsim_example.c; do
  [ -e "$prefix/$f" ] || fail "cmake --install did not put $f"
done
echo "ok: the installed tree holds the header, library, psfsim.pc, CMake package, modules, man page, configs, docs"
# The soname is versioned, and the library exports psfsim_* alone.
soname=$(objdump -p "$prefix/lib/libpsfsim.so.0" | awk '/SONAME/ {print $2}')
[ "$soname" = libpsfsim.so.0 ] || fail "soname $soname"
others=$(nm -D --defined-only "$prefix/lib/libpsfsim.so.0" | awk '$2 == "T" && $3 !~ /^psfsim_/' | wc -l)
[ "$others" -eq 0 ] || fail "$others exported function(s) not named psfsim_*"
echo "ok: soname libpsfsim.so.0, only psfsim_* exported"

cfg=$prefix/share/psfsim/configs/keck_segment.cfg
check_run() { # the example's output
  grep -q '^keck_segment: 3 image(s) of 384 x 384; backend cpu: requested$' "$1" ||
    fail "unexpected output: $(head -3 "$1")"
  [ "$(grep -c ',cpu$' "$1")" -eq 3 ] || fail "not three images: $(cat "$1")"
}
# pkg-config alone (PKG_CONFIG_PATH at the prefix: the .pc is relocatable)
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
"${CC:-cc}" -Wall -Wextra -Werror -std=c17 "$SRC/examples/c/psfsim_example.c" \
  $(pkg-config --cflags --libs psfsim) -o "$SCRATCH/example_pc"
LD_LIBRARY_PATH=$prefix/lib "$SCRATCH/example_pc" "$cfg" >"$SCRATCH/pc.out" 2>/dev/null
check_run "$SCRATCH/pc.out"
echo "ok: examples/c built with pkg-config and run"
# find_package(psfsim)
cmake -S "$SRC/examples/c" -B "$SCRATCH/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_COMPILER="${CC:-cc}" >"$SCRATCH/cmake.log"
cmake --build "$SCRATCH/cmake" >>"$SCRATCH/cmake.log"
"$SCRATCH/cmake/psfsim_example" "$cfg" >"$SCRATCH/cmake.out" 2>/dev/null
check_run "$SCRATCH/cmake.out"
cmp -s "$SCRATCH/pc.out" "$SCRATCH/cmake.out" || fail "the two builds print different results"
echo "ok: examples/c built with find_package(psfsim) and run"
# The installed command still runs, and the man page is there to read.
"$prefix/bin/psfsim" --version >/dev/null || fail "installed psfsim --version"
grep -q '^\.TH PSFSIM 1' "$prefix/share/man/man1/psfsim.1" || fail "psfsim.1 has no .TH line"
echo "ok: installed psfsim runs; psfsim(1) installed"
