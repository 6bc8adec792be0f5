# SPDX-License-Identifier: BSD-3-Clause
# Sourced on the GPU machine AFTER .gpu/on-device.sh (copy of
# bench/device/on-device-mpi.sh; bench/device/fetch-mpi-debs.sh fills
# .gpu/debs-mpi): unpacks Debian 12's Open MPI 4.1.4 from .gpu/debs-mpi into
# the sysroot and makes the relocated copy work there: wrappers (mpicc) and
# mpirun on the PATH, Open MPI's and PMIx's install prefixes moved, and the
# MCA settings of a container without a network, ssh or RDMA, as root.
#   source .gpu/on-device.sh && source .gpu/on-device-mpi.sh && mpirun -n 4 ...
# PSFSIM_SYSROOT (default /tmp/sysroot) and PSFSIM_MPI_DEBS (default
# .gpu/debs-mpi) move it, e.g. for a test on another machine. Sourced: it
# sets no shell options; its status is that of the last check (mpirun works).
_sr="${PSFSIM_SYSROOT:-/tmp/sysroot}"
_debs="${PSFSIM_MPI_DEBS:-.gpu/debs-mpi}"
_lib="$_sr/usr/lib/x86_64-linux-gnu"
mkdir -p "$_sr" || return 1
for _f in "$_debs"/*.deb; do dpkg -x "$_f" "$_sr" || return 1; done
# What Debian's maintainer scripts (update-alternatives) would have linked.
for _p in mpirun mpiexec mpicc orterun ompi_info; do
  [ -e "$_sr/usr/bin/$_p.openmpi" ] && ln -sfn "$_p.openmpi" "$_sr/usr/bin/$_p"
done
ln -sfn ../libpsm1/libpsm_infinipath.so.1.16 "$_lib/libpsm_infinipath.so.1" # libfabric, mtl psm
mkdir -p "$_sr/usr/include/x86_64-linux-gnu"
ln -sfn ../../lib/x86_64-linux-gnu/openmpi/include "$_sr/usr/include/x86_64-linux-gnu/mpi"

# Open MPI: every install dir is under ${prefix} but sysconfdir (/etc/openmpi),
# which holds Debian's MCA defaults (no ucx/ofi/openib): moved too.
export OPAL_PREFIX="$_sr/usr"
export OPAL_SYSCONFDIR="$_sr/etc/openmpi"
# PMIx (external, prefix /usr/lib/x86_64-linux-gnu/pmix2): its own relocation
# variable, and its params file names the plugin dir by absolute path.
export PMIX_INSTALL_PREFIX="$_lib/pmix2"
export PMIX_MCA_mca_base_component_path="$_lib/pmix2/lib/pmix"
export PATH="$_sr/usr/bin:$PATH"
# libnl-3-200 installs into /lib (not /usr/lib) in Debian 12.
export LD_LIBRARY_PATH="$_lib/openmpi/lib:$_lib:$_sr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export MPI_HOME="$_sr/usr" # CMake's FindMPI: hint for mpicc
# One host, no ssh, no network, as root: launch locally (plm isolated), shared
# memory between ranks (btl self,vader; pml ob1 so UCX/libfabric stay unused),
# allow more ranks than cores, and quiet the unused-component warnings.
export OMPI_MCA_plm=isolated
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_mtl=^ofi,psm,psm2 OMPI_MCA_osc=^ucx,pt2pt
export OMPI_MCA_btl_base_warn_component_unused=0 OMPI_MCA_rmaps_base_oversubscribe=1
# A container's /dev/shm may be 64 MB: vader's backing files go to /tmp instead.
export OMPI_MCA_btl_vader_backing_directory=/tmp
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset _f _p _debs
echo "on-device-mpi: $(command -v mpirun), $(mpirun --version 2>&1 | head -1), sysroot $_sr"
unset _sr _lib
command -v mpicc >/dev/null && mpirun --version >/dev/null 2>&1
