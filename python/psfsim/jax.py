# SPDX-License-Identifier: BSD-3-Clause
"""psfsim.jax: a set's images as a JAX function with a custom VJP
(issue 28). Imports jax (`import psfsim.jax`, or the attribute psfsim.jax,
which imports it then); psfsim itself never does.

    import psfsim, psfsim.jax, jax, jax.numpy as jnp
    s = psfsim.Set(config)
    f = psfsim.jax.images_fn(s, terms=[4, 5, 6])  # f({"zernike": z}) -> [K, M, M]
    loss = lambda z: jnp.sum((f({"zernike": z}) - measured) ** 2)
    g = jax.grad(loss)(jnp.zeros((s.count, 3)))   # psfsim's adjoint

f's argument is a dict of the inputs (any of "zernike" [K, J],
"segment_zernike" [K, S, Js], "opd_map" [rows, cols]; Set.compute_inputs'
meanings and units) and its value the images [K, M, M] in the dtype of
the inputs (float32 unless JAX's x64 is on); an input broadcast over the
images (a one-row "zernike" [J]) gets its gradient summed back to its
shape. The forward is Set.compute_inputs and the VJP Set.vjp, in double,
called through jax.pure_callback with host arrays (a GPU Set's FFT
gradients are computed on the GPU from them, others on the CPU: Set.vjp),
so f works under jax.jit and jax.grad, not under jax.vmap (the set's
images are already a batch) or forward-mode jax.jvp (a custom_vjp
function has no JVP). An error of psfsim's inside the callback reaches
the caller wrapped by JAX (its JaxRuntimeError carries the message)."""
import jax
import jax.numpy as jnp
import numpy as np

from . import Set

_NAMES = ("zernike", "segment_zernike", "opd_map")


def _unbroadcast(g, shape):
    """g summed down to shape, the adjoint of NumPy's broadcasting of an
    input of that shape (a one-row "zernike" [J] stands for every image's
    [K, J]: its gradient is the rows' sum)."""
    lead = g.ndim - len(shape)
    g = g.sum(axis=tuple(range(lead))) if lead > 0 else g
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


def images_fn(config, terms=None, segment_terms=None, first=0, count=None, backend=None,
              base_dir=None):
    """f(inputs) -> images [K, M, M], differentiable by jax.grad/jax.vjp
    (the module's docstring). config: an open psfsim.Set (kept: f uses
    it at every call), or anything psfsim.Set takes (opened now, for f's
    life; backend, base_dir as Set's). terms, segment_terms: the Zernike
    j of inputs' "zernike" and "segment_zernike" columns (the config's
    convention). K = count (default: the set's images from first).
    Errors: KeyError, when f is traced, for an input name not in
    ("zernike", "segment_zernike", "opd_map"); when it runs, the Set's
    (psfsim.ArgumentError: a bad term or shape, an input the set lacks),
    wrapped by JAX."""
    s = config if isinstance(config, Set) else Set(config, backend=backend, base_dir=base_dir)
    count = s.count - first if count is None else int(count)
    shape = (count, s.npix, s.npix)
    opts = {"terms": None if terms is None else list(terms),
            "segment_terms": None if segment_terms is None else list(segment_terms),
            "first": int(first), "count": count}

    def check(inputs):
        bad = [k for k in inputs if k not in _NAMES]
        if bad:
            raise KeyError("psfsim.jax: inputs %s are not among %s" % (bad, list(_NAMES)))
        if not inputs:
            raise KeyError("psfsim.jax: give at least one of %s" % list(_NAMES))
        return jnp.result_type(*inputs.values())

    def host_inputs(arrays, keys):
        return {k: np.asarray(a, dtype=np.float64) for k, a in zip(keys, arrays)}

    @jax.custom_vjp
    def f(inputs):
        dtype = check(inputs)
        keys = sorted(inputs)

        def forward(*arrays):
            return s.compute_inputs(**opts, **host_inputs(arrays, keys)).astype(dtype)

        return jax.pure_callback(forward, jax.ShapeDtypeStruct(shape, dtype),
                                 *[inputs[k] for k in keys])

    def f_fwd(inputs):
        return f(inputs), inputs

    def f_bwd(inputs, g):
        keys = sorted(inputs)
        out = {k: jax.ShapeDtypeStruct(jnp.shape(inputs[k]), jnp.result_type(inputs[k]))
               for k in keys}

        def backward(cot, *arrays):
            grads = s.vjp(np.asarray(cot, dtype=np.float64), wrt=keys, **opts,
                          **host_inputs(arrays, keys))
            return {k: _unbroadcast(grads[k], out[k].shape).astype(out[k].dtype) for k in keys}

        return (jax.pure_callback(backward, out, g, *[inputs[k] for k in keys]),)

    f.defvjp(f_fwd, f_bwd)
    return f
