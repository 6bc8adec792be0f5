# SPDX-License-Identifier: BSD-3-Clause
"""Gradients of a set's images (psfsim_vjp, psfsim_compute_inputs in
lib/psfsim.h; docs/design.md, "Gradients (vector-Jacobian products)"):
the call's inputs as a psfsim_inputs struct, the gradients' arrays, and
the Set methods that call them. Always on the CPU, in double precision."""
import ctypes

import numpy as np

from . import _lib
from ._errors import _ERRLEN, ArgumentError, _check

WRT = ("zernike", "segment_zernike", "opd_map", "transmission")
_FIELD = {"zernike": "zernike", "segment_zernike": "seg_zernike", "opd_map": "opd_map",
          "transmission": "transmission"}  # psfsim_gradients' field of each wrt name
_DP = ctypes.POINTER(ctypes.c_double)
_IP = ctypes.POINTER(ctypes.c_int)


def _f64(a, shape, what, broadcast=False):
    """a as a C-contiguous float64 array of shape (ArgumentError else);
    broadcast: a may be any shape NumPy broadcasts to it (one row for
    all images)."""
    try:
        arr = np.asarray(a, dtype=np.float64)
        if broadcast:
            arr = np.broadcast_to(arr, shape)
        arr = np.ascontiguousarray(arr)
    except (TypeError, ValueError) as e:
        raise ArgumentError("argument", "%s: not an array of numbers of shape %s (%s)"
                            % (what, tuple(shape), e)) from None
    if arr.shape != tuple(shape):
        raise ArgumentError("argument", "%s: shape %s, expected %s" % (what, arr.shape,
                                                                      tuple(shape)))
    return arr


def _terms(terms, what):
    if terms is None:
        return None
    arr = np.ascontiguousarray(terms, dtype=np.intc)
    if arr.ndim != 1:
        raise ArgumentError("argument", "%s: a list of Zernike indices j" % what)
    return arr


class Layout:
    """What a set's gradient arrays look like: its label terms, segments,
    segment modes and OPD map shape."""

    def __init__(self, s):
        err = ctypes.create_string_buffer(_ERRLEN)
        h = s._handle()
        seg, nt = ctypes.c_int(0), ctypes.c_int(0)
        js = (ctypes.c_int * 16)()
        _check(_lib.lib.psfsim_segment_modes(h, ctypes.byref(seg), ctypes.byref(nt), js, err,
                                             _ERRLEN), err)
        self.segments = seg.value
        self.segment_modes = list(js)[:nt.value]
        r, c = ctypes.c_int(0), ctypes.c_int(0)
        _check(_lib.lib.psfsim_map_shape(h, b"aberrations.opd_map.file", ctypes.byref(r),
                                         ctypes.byref(c), err, _ERRLEN), err)
        self.opd_shape = (r.value, c.value)
        _check(_lib.lib.psfsim_map_shape(h, b"optics.aperture.file", ctypes.byref(r),
                                         ctypes.byref(c), err, _ERRLEN), err)
        self.aperture_shape = (r.value, c.value)
        self.label_j = list(s.label_j)


class Call:
    """One call's psfsim_inputs (the arrays kept alive with it)."""

    def __init__(self, s, count, terms, zernike, segment_terms, segment_zernike, opd_map):
        lay = Layout(s)
        self.layout = lay
        self.inputs = _lib.Inputs()
        _lib.lib.psfsim_inputs_init_size(ctypes.byref(self.inputs), ctypes.sizeof(self.inputs))
        self.keep = []
        terms = _terms(terms, "terms")
        if zernike is not None and terms is None:
            raise ArgumentError("argument", "zernike: given without terms")
        self.terms = list(terms) if terms is not None else lay.label_j
        if terms is not None:
            self.inputs.nterms = len(terms)
            self.inputs.j = terms.ctypes.data_as(_IP)
            self.keep.append(terms)
        if zernike is not None:
            z = _f64(zernike, (count, len(terms)), "zernike", broadcast=True)
            self.inputs.zernike = z.ctypes.data_as(_DP)
            self.keep.append(z)
        st = _terms(segment_terms, "segment_terms")
        if segment_zernike is not None and st is None:
            raise ArgumentError("argument", "segment_zernike: given without segment_terms")
        self.segment_terms = list(st) if st is not None else lay.segment_modes
        if st is not None:
            self.inputs.seg_nterms = len(st)
            self.inputs.seg_j = st.ctypes.data_as(_IP)
            self.keep.append(st)
        if segment_zernike is not None:
            shape = (count, lay.segments, len(st))
            z = _f64(segment_zernike, shape, "segment_zernike", broadcast=True)
            self.inputs.seg_zernike = z.ctypes.data_as(_DP)
            self.keep.append(z)
        if opd_map is not None:
            m = _f64(opd_map, lay.opd_shape, "opd_map")
            self.inputs.opd_map = m.ctypes.data_as(_DP)
            self.keep.append(m)


def compute_inputs(s, first, count, **inputs):
    """Set.compute_inputs's work (s taken for the call)."""
    call = Call(s, count, **inputs)
    out = np.zeros((count, s.npix, s.npix), dtype=np.float64)
    err = ctypes.create_string_buffer(_ERRLEN)
    _check(_lib.lib.psfsim_compute_inputs(s._handle(), first, count,
                                          ctypes.byref(call.inputs), out.ctypes.data_as(_DP),
                                          err, _ERRLEN), err)
    return out


def vjp(s, cotangent, wrt, images, first, count, **inputs):
    """Set.vjp's work (s taken for the call)."""
    wrt = (wrt,) if isinstance(wrt, str) else tuple(wrt)
    for w in wrt:
        if w not in WRT:
            raise ArgumentError("argument", "wrt: %r is not one of %s" % (w, ", ".join(WRT)))
    call = Call(s, count, **inputs)
    lay = call.layout
    cot = _f64(cotangent, (count, s.npix, s.npix), "cotangent")
    grads = _lib.Gradients()
    _lib.lib.psfsim_gradients_init_size(ctypes.byref(grads), ctypes.sizeof(grads))
    shapes = {"zernike": (count, len(call.terms)),
              "segment_zernike": (count, lay.segments, len(call.segment_terms)),
              "opd_map": lay.opd_shape, "transmission": lay.aperture_shape}
    out = {w: np.zeros(shapes[w], dtype=np.float64) for w in wrt}
    for w, arr in out.items():
        setattr(grads, _FIELD[w], arr.ctypes.data_as(_DP))
    img = np.zeros((count, s.npix, s.npix), dtype=np.float64) if images else None
    err = ctypes.create_string_buffer(_ERRLEN)
    _check(_lib.lib.psfsim_vjp(s._handle(), first, count, ctypes.byref(call.inputs),
                               cot.ctypes.data_as(_DP),
                               img.ctypes.data_as(_DP) if images else None,
                               ctypes.byref(grads), err, _ERRLEN), err)
    if images:
        out["images"] = img
    return out
