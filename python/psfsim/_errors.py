# SPDX-License-Identifier: BSD-3-Clause
"""psfsim's exceptions: a libpsfsim status code as a Python exception."""
from . import _lib

_ERRLEN = 2048


class Error(Exception):
    """A libpsfsim failure: .status ("config", "range", ...) and .message."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


class ConfigError(Error, ValueError):
    """The config: syntax, unknown key, range, map files ("FILE:LINE: key: why")."""


class ArgumentError(Error, ValueError):
    """A bad argument (backend=, gpus=, a buffer)."""


class RangeError(Error, IndexError, ValueError):
    """Images outside the set (first or count out of range)."""


class BackendError(Error):
    """The backend asked for cannot be used."""


class ComputeError(Error):
    """A run-time failure while computing."""


class Cancelled(Error):
    """Set.cancel() (or a progress callback returning True) stopped it."""


class BusyError(Error, RuntimeError):
    """Another call is using the Set (one call at a time: a Set per thread)."""


_ERRORS = {1: ArgumentError, 2: ConfigError, 3: RangeError, 4: ArgumentError, 5: BackendError,
           6: ComputeError, 7: MemoryError, 8: Cancelled, 9: BusyError}


def _check(rc, err, rewrite=None):
    if rc == 0:
        return
    msg = err.value.decode("utf-8", "replace")
    if rewrite:
        msg = rewrite(msg)
    cls = _ERRORS.get(rc, Error)
    if cls is MemoryError:
        raise MemoryError(msg)
    raise cls(_lib.lib.psfsim_status_name(rc).decode(), msg)


for _cls in (Error, ConfigError, ArgumentError, RangeError, BackendError, ComputeError, Cancelled,
             BusyError):
    _cls.__module__ = "psfsim"  # as users name them: psfsim.ConfigError
