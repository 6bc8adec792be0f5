#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# No tracked file names a path of a machine (issue 26: bench/RESULTS.md
# named the development machine's disk): no working directory of a
# machine (the work, root, home or Users directories at the root) anywhere,
# and no /tmp/ path in the documents and examples (*.md, the man page,
# configs, the comments of CUDA sources), whose commands use paths
# relative to the tree or placeholders (BUILD, DIR). Skipped (77) outside
# a git checkout. Run by ctest (tree_paths) and scripts/test.sh.
set -u
cd "${SRC:-$(dirname "$0")/..}" || exit 1
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "check_paths: not a git checkout: skipped"
  exit 77
fi
bad=0
if git grep -nIE '(^|[^A-Za-z0-9_./-])/(work|root|home|Users)/' -- .; then bad=1; fi
if git grep -nIE '(^|[^A-Za-z0-9_.$/-])/tmp/[A-Za-z0-9_]' -- '*.md' '*.1' '*.cfg' '*.cu'; then
  bad=1
fi
if [ "$bad" = 1 ]; then
  echo "check_paths: the lines above name a path of a machine: use a path relative to the tree"
  exit 1
fi
echo "check_paths: no machine paths in $(git ls-files | wc -l) tracked files"
