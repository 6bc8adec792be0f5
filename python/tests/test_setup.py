# SPDX-License-Identifier: BSD-3-Clause
"""python/setup.py's choice of CUDA architectures for the GPU module of
`pip install ./python` (issue 27): PSFSIM_CUDA_ARCHITECTURES when given,
else the build machine's GPUs as nvidia-smi lists their compute
capabilities, else None (the project's default, sm_90 with PTX). Run by
ctest (test_python)."""
import importlib.util
import os
import subprocess

import pytest

SETUP = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "setup.py")


@pytest.fixture(scope="module")
def setup_py():
    """setup.py as a module: its setup() call runs only as __main__."""
    spec = importlib.util.spec_from_file_location("psfsim_setup_py", SETUP)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lines(text):
    return lambda: text


def fails(exc):
    def query():
        raise exc
    return query


@pytest.mark.parametrize("listed, archs", [
    ("9.0\n", "90"),                    # one H100 or H200
    ("9.0\n9.0\n9.0\n9.0\n", "90"),     # four of them: once
    ("9.0\n8.6\n", "86;90"),            # two kinds, ascending
    ("8.0\n12.0\n", "80;120"),          # an A100 and a Blackwell (12.0: sm_120)
    (" 7.5 \n\n", "75"),                # blanks around
])
def test_the_build_machines_gpus(setup_py, listed, archs):
    assert setup_py.cuda_architectures({}, lines(listed)) == archs


@pytest.mark.parametrize("query", [
    fails(FileNotFoundError("nvidia-smi")),                          # no driver's tools
    fails(subprocess.CalledProcessError(9, ["nvidia-smi"])),        # no driver loaded
    fails(subprocess.TimeoutExpired(["nvidia-smi"], 60)),           # a driver that hangs
    lines(""),                                                        # no GPU
    lines("No devices were found\n"),
    lines("9.0\n[N/A]\n"),                                           # one it cannot read
])
def test_no_gpu_leaves_the_default(setup_py, query):
    assert setup_py.cuda_architectures({}, query) is None


def test_the_environment_wins(setup_py):
    def never():
        raise AssertionError("nvidia-smi asked although PSFSIM_CUDA_ARCHITECTURES is given")
    env = {"PSFSIM_CUDA_ARCHITECTURES": " 80;90 "}
    assert setup_py.cuda_architectures(env, never) == "80;90"
    # empty: as if not set
    assert setup_py.cuda_architectures({"PSFSIM_CUDA_ARCHITECTURES": ""}, lines("8.9\n")) == "89"
