# SPDX-License-Identifier: BSD-3-Clause
"""psfsim.torch: a set's images as a differentiable PyTorch function
(issue 28). Imports torch (`import psfsim.torch`, or the attribute
psfsim.torch, which imports it then); psfsim itself never does.

    import psfsim, psfsim.torch, torch
    s = psfsim.Set(config)                       # kept open: one per model
    z = torch.zeros(s.count, 3, dtype=torch.float64, requires_grad=True)
    images = psfsim.torch.images(s, zernike=z, terms=[4, 5, 6])
    loss = ((images - measured) ** 2).sum()
    loss.backward()                              # z.grad: psfsim's adjoint

The images are Set.compute_inputs' (the set's images with the inputs
added to each image's own aberrations) and the backward pass is Set.vjp,
both in double precision (on the GPU for a GPU set's FFT images, else on
the CPU). The forward's images are made on the host and moved to the
inputs' device; the backward's cotangent, a CUDA tensor when the images
are, stays on the device (Set.vjp's device path, psfsim_vjp_device: no
host copy of it, float32 or float64 as it comes) and only the small
gradients come back from the host to the inputs' device. The result has the dtype and device of the inputs given
(float32 or float64: the double images rounded once). Gradients flow to
zernike [K, J] (aberrations.units), segment_zernike [K, S, Js] and
opd_map [rows, cols] (the OPD map's units); the images' own
second derivatives are not provided (the backward is not itself
differentiable: torch.autograd.function.once_differentiable)."""
import torch
from torch.autograd.function import once_differentiable

from . import Set

_NAMES = ("zernike", "segment_zernike", "opd_map")


def _host(t):
    """A tensor's values as a C-contiguous float64 NumPy array (a copy)."""
    return None if t is None else t.detach().to("cpu", torch.float64).contiguous().numpy()


def _cotangent(grad):
    """The images' gradient as Set.vjp takes it: a CUDA tensor stays on its
    device (float32 or float64, contiguous: psfsim_vjp_device reads it
    there, no host copy), anything else a float64 NumPy copy."""
    if grad.is_cuda:
        g = grad.detach()
        if g.dtype not in (torch.float32, torch.float64):
            g = g.to(torch.float64)
        return g.contiguous()
    return _host(grad)


class Images(torch.autograd.Function):
    """The autograd Function under images(): forward(ctx, set, first,
    count, terms, segment_terms, zernike, segment_zernike, opd_map) ->
    images [count, M, M]; backward: Set.vjp with the images' gradient as
    the cotangent, for the inputs that need a gradient, each returned in
    its input's dtype and device."""

    @staticmethod
    def forward(ctx, s, first, count, terms, segment_terms, zernike, segment_zernike, opd_map):
        inputs = dict(zip(_NAMES, (zernike, segment_zernike, opd_map)))
        ctx.s, ctx.first, ctx.count = s, first, count
        ctx.terms, ctx.segment_terms = terms, segment_terms
        ctx.host = {k: _host(v) for k, v in inputs.items()}
        ctx.kinds = {k: (v.dtype, v.device) for k, v in inputs.items() if v is not None}
        dtype, device = next(iter(ctx.kinds.values()))
        out = s.compute_inputs(terms=terms, segment_terms=segment_terms, first=first,
                               count=count, **ctx.host)
        return torch.from_numpy(out).to(device=device, dtype=dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        wrt = [n for n, need in zip(_NAMES, ctx.needs_input_grad[5:]) if need]
        out = [None] * 8
        if not wrt:
            return tuple(out)
        cot = _cotangent(grad)
        stream = torch.cuda.current_stream(grad.device) if grad.is_cuda else None
        g = ctx.s.vjp(cot, wrt=wrt, terms=ctx.terms, segment_terms=ctx.segment_terms,
                      first=ctx.first, count=ctx.count, stream=stream, **ctx.host)
        for i, n in enumerate(_NAMES):
            if n in wrt:
                dtype, device = ctx.kinds[n]
                out[5 + i] = torch.from_numpy(g[n]).to(device=device, dtype=dtype)
        return tuple(out)


def images(config, zernike=None, terms=None, segment_zernike=None, segment_terms=None,
           opd_map=None, first=0, backend=None, base_dir=None):
    """Images [K, M, M] of a set as a tensor that autograd differentiates
    through psfsim's adjoint.

    config: an open psfsim.Set (best: it is kept, with its planned
    transforms, from call to call), or anything psfsim.Set takes (opened
    for this call and its backward; backend, base_dir as Set's).
    zernike: [K, len(terms)] tensor, aberrations.units, added to images
    [first, first + K)'s own coefficients of Zernike terms (j in the
    config's convention); segment_zernike: [K, S, len(segment_terms)]
    (segmented apertures); opd_map: [rows, cols] added to the set's OPD
    map. At least one tensor is given: the images take its dtype and
    device. K: zernike's or segment_zernike's first dimension, else the
    whole set. Errors: TypeError without a tensor input; the Set's
    (psfsim.ArgumentError: a bad term or shape, an input the set lacks)."""
    inputs = (zernike, segment_zernike, opd_map)
    if all(t is None for t in inputs):
        raise TypeError("psfsim.torch.images: give zernike, segment_zernike or opd_map (a "
                        "tensor)")
    for name, t in zip(_NAMES, inputs):
        if t is not None and not torch.is_tensor(t):
            raise TypeError("psfsim.torch.images: %s: a torch tensor, not %s"
                            % (name, type(t).__name__))
    s = config if isinstance(config, Set) else Set(config, backend=backend, base_dir=base_dir)
    lead = zernike if zernike is not None else segment_zernike
    count = int(lead.shape[0]) if lead is not None else s.count - first
    return Images.apply(s, int(first), count, None if terms is None else list(terms),
                        None if segment_terms is None else list(segment_terms), *inputs)

