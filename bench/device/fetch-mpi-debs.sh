#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fills .gpu/debs-mpi/ (or $1) with Debian's Open MPI packages and the part
# of their run-time dependency closure that a minimal Debian system with
# build tools lacks, so that bench/device/on-device-mpi.sh (copied to
# .gpu/on-device-mpi.sh) can build psfsim with -DPSFSIM_MPI=ON and run
# `mpirun -n 4` on the GPU machine, which has no Open MPI and no network.
# Run it here, on a Debian 12 (bookworm) machine with network: it uses
# apt-get download (no root, nothing installed).
#   bench/device/fetch-mpi-debs.sh [DIR]     then: du -sh .gpu
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="${1:-$root/.gpu/debs-mpi}"
# Run-time roots, followed through their Depends/PreDepends.
roots=(openmpi-bin libopenmpi3 openmpi-common)
# Build-time only: mpi.h, libmpi.so, the wrapper compilers' data. Its own
# Depends (gfortran, libhwloc-dev, libevent-dev, libpmix-dev, libjs-*) serve
# Fortran, static links and docs; psfsim links libmpi dynamically through
# mpicc -showme, so they are not fetched.
flat=(libopenmpi-dev)
# Not followed: what any Debian system with build-essential has (libc6,
# gcc's run-time libraries, zlib, libudev1, ...), packages for maintainer
# scripts, ssh (mpirun on one host needs no remote launcher: plm isolated),
# and libhwloc-plugins (optional hwloc plugins pulling X11, OpenCL and
# libxml2: hwloc works without them, Open MPI binds nothing here).
skip=(libc6 libgcc-s1 libstdc++6 zlib1g gcc-12-base libatomic1 libudev1 libuuid1
  libssl3 libzstd1 liblzma5 libbz2-1.0 libselinux1 libpcre2-8-0 libcrypt1 libtinfo6
  libmd0 libbsd0 libacl1 libaudit1 libaudit-common libcap-ng0 libpam0g
  adduser debconf dpkg tar passwd install-info cdebconf
  openssh-client libhwloc-plugins)
declare -A seen=()
for p in "${skip[@]}"; do seen[$p]=skip; done
queue=("${roots[@]}")
while [ ${#queue[@]} -gt 0 ]; do
  p=${queue[0]}
  queue=("${queue[@]:1}")
  [ -n "${seen[$p]:-}" ] && continue
  seen[$p]=1
  # First alternative of each Depends line; virtual packages (<...>) skipped.
  while read -r dep; do
    [ -n "$dep" ] && queue+=("$dep")
  done < <(apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances "$p" | awk '$1 ~ /^\|?(Pre)?Depends:$/ && $2 !~ /^</ { print $2 }')
done
for p in "${flat[@]}"; do seen[$p]=1; done
mapfile -t pkgs < <(for p in "${!seen[@]}"; do [ "${seen[$p]}" = 1 ] && echo "$p"; done | sort)
mkdir -p "$dir"
rm -f "$dir"/*.deb
echo "fetch-mpi-debs: ${#pkgs[@]} packages into $dir: ${pkgs[*]}" >&2
(cd "$dir" && apt-get download "${pkgs[@]}" 2>&1 | { grep -v '^W: Download is performed unsandboxed' || true; } >&2)
du -sh "$dir" >&2
