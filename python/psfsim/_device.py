# SPDX-License-Identifier: BSD-3-Clause
"""Device arrays: images in CUDA device memory handed to PyTorch, CuPy and
JAX without a copy, through the two protocols they all read, DLPack
(__dlpack__, __dlpack_device__) and the CUDA array interface
(__cuda_array_interface__, version 3); and the caller's own device arrays
(a torch.cuda tensor, a CuPy array) taken as out=. None of those packages
is imported: the protocols are plain data. The memory is the library's
(psfsim_device_alloc, lib/psfsim.h), freed when the last holder lets go:
the DeviceArray, or a tensor made from its DLPack capsule."""
import ctypes

import numpy as np

from . import _lib
from ._errors import _ERRLEN, ArgumentError, _check

_DTYPES = {np.dtype(np.float32): (2, 32, "<f4"), np.dtype(np.uint16): (1, 16, "<u2"),
           np.dtype(np.float64): (2, 64, "<f8")}  # float64: Set.vjp's device images
_KDLCUDA = 2  # DLDeviceType kDLCUDA


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                             ("deleter", _DELETER)]

# What an exported capsule keeps alive until its consumer calls the deleter
# (or the capsule dies unconsumed): key -> (DeviceArray, managed tensor, shape).
_exported = {}
_next_key = [1]


def _delete(managed):
    _exported.pop(managed.contents.manager_ctx, None)


_deleter = _DELETER(_delete)  # kept for the life of the process

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_valid.restype = ctypes.c_int
_capsule_valid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _capsule_destroy(capsule):
    # Unconsumed (still named "dltensor"): the producer frees (DLPack's rule).
    if _capsule_valid(capsule, b"dltensor"):
        ptr = _capsule_pointer(capsule, b"dltensor")
        _exported.pop(ctypes.cast(ptr, ctypes.POINTER(_DLManagedTensor)).contents.manager_ctx,
                      None)


_capsule_destructor = _CAPSULE_DESTRUCTOR(_capsule_destroy)


def device_index(device):
    """"cuda", "cuda:N", an int N, or an object with .type/.index (a
    torch.device) as a CUDA device index."""
    if isinstance(device, bool):
        raise ArgumentError("argument", "device: \"cuda\", \"cuda:N\" or N, not %r" % device)
    if isinstance(device, int):
        index = device
    elif isinstance(device, str) and (device == "cuda" or device.startswith("cuda:")):
        try:
            index = int(device[5:]) if device != "cuda" else 0
        except ValueError:
            index = -1
    elif getattr(device, "type", None) == "cuda":
        index = device.index or 0
    else:
        raise ArgumentError("argument", "device: \"cuda\", \"cuda:N\" or N, not %r" % (device,))
    if index < 0:
        raise ArgumentError("argument", "device: a CUDA device index is 0 or more (%r)" % (device,))
    return index


def c_strides(shape, itemsize):
    """The byte strides of a C-contiguous array of shape."""
    return tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) * itemsize
                 for i in range(len(shape)))


def pointer_kind(ptr):
    """psfsim_device_pointer's (kind, device) of ptr: kind 1 device memory,
    2 pinned host memory, 0 other host memory."""
    kind, dev = ctypes.c_int(), ctypes.c_int()
    err = ctypes.create_string_buffer(_ERRLEN)
    _check(_lib.lib.psfsim_device_pointer(ctypes.c_void_p(ptr), ctypes.byref(kind),
                                          ctypes.byref(dev), err, _ERRLEN), err)
    return kind.value, dev.value


def pointer_device(ptr):
    """The CUDA device of device memory at ptr, or None for host memory."""
    kind, dev = pointer_kind(ptr)
    return dev if kind == 1 else None


class DeviceArray:
    """A C-contiguous array in CUDA device memory that psfsim allocated:
    shape, dtype (float32 or uint16; float64 for Set.vjp's images), device (the CUDA index), ptr. Give it
    to torch.from_dlpack, cupy.from_dlpack, jax.dlpack.from_dlpack (no
    copy: DLPack), or torch.as_tensor / cupy.asarray (the CUDA array
    interface). The images are complete when it is returned, so no stream
    needs to wait for them. numpy() copies it to the host."""

    def __init__(self, shape, dtype, device):
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self.device = int(device)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        err = ctypes.create_string_buffer(_ERRLEN)
        ptr = _lib.lib.psfsim_device_alloc(self.device, self.nbytes, err, _ERRLEN)
        if not ptr:
            _check(7 if b"out of memory" in err.value else 5, err)
        self.ptr = ptr
        self._free = _lib.lib.psfsim_device_free  # held for __del__ at exit

    def __del__(self):
        ptr, self.ptr = getattr(self, "ptr", None), None
        if ptr and getattr(self, "_base", None) is None:
            self._free(self.device, ctypes.c_void_p(ptr))

    def rows(self, first, count):
        """Entries [first, first + count) along the first axis as a
        DeviceArray sharing this one's memory (no copy; this array lives
        while the view does). IndexError outside the array."""
        if not 0 <= first <= first + count <= self.shape[0]:
            raise IndexError("psfsim.DeviceArray: rows [%d, %d) of %d"
                             % (first, first + count, self.shape[0]))
        view = DeviceArray.__new__(DeviceArray)
        view.shape = (int(count),) + self.shape[1:]
        view.dtype, view.device = self.dtype, self.device
        row = self.nbytes // self.shape[0] if self.shape[0] else 0
        view.nbytes = row * int(count)
        view.ptr = self.ptr + row * int(first)
        view._base = self if getattr(self, "_base", None) is None else self._base
        return view

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        return "psfsim.DeviceArray(shape=%s, dtype=%s, device=cuda:%d)" % (
            list(self.shape), self.dtype, self.device)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": _DTYPES[self.dtype][2], "data": (self.ptr, False),
                "version": 3, "strides": None, "stream": None}

    def __dlpack_device__(self):
        return (_KDLCUDA, self.device)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule ("dltensor") of the array, no copy. stream is
        not waited on: the data are complete already. copy=True and a
        dl_device other than this array's are refused (BufferError)."""
        if copy:
            raise BufferError("psfsim.DeviceArray: __dlpack__(copy=True) is not supported")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError("psfsim.DeviceArray: on %s, not %s" % (self.__dlpack_device__(),
                                                                     tuple(dl_device)))
        key = _next_key[0]
        _next_key[0] += 1
        shape = (ctypes.c_int64 * len(self.shape))(*self.shape)
        code, bits, _ = _DTYPES[self.dtype]
        managed = _DLManagedTensor()
        managed.dl_tensor = _DLTensor(self.ptr, _DLDevice(_KDLCUDA, self.device), len(self.shape),
                                      _DLDataType(code, bits, 1), shape, None, 0)
        managed.manager_ctx = key
        managed.deleter = _deleter
        _exported[key] = (self, managed, shape)
        return _capsule_new(ctypes.addressof(managed), b"dltensor", _capsule_destructor)

    def numpy(self):
        """A NumPy copy on the host."""
        out = np.empty(self.shape, dtype=self.dtype)
        copy(self.device, out.ctypes.data, self.ptr, self.nbytes)
        return out


class _PinnedBuffer:
    """nbytes of pinned host memory (psfsim_host_alloc), freed when the last
    array viewing it goes (NumPy keeps this object as the arrays' base)."""

    def __init__(self, nbytes):
        err = ctypes.create_string_buffer(_ERRLEN)
        ptr = _lib.lib.psfsim_host_alloc(max(int(nbytes), 1), err, _ERRLEN)
        if not ptr:
            _check(7 if b"out of memory" in err.value else 5, err)
        self.ptr = ptr
        self._free = _lib.lib.psfsim_host_free  # held for __del__ at exit
        self.__array_interface__ = {"shape": (int(nbytes),), "typestr": "|u1",
                                    "data": (ptr, False), "version": 3}

    def __del__(self):
        ptr, self.ptr = getattr(self, "ptr", None), None
        if ptr:
            self._free(ctypes.c_void_p(ptr))


def pinned_empty(shape, dtype=np.float32):
    """A NumPy array of shape and dtype, uninitialised, in pinned
    (page-locked) host memory (psfsim_host_alloc: cudaHostAlloc through the
    GPU module): compute(out=...) and compute_u16 fill it straight from the
    GPU at the host link's rate, where pageable memory takes one more copy
    on the host. The memory is freed with the last array viewing it.
    BackendError without the GPU module or a CUDA driver."""
    dt = np.dtype(dtype)
    shape = tuple(int(n) for n in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    if any(n < 0 for n in shape):
        raise ArgumentError("argument", "shape: negative dimensions in %r" % (shape,))
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    return np.asarray(_PinnedBuffer(nbytes))[:nbytes].view(dt).reshape(shape)


def copy(device, dst, src, nbytes):
    """nbytes from src to dst (integers: host or device addresses)."""
    err = ctypes.create_string_buffer(_ERRLEN)
    _check(_lib.lib.psfsim_device_copy(device, ctypes.c_void_p(dst), ctypes.c_void_p(src), nbytes,
                                       err, _ERRLEN), err)


class Target:
    """Where a device output goes: ptr, device, stream (int, 0 = the legacy
    default), dtype, the array itself (`array`)."""

    def __init__(self, array, ptr, device, stream, dtype):
        self.array, self.ptr, self.device, self.stream, self.dtype = (array, ptr, device, stream,
                                                                     dtype)


def is_device_array(obj):
    """Whether obj is an array in CUDA device memory psfsim can fill (the
    CUDA array interface: a torch.cuda tensor, a CuPy array, a DeviceArray)."""
    return hasattr(type(obj), "__cuda_array_interface__") and not isinstance(obj, np.ndarray)


def out_target(out, shape, dtype, stream):
    """The caller's device array out checked for images of shape and dtype:
    the CUDA array interface's shape, typestr, C-contiguous strides,
    writable data on a CUDA device. Raises ArgumentError naming what is
    wrong; nothing is written then."""
    try:
        cai = out.__cuda_array_interface__
    except Exception as e:  # noqa: BLE001 (torch raises RuntimeError for a grad tensor)
        raise ArgumentError("argument", "out: no CUDA array interface (%s)" % e) from None
    typestr = _DTYPES[np.dtype(dtype)][2]
    got_shape = tuple(cai.get("shape", ()))
    if got_shape != tuple(shape):
        raise ArgumentError("argument", "out: shape %s, expected %s" % (list(got_shape),
                                                                      list(shape)))
    if np.dtype(cai.get("typestr", "")) != np.dtype(typestr):
        raise ArgumentError("argument", "out: dtype %s, expected %s" % (
            np.dtype(cai.get("typestr", "V")), np.dtype(dtype)))
    strides = cai.get("strides")
    item = np.dtype(dtype).itemsize
    if strides is not None:
        want = c_strides(shape, item)
        if tuple(strides) != want and int(np.prod(shape)) > 1:
            raise ArgumentError("argument", "out: not C-contiguous (strides %s, expected %s)"
                                % (list(strides), list(want)))
    ptr, readonly = cai["data"]
    if readonly:
        raise ArgumentError("argument", "out: read-only")
    if not ptr and int(np.prod(shape)) > 0:
        raise ArgumentError("argument", "out: no data pointer")
    device = pointer_device(ptr)
    if device is None:
        raise ArgumentError("argument", "out: host memory, not a CUDA device array (a NumPy "
                            "array goes without device=)")
    if stream is None:
        stream = cai.get("stream")  # the producer's stream (CAI v3)
    return Target(out, ptr, device, stream_handle(stream), dtype)


def stream_handle(stream):
    """A cudaStream_t as an int: None or 0 the legacy default stream (1
    and 2 are CUDA's own names of the legacy and per-thread default
    streams), an int, or a torch.cuda.Stream (.cuda_stream) or a CuPy
    stream (.ptr)."""
    if stream is None:
        return 0
    for attr in ("cuda_stream", "ptr"):
        if hasattr(stream, attr):
            stream = getattr(stream, attr)
            break
    if isinstance(stream, bool) or not isinstance(stream, int) or stream < 0:
        raise ArgumentError("argument", "stream: a cudaStream_t (an int), a torch.cuda.Stream or "
                            "a CuPy stream, not %r" % (stream,))
    return stream


def in_array(arr, shape, what):
    """The caller's device array arr read by psfsim (a cotangent): the CUDA
    array interface's shape, typestr float32 or float64, C-contiguous
    strides, data on a CUDA device. A Target (its dtype, stream: the
    producer's, CAI v3's "stream", else the legacy default), or
    ArgumentError naming what is wrong."""
    try:
        cai = arr.__cuda_array_interface__
    except Exception as e:  # noqa: BLE001 (torch raises RuntimeError for a grad tensor)
        raise ArgumentError("argument", "%s: no CUDA array interface (%s)" % (what, e)) from None
    got_shape = tuple(cai.get("shape", ()))
    if got_shape != tuple(shape):
        raise ArgumentError("argument", "%s: shape %s, expected %s" % (what, list(got_shape),
                                                                     list(shape)))
    dtype = np.dtype(cai.get("typestr", "V"))
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ArgumentError("argument", "%s: dtype %s, expected float32 or float64" % (what,
                                                                                      dtype))
    strides = cai.get("strides")
    if strides is not None and int(np.prod(shape)) > 1 and \
            tuple(strides) != c_strides(shape, dtype.itemsize):
        raise ArgumentError("argument", "%s: not C-contiguous (strides %s, expected %s)"
                            % (what, list(strides), list(c_strides(shape, dtype.itemsize))))
    ptr = cai["data"][0]
    if not ptr and int(np.prod(shape)) > 0:
        raise ArgumentError("argument", "%s: no data pointer" % what)
    device = pointer_device(ptr) if ptr else 0
    if device is None:
        raise ArgumentError("argument", "%s: host memory, not a CUDA device array" % what)
    return Target(arr, ptr, device, stream_handle(cai.get("stream")), dtype)
