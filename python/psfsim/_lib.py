# SPDX-License-Identifier: BSD-3-Clause
"""ctypes over libpsfsim.so.0 (lib/psfsim.h): the library found, its
structs and functions declared. ctypes releases the GIL for every call, so
other Python threads run while the library computes."""
import ctypes
import os
import subprocess

c_int, c_ll, c_double, c_char_p, c_size_t = (ctypes.c_int, ctypes.c_longlong, ctypes.c_double,
                                             ctypes.c_char_p, ctypes.c_size_t)
c_void_p = ctypes.c_void_p

SONAME = "libpsfsim.so.0"


def _candidates():
    """$PSFSIM_LIBRARY alone when set; else the copy pip put in the package,
    the one pkg-config names, then the system loader's search. A generator:
    pkg-config (a process, milliseconds) runs only when the package's copy
    did not load."""
    env = os.environ.get("PSFSIM_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "_libs", SONAME)
    try:
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "psfsim"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
        if libdir:
            yield os.path.join(libdir, SONAME)
    except (OSError, subprocess.SubprocessError):
        pass
    yield SONAME


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (not there)")
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    hint = (" (PSFSIM_LIBRARY is set: is it libpsfsim.so.0's path?)"
            if os.environ.get("PSFSIM_LIBRARY") else " (set PSFSIM_LIBRARY to its path)")
    raise ImportError("psfsim: cannot load libpsfsim: tried " + "; ".join(tried) + hint)


class Map(ctypes.Structure):
    _fields_ = [("key", c_char_p), ("values", ctypes.POINTER(ctypes.c_float)), ("rows", c_int),
                ("cols", c_int)]


class Options(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("backend", c_char_p), ("gpus", c_char_p),
                ("threads", c_int), ("name", c_char_p), ("base_dir", c_char_p),
                ("maps", ctypes.POINTER(Map)), ("nmaps", c_int)]


class Info(ctypes.Structure):
    _fields_ = [("count", c_ll), ("npix", c_int), ("pupil_samples", c_int), ("fft_npix", c_int),
                ("mft", c_int), ("padding", c_double), ("diameter_m", c_double),
                ("f_number", c_double), ("nwavelengths", c_int), ("nterms", c_int),
                ("nswept", c_int), ("png_bits", c_int), ("name", c_char_p),
                ("normalization", c_char_p), ("random_count", c_ll),
                ("seed", ctypes.c_ulonglong)]


class Params(ctypes.Structure):
    _fields_ = [("index", c_ll), ("wavelength_nm", c_double), ("defocus", c_double),
                ("focus_shift_um", c_double), ("pixel_scale_lambda_d", c_double),
                ("pixel_scale_arcsec", c_double), ("pixel_scale_um", c_double),
                ("sampling_q", c_double), ("table_row", c_ll), ("draw", c_ll)]


class Decision(ctypes.Structure):
    _fields_ = [("backend", ctypes.c_char * 8), ("reason", ctypes.c_char * 256),
                ("predicted_cpu_us", c_double), ("predicted_gpu_us", c_double),
                ("probe", ctypes.c_char * 256), ("ndevices", c_int), ("devices", c_int * 16)]


class Metrics(ctypes.Structure):
    _fields_ = [("strehl", c_double), ("axial_intensity", c_double), ("backend", c_char_p)]


class Card(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char * 12), ("type", ctypes.c_char), ("d", c_double),
                ("i", c_ll), ("s", ctypes.c_char * 72), ("comment", ctypes.c_char * 72)]


class Inputs(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("nterms", c_int), ("j", ctypes.POINTER(c_int)),
                ("zernike", ctypes.POINTER(c_double)), ("seg_nterms", c_int),
                ("seg_j", ctypes.POINTER(c_int)), ("seg_zernike", ctypes.POINTER(c_double)),
                ("opd_map", ctypes.POINTER(c_double))]


class Gradients(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("zernike", ctypes.POINTER(c_double)),
                ("seg_zernike", ctypes.POINTER(c_double)), ("opd_map", ctypes.POINTER(c_double)),
                ("transmission", ctypes.POINTER(c_double))]


PROGRESS = ctypes.CFUNCTYPE(c_int, c_ll, c_ll, c_void_p)
MESSAGE = ctypes.CFUNCTYPE(None, c_int, c_char_p, c_void_p)

lib = _load()
P = ctypes.POINTER
_SIGS = {
    "psfsim_status_name": (c_char_p, [c_int]),
    "psfsim_version": (c_char_p, []),
    "psfsim_options_init_size": (None, [P(Options), c_size_t]),
    "psfsim_open_file": (c_int, [c_char_p, P(Options), P(c_void_p), c_char_p, c_size_t]),
    "psfsim_open_text": (c_int, [c_char_p, P(Options), P(c_void_p), c_char_p, c_size_t]),
    "psfsim_close": (None, [c_void_p]),
    "psfsim_describe": (c_int, [c_void_p, P(Info), c_char_p, c_size_t]),
    "psfsim_params_get": (c_int, [c_void_p, c_ll, c_ll, P(Params), c_char_p, c_size_t]),
    "psfsim_zernike_terms": (c_int, [c_void_p, P(c_int), P(c_int), c_char_p, c_size_t]),
    "psfsim_zernike": (c_int, [c_void_p, c_ll, c_ll, P(c_double), P(c_double), c_char_p,
                               c_size_t]),
    "psfsim_label_terms": (c_int, [c_void_p, P(c_int), P(c_int), P(c_int), c_char_p, c_size_t]),
    "psfsim_segment_terms": (c_int, [c_void_p, P(c_int), P(c_int), P(c_int), c_char_p,
                                     c_size_t]),
    "psfsim_segment_zernike": (c_int, [c_void_p, c_ll, c_ll, P(c_double), c_char_p, c_size_t]),
    "psfsim_field_positions": (c_int, [c_void_p, c_ll, c_ll, P(c_int), P(c_double), c_char_p,
                                       c_size_t]),
    "psfsim_field_h": (c_int, [c_void_p, c_ll, c_ll, P(c_int), P(c_double), c_char_p, c_size_t]),
    "psfsim_decision_get": (c_int, [c_void_p, P(Decision), c_char_p, c_size_t]),
    "psfsim_set_progress": (None, [c_void_p, PROGRESS, c_void_p]),
    "psfsim_set_message_handler": (None, [MESSAGE, c_int, c_void_p]),
    "psfsim_cancel": (None, [c_void_p]),
    "psfsim_compute": (c_int, [c_void_p, c_ll, c_ll, P(ctypes.c_float), c_size_t, P(Metrics),
                               c_char_p, c_size_t]),
    "psfsim_compute_u16": (c_int, [c_void_p, c_ll, c_ll, P(ctypes.c_uint16), c_size_t,
                                   P(Metrics), c_char_p, c_size_t]),
    "psfsim_compute_device": (c_int, [c_void_p, c_ll, c_ll, c_int, c_void_p, c_size_t, c_void_p,
                                      c_char_p, c_size_t]),
    "psfsim_device_pointer": (c_int, [c_void_p, P(c_int), P(c_int), c_char_p, c_size_t]),
    "psfsim_device_alloc": (c_void_p, [c_int, c_size_t, c_char_p, c_size_t]),
    "psfsim_device_free": (None, [c_int, c_void_p]),
    "psfsim_host_alloc": (c_void_p, [c_size_t, c_char_p, c_size_t]),
    "psfsim_host_free": (None, [c_void_p]),
    "psfsim_device_copy": (c_int, [c_int, c_void_p, c_void_p, c_size_t, c_char_p, c_size_t]),
    "psfsim_fits_header": (c_int, [c_void_p, c_ll, P(Metrics), P(Card), c_int, P(c_int),
                                   c_char_p, c_size_t]),
    "psfsim_fits_header_image": (c_int, [c_void_p, c_ll, P(Metrics), P(ctypes.c_float), c_size_t,
                                         P(Card), c_int, P(c_int), c_char_p, c_size_t]),
    "psfsim_inputs_init_size": (None, [P(Inputs), c_size_t]),
    "psfsim_gradients_init_size": (None, [P(Gradients), c_size_t]),
    "psfsim_map_shape": (c_int, [c_void_p, c_char_p, P(c_int), P(c_int), c_char_p, c_size_t]),
    "psfsim_segment_modes": (c_int, [c_void_p, P(c_int), P(c_int), P(c_int), c_char_p,
                                     c_size_t]),
    "psfsim_compute_inputs": (c_int, [c_void_p, c_ll, c_ll, P(Inputs), P(c_double), c_char_p,
                                      c_size_t]),
    "psfsim_vjp": (c_int, [c_void_p, c_ll, c_ll, P(Inputs), P(c_double), P(c_double),
                           P(Gradients), c_char_p, c_size_t]),
    "psfsim_vjp_device": (c_int, [c_void_p, c_ll, c_ll, P(Inputs), c_void_p, c_int, c_void_p,
                                  P(Gradients), c_void_p, c_char_p, c_size_t]),
}
for _name, (_res, _args) in _SIGS.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args
