# SPDX-License-Identifier: BSD-3-Clause
"""psfsim.torch and psfsim.jax (issue 28): a set's images as a
differentiable function of Zernike coefficients, segment terms and the OPD
map. Checked against an independent implementation of the same pupil in
each framework, differentiated by its own autograd (to float64 rounding),
against central differences (torch.autograd.gradcheck), and for dtypes,
devices and errors. Each part skips when its framework is not installed
(the GPU machine has both)."""
import numpy as np
import pytest

import psfsim
from test_vjp import base, binary_pupil_set, numpy_image


def opd_set():
    """Three through-focus images with an OPD map (waves) and a global term."""
    cfg = base()
    opd = 0.01 * np.random.default_rng(9).standard_normal((8, 8)).astype(np.float32)
    cfg["aberrations"]["opd_map"] = {"file": opd, "units": "waves"}
    return cfg


def independent(lib, mask, z2, z4, n=64):
    """numpy_image's model (test_vjp) in lib (torch or jax.numpy), so that
    lib's autograd differentiates it: |FFT(A exp(i 2 pi W))|^2 over its
    sum, W = z2 Z2 + z4 Z4 on a 16-sample radius, the axis on sample n/2."""
    amp = np.zeros((n, n))
    amp[n // 2 - 16:n // 2 + 17, n // 2 - 16:n // 2 + 17] = mask
    y, x = np.mgrid[0:n, 0:n] - n // 2
    zx = 2.0 * x / 16.0
    z4b = np.sqrt(3.0) * (2.0 * (x ** 2 + y ** 2) / 16.0 ** 2 - 1.0)
    if lib.__name__ == "torch":
        amp, zx, z4b = (lib.from_numpy(a) for a in (amp, zx, z4b))
        fft = lib.fft
    else:
        fft = lib.fft
    w = z2 * zx + z4 * z4b
    field = amp * lib.exp(2j * np.pi * w)
    img = lib.abs(fft.fftshift(fft.fft2(fft.ifftshift(field)))) ** 2
    return img / img.sum()


# -- torch --

@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def test_torch_equals_an_independent_torch_model(torch):
    import psfsim.torch as pt
    cfg, mask = binary_pupil_set()
    w = torch.from_numpy(np.random.default_rng(5).standard_normal((64, 64)))
    with psfsim.Set(cfg, backend="cpu") as s:
        z = torch.tensor([[0.03, -0.05]], dtype=torch.float64, requires_grad=True)
        img = pt.images(s, zernike=z, terms=[2, 4])
        (img[0] * w).sum().backward()
    z2 = torch.tensor(0.03, dtype=torch.float64, requires_grad=True)
    z4 = torch.tensor(-0.05, dtype=torch.float64, requires_grad=True)
    ref = independent(torch, mask, z2, z4)
    (ref * w).sum().backward()
    assert torch.allclose(img[0].detach(), ref.detach(), rtol=0, atol=1e-12 * float(ref.max()))
    assert np.allclose(z.grad.numpy()[0], [float(z2.grad), float(z4.grad)], rtol=1e-9)
    assert np.abs(ref.detach().numpy() - numpy_image(mask, 0.03, -0.05)).max() < 1e-15


def test_torch_gradcheck_zernike_and_opd_map(torch):
    """torch's own central differences through the Function, every input."""
    import psfsim.torch as pt
    with psfsim.Set(opd_set(), backend="cpu") as s:
        rng = np.random.default_rng(2)
        z = torch.tensor(0.02 * rng.standard_normal((3, 2)), requires_grad=True)
        opd = torch.tensor(0.02 * rng.standard_normal((8, 8)), requires_grad=True)
        w = torch.from_numpy(rng.standard_normal((3, s.npix, s.npix)))

        def loss(z, opd):
            return (pt.images(s, zernike=z, terms=[6, 11], opd_map=opd) * w).sum()

        assert torch.autograd.gradcheck(loss, (z, opd), eps=1e-6, atol=1e-7, rtol=1e-5)
        # and the gradient is Set.vjp's, with the same inputs
        loss(z, opd).backward()
        want = s.vjp(w.numpy(), wrt=("zernike", "opd_map"), terms=[6, 11],
                     zernike=z.detach().numpy(), opd_map=opd.detach().numpy())
        assert np.array_equal(z.grad.numpy(), want["zernike"])
        assert np.array_equal(opd.grad.numpy(), want["opd_map"])


def test_torch_dtype_and_only_what_needs_grad(torch):
    import psfsim.torch as pt
    with psfsim.Set(opd_set(), backend="cpu") as s:
        z = torch.zeros(3, 1, dtype=torch.float32, requires_grad=True)
        opd = torch.zeros(8, 8, dtype=torch.float64)  # no gradient wanted
        img = pt.images(s, zernike=z, terms=[4], opd_map=opd)
        assert img.dtype == torch.float32 and img.shape == (3, s.npix, s.npix)
        img.sum().backward()
        assert z.grad.dtype == torch.float32 and opd.grad is None
        f64 = s.compute_inputs(terms=[4], zernike=np.zeros((3, 1)))
        assert np.array_equal(img.detach().numpy(), f64.astype(np.float32))
        # the float32 gradient is Set.vjp's (a cotangent of ones) rounded once
        g = s.vjp(np.ones((3, s.npix, s.npix)), terms=[4], zernike=np.zeros((3, 1)))["zernike"]
        assert np.array_equal(z.grad.numpy(), g.astype(np.float32))


def test_torch_errors(torch):
    import psfsim.torch as pt
    with psfsim.Set(opd_set(), backend="cpu") as s:
        with pytest.raises(TypeError, match="zernike, segment_zernike or opd_map"):
            pt.images(s)
        with pytest.raises(TypeError, match="torch tensor"):
            pt.images(s, zernike=np.zeros((3, 1)), terms=[4])
        with pytest.raises(psfsim.ArgumentError, match="shape"):
            pt.images(s, zernike=torch.zeros(3, 2), terms=[4])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_torch_cuda_tensors_stay_on_the_device(torch, dtype, monkeypatch):
    """CUDA inputs: the images and z.grad on the device; the backward's
    cotangent passed to psfsim_vjp_device as the CUDA tensor it is (of the
    images' dtype: PSFSIM_FLOAT64 2, PSFSIM_FLOAT32 0), never through
    psfsim_vjp; z.grad equal to the host cotangent's (1e-12 relative for
    float64, the float32 rounding of it for float32)."""
    import psfsim.torch as pt
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device for torch")
    calls = []
    lib = psfsim._lib.lib
    real = lib.psfsim_vjp_device
    monkeypatch.setattr(lib, "psfsim_vjp_device", lambda *a: calls.append(a[5]) or real(*a))
    with psfsim.Set(opd_set()) as s:
        t = getattr(torch, dtype)
        z = torch.full((3, 1), 0.01, dtype=t, device="cuda", requires_grad=True)
        img = pt.images(s, zernike=z, terms=[4])
        assert img.is_cuda and img.dtype == t
        monkeypatch.setattr(lib, "psfsim_vjp", None)  # the backward must not take the host path
        (img * img).sum().backward()
        monkeypatch.undo()
        assert z.grad.is_cuda and z.grad.dtype == t
        assert calls == [2 if dtype == "float64" else 0]
        cot = (2 * img.detach()).cpu().numpy().astype(np.float64)
        want = s.vjp(cot, terms=[4], zernike=np.full((3, 1), 0.01))["zernike"]
        got = z.grad.cpu().numpy().astype(np.float64)
        tol = 1e-12 if dtype == "float64" else 1e-6
        assert np.abs(got - want).max() <= tol * np.abs(want).max()


# -- jax --

@pytest.fixture
def jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


def test_jax_equals_an_independent_jax_model(jax):
    import jax.numpy as jnp

    import psfsim.jax as pj
    cfg, mask = binary_pupil_set()
    w = jnp.asarray(np.random.default_rng(5).standard_normal((64, 64)))
    with psfsim.Set(cfg, backend="cpu") as s:
        f = pj.images_fn(s, terms=[2, 4])

        def loss(z):
            return jnp.sum(f({"zernike": z})[0] * w)

        z0 = jnp.array([[0.03, -0.05]])
        got = jax.grad(loss)(z0)
        jit = jax.jit(jax.grad(loss))(z0)
        img = f({"zernike": z0})[0]

    def ref_loss(z2, z4):
        return jnp.sum(independent(jnp, mask, z2, z4) * w)

    want = jax.grad(ref_loss, argnums=(0, 1))(0.03, -0.05)
    ref = independent(jnp, mask, 0.03, -0.05)
    assert float(jnp.abs(img - ref).max()) <= 1e-12 * float(ref.max())
    assert np.allclose(np.asarray(got)[0], [float(want[0]), float(want[1])], rtol=1e-9)
    assert np.array_equal(np.asarray(jit), np.asarray(got))


def test_jax_opd_map_and_central_differences(jax):
    import jax.numpy as jnp

    import psfsim.jax as pj
    with psfsim.Set(opd_set(), backend="cpu") as s:
        f = pj.images_fn(s, terms=[6])
        rng = np.random.default_rng(4)
        w = jnp.asarray(rng.standard_normal((3, s.npix, s.npix)))
        z = jnp.asarray(0.02 * rng.standard_normal((3, 1)))
        opd = jnp.asarray(0.02 * rng.standard_normal((8, 8)))

        def loss(inputs):
            return jnp.sum(f(inputs) * w)

        g = jax.grad(loss)({"zernike": z, "opd_map": opd})
        h = 1e-6
        e = np.zeros((8, 8))
        e[3, 4] = h
        num = (loss({"zernike": z, "opd_map": opd + e}) -
               loss({"zernike": z, "opd_map": opd - e})) / (2 * h)
        assert float(g["opd_map"][3, 4]) == pytest.approx(float(num), rel=1e-5)
        e = np.zeros((3, 1))
        e[1, 0] = h
        num = (loss({"zernike": z + e, "opd_map": opd}) -
               loss({"zernike": z - e, "opd_map": opd})) / (2 * h)
        assert float(g["zernike"][1, 0]) == pytest.approx(float(num), rel=1e-5)
        with pytest.raises(KeyError, match="not among"):
            f({"tilt": z})


def test_jax_one_row_zernike_broadcast(jax):
    """A one-row "zernike" [J] stands for every image: the forward
    broadcasts it and jax.grad sums the images' gradients back to [J]."""
    import jax.numpy as jnp

    import psfsim.jax as pj
    with psfsim.Set(opd_set(), backend="cpu") as s:
        f = pj.images_fn(s, terms=[4, 6, 11])
        w = jnp.asarray(np.random.default_rng(8).standard_normal((3, s.npix, s.npix)))
        z = jnp.asarray([0.01, -0.02, 0.015])
        g = jax.grad(lambda z: jnp.sum(f({"zernike": z}) * w))(z)
        assert g.shape == (3,)
        want = s.vjp(np.asarray(w), terms=[4, 6, 11], zernike=np.asarray(z))["zernike"]
        assert np.allclose(np.asarray(g), want.sum(axis=0), rtol=1e-12, atol=0)
