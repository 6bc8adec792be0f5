# SPDX-License-Identifier: BSD-3-Clause
"""Building the psfsim package builds libpsfsim with CMake from the source
tree around python/ and puts it, with the modules it loads (the GPU's and
FITS: libpsfsim-gpu.so, libpsfsim-fits.so), into the package
(psfsim/_libs): `pip install ./python` is the one command (README,
"Python"). Only CMake's target psfsim_shared is built: libpsfsim and those
two modules (not the command, its HDF5 and plot modules, the tests or the
benchmarks). The GPU module is compiled for the CUDA architectures of
cuda_architectures() below. Environment:
  PSFSIM_CMAKE_BUILD_DIR    build there (an existing build tree is reused,
                            with its own settings)
  PSFSIM_CUDA_ARCHITECTURES CMAKE_CUDA_ARCHITECTURES of a new build tree
                            ("86", "80;90", "native"; CMake's list)
  PSFSIM_CMAKE_ARGS         more cmake arguments ("-DPSFSIM_CUDA=OFF"),
                            last, so they win
Without a source tree (an sdist) nothing is bundled:
the package then finds an installed libpsfsim
(PSFSIM_LIBRARY, pkg-config psfsim, the loader)."""
import os
import shlex
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# The modules libpsfsim loads (lib/CMakeLists.txt builds them with it).
LOADED_MODULES = ("libpsfsim-gpu.so", "libpsfsim-fits.so")


def _source_tree():
    top = os.path.join(ROOT, "CMakeLists.txt")
    return os.path.isfile(top) and "project(psfsim" in open(top).read()


def _gpu_architectures(query):
    """The CMake architectures ("86;90") of the GPUs that query() lists, the
    lines of `nvidia-smi --query-gpu=compute_cap --format=csv,noheader`
    ("8.6", "9.0"), each once, in ascending order; None when query fails
    (OSError, SubprocessError: no nvidia-smi, no driver, a timeout) or lists
    no GPU or a line that is not MAJOR.MINOR."""
    try:
        lines = [line.strip() for line in query().splitlines() if line.strip()]
    except (OSError, subprocess.SubprocessError):
        return None
    archs = set()
    for line in lines:
        major, dot, minor = line.partition(".")
        if not (dot and major.isdigit() and minor.isdigit()):
            return None
        archs.add(int(major) * 10 + int(minor))
    return ";".join(str(a) for a in sorted(archs)) if archs else None


def _nvidia_smi():
    return subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                          check=True, capture_output=True, text=True, timeout=60).stdout


def cuda_architectures(environ, query=_nvidia_smi):
    """CMAKE_CUDA_ARCHITECTURES for a new build tree: PSFSIM_CUDA_ARCHITECTURES
    when set and not empty; else the build machine's GPUs (_gpu_architectures:
    an H100 or H200 gives "90", SASS and PTX for it, CMake's "90" meaning
    sm_90 + compute_90); else None: the project's default
    (cmake/cuda.cmake: 90, sm_90 with PTX that later chips compile at load).
    Each architecture more compiles every .cu file's device code again
    (nvcc's cicc and ptxas: more than half of the GPU module's build)."""
    given = environ.get("PSFSIM_CUDA_ARCHITECTURES", "").strip()
    if given:
        return given
    return _gpu_architectures(query)


def _build_libpsfsim(dest):
    build = os.environ.get("PSFSIM_CMAKE_BUILD_DIR") or os.path.join(HERE, "build", "cmake")
    args = ["cmake", "-S", ROOT, "-B", build]
    if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):  # else: its own settings
        args += ["-DCMAKE_BUILD_TYPE=Release", "-DBUILD_TESTING=OFF", "-DPSFSIM_BENCH=OFF"]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        archs = cuda_architectures(os.environ)
        if archs:
            args += ["-DCMAKE_CUDA_ARCHITECTURES=" + archs]
    args += shlex.split(os.environ.get("PSFSIM_CMAKE_ARGS", ""))
    subprocess.check_call(args)
    subprocess.check_call(["cmake", "--build", build, "--target", "psfsim_shared", "-j",
                           str(os.cpu_count() or 1)])
    os.makedirs(dest, exist_ok=True)
    shutil.copyfile(os.path.join(build, "libpsfsim.so.0"), os.path.join(dest, "libpsfsim.so.0"))
    for name in LOADED_MODULES:  # a build without CUDA has no GPU module
        if os.path.isfile(os.path.join(build, name)):
            shutil.copyfile(os.path.join(build, name), os.path.join(dest, name))


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        if _source_tree():
            _build_libpsfsim(os.path.join(self.build_lib, "psfsim", "_libs"))


class BinaryDistribution(Distribution):
    """The wheel holds a shared library: a platform wheel."""

    def has_ext_modules(self):
        return True


if __name__ == "__main__":  # (pip's setuptools runs it so; tests import it)
    setup(cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution)
