#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Install what psfsim needs to build and test, from Debian's packages, when
# it is missing. Safe to run again: installs nothing when all is there.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config python3 libconfig-dev libpng-dev libisal-dev libdeflate-dev libfftw3-dev
      libcfitsio-dev libcmocka-dev libcairo2-dev librandom123-dev libhdf5-dev libjansson-dev libcsv-dev
      python3-numpy python3-h5py python3-pytest python3-venv python3-pip # the Python package's tests
      python3-pandas python3-astropy # its optional DataFrame and HDUList, tested when there
      valgrind clang libclang-rt-dev clang-format
      openmpi-bin libopenmpi-dev # openmpi: the MPI build (test.sh stage mpi)
      liblbfgs-dev libqhull-dev liblapack-dev # phase retrieval (L-BFGS), field tables (Delaunay), eigen-PSFs (SVD)
      fitsverify pngcheck) # tests/e2e/e2e_fitsverify.sh, e2e_pngcheck.sh
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${missing[@]}"
