# SPDX-License-Identifier: BSD-3-Clause
"""Phase retrieval (psfsim_retrieve, lib/psfsim.h; issue 28): the Zernike
coefficients that make a set's images fit measured ones, with their
uncertainties from the Fisher information (docs/design.md, "Phase
retrieval")."""
import ctypes

import numpy as np

from . import _lib
from ._errors import _ERRLEN, ArgumentError, _check

c_int, c_double, c_size_t = ctypes.c_int, ctypes.c_double, ctypes.c_size_t
_PD = ctypes.POINTER(c_double)
_PI = ctypes.POINTER(c_int)


class _Options(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("nterms", c_int), ("j", _PI), ("initial", _PD),
                ("noise", c_int), ("sigma", c_double), ("gain", c_double), ("passes", c_int),
                ("fit_flux", c_int), ("fit_background", c_int), ("flux", _PD),
                ("background", _PD), ("max_iterations", c_int), ("tolerance", c_double),
                ("fisher_step", c_double), ("fit_opd_map", c_int),
                ("opd_regularization", c_double), ("uncertainties", c_int)]


class _Result(ctypes.Structure):
    _fields_ = [("coefficients", _PD), ("uncertainties", _PD), ("covariance", _PD),
                ("flux", _PD), ("flux_sigma", _PD), ("background", _PD),
                ("background_sigma", _PD), ("residuals", _PD), ("history", _PD),
                ("max_history", c_int), ("nhistory", c_int), ("iterations", c_int),
                ("evaluations", c_int), ("lbfgs_status", c_int), ("fisher_ok", c_int),
                ("chi2", c_double), ("dof", c_double), ("opd_map", _PD)]


_lib.lib.psfsim_retrieve_options_init_size.restype = None
_lib.lib.psfsim_retrieve_options_init_size.argtypes = [ctypes.POINTER(_Options), c_size_t]
_lib.lib.psfsim_retrieve.restype = c_int
_lib.lib.psfsim_retrieve.argtypes = [ctypes.c_void_p, _PD, ctypes.POINTER(_Options),
                                     ctypes.POINTER(_Result), ctypes.c_char_p, c_size_t]

_NOISE = {"uniform": 0, "photon": 1}


class Retrieval:
    """What psfsim.retrieve found: terms (j, the config's convention),
    coefficients and uncertainties ([J], aberrations.units RMS; the
    uncertainties 1 sigma, sqrt(diag(F^-1)), NaN where the Fisher matrix
    F is singular), covariance [J, J], flux, flux_sigma, background,
    background_sigma ([K]; sigma 0 where fixed), residuals [K, M, M]
    (data - fitted image), history (the loss chi2/2 after each L-BFGS
    iteration, all passes), chi2, dof, iterations, evaluations,
    lbfgs_status (liblbfgs's stop of the last pass: 0 converged, < 0
    another stop), fisher_ok, opd_map ([rows, cols] with fit_opd_map: the map
    fitted, added to the set's; else None). as_dict() gives them as a dict
    of lists (JSON; without the residuals and the map)."""

    FIELDS = ("terms", "coefficients", "uncertainties", "covariance", "flux", "flux_sigma",
              "background", "background_sigma", "chi2", "dof", "iterations", "evaluations",
              "lbfgs_status", "fisher_ok", "history")

    def __init__(self, **kw):
        self.residuals = kw.pop("residuals")
        self.opd_map = kw.pop("opd_map", None)
        for k in self.FIELDS:
            setattr(self, k, kw[k])

    def as_dict(self):
        out = {}
        for k in self.FIELDS:
            v = getattr(self, k)
            out[k] = v.tolist() if isinstance(v, np.ndarray) else v
        return out

    def __repr__(self):
        rows = ", ".join("Z%d %.4g +- %.2g" % (j, c, s) for j, c, s in
                         zip(self.terms, self.coefficients, self.uncertainties))
        return "Retrieval(%s; chi2 %.6g, dof %g, %d iterations)" % (rows, self.chi2, self.dof,
                                                                  self.iterations)


def _vector(v, n, what):
    if v is None:
        return None
    a = np.ascontiguousarray(np.asarray(v, dtype=np.float64).reshape(-1))
    if a.shape != (n,):
        raise ArgumentError("argument", "%s: expected %d values (got %d)" % (what, n, a.size))
    return a


def run(s, images, terms, initial=None, noise="uniform", sigma=0.0, gain=0.0, passes=0,
        fit_flux=True, fit_background=False, flux=None, background=None, max_iterations=0,
        tolerance=0.0, fisher_step=0.0, fit_opd_map=False, opd_regularization=0.0,
        max_history=10000, uncertainties=True):
    """psfsim_retrieve on the open Set s (psfsim.retrieve's arguments)."""
    K, M = s.count, s.npix
    data = np.ascontiguousarray(np.asarray(images, dtype=np.float64))
    if data.shape != (K, M, M):
        raise ArgumentError("argument", "images: expected shape (%d, %d, %d), the set's images "
                            "(got %s)" % (K, M, M, tuple(data.shape)))
    terms = [int(j) for j in terms]
    J = len(terms)
    if noise not in _NOISE:
        raise ArgumentError("argument", "noise: expected 'uniform' or 'photon' (got %r)"
                            % (noise,))
    opt = _Options()
    _lib.lib.psfsim_retrieve_options_init_size(ctypes.byref(opt), ctypes.sizeof(opt))
    jarr = (c_int * max(J, 1))(*terms)
    keep = [jarr]
    opt.nterms, opt.j = J, jarr
    for field, v, n in (("initial", initial, J), ("flux", flux, K),
                        ("background", background, K)):
        a = _vector(v, n, field)
        if a is not None:
            keep.append(a)
            setattr(opt, field, a.ctypes.data_as(_PD))
    opt.noise = _NOISE[noise]
    opt.sigma, opt.gain, opt.passes = float(sigma), float(gain), int(passes)
    opt.fit_flux, opt.fit_background = int(bool(fit_flux)), int(bool(fit_background))
    opt.max_iterations, opt.tolerance = int(max_iterations), float(tolerance)
    opt.fisher_step = float(fisher_step)
    opt.uncertainties = int(bool(uncertainties))
    opt.fit_opd_map, opt.opd_regularization = int(bool(fit_opd_map)), float(opd_regularization)
    opd = None
    if fit_opd_map:
        r, c = c_int(0), c_int(0)
        err0 = ctypes.create_string_buffer(_ERRLEN)
        _check(_lib.lib.psfsim_map_shape(s._h, b"aberrations.opd_map.file", ctypes.byref(r),
                                         ctypes.byref(c), err0, _ERRLEN), err0)
        opd = np.zeros((r.value, c.value))
    out = {k: np.zeros(n) for k, n in (("coefficients", J), ("uncertainties", J),
                                       ("flux", K), ("flux_sigma", K), ("background", K),
                                       ("background_sigma", K))}
    out["covariance"] = np.zeros((J, J))
    out["residuals"] = np.zeros((K, M, M))
    hist = np.zeros(max(int(max_history), 1))
    res = _Result()
    for k, a in out.items():
        setattr(res, k, a.ctypes.data_as(_PD))
    res.history, res.max_history = hist.ctypes.data_as(_PD), hist.size
    if opd is not None and opd.size:
        res.opd_map = opd.ctypes.data_as(_PD)
    err = ctypes.create_string_buffer(_ERRLEN)
    with s._busy("retrieve"):
        # psfsim_retrieve calls the set's own functions, one at a time
        rc = _lib.lib.psfsim_retrieve(s._h, data.ctypes.data_as(_PD), ctypes.byref(opt),
                                      ctypes.byref(res), err, _ERRLEN)
    _check(rc, err)
    return Retrieval(terms=terms, history=hist[:min(res.nhistory, hist.size)].copy(),
                     chi2=res.chi2, dof=res.dof, iterations=res.iterations,
                     evaluations=res.evaluations, lbfgs_status=res.lbfgs_status,
                     fisher_ok=bool(res.fisher_ok), opd_map=opd, **out)
