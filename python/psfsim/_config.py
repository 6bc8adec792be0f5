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
arrays count as their Python values."""
import math
import numbers
import re

_KEY = re.compile(r"^[A-Za-z*][-A-Za-z0-9_*]*$")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}


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


def _value(v, where, indent):
    v = _plain(v)
    if isinstance(v, dict):
        return "{\n" + _settings(v, where + ".", indent + "  ") + indent + "}"
    if isinstance(v, (list, tuple)):
        items = [_plain(x) for x in v]
        kinds = {_kind(x) for x in items}
        parts = [_value(x, "%s[%d]" % (where, i), indent) for i, x in enumerate(items)]
        if isinstance(v, list) and items and len(kinds) == 1 and None not in kinds:
            return "[" + ", ".join(parts) + "]"
        return "(" + ", ".join(parts) + ")"
    return _scalar(v, where)


def _settings(d, prefix, indent):
    lines = []
    for key, v in d.items():
        if not isinstance(key, str) or not _KEY.match(key):
            raise ValueError("%s%s: not a config key name" % (prefix, key))
        if v is None:
            continue  # an unset key: the default
        lines.append("%s%s = %s;\n" % (indent, key, _value(v, prefix + key, indent)))
    return "".join(lines)


def config_text(config):
    """The libconfig text of a nested dict (the module's docstring)."""
    if not isinstance(config, dict):
        raise TypeError("config_text: expected a dict, got %s" % type(config).__name__)
    return _settings(config, "", "")
