# SPDX-License-Identifier: BSD-3-Clause
"""Building the psfsim package builds libpsfsim with CMake from the source
tree around python/ and puts it, with the modules it loads (the GPU's,
FITS, HDF5), into the package (psfsim/_libs): `pip install ./python` is
the one command (README, "Python"). Environment:
  PSFSIM_CMAKE_BUILD_DIR  build there (an existing build tree is reused)
  PSFSIM_CMAKE_ARGS       more cmake arguments ("-DPSFSIM_CUDA=OFF")
Without a source tree (an sdist) nothing is bundled:
the package then finds an installed libpsfsim
(PSFSIM_LIBRARY, pkg-config psfsim, the loader)."""
import glob
import os
import shlex
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _source_tree():
    top = os.path.join(ROOT, "CMakeLists.txt")
    return os.path.isfile(top) and "project(psfsim" in open(top).read()


def _build_libpsfsim(dest):
    build = os.environ.get("PSFSIM_CMAKE_BUILD_DIR") or os.path.join(HERE, "build", "cmake")
    args = ["cmake", "-S", ROOT, "-B", build]
    if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):  # else: its own settings
        args += ["-DCMAKE_BUILD_TYPE=Release", "-DBUILD_TESTING=OFF", "-DPSFSIM_BENCH=OFF"]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
    args += shlex.split(os.environ.get("PSFSIM_CMAKE_ARGS", ""))
    subprocess.check_call(args)
    subprocess.check_call(["cmake", "--build", build, "--target", "psfsim_shared", "-j",
                           str(os.cpu_count() or 1)])
    os.makedirs(dest, exist_ok=True)
    shutil.copyfile(os.path.join(build, "libpsfsim.so.0"), os.path.join(dest, "libpsfsim.so.0"))
    for module in glob.glob(os.path.join(build, "libpsfsim-*.so")):
        shutil.copyfile(module, os.path.join(dest, os.path.basename(module)))


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        if _source_tree():
            _build_libpsfsim(os.path.join(self.build_lib, "psfsim", "_libs"))


class BinaryDistribution(Distribution):
    """The wheel holds a shared library: a platform wheel."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution)
