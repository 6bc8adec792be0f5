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


def _value(v, where, indent, out):
    v = _plain(v)
    if isinstance(v, dict):
        out.write("{\n", where)
        _settings(v, where + ".", indent + "  ", out)
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
            _value(x, "%s[%d]" % (where, i), indent, out)
        out.write("]" if square else ")", where)
        return
    out.write(_scalar(v, where), where)


def _settings(d, prefix, indent, out):
    for key, v in d.items():
        if not isinstance(key, str) or not _KEY.match(key):
            raise ValueError("%s%s: not a config key name" % (prefix, key))
        if v is None:
            continue  # an unset key: the default
        out.write("%s%s = " % (indent, key), prefix + key)
        _value(v, prefix + key, indent, out)
        out.write(";\n", prefix + key)


def config_text_paths(config):
    """(text, paths): the libconfig text of a nested dict and the key path
    of each of its lines (paths[i] for line i + 1: "optics.aperture.diameter_m"),
    for messages that name the dict's keys, not lines the user never saw."""
    if not isinstance(config, dict):
        raise TypeError("config_text: expected a dict, got %s" % type(config).__name__)
    out = _Text()
    _settings(config, "", "", out)
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
