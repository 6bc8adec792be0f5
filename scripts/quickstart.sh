#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The README's first command: install what is missing, build psfsim, and
# compute the main job (a through-focus series of the Hubble Space
# Telescope PSF) into out/defocus.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
time build/psfsim -v --force -c configs/defocus.cfg
