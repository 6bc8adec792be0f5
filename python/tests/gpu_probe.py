# SPDX-License-Identifier: BSD-3-Clause
"""Whether the tests' device cases can run here: psfsim allocates device
memory and computes one image of a set on the GPU. Shared by the test
files that skip their GPU cases without one."""
import numpy as np

import psfsim

_WHY = {}


def gpu_missing(one_image_config):
    """Why no device output can be made here (the BackendError's message),
    or None; probed once per process."""
    if "why" not in _WHY:
        try:
            psfsim.DeviceArray((1,), np.float32, 0)
            with psfsim.Set(one_image_config, backend="gpu") as s:
                s.compute(0, 1)
            _WHY["why"] = None
        except psfsim.BackendError as e:
            _WHY["why"] = str(e)
    return _WHY["why"]
