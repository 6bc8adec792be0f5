# SPDX-License-Identifier: BSD-3-Clause
"""A nested dict as libconfig text, the syntax of psfsim's config files
(docs/config.md):

    {"name": "hst", "optics": {"wavelength_nm": 550.0, ...},
     "aberrations": {"zernike": [(4, 0.1), (11, 0.05)]},
     "sweep": {"defocus": [-0.2, 0.0, 0.2]}}

dict -> group "key: { ... };"; str -> "..."; bool -> true/false; int, float
as they are (a float keeps its point: 2.0 stays 2.0); a list of numbers of
one type -> an array [a, b]; any other list and every tuple -> a list
(a, b), so a Zernike term (j, coeff) keeps its integer j. NumPy scalars and
arrays count as their Python values.

A map file key (MAP_KEYS: optics.aperture.file, aberrations.opd_map.file)
takes a path (a str or os.PathLike) or a 2-D array, the map itself
(docs/config.md, "Maps"): config_text_maps leaves such a key out of the
text and gives the array (_map_array: float32, C order) for the library's
psfsim_options.maps."""
import math
import numbers
import os
import re

import numpy as np

_KEY = re.compile(r"^[A-Za-z*][-A-Za-z0-9_*]*$")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}


# The keys whose value may be a map given as an array (lib/psfsim.h, psfsim_map).
MAP_KEYS = ("optics.aperture.file", "aberrations.opd_map.file")

# The most pixels a map holds (the library's and the map readers' cap, 2^28).
_MAX_MAP_PIXELS = 1 << 28


class MapArrayError(ValueError):
    """A value at a map file key that is no 2-D array of real numbers:
    "KEY: why" (Set raises it as ConfigError, "NAME: KEY: why")."""


def _map_array(value, where):
    """The map given at the key path where (a MAP_KEYS key) as the array the
    library reads: 2-D, rows x columns, float32 in C order (row 0 first: a
    FITS file's first stored row), converted as a float64 FITS map is read
    (rounded to the nearest float32; NaN stays NaN, which the library reads
    as 0). value: a NumPy array or anything numpy.asarray takes (nested
    lists), of booleans, integers or floats. MapArrayError naming where for
    complex values, strings and other non-numbers, 1-D, 3-D or larger
    arrays, no pixel or more than 2^28 (the library's own message)."""
    try:
        a = _device_to_host(value, where) if _on_device(value) else np.asarray(value)
    except (TypeError, ValueError) as e:
        raise MapArrayError("%s: not an array of numbers (%s)" % (where, e)) from None
    if a.dtype.kind == "c":
        raise MapArrayError("%s: complex values (dtype %s): a map is real (a transmission or "
                            "an OPD); give its real part or modulus as meant" % (where, a.dtype))
    if a.dtype.kind not in "biuf":
        raise MapArrayError("%s: expected a path or a 2-D array of real numbers, got %s of dtype "
                            "%s" % (where, type(value).__name__, a.dtype))
    if a.ndim != 2:
        raise MapArrayError("%s: expected a 2-D array (rows, columns), got %d-D of shape %s"
                            % (where, a.ndim, tuple(a.shape)))
    if a.size == 0 or a.size > _MAX_MAP_PIXELS:
        raise MapArrayError("%s: an array of %d x %d pixels is empty or too large (a map holds 1 "
                            "to %d pixels)" % (where, a.shape[0], a.shape[1], _MAX_MAP_PIXELS))
    with np.errstate(over="ignore", invalid="ignore"):  # inf, as the file's reader gives it
        return np.ascontiguousarray(a, dtype=np.float32)


def _on_device(value):
    """A CUDA array (a torch.cuda tensor, a CuPy array, a DeviceArray):
    the CUDA array interface, and not a NumPy array."""
    return hasattr(type(value), "__cuda_array_interface__") and not isinstance(value, np.ndarray)


def _device_to_host(value, where):
    """A CUDA array's values copied to a host array of its dtype and
    shape (psfsim_device_copy: the GPU module's; its strides kept by
    copying the span and viewing it strided)."""
    from . import _device  # the library's device copy: loaded only for device arrays
    try:
        cai = value.__cuda_array_interface__
    except Exception as e:  # noqa: BLE001 (torch raises RuntimeError for a grad tensor)
        raise MapArrayError("%s: a CUDA array without its interface (%s)" % (where, e)) from None
    dtype, shape = np.dtype(cai["typestr"]), tuple(cai["shape"])
    strides = cai.get("strides") or _device.c_strides(shape, dtype.itemsize)
    if any(st < 0 for st in strides):
        raise MapArrayError("%s: a CUDA array with negative strides" % where)
    span = 0 if 0 in shape else sum((n - 1) * st for n, st in zip(shape, strides)) + dtype.itemsize
    raw = np.empty(span, np.uint8)
    ptr = cai["data"][0]
    if span:
        device = _device.pointer_device(ptr)
        _device.copy(0 if device is None else device, raw.ctypes.data, ptr, span)
    return np.lib.stride_tricks.as_strided(raw.view(dtype) if span % dtype.itemsize == 0 and span
                                           else np.empty(0, dtype), shape, strides)


def _plain(v):
    """NumPy values as Python's."""
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):
        return v.tolist()
    return v


def _scalar(v, where):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, numbers.Integral):
        v = int(v)
        return str(v) + ("L" if not -2**31 <= v < 2**31 else "")
    if isinstance(v, numbers.Real):
        v = float(v)
        if not math.isfinite(v):
            raise ValueError("%s: %r is not a finite number" % (where, v))
        text = repr(v)
        return text if any(c in text for c in ".eE") else text + ".0"
    if isinstance(v, str):
        if "\0" in v:  # the library's strings end at a NUL: the value would be cut
            raise ValueError("%s: a config string cannot hold a NUL character" % where)
        out = []
        for c in v:
            if c in _ESCAPES:
                out.append(_ESCAPES[c])
            elif ord(c) < 0x20:
                out.append("\\x%02x" % ord(c))
            else:
                out.append(c)
        return '"' + "".join(out) + '"'
    raise TypeError("%s: cannot write a %s in a config" % (where, type(v).__name__))


def _kind(v):
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, numbers.Integral):
        return "int"
    if isinstance(v, numbers.Real):
        return "float"
    if isinstance(v, str):
        return "str"
    return None


class _Text:
    """The text being written, with the key path of each line: the path of
    the first thing written on it (a setting's line is its key's, a group's
    closing brace the group's)."""

    def __init__(self):
        self.lines, self.paths = [], []
        self.cur, self.path = "", None

    def write(self, text, path):
        for i, piece in enumerate(text.split("\n")):
            if i:
                self.lines.append(self.cur)
                self.paths.append(self.path or path)
                self.cur, self.path = "", None
            if piece:
                self.cur += piece
                self.path = self.path or path


def _value(v, where, indent, out, maps):
    v = _plain(v)
    if isinstance(v, dict):
        out.write("{\n", where)
        _settings(v, where + ".", indent + "  ", out, maps)
        out.write(indent + "}", where)
        return
    if isinstance(v, (list, tuple)):
        items = [_plain(x) for x in v]
        kinds = {_kind(x) for x in items}
        square = isinstance(v, list) and items and len(kinds) == 1 and None not in kinds
        out.write("[" if square else "(", where)
        for i, x in enumerate(items):
            if i:
                out.write(", ", where)
            _value(x, "%s[%d]" % (where, i), indent, out, maps)
        out.write("]" if square else ")", where)
        return
    out.write(_scalar(v, where), where)


def _settings(d, prefix, indent, out, maps):
    for key, v in d.items():
        if not isinstance(key, str) or not _KEY.match(key):
            raise ValueError("%s%s: not a config key name" % (prefix, key))
        if v is None:
            continue  # an unset key: the default
        if prefix + key in MAP_KEYS:
            if isinstance(v, os.PathLike):
                v = os.fsdecode(v)  # a path, as a str is
            elif not isinstance(v, str):  # the map itself: not in the text
                if maps is None:
                    raise ValueError("%s%s: an array (a map given in memory) has no config "
                                     "text: open the dict with psfsim.Set or psfsim.compute"
                                     % (prefix, key))
                maps[prefix + key] = _map_array(v, prefix + key)
                continue
        out.write("%s%s = " % (indent, key), prefix + key)
        _value(v, prefix + key, indent, out, maps)
        out.write(";\n", prefix + key)


def config_text_maps(config):
    """(text, paths, maps): config_text_paths' text and paths, and maps,
    {key path: float32 2-D array} of the maps the dict gives as arrays at
    MAP_KEYS (left out of the text; _map_array), for psfsim_options.maps.
    MapArrayError for a value there that is no such array."""
    if not isinstance(config, dict):
        raise TypeError("config_text: expected a dict, got %s" % type(config).__name__)
    out, maps = _Text(), {}
    _settings(config, "", "", out, maps)
    return "".join(line + "\n" for line in out.lines), out.paths, maps


def config_text_paths(config):
    """(text, paths): the libconfig text of a nested dict and the key path
    of each of its lines (paths[i] for line i + 1: "optics.aperture.diameter_m"),
    for messages that name the dict's keys, not lines the user never saw.
    A map given as an array has no text: ValueError (config_text_maps)."""
    if not isinstance(config, dict):
        raise TypeError("config_text: expected a dict, got %s" % type(config).__name__)
    out = _Text()
    _settings(config, "", "", out, None)
    return "".join(line + "\n" for line in out.lines), out.paths


def config_text(config):
    """The libconfig text of a nested dict (the module's docstring)."""
    return config_text_paths(config)[0]


def dict_message(message, name, paths):
    """A library message about config text made from a dict (named name),
    its line numbers turned into the dict's key paths (paths: from
    config_text_paths): "<dict>:16: sampling.pupil_samples: why" becomes
    "<dict>: sampling.pupil_samples: why", "<dict>:3: why" "<dict>:
    optics.aperture: why" when the message names no key there; another
    setting's "NAME:5" becomes its path, and " (line 5)" after a key it
    names is dropped."""
    def path(digits):
        line = int(digits)
        return paths[line - 1] if 1 <= line <= len(paths) else None

    head = re.match(re.escape(name) + r":(\d+): ", message)
    if head and path(head.group(1)):
        p, rest = path(head.group(1)), message[head.end():]
        named = rest.startswith(p) and rest[len(p):len(p) + 1] in ("", ".", ":", "[", " ")
        message = name + ": " + ("" if named else p + ": ") + rest
    message = re.sub(re.escape(name) + r":(\d+)",
                     lambda m: path(m.group(1)) or m.group(0), message)
    return re.sub(r" \(line (\d+)\)", lambda m: "" if path(m.group(1)) else m.group(0), message)
