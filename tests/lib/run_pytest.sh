#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Python package's tests (python/tests) against this build: the first
# of $PSFSIM_PYTHON, python3 and /usr/bin/python3 that has numpy and pytest
# (Debian's python3-numpy and python3-pytest: scripts/install-deps.sh);
# none: skipped (77). PSFSIM_LIBRARY, PSFSIM_BIN and SRC come from ctest.
# PSFSIM_PYTEST_FILE and PSFSIM_PYTEST_K (both or neither): one file's
# tests matching -k (test_python_vjp_host_module).
set -u
# The FITS DATE from a fixed SOURCE_DATE_EPOCH: the command's files and the
# library's header cards (python/tests) carry the same DATE.
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-1700000000}"
# The host's gradients module stands in for a GPU module on machines
# without one; where an NVIDIA GPU is, the real module's tests cover its
# cases, and a set of backend "auto" would probe the stand-in as a GPU.
if [ "${PSFSIM_VJP_HOST_MODULE:-}" = 1 ] && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "a GPU is here: test_vjp.py's GPU cases run against the real module (test_python)"
  exit 77
fi
for py in ${PSFSIM_PYTHON:-} python3 /usr/bin/python3; do
  if "$py" -c 'import numpy, pytest' 2>/dev/null; then
    export PYTHONPATH=$SRC/python${PYTHONPATH:+:$PYTHONPATH}
    if [ -n "${PSFSIM_PYTEST_FILE:-}" ]; then
      exec "$py" -m pytest -q -p no:cacheprovider "$SRC/python/tests/$PSFSIM_PYTEST_FILE" \
        -k "$PSFSIM_PYTEST_K"
    fi
    exec "$py" -m pytest -q -p no:cacheprovider "$SRC/python/tests"
  fi
done
echo "no Python with numpy and pytest: skipped"
exit 77
