# SPDX-License-Identifier: BSD-3-Clause
"""psfsim from Python: optical point-spread functions as NumPy arrays.

    import psfsim
    images, params = psfsim.compute("configs/defocus.cfg")     # [K, M, M] float32
    images, params = psfsim.compute({"name": "airy", ...}, backend="cpu")

    with psfsim.Set(config) as s:                # sets larger than memory
        print(s.count, s.shape, s.decision["reason"])
        for batch in s.batches(256):
            use(batch.first, batch.images, batch.params)

    stream = psfsim.Stream(random_config_dict, batch_size=256, device="cuda")
    for images, labels, indices in stream:       # one epoch; set_epoch(e) for the next
        train(images, labels)                    # computed ahead on a thread (_stream.py)

config: a path (str or os.PathLike) to a config file, config text (a str
holding a newline or a '{'), or a nested dict (converted to libconfig
syntax, psfsim._config). The images are the psfsim command's FITS pixels
(float32) or, with dtype=numpy.uint16, its PNG grey levels. backend= and
gpus= are the command's --backend and --gpus. Errors raise psfsim.Error
(ConfigError, ...) carrying the library's message, config errors as
"FILE:LINE: key: why" ("<dict>: key.path: why" for a dict).

One Set takes one call at a time: a call while another runs on the same
Set (from another thread, or from a progress callback) raises
psfsim.BusyError at once, never waits; cancel() is for any thread. To
compute in parallel, open one Set per thread (each computes on several
CPU threads, or the GPU, already).

The library's warnings (a GPU that failed, the CPU taking over) go to the
logging logger "psfsim".

Bound with ctypes over libpsfsim.so.0 (lib/psfsim.h): no compiled
extension; the library computes with the GIL released, straight into the
NumPy arrays' memory.
"""
import ctypes
import logging
import numbers
import os
import threading

import numpy as np

from . import _device, _lib, _vjp
from ._config import (MapArrayError, config_text, config_text_maps, config_text_paths,
                      dict_message)
from ._device import DeviceArray, pinned_empty
from ._errors import (_ERRLEN, ArgumentError, BackendError, BusyError, Cancelled, ComputeError,
                      ConfigError, Error, RangeError, _check)
from ._retrieve import Retrieval
from ._retrieve import run as _retrieve_run
from ._stream import Stream, StreamBatch, epoch_seed, shard_range

__all__ = ["compute", "compute_inputs", "vjp", "retrieve", "Retrieval", "Set", "Batch", "DeviceArray", "pinned_empty", "Stream", "StreamBatch", "epoch_seed",
           "shard_range", "config_text", "config_text_paths", "Error",
           "ConfigError", "RangeError", "BackendError", "ComputeError", "Cancelled", "BusyError", "version"]
__version__ = "0.1.0"


# The library's messages (a GPU that failed and the CPU taking over, the
# latency probe) go to the logger "psfsim": warnings show by default.
_log = logging.getLogger("psfsim")
_LEVELS = {1: logging.ERROR, 2: logging.WARNING, 3: logging.INFO, 4: logging.DEBUG}


def _on_message(level, message, user):
    _log.log(_LEVELS.get(level, logging.INFO), "%s", message.decode("utf-8", "replace"))


_on_message_c = _lib.MESSAGE(_on_message)  # kept for the life of the process
_lib.lib.psfsim_set_message_handler(_on_message_c, 3, None)


def version():
    """The library's version ("0.1.0")."""
    return _lib.lib.psfsim_version().decode()


def _b(s, what):
    """An option's bytes for the library, which reads up to a NUL."""
    b = None if s is None else os.fsencode(s) if isinstance(s, os.PathLike) else str(s).encode()
    if b is not None and b"\0" in b:
        raise ValueError("%s: contains a NUL character" % what)
    return b


def _int(v, what):
    """v as a Python int, for an argument that must be an integer (not a
    bool, not a float): a TypeError naming it otherwise."""
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError("%s: expected an integer, got %s" % (what, type(v).__name__))
    return int(v)


class Batch(tuple):
    """One batch of Set.batches(): first, images [n, M, M], params (n rows:
    a pandas DataFrame as compute()'s when pandas is installed, or as frame= says)."""
    __slots__ = ()

    def __new__(cls, first, images, params):
        return tuple.__new__(cls, (first, images, params))

    first = property(lambda self: self[0])
    images = property(lambda self: self[1])
    params = property(lambda self: self[2])


class Set:
    """An open image set (psfsim_open_file / psfsim_open_text).

    Set(config, backend=None, gpus=None, threads=0, base_dir=None, name=None):
    base_dir and name are for config text and dicts: where @include and
    relative map files are found (default: the current directory) and how
    messages name the config (default "<config>", "<dict>" for a dict).
    A dict's errors name its key paths ("<dict>: optics.aperture.diameter_m:
    why"), not lines of the text made from it. In a dict the map file keys
    optics.aperture.file and aberrations.opd_map.file take a 2-D array
    (rows, columns; NumPy or what numpy.asarray takes) instead of a path:
    the map itself, read as the same values in a FITS file are (float32,
    row 0 the file's first row), copied when the Set opens; a value there
    that is no 2-D array of real numbers raises ConfigError ("<dict>:
    aberrations.opd_map.file: why"). threads: 0 (one per CPU) or 1..1024
    CPU threads. backend="gpu" where CUDA sees no GPU raises BackendError
    here ("backend gpu: no NVIDIA GPU on this machine (...)"), not at the
    first compute.
    One call at a time: a call while another runs on this Set raises
    BusyError (the module's docstring); cancel() from any thread."""

    def __init__(self, config, backend=None, gpus=None, threads=0, base_dir=None, name=None):
        self._h = None
        # One call at a time (BusyError): taken without waiting, so that a
        # progress callback calling its own Set fails rather than deadlocks.
        self._lock = threading.Lock()
        opt = _lib.Options()
        _lib.lib.psfsim_options_init_size(ctypes.byref(opt), ctypes.sizeof(opt))
        keep = [_b(backend, "backend"), _b(gpus, "gpus"), _b(name, "name"),
                _b(base_dir, "base_dir")]
        opt.backend, opt.gpus = keep[0], keep[1]
        threads = _int(threads or 0, "threads")
        if not 0 <= threads <= 1024:  # the library's bound, before ctypes' int wraps it
            raise ArgumentError("argument", "threads: expected 0 (one per CPU) or 1..1024 (got %d)"
                                % threads)
        opt.threads = threads
        err = ctypes.create_string_buffer(_ERRLEN)
        h = ctypes.c_void_p()
        rewrite = None
        if isinstance(config, (str, bytes, os.PathLike)) and not isinstance(config, dict):
            raw = os.fsencode(config) if isinstance(config, os.PathLike) else config
            if ("\0" if isinstance(raw, str) else b"\0") in raw:
                raise ValueError("config: contains a NUL character (neither a path nor config "
                                 "text can)")
        if isinstance(config, dict):
            opt.name = keep[2] or b"<dict>"
            opt.base_dir = keep[3]
            shown = opt.name.decode("utf-8", "replace")
            try:
                text, paths, maps = config_text_maps(config)
            except MapArrayError as e:
                raise ConfigError("config", "%s: %s" % (shown, e)) from None
            if maps:  # the arrays at map keys: alive until the open returns (it copies them)
                cmaps = (_lib.Map * len(maps))(*[
                    _lib.Map(k.encode(), a.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                             a.shape[0], a.shape[1]) for k, a in maps.items()])
                opt.maps, opt.nmaps = cmaps, len(maps)
                keep += [cmaps, maps]
            rewrite = lambda msg: dict_message(msg, shown, paths)  # noqa: E731
            rc = _lib.lib.psfsim_open_text(text.encode(), ctypes.byref(opt),
                                           ctypes.byref(h), err, _ERRLEN)
        elif isinstance(config, os.PathLike) or (isinstance(config, str) and
                                                 "\n" not in config and "{" not in config):
            rc = _lib.lib.psfsim_open_file(os.fsencode(config), ctypes.byref(opt),
                                           ctypes.byref(h), err, _ERRLEN)
        elif isinstance(config, (str, bytes)):
            opt.name, opt.base_dir = keep[2], keep[3]
            text = config.encode() if isinstance(config, str) else config
            rc = _lib.lib.psfsim_open_text(text, ctypes.byref(opt), ctypes.byref(h), err,
                                           _ERRLEN)
        else:
            raise TypeError("config: a path, config text or a dict, not %s" %
                            type(config).__name__)
        _check(rc, err, rewrite)
        self._h = h
        info = _lib.Info()
        _check(_lib.lib.psfsim_describe(h, ctypes.byref(info), err, _ERRLEN), err)
        self.count = info.count
        self.npix = info.npix
        self.name = info.name.decode()
        self.info = {f: getattr(info, f) for f, _ in info._fields_}
        self.info["name"] = self.name
        self.info["normalization"] = info.normalization.decode()
        sj = (ctypes.c_int * max(info.nswept, 1))()
        tj = (ctypes.c_int * max(info.nterms, 1))()
        _check(_lib.lib.psfsim_zernike_terms(h, sj, tj, err, _ERRLEN), err)
        self.swept_j = list(sj)[:info.nswept]
        self.term_j = list(tj)[:info.nterms]
        nl = ctypes.c_int(0)
        lj = (ctypes.c_int * max(info.nterms, 1))()
        lm = (ctypes.c_int * max(info.nterms, 1))()
        _check(_lib.lib.psfsim_label_terms(h, ctypes.byref(nl), lj, lm, err, _ERRLEN), err)
        self.label_j = list(lj)[:nl.value]  # the manifest's z<j> columns
        self._label_mode = list(lm)[:nl.value]
        nseg = ctypes.c_int(0)
        _check(_lib.lib.psfsim_segment_terms(h, ctypes.byref(nseg), None, None, err, _ERRLEN),
               err)
        ss = (ctypes.c_int * max(nseg.value, 1))()
        js = (ctypes.c_int * max(nseg.value, 1))()
        _check(_lib.lib.psfsim_segment_terms(h, ctypes.byref(nseg), ss, js, err, _ERRLEN), err)
        # (segment, j) of the manifest's s<segment>_z<j> label columns
        self.segment_terms = list(zip(list(ss)[:nseg.value], list(js)[:nseg.value]))
        present = ctypes.c_int(0)
        _check(_lib.lib.psfsim_field_positions(h, 0, 0, ctypes.byref(present), None, err,
                                               _ERRLEN), err)
        self.has_field = bool(present.value)  # field_x_px, field_y_px columns
        _check(_lib.lib.psfsim_field_h(h, 0, 0, ctypes.byref(present), None, err, _ERRLEN), err)
        self._has_field_h = bool(present.value)  # field_hx, field_hy: the field group's

    # -- life --
    def _busy(self, what):
        """The Set taken for one call (a context manager), or BusyError."""
        if not self._lock.acquire(blocking=False):
            raise BusyError("busy", "psfsim.Set.%s: the Set is busy with another call (from "
                            "another thread, or from a progress callback): a Set takes one call "
                            "at a time; open one Set per thread" % what)
        return _Held(self._lock)

    def close(self):
        if self._h:
            with self._busy("close"):
                _lib.lib.psfsim_close(self._h)
                self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __len__(self):
        return self.count

    def _handle(self):
        if not self._h:
            raise ValueError("psfsim.Set: closed")
        return self._h

    @property
    def shape(self):
        """(K, M, M): the whole set's array."""
        return (self.count, self.npix, self.npix)

    @property
    def decision(self):
        """The backend decision: backend, reason, predicted_cpu_us,
        predicted_gpu_us (NaN unless auto), probe, devices."""
        d = _lib.Decision()
        err = ctypes.create_string_buffer(_ERRLEN)
        with self._busy("decision"):
            _check(_lib.lib.psfsim_decision_get(self._handle(), ctypes.byref(d), err, _ERRLEN),
                   err)
        return {"backend": d.backend.decode(), "reason": d.reason.decode(),
                "predicted_cpu_us": d.predicted_cpu_us, "predicted_gpu_us": d.predicted_gpu_us,
                "probe": d.probe.decode(), "devices": list(d.devices)[:d.ndevices]}

    def cancel(self):
        """Stop the compute in progress after its half batch in flight (any
        thread)."""
        if self._h:
            _lib.lib.psfsim_cancel(self._h)

    def _range(self, first, count):
        """first and count checked here, since ctypes would wrap a Python int
        beyond 64 bits into the set (2**64 + k: image k): integers (else
        TypeError), [first, first + count) inside [0, K) (else RangeError, a
        ValueError and an IndexError, naming the argument)."""
        first = _int(first, "first")
        if not 0 <= first <= self.count:
            raise RangeError("range", "first: %d is not an image index of the set of %d (0..%d)"
                             % (first, self.count, self.count - 1))
        if count is None:
            return first, self.count - first
        count = _int(count, "count")
        if not 0 <= count <= self.count - first:
            raise RangeError("range", "count: images %d..%d (first %d, count %d) are not in the "
                             "set of %d (0..%d)" % (first, first + count - 1, first, count,
                                                     self.count, self.count - 1))
        return first, count

    # -- parameters --
    def params_dtype(self):
        """The structured dtype of params(): the manifest's columns."""
        fields = [("index", "i8"), ("wavelength_nm", "f8"), ("defocus", "f8"),
                  ("focus_shift_um", "f8")]
        if self.info["random_count"] > 0:  # the manifest's draw and seed
            fields += [("draw", "i8"), ("seed", "u8")]
        fields += [("z%d" % j, "f8") for j in self.label_j]
        fields += [("s%d_z%d" % sj, "f8") for sj in self.segment_terms]
        if self.has_field:
            fields += [("field_x_px", "f8"), ("field_y_px", "f8")]
        if self._has_field_h:
            fields += [("field_hx", "f8"), ("field_hy", "f8")]
        fields += [("pupil_samples", "i4"), ("npix", "i4"), ("pixel_scale_lambda_d", "f8"),
                   ("pixel_scale_arcsec", "f8"), ("pixel_scale_um", "f8"), ("sampling_q", "f8"),
                   ("strehl", "f8"), ("axial_intensity", "f8"), ("backend", "U3")]
        return np.dtype(fields)

    def params(self, first=0, count=None, metrics=None, frame=None):
        """The parameters of images [first, first + count) as a structured
        array (the manifest's quantities; draw and seed for a random set;
        z<j>: each label term's total, the manifest's z<j> (every term
        non-zero anywhere in the set: fixed, swept, table and drawn parts
        summed, the focus shift in Z4; self.label_j); s<segment>_z<j>: a segmented
        aperture's per-segment totals; field_x_px, field_y_px: the field
        group's or a table's detector positions; field_hx, field_hy: the
        field group's normalised coordinates ((x, y) - centre_px) /
        radius_px, the manifest's; strehl, axial_intensity, backend from
        metrics, else NaN and ""), or a pandas DataFrame (frame=True, or None when pandas is
        installed)."""
        first, count = self._range(first, count)
        with self._busy("params"):
            out = self._params(first, count, metrics)
        return _frame(out, frame)

    def _params(self, first, count, metrics):
        err = ctypes.create_string_buffer(_ERRLEN)
        raw = (_lib.Params * max(count, 1))()
        _check(_lib.lib.psfsim_params_get(self._handle(), first, count, raw, err, _ERRLEN), err)
        total = self._zernike(first, count) if self.label_j else None
        out = np.zeros(count, dtype=self.params_dtype())
        view = np.ctypeslib.as_array(raw)[:count] if count else None
        for f in ("index", "wavelength_nm", "defocus", "focus_shift_um", "pixel_scale_lambda_d",
                  "pixel_scale_arcsec", "pixel_scale_um", "sampling_q"):
            if count:
                out[f] = view[f]
        for j, mode in zip(self.label_j, self._label_mode):
            out["z%d" % j] = total[:, mode]
        if self.info["random_count"] > 0:
            if count:
                out["draw"] = view["draw"]
            out["seed"] = self.info["seed"]
        self._segment_columns(out, first, count, err)
        out["pupil_samples"] = self.info["pupil_samples"]
        out["npix"] = self.npix
        out["strehl"] = np.nan
        out["axial_intensity"] = np.nan
        if metrics is not None:
            out["strehl"] = metrics["strehl"]
            out["axial_intensity"] = metrics["axial_intensity"]
            out["backend"] = metrics["backend"]
        return out

    def _segment_columns(self, out, first, count, err):
        """params()' s<segment>_z<j>, field_x_px, field_y_px, field_hx and
        field_hy columns."""
        dp = ctypes.POINTER(ctypes.c_double)
        nl = len(self.segment_terms)
        if nl:
            tot = np.zeros((max(count, 1), nl), dtype=np.float64)
            _check(_lib.lib.psfsim_segment_zernike(self._handle(), first, count,
                                                   tot.ctypes.data_as(dp), err, _ERRLEN), err)
            for i, sj in enumerate(self.segment_terms):
                out["s%d_z%d" % sj] = tot[:count, i]
        if self.has_field:
            xy = np.zeros((max(count, 1), 2), dtype=np.float64)
            _check(_lib.lib.psfsim_field_positions(self._handle(), first, count, None,
                                                   xy.ctypes.data_as(dp), err, _ERRLEN), err)
            out["field_x_px"] = xy[:count, 0]
            out["field_y_px"] = xy[:count, 1]
        if self._has_field_h:
            h = np.zeros((max(count, 1), 2), dtype=np.float64)
            _check(_lib.lib.psfsim_field_h(self._handle(), first, count, None,
                                           h.ctypes.data_as(dp), err, _ERRLEN), err)
            out["field_hx"] = h[:count, 0]
            out["field_hy"] = h[:count, 1]

    def segment_zernike(self, first=0, count=None):
        """Each segment label term's total coefficient (config units; the
        manifest's s<segment>_z<j>, (segment, j) in self.segment_terms) for
        images [first, first + count): [count, len(segment_terms)]."""
        first, count = self._range(first, count)
        nl = len(self.segment_terms)
        total = np.zeros((max(count, 1), max(nl, 1)), dtype=np.float64)
        err = ctypes.create_string_buffer(_ERRLEN)
        with self._busy("segment_zernike"):
            _check(_lib.lib.psfsim_segment_zernike(
                self._handle(), first, count,
                total.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), err, _ERRLEN), err)
        return total[:count, :nl]

    def zernike(self, first=0, count=None):
        """Each mode's total coefficient (config units; FITS Z<j>, j in
        self.term_j) for images [first, first + count): [count, nterms]."""
        first, count = self._range(first, count)
        with self._busy("zernike"):
            return self._zernike(first, count)

    def _zernike(self, first, count):
        nt = len(self.term_j)
        total = np.zeros((count, max(nt, 1)), dtype=np.float64)
        err = ctypes.create_string_buffer(_ERRLEN)
        _check(_lib.lib.psfsim_zernike(self._handle(), first, count, None,
                                       total.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
                                       err, _ERRLEN), err)
        return total[:, :nt]

    # -- computing --
    def compute(self, first=0, count=None, out=None, dtype=np.float32, progress=None,
                device=None, stream=None):
        """Images [first, first + count) as an array [count, M, M] (float32
        intensities, or uint16 PNG levels with dtype=numpy.uint16), computed
        straight into out when given (C-contiguous, that dtype, at least
        count * M * M values). progress(done, total) is called after each
        half batch; returning True cancels. Returns (images, metrics): metrics a
        structured array of strehl, axial_intensity, backend. BusyError
        while another call runs on the Set (a progress callback may not
        call its own Set).

        On the GPU (device="cuda", "cuda:N" or N; or out a CUDA array: a
        torch.cuda tensor, a CuPy array, [count, M, M], C-contiguous, of
        dtype): the images go into device memory, a psfsim.DeviceArray
        (DLPack and the CUDA array interface: torch.from_dlpack,
        cupy.asarray, jax.dlpack.from_dlpack take it without a copy) or out
        itself, the same bits as on the host; metrics are then None (they
        need the images on the host). The call first waits for stream (a
        torch.cuda.Stream, a CuPy stream, a cudaStream_t int; None: out's
        own stream, else the legacy default stream) and returns when the
        images are complete, so any stream may use them."""
        first, count = self._range(first, count)
        dtype = np.dtype(dtype)
        if dtype not in (np.dtype(np.float32), np.dtype(np.uint16)):
            raise TypeError("dtype: float32 or uint16, not %s" % dtype)
        shape = (count, self.npix, self.npix)
        if device is not None or (out is not None and _device.is_device_array(out)):
            return self._compute_device(first, count, out, dtype, progress, device, stream)
        if out is None:
            out = np.empty(shape, dtype=dtype)
        elif not isinstance(out, np.ndarray):
            raise ArgumentError("argument", "out: a NumPy array or a CUDA array, not %s"
                                % type(out).__name__)
        elif out.dtype != dtype:
            raise ArgumentError("argument", "out: dtype %s, expected %s (dtype=)" % (out.dtype,
                                                                                    dtype))
        elif not out.flags.c_contiguous or not out.flags.writeable:
            raise ArgumentError("argument", "out: a writeable C-contiguous %s array" % dtype)
        met = (_lib.Metrics * max(count, 1))()
        err = ctypes.create_string_buffer(_ERRLEN)
        with self._busy("compute"):  # the progress callback too is this call's
            h = self._handle()
            with _Progress(h, progress):
                if dtype == np.float32:
                    ptr = out.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
                    rc = _lib.lib.psfsim_compute(h, first, count, ptr, out.size, met, err,
                                                 _ERRLEN)
                else:
                    ptr = out.ctypes.data_as(ctypes.POINTER(ctypes.c_uint16))
                    rc = _lib.lib.psfsim_compute_u16(h, first, count, ptr, out.size, met, err,
                                                     _ERRLEN)
        _check(rc, err)
        return out[:count] if out.shape[0] != count else out, _metrics(met, count)

    # -- gradients (docs/design.md, "Gradients (vector-Jacobian products)") --
    def compute_inputs(self, terms=None, zernike=None, segment_terms=None,
                       segment_zernike=None, opd_map=None, first=0, count=None):
        """Images [first, first + count) with inputs added to each image's
        own aberrations, in double (on the GPU for a GPU Set's FFT images,
        else on the CPU: see vjp):
        float64 [count, M, M], compute()'s images to float32 rounding.
        terms: Zernike j (the config's convention) with zernike [count,
        len(terms)] (or broadcastable: one row for all) in
        aberrations.units; segment_terms with segment_zernike [count, S,
        len(segment_terms)] (S segments, segmented apertures); opd_map
        [rows, cols] added to the set's OPD map (its values' unit).
        ArgumentError for a bad term, shape, or an input the set lacks."""
        first, count = self._range(first, count)
        with self._busy("compute_inputs"):
            return _vjp.compute_inputs(self, first, count, terms=terms, zernike=zernike,
                                       segment_terms=segment_terms,
                                       segment_zernike=segment_zernike, opd_map=opd_map)

    def vjp(self, cotangent, wrt=("zernike",), terms=None, zernike=None, segment_terms=None,
            segment_zernike=None, opd_map=None, images=False, first=0, count=None, stream=None):
        """The vector-Jacobian product of images [first, first + count)
        (compute_inputs' with the same inputs) with cotangent [count, M,
        M] (dL/dI): a dict of float64 arrays, one per wrt name:
        "zernike" [count, len(terms)] dL/dc per aberrations.units (without
        terms: the set's label terms, self.label_j); "segment_zernike"
        [count, S, len(segment_terms)] (without segment_terms: the set's
        segment modes); "opd_map" [rows, cols] summed over the images;
        "transmission" [rows, cols] of optics.aperture.file (shape
        "file"), summed over the images; and "images" (the forward,
        float64) when images=True. In double: on the Set's GPU for a GPU
        Set of FFT images (with or without the detector stage) without
        segment terms or "transmission" (equal to the CPU's to rounding;
        PSFSIM_VJP_BACKEND=cpu/gpu forces either), else on the CPU over
        the Set's threads. A cotangent in CUDA device memory (the CUDA
        array interface: a torch.cuda tensor, a CuPy array, a
        psfsim.DeviceArray; float32 or float64, C-contiguous) goes
        through psfsim_vjp_device: no host copy of it on the GPU's path
        (the work queued on stream waited for first: a cudaStream_t int,
        a torch.cuda.Stream or a CuPy stream; None: the CUDA array
        interface's "stream", else the legacy default stream), the gradients
        still float64 NumPy arrays, "images" a psfsim.DeviceArray of the
        cotangent's dtype and device."""
        first, count = self._range(first, count)
        with self._busy("vjp"):
            return _vjp.vjp(self, cotangent, wrt, images, first, count, terms=terms,
                            zernike=zernike, segment_terms=segment_terms,
                            segment_zernike=segment_zernike, opd_map=opd_map, stream=stream)

    def _compute_device(self, first, count, out, dtype, progress, device, stream):
        shape = (count, self.npix, self.npix)
        if out is None:
            out = _device.DeviceArray(shape, dtype, _device.device_index(device))
            target = _device.Target(out, out.ptr, out.device, _device.stream_handle(stream),
                                    dtype)
        else:
            if isinstance(out, np.ndarray):
                raise ArgumentError("argument", "out: a NumPy array is host memory; device= "
                                    "needs a CUDA array (a torch.cuda tensor, a CuPy array)")
            target = _device.out_target(out, shape, dtype, stream)
            if device is not None and _device.device_index(device) != target.device:
                raise ArgumentError("argument", "out: on cuda:%d, not on the device asked for "
                                    "(%r)" % (target.device, device))
        if count == 0:
            return out, None
        err = ctypes.create_string_buffer(_ERRLEN)
        with self._busy("compute"):
            h = self._handle()
            with _Progress(h, progress):
                rc = _lib.lib.psfsim_compute_device(
                    h, first, count, 0 if dtype == np.float32 else 1,
                    ctypes.c_void_p(target.ptr), count * self.npix * self.npix,
                    ctypes.c_void_p(target.stream), err, _ERRLEN)
        _check(rc, err)
        return out, None

    def batches(self, size=None, first=0, count=None, dtype=np.float32, frame=None,
                device=None, stream=None):
        """Iterate images [first, first + count) in batches of size images
        (a positive integer; default: 64 MiB of images): Batch(first,
        images, params) each, a new array per batch, so memory stays one
        batch whatever the set's size. params as compute()'s: a pandas
        DataFrame (frame=None when pandas is installed, or frame=True), else
        the structured array (frame=False). device= (and stream=) as
        compute()'s: each batch's images a DeviceArray on that GPU, and its
        params without metrics."""
        first, count = self._range(first, count)
        if size is None:
            size = max(1, (64 << 20) // (4 * self.npix * self.npix))
        size = _int(size, "size")
        if size < 1:
            raise ValueError("size: images per batch must be 1 or more (got %d)" % size)
        if device is not None:
            _device.device_index(device)  # checked now, not at the first batch
        return self._batches(size, first, count, dtype, frame, device, stream)

    def _batches(self, size, first, count, dtype, frame, device, stream):
        end = first + count
        while first < end:
            n = min(int(size), end - first)
            images, metrics = self.compute(first, n, dtype=dtype, device=device, stream=stream)
            yield Batch(first, images, self.params(first, n, metrics, frame=frame))
            first += n

    def __iter__(self):
        return iter(self.batches())

    # -- FITS --
    def header_cards(self, k, metrics, image=None):
        """Image k's FITS header keywords as the command writes them (its
        HISTORY aside): [(key, value, comment)], metrics one row of
        compute()'s metrics; image, the [M, M] float32 image compute() gave,
        for EEFIELD (normalization "pupil": its sum)."""
        k, _ = self._range(k, 1)
        cards = (_lib.Card * 300)()
        n = ctypes.c_int()
        m = _lib.Metrics(float(metrics["strehl"]), float(metrics["axial_intensity"]),
                         str(metrics["backend"]).encode())
        err = ctypes.create_string_buffer(_ERRLEN)
        ptr, size = None, 0
        if image is not None:
            image = np.ascontiguousarray(image, dtype=np.float32)
            if image.shape != (self.npix, self.npix):
                raise ValueError("image: expected [%d, %d], got %s" % (self.npix, self.npix,
                                                                       list(image.shape)))
            ptr, size = image.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), image.size
        with self._busy("header_cards"):
            _check(_lib.lib.psfsim_fits_header_image(self._handle(), k, ctypes.byref(m), ptr,
                                                     size, cards, 300, ctypes.byref(n), err,
                                                     _ERRLEN), err)
        out = []
        for c in cards[:n.value]:
            t = c.type.decode()
            value = c.d if t == "d" else c.i if t == "i" else c.s.decode()
            out.append((c.key.decode(), value, c.comment.decode()))
        return out

    def hdulist(self, k, image, metrics):
        """An astropy.io.fits.HDUList of image k (a [M, M] float32 array from
        compute()) with the header of the command's NAME_k.fits. Needs
        astropy."""
        from astropy.io import fits
        hdu = fits.PrimaryHDU(np.asarray(image, dtype=np.float32))
        for key, value, comment in self.header_cards(k, metrics, image):
            hdu.header[key] = (value, comment)
        return fits.HDUList([hdu])


class _Progress:
    """A compute call's progress callback set on the library's set handle
    for a with block (psfsim_set_progress), removed after."""

    def __init__(self, h, progress):
        self._h = h
        self._cb = _lib.PROGRESS(lambda d, t, u: 1 if progress(d, t) else 0) if progress else \
            ctypes.cast(None, _lib.PROGRESS)

    def __enter__(self):
        _lib.lib.psfsim_set_progress(self._h, self._cb, None)
        return self

    def __exit__(self, *exc):
        _lib.lib.psfsim_set_progress(self._h, ctypes.cast(None, _lib.PROGRESS), None)


class _Held:
    """Set._busy's lock, released at the end of a with block."""
    __slots__ = ("_lock",)

    def __init__(self, lock):
        self._lock = lock

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._lock.release()


def _metrics(met, count):
    """The psfsim_metrics array as a structured array, without a Python
    loop over the images (the backend names are a few static strings)."""
    raw = np.frombuffer(met, dtype=[("strehl", "f8"), ("axial_intensity", "f8"),
                                    ("backend", "u%d" % ctypes.sizeof(ctypes.c_void_p))],
                        count=count)
    out = np.zeros(count, dtype=[("strehl", "f8"), ("axial_intensity", "f8"), ("backend", "U3")])
    out["strehl"] = raw["strehl"]
    out["axial_intensity"] = raw["axial_intensity"]
    # Distinct pointers by elimination, not np.unique: that imports
    # numpy.ma on first use, 24 ms of a cold call.
    ptrs = raw["backend"]
    rest = ptrs
    while rest.size:
        p = rest[0]
        out["backend"][ptrs == p] = ctypes.string_at(int(p)).decode() if p else ""
        rest = rest[rest != p]
    return out


def _frame(arr, frame):
    if frame is False:
        return arr
    try:
        import pandas
    except ImportError:
        if frame:
            raise
        return arr
    return pandas.DataFrame.from_records(arr, index="index")


def compute(config, backend=None, gpus=None, threads=0, dtype=np.float32, frame=None,
            base_dir=None, name=None, progress=None, device=None, out=None, stream=None):
    """Every image of the set: (images [K, M, M], params). params is the
    structured array of Set.params with the metrics of the computation
    (strehl, axial_intensity, backend), or a pandas DataFrame indexed by
    image (frame=True, or frame=None when pandas is installed). device=,
    out= and stream= as Set.compute's: with device= (or out a CUDA array)
    the images are on the GPU and params has no metrics."""
    with Set(config, backend=backend, gpus=gpus, threads=threads, base_dir=base_dir,
             name=name) as s:
        images, metrics = s.compute(dtype=dtype, progress=progress, device=device, out=out,
                                    stream=stream)
        return images, s.params(0, s.count, metrics, frame=frame)


def compute_inputs(config, terms=None, zernike=None, segment_terms=None, segment_zernike=None,
                   opd_map=None, first=0, count=None, backend=None, base_dir=None, name=None):
    """Set(config).compute_inputs(...): the images with inputs added, in
    double (float64 [count, M, M]). config may be an open Set."""
    with _set_of(config, backend, base_dir, name) as s:
        return s.compute_inputs(terms=terms, zernike=zernike, segment_terms=segment_terms,
                                segment_zernike=segment_zernike, opd_map=opd_map, first=first,
                                count=count)


def vjp(config, cotangent, wrt=("zernike",), terms=None, zernike=None, segment_terms=None,
        segment_zernike=None, opd_map=None, images=False, first=0, count=None, backend=None,
        base_dir=None, name=None):
    """Set(config).vjp(cotangent, ...): a dict of float64 gradient arrays
    keyed by wrt names ("zernike", "segment_zernike", "opd_map",
    "transmission"; "images"
    with images=True). config may be an open Set. backend= is the Set's
    (a GPU Set's FFT gradients run on the GPU: Set.vjp)."""
    with _set_of(config, backend, base_dir, name) as s:
        return s.vjp(cotangent, wrt=wrt, terms=terms, zernike=zernike,
                     segment_terms=segment_terms, segment_zernike=segment_zernike,
                     opd_map=opd_map, images=images, first=first, count=count)


class _Borrowed:
    """An open Set used by a module function, not closed by it."""

    def __init__(self, s):
        self.s = s

    def __enter__(self):
        return self.s

    def __exit__(self, *exc):
        return False


def __getattr__(name):
    """psfsim.torch and psfsim.jax (the differentiable wrappers) import
    torch or jax when first used, never at psfsim's import."""
    if name in ("torch", "jax"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError("module 'psfsim' has no attribute %r" % name)


def _set_of(config, backend, base_dir, name):
    if isinstance(config, Set):
        return _Borrowed(config)
    return Set(config, backend=backend, base_dir=base_dir, name=name)


def retrieve(config, images, terms, initial=None, noise="uniform", sigma=0.0, gain=0.0, passes=0,
             fit_flux=True, fit_background=False, flux=None, background=None, max_iterations=0,
             tolerance=0.0, fisher_step=0.0, fit_opd_map=False, opd_regularization=0.0,
             backend=None, threads=0, base_dir=None, name=None, uncertainties=True):
    """Phase retrieval (psfsim_retrieve, issue 28): the Zernike coefficients
    of terms (j in the config's convention, not piston: Noll and Fringe 1,
    ANSI 0, which changes no image), added to every image's own
    aberrations, that make the set of config (its K images: the diversity is
    its sweep, a defocus or focus-shift sweep) fit images [K, M, M] (the
    measured ones, any real dtype) best in weighted least squares, each
    image k fitted as flux_k I_k + background_k. Returns a Retrieval
    (coefficients, uncertainties from the Fisher information, covariance,
    flux, background, residuals, history, chi2, dof).
    config: a path, text, a dict, or an open Set. noise: "uniform"
    (variance sigma^2, sigma 0 meaning 1) or "photon" (variance
    model / gain + sigma^2, sigma the read noise in data units, gain the
    photons per data unit, 0 meaning 1; passes re-weighted fits, 0 meaning
    2). fit_flux (default True) and fit_background (default False): else
    fixed at flux / background ([K]; None: 1 and 0). initial: [J] the start
    (None: 0). max_iterations (0: 200 per pass), tolerance (0: 1e-10),
    fisher_step (0: 1e-5 waves) as psfsim_retrieve_options. fit_opd_map:
    fit an OPD map too, added to the set's aberrations.opd_map (its shape
    and unit: the config must have one, zeros for none), regularised by
    opd_regularization / 2 x sum(map**2) (> 0, in chi2/2 per unit squared);
    Retrieval.opd_map; the uncertainties are the coefficients' with the map
    held. uncertainties=False skips the Fisher step (one forward evaluation
    per term and F's products): uncertainties, covariance and the flux and
    background sigmas are then NaN and fisher_ok False. The images are
    computed in double (psfsim_vjp, psfsim_compute_inputs) on the set's
    backend: the GPU's FFT sets on a GPU, else the CPU."""
    kw = dict(initial=initial, noise=noise, sigma=sigma, gain=gain, passes=passes,
              fit_flux=fit_flux, fit_background=fit_background, flux=flux,
              background=background, max_iterations=max_iterations, tolerance=tolerance,
              fisher_step=fisher_step, fit_opd_map=fit_opd_map,
              opd_regularization=opd_regularization, uncertainties=uncertainties)
    if isinstance(config, Set):
        return _retrieve_run(config, images, terms, **kw)
    with Set(config, backend=backend or "cpu", threads=threads, base_dir=base_dir,
             name=name) as s:
        return _retrieve_run(s, images, terms, **kw)
