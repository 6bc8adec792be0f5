# SPDX-License-Identifier: BSD-3-Clause
"""Device outputs (issue 27): images computed into CUDA device memory, a
psfsim.DeviceArray or the caller's own CUDA array (out=), equal bit for
bit to the host's images on the same backend; the protocols PyTorch, CuPy
and JAX read (DLPack, the CUDA array interface) give the same values with
no copy; a wrong out= is refused with a message and left unwritten.
Run by ctest (test_python). Without a GPU the device cases skip and the
refusal of device= is checked instead; torch, CuPy and JAX cases skip
where they are not installed (the GPU machine has them)."""
import importlib

import numpy as np
import pytest

import psfsim
import gpu_probe


def config(count=12, kind="fft"):
    cfg = {"name": "dev",
           "optics": {"wavelength_nm": 600.0, "f_number": 12.0,
                      "aperture": {"diameter_m": 1.0, "obscuration": 0.2}},
           "sampling": {"pupil_samples": 48, "padding": 2.0},
           "sweep": {"random": {"count": count, "seed": 11,
                                "zernike": [(4, "normal", 0.05), (7, "uniform", 0.02),
                                            (11, "normal", 0.03)]}}}
    if kind == "mft":
        cfg["output"] = {"npix": 50, "pixel_scale": 0.37}
    if kind == "detector":
        cfg["detector"] = {"oversample": 2, "jitter_lambda_d": 0.1}
    if kind == "mft-sum":  # the host rescales each image by its sum
        cfg["output"] = {"npix": 50, "pixel_scale": 0.37}
        cfg["normalization"] = "sum"
    if kind == "poppy":  # the host turns each image by 180 degrees
        cfg["output"] = {"orientation": "poppy"}
    if kind == "broadband":
        cfg["optics"]["wavelengths_nm"] = [550.0, 600.0, 650.0]
        del cfg["optics"]["wavelength_nm"]
    return cfg


def gpu_missing():
    """Why no device output can be made here, or None."""
    return gpu_probe.gpu_missing(config(1))


def need_gpu():
    if gpu_missing():
        pytest.skip("no GPU here: %s" % gpu_missing())


def need(module):
    need_gpu()
    try:
        return importlib.import_module(module)
    except ImportError:
        pytest.skip("%s is not installed" % module)


def test_device_refused_without_gpu():
    if not gpu_missing():
        pytest.skip("a GPU is here")
    with psfsim.Set(config(), backend="cpu") as s:
        with pytest.raises(psfsim.BackendError) as e:
            s.compute(0, 2, device="cuda")
        # no module: "device output needs the GPU module: ..."; no driver:
        # "no CUDA device: no NVIDIA driver ...", not CUDA's "driver version
        # is insufficient", which reads as an old driver
        msg = str(e.value)
        assert "device" in msg and "insufficient" not in msg, msg


def test_gpu_set_refused_when_opened_without_gpu():
    """Set(backend="gpu") where CUDA sees no device fails at once, with the
    command's message, rather than handing out a set whose first compute
    fails (a new user's report)."""
    if not gpu_missing():
        pytest.skip("a GPU is here")
    with pytest.raises(psfsim.BackendError, match="^.*backend gpu: ") as e:
        psfsim.Set(config(), backend="gpu")
    msg = str(e.value)
    assert "no NVIDIA GPU" in msg or "GPU module" in msg or "cannot be used" in msg \
        or "without the CUDA backend" in msg, msg


def test_host_out_dtype_named():
    with psfsim.Set(config(), backend="cpu") as s:
        with pytest.raises(psfsim.ArgumentError, match="out: dtype float64, expected float32"):
            s.compute(0, 2, out=np.zeros((2, s.npix, s.npix)))
        with pytest.raises(psfsim.ArgumentError, match="out: a NumPy array or a CUDA array"):
            s.compute(0, 2, out=[0.0])


@pytest.mark.parametrize("bad", ["cpu", "cuda:x", -1, True, "gpu"])
def test_device_argument_checked(bad):
    with psfsim.Set(config(), backend="cpu") as s:
        with pytest.raises(psfsim.ArgumentError, match="device"):
            s.compute(0, 2, device=bad)


@pytest.mark.parametrize("backend", ["gpu", "cpu"])
@pytest.mark.parametrize("kind", ["fft", "mft", "mft-sum", "poppy", "detector", "broadband"])
@pytest.mark.parametrize("dtype", [np.float32, np.uint16])
def test_device_equals_host(backend, kind, dtype):
    need_gpu()
    with psfsim.Set(config(1100 if kind == "fft" else 40, kind), backend=backend) as s:
        host, _ = s.compute(dtype=dtype)
        dev, metrics = s.compute(dtype=dtype, device="cuda")
        assert metrics is None
        assert isinstance(dev, psfsim.DeviceArray) and dev.shape == host.shape
        assert dev.dtype == np.dtype(dtype) and dev.device == 0
        assert np.array_equal(dev.numpy(), host)
        one, _ = s.compute(5, 1, dtype=dtype, device=0)  # one image: the graph path
        assert np.array_equal(one.numpy()[0], host[5])
        assert float(host.max()) > 0


def test_batches_on_device():
    need_gpu()
    with psfsim.Set(config(30), backend="gpu") as s:
        host, _ = s.compute()
        got = [(b.first, b.images.numpy()) for b in s.batches(8, device="cuda")]
        assert [f for f, _ in got] == [0, 8, 16, 24]
        assert np.array_equal(np.concatenate([i for _, i in got]), host)
        assert np.isnan(s.params(0, 1, frame=False)["strehl"][0])


def test_cuda_array_interface():
    need_gpu()
    with psfsim.Set(config(4), backend="gpu") as s:
        dev, _ = s.compute(device="cuda")
        cai = dev.__cuda_array_interface__
        assert cai["shape"] == (4, s.npix, s.npix) and cai["typestr"] == "<f4"
        assert cai["data"][0] == dev.ptr and cai["version"] == 3
        assert dev.__dlpack_device__() == (2, 0)


def test_torch_dlpack_and_out():
    torch = need("torch")
    with psfsim.Set(config(20), backend="gpu") as s:
        host, _ = s.compute()
        dev, _ = s.compute(device="cuda")
        t = torch.from_dlpack(dev)
        assert t.is_cuda and t.dtype == torch.float32 and t.data_ptr() == dev.ptr
        del dev  # the tensor holds the memory now
        assert np.array_equal(t.cpu().numpy(), host)
        out = torch.full((20, s.npix, s.npix), -1.0, device="cuda")
        got, _ = s.compute(out=out)
        assert got is out and np.array_equal(out.cpu().numpy(), host)
        u16 = torch.zeros((20, s.npix, s.npix), dtype=torch.int16, device="cuda")
        with pytest.raises(psfsim.ArgumentError, match="dtype"):
            s.compute(out=u16)
        host16, _ = s.compute(dtype=np.uint16)
        assert host16.max() > 0


def test_torch_out_refused_untouched():
    torch = need("torch")
    with psfsim.Set(config(6), backend="gpu") as s:
        m = s.npix
        cases = [(torch.full((5, m, m), -1.0, device="cuda"), "shape"),
                 (torch.full((6, m, m), -1.0, device="cuda", dtype=torch.float64), "dtype"),
                 (torch.full((6, m, 2 * m), -1.0, device="cuda")[:, :, ::2], "contiguous"),
                 (torch.full((m, 6, m), -1.0, device="cuda").transpose(0, 1), "contiguous")]
        for out, why in cases:
            with pytest.raises(psfsim.ArgumentError, match=why):
                s.compute(out=out)
            assert bool((out == -1.0).all()), why
        with pytest.raises(psfsim.ArgumentError):
            s.compute(out=np.zeros((6, m, m), np.float32), device="cuda")
        if torch.cuda.device_count() > 1:
            with pytest.raises(psfsim.ArgumentError, match="device"):
                s.compute(out=torch.zeros((6, m, m), device="cuda:1"), device="cuda:0")


def test_torch_stream_ordering():
    torch = need("torch")
    with psfsim.Set(config(8), backend="gpu") as s:
        host, _ = s.compute()
        side = torch.cuda.Stream()
        out = torch.empty((8, s.npix, s.npix), device="cuda")
        with torch.cuda.stream(side):
            big = torch.randn(4096, 4096, device="cuda")
            for _ in range(20):  # keeps the side stream busy, then fills out
                big = big @ big / 64.0
            out.fill_(-1.0)
        s.compute(out=out, stream=side)  # waits for the fill before writing
        assert np.array_equal(out.cpu().numpy(), host)


def test_cupy_out_and_interface():
    cupy = need("cupy")
    with psfsim.Set(config(10), backend="gpu") as s:
        host, _ = s.compute(dtype=np.uint16)
        out = cupy.zeros((10, s.npix, s.npix), dtype=cupy.uint16)
        s.compute(out=out, dtype=np.uint16)
        assert np.array_equal(cupy.asnumpy(out), host)
        dev, _ = s.compute(dtype=np.uint16, device="cuda")
        assert np.array_equal(cupy.asnumpy(cupy.asarray(dev)), host)
        assert np.array_equal(cupy.asnumpy(cupy.from_dlpack(dev)), host)


def test_jax_dlpack():
    jax = need("jax")
    with psfsim.Set(config(5), backend="gpu") as s:
        host, _ = s.compute()
        dev, _ = s.compute(device="cuda")
        try:
            arr = jax.dlpack.from_dlpack(dev)
        except RuntimeError as e:  # a JAX without a CUDA backend
            pytest.skip("JAX cannot take CUDA arrays here: %s" % e)
        assert np.array_equal(np.asarray(arr), host)


def test_device_arrays_as_maps():
    """A CUDA array at a map key (issue 27, "arrays as inputs") is the same
    map as the NumPy array of its values, strided views included."""
    torch = need("torch")
    i, j = np.mgrid[0:30, 0:22]
    t = (0.2 + 0.8 * (i + 2.0 * j) / 74.0).astype(np.float32)
    w = ((0.7 * i * i - 0.4 * j) / 2000.0)
    cfg = {"name": "maps",
           "optics": {"wavelength_nm": 600.0, "f_number": 10.0,
                      "aperture": {"diameter_m": 1.0, "shape": "file", "file": t}},
           "sampling": {"pupil_samples": 40, "padding": 2.0},
           "aberrations": {"opd_map": {"file": w, "units": "waves"}},
           "sweep": {"defocus": [0.0, 0.3]}}
    with psfsim.Set(cfg, backend="cpu") as s:
        host, _ = s.compute()
    cfg["optics"]["aperture"]["file"] = torch.as_tensor(t, device="cuda")
    wide = torch.zeros((30, 44), dtype=torch.float64, device="cuda")
    wide[:, ::2] = torch.as_tensor(w)
    cfg["aberrations"]["opd_map"]["file"] = wide[:, ::2]  # a strided view
    with psfsim.Set(cfg, backend="cpu") as s:
        dev, _ = s.compute()
    assert dev.tobytes() == host.tobytes()


@pytest.mark.parametrize("kind", ["fft", "mft", "detector", "poppy"])
def test_gpu_metrics_and_pinned_host(kind):
    """Host floats from the GPU: the metrics (from the GPU's measures where
    the host does not finish the images) are the images' own peak and axis
    over the unaberrated peak; into pinned host memory (a pinned torch
    tensor's NumPy view: the copies land there straight) the same bits and
    metrics as into a NumPy array."""
    torch = need("torch")
    with psfsim.Set(config(1100, kind), backend="gpu") as s:
        host, met = s.compute()
        m = s.npix
        ref = host.reshape(len(host), -1).max(axis=1) / met["strehl"]
        assert np.allclose(ref, ref[0], rtol=1e-6), "strehl is the image's peak / one reference"
        axis = host[:, m // 2, m // 2] if kind != "poppy" else host[:, (m - 1) - m // 2,
                                                                      (m - 1) - m // 2]
        assert np.allclose(axis / met["axial_intensity"], ref[0], rtol=1e-6)
        pinned = torch.empty((len(host), m, m), pin_memory=True)
        got, met2 = s.compute(out=pinned.numpy())
        assert got.tobytes() == host.tobytes()
        assert np.array_equal(met2["strehl"], met["strehl"])
        assert np.array_equal(met2["axial_intensity"], met["axial_intensity"])


def test_pinned_empty_refused():
    """A negative shape is refused before anything is allocated; without a
    GPU (no module or no driver) pinned memory is refused with a message."""
    with pytest.raises(psfsim.ArgumentError, match="shape: negative dimensions"):
        psfsim.pinned_empty((-1, 4))
    if gpu_missing():
        with pytest.raises(psfsim.BackendError, match="cudaHostAlloc|GPU module"):
            psfsim.pinned_empty((2, 4))


@pytest.mark.parametrize("kind", ["fft", "mft", "detector", "poppy", "broadband"])
@pytest.mark.parametrize("dtype", [np.float32, np.uint16])
def test_pinned_empty(kind, dtype):
    """psfsim.pinned_empty: a NumPy array in pinned host memory (CUDA says
    so), which compute(out=) fills with the same bits and metrics as a
    pageable array, floats and levels (the GPU's copies land in it
    straight); freed with its last view."""
    need_gpu()
    with psfsim.Set(config(1100 if kind == "fft" else 40, kind), backend="gpu") as s:
        host, met = s.compute(dtype=dtype)
        out = psfsim.pinned_empty(host.shape, dtype)
        assert out.shape == host.shape and out.dtype == np.dtype(dtype)
        kind_c, _ = psfsim._device.pointer_kind(out.ctypes.data)
        assert kind_c == 2, "pinned host memory: kind %r" % kind_c
        out.fill(7)
        got, met2 = s.compute(out=out, dtype=dtype)
        assert got is out or np.shares_memory(got, out)
        assert out.tobytes() == host.tobytes()
        assert np.array_equal(met2["strehl"], met["strehl"])
        part = out[3:9]  # a view keeps the memory alive after `out` goes
        del out, got
        assert part.tobytes() == host[3:9].tobytes()


def test_set_start_beside_a_thread_using_cuda():
    """A GPU set's first compute (it captures a CUDA graph) on one thread
    while another thread allocates and copies synchronously (what PyTorch
    does in a training step): the capture must not refuse the other
    thread's calls (cudaErrorStreamCaptureUnsupported, seen when psfsim's
    capture was thread-local: a thread in CUDA's default mode is refused
    unsafe calls during any capture not begun relaxed)."""
    need_gpu()
    import threading
    stop = threading.Event()
    errors = []

    def starter():
        try:
            for seed in range(40):
                cfg = config()
                cfg["aberrations"] = {"units": "waves", "zernike": [(5, 0.01 * seed)]}
                with psfsim.Set(cfg, backend="gpu") as s:  # one image: the graph's path
                    s.compute(0, 1, device="cuda" if seed % 2 else None)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
        finally:
            stop.set()

    t = threading.Thread(target=starter)
    t.start()
    copies = 0
    try:
        while not stop.is_set():
            a = psfsim.DeviceArray((64, 64), np.float32, 0)  # cudaMalloc
            assert a.numpy().shape == (64, 64)  # a synchronous copy
            copies += 1
    finally:
        t.join()
    assert not errors, errors
    assert copies > 0
