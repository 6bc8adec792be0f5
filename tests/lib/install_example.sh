#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The installed tree is a library users know: cmake --install into a
# scratch prefix puts the header, the library, psfsim.pc, the CMake package,
# the modules, the man page, the configs and the docs; examples/c then
# builds against it with pkg-config alone and with find_package(psfsim),
# and runs. BUILD (the build tree), SRC, SCRATCH and CC come from ctest, and
# CMAKE, GENERATOR, MAKE_PROGRAM and PKG_CONFIG: the tools that configured
# the build (the ones on PATH may be others, or absent). A tool that is not
# there skips (77) naming it; every step's output is shown when it fails.
set -euo pipefail
fail() { echo "FAIL: $*"; exit 1; }
CMAKE=${CMAKE:-cmake}
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
for tool in "$CMAKE" "$PKG_CONFIG" "${CC:-cc}" objdump nm; do
  command -v "$tool" >/dev/null 2>&1 || { echo "skipped: $tool is not on this machine"; exit 77; }
done
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH"
# step LOG CMD...: run CMD with its output in LOG, shown if it fails.
step() {
  local log=$1
  shift
  "$@" >"$log" 2>&1 || { tail -40 "$log"; fail "$* (exit $?)"; }
}
prefix=$SCRATCH/prefix
step "$SCRATCH/install.log" "$CMAKE" --install "$BUILD" --prefix "$prefix"
for f in bin/psfsim include/psfsim.h lib/libpsfsim.so lib/libpsfsim.so.0 lib/pkgconfig/psfsim.pc \
  lib/cmake/psfsim/psfsimConfig.cmake lib/cmake/psfsim/psfsimConfigVersion.cmake \
  lib/cmake/psfsim/psfsimTargets.cmake lib/psfsim/libpsfsim-fits.so share/man/man1/psfsim.1 \
  share/psfsim/configs/defocus.cfg share/doc/psfsim/README.md share/doc/psfsim/config.md \
  share/doc/psfsim/conventions.md \
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
# The installed library first, then the loader path the build ran with (a
# machine whose libraries live in a side tree finds its dependencies there).
libpath=$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
check_run() { # the example's output
  grep -q '^keck_segment: 3 image(s) of 384 x 384; backend cpu: requested$' "$1" ||
    fail "unexpected output: $(head -3 "$1") $(head -5 "$2")"
  [ "$(grep -c ',cpu$' "$1")" -eq 3 ] || fail "not three images: $(cat "$1")"
}
# pkg-config alone (PKG_CONFIG_PATH at the prefix: the .pc is relocatable)
flags=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig "$PKG_CONFIG" --cflags --libs psfsim) ||
  fail "$PKG_CONFIG --cflags --libs psfsim"
# shellcheck disable=SC2086 # (flags: words)
step "$SCRATCH/cc.log" "${CC:-cc}" -Wall -Wextra -Werror -std=c17 \
  "$SRC/examples/c/psfsim_example.c" $flags -o "$SCRATCH/example_pc"
LD_LIBRARY_PATH=$libpath "$SCRATCH/example_pc" "$cfg" >"$SCRATCH/pc.out" 2>"$SCRATCH/pc.err" ||
  fail "example_pc: $(tail -5 "$SCRATCH/pc.err")"
check_run "$SCRATCH/pc.out" "$SCRATCH/pc.err"
echo "ok: examples/c built with pkg-config and run"
# find_package(psfsim), with the build's generator (a machine with Ninja
# alone has no make for CMake's default one)
gen=()
[ -n "${GENERATOR:-}" ] && gen=(-G "$GENERATOR")
[ -n "${MAKE_PROGRAM:-}" ] && gen+=(-DCMAKE_MAKE_PROGRAM="$MAKE_PROGRAM")
step "$SCRATCH/cmake.log" "$CMAKE" -S "$SRC/examples/c" -B "$SCRATCH/cmake" "${gen[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="${CC:-cc}"
step "$SCRATCH/cmake-build.log" "$CMAKE" --build "$SCRATCH/cmake"
"$SCRATCH/cmake/psfsim_example" "$cfg" >"$SCRATCH/cmake.out" 2>"$SCRATCH/cmake.err" ||
  fail "psfsim_example (find_package): $(tail -5 "$SCRATCH/cmake.err")"
check_run "$SCRATCH/cmake.out" "$SCRATCH/cmake.err"
cmp -s "$SCRATCH/pc.out" "$SCRATCH/cmake.out" || fail "the two builds print different results"
echo "ok: examples/c built with find_package(psfsim) and run"
# The installed command still runs, and the man page is there to read.
LD_LIBRARY_PATH=$libpath "$prefix/bin/psfsim" --version >/dev/null || fail "installed psfsim --version"
grep -q '^\.TH PSFSIM 1' "$prefix/share/man/man1/psfsim.1" || fail "psfsim.1 has no .TH line"
echo "ok: installed psfsim runs; psfsim(1) installed"
