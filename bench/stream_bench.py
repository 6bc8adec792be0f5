#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""psfsim.Stream feeding a PyTorch consumer (issue 27): how long the
consumer waits for batches. The images are bench/device_bench.py's: 256 x
256 (128 pupil samples, Q = 2, the obscured circle), 8 random Zernike terms
(Noll 4..11, normal, 0.05 waves RMS), float32 on the GPU (device="cuda"),
through Stream.as_torch_dataset() and a DataLoader (batch_size=None,
num_workers=0: the stream computes ahead on its own thread).

The consumer, per batch: torch.from_dlpack of the images and labels, the
images' mean, a 3x3 convolution to C channels, then `reps` more C -> C 3x3
convolutions (the load), a sum with the labels', torch.cuda.synchronize().
Rows (CSV: what,images,seconds,psfs_per_s,producer_ms,consumer_ms,
wait_fraction,steady_wait_fraction):
  produce_alone     Set.compute(device="cuda") a call of the stream's
                    batches_per_call batches after another, no consumer:
                    psfsim's own rate (producer_ms per batch; one pass
                    after a warm-up pass)
  produce_alone_batch  the same, a batch a call
  consume_alone_R   the consumer alone on one batch, R reps (consumer_ms)
  stream_R_eE       epoch E (0 .. --epochs - 1) of one stream feeding the
                    consumer with R reps, epoch after epoch (set_epoch, a
                    new iteration of the DataLoader): Stream.stats
  stream_R          all its epochs together
  stream_R_noprefetch(_eE)  the same with prefetch=0 (computed in next())
wait_fraction: the time the consumer spent blocked in the stream (iter()
and next()) over the time (Stream.stats); steady_wait_fraction leaves out
the first batch's wait: an epoch row's own first batch, the stream_R row
the stream's very first batch only (epoch 0's, which necessarily waits:
the pipeline is empty, the plans and allocations new), so that the other
epochs' first batches count. Epoch 0 also warms up the allocator and
plans. From epoch 1 on, an epoch's first calls were computed while the
consumer took the previous epoch's last batches (Stream's prefetch across
an epoch's end): an epoch's first batch should not wait. R = 0 is the trivial consumer,
which outruns any producer and so waits for it (the rate is then the
producer's: compare psfs_per_s with produce_alone's); the loads --ratios
give R so that the consumer alone takes ratio x producer_ms per batch: at
ratio >= 1 the stream keeps up when the consumer waits <= 10% of the time
(the "goal" line: every epoch after the first, and all epochs but the
stream's first batch). The GPU is shared by both, so each runs slower
together than alone.
--device cpu: psfsim's CPU backend and NumPy arrays, the consumer's
convolutions on torch's CPU, or without torch (numpy_consumer) a NumPy
stand-in (the mean, then R + 1 3x3 box sums of the images), iterating the
stream itself. Without torch (on the GPU), CUDA or psfsim's backend:
prints why and exits 0.
Usage: stream_bench.py [--count 8192] [--batch 256] [--prefetch 2]
       [--ratios 1.25,2] [--channels 8] [--per-call N] [--epochs 3]
       [--device cuda|cpu]"""
import argparse
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
sys.path.insert(0, HERE)
import psfsim  # noqa: E402
from device_bench import NPIX, config  # noqa: E402  (the same images)


def skip(why):
    print("# stream_bench: skipped: %s" % why)
    sys.exit(0)


def row(what, images, seconds, producer_ms, consumer_ms, wait, steady):
    print("%s,%d,%.4f,%.0f,%.3f,%.3f,%.4f,%.4f" % (what, images, seconds, images / seconds,
                                                  producer_ms, consumer_ms, wait, steady),
          flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=8192, help="images per epoch")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--prefetch", type=int, default=2)
    ap.add_argument("--ratios", default="1.25,2", help="consumer loads, x the producer's time")
    ap.add_argument("--channels", type=int, default=8)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--per-call", type=int, default=None,
                    help="Stream's batches_per_call (default: the Stream's own)")
    ap.add_argument("--epochs", type=int, default=3, help="epochs of each stream")
    a = ap.parse_args()
    on_gpu = a.device != "cpu"
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        if on_gpu:
            skip("no torch (%s)" % e)
        torch = None
    if on_gpu and not torch.cuda.is_available():
        skip("torch has no CUDA device")
    device = a.device if on_gpu else None
    backend = "gpu" if on_gpu else "cpu"
    try:
        with psfsim.Set(config(1), backend=backend) as s:
            s.compute(0, 1, device=device)
    except psfsim.BackendError as e:
        skip("psfsim's %s backend: %s" % (backend, e))
    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    tdev = a.device if on_gpu else "cpu"
    print("# %d images of %d x %d per epoch, %d epochs, batches of %d, prefetch %d, 8 random "
          "Zernike terms, %s; psfsim %s, torch %s" % (
              a.count, NPIX, NPIX, a.epochs, a.batch, a.prefetch, a.device, psfsim.version(),
              torch.__version__ if torch else "none (numpy_consumer)"))
    print("what,images,seconds,psfs_per_s,producer_ms,consumer_ms,wait_fraction,"
          "steady_wait_fraction", flush=True)

    # The producer alone: Set.compute a call (the stream's batches_per_call
    # batches) after another, and a batch a call for comparison.
    per_call = psfsim.Stream(config(a.count), a.batch, backend=backend,
                             batches_per_call=a.per_call).batches_per_call
    nbatch = math.ceil(a.count / a.batch)
    with psfsim.Set(config(a.count), backend=backend) as s:
        def produce(n):
            for first in range(0, a.count, n):
                s.compute(first, min(n, a.count - first), device=device)
        for what, n in (("produce_alone_batch", a.batch),
                        ("produce_alone", a.batch * per_call)):
            produce(n)
            t0 = time.perf_counter()
            produce(n)
            t_prod = time.perf_counter() - t0
            producer_ms = 1e3 * t_prod / nbatch
            row(what, a.count, t_prod, producer_ms, 0.0, 0.0, 0.0)
        batch, _ = s.compute(0, a.batch, device=device)
        labels = np.zeros((a.batch, 8), np.float32)

    sink = []
    if torch is not None:
        gen = torch.Generator(device=tdev).manual_seed(1)
        w1 = 0.1 * torch.randn(a.channels, 1, 3, 3, device=tdev, generator=gen)
        w2 = 0.1 * torch.randn(a.channels, a.channels, 3, 3, device=tdev, generator=gen)

        def tensor(x):
            return torch.from_numpy(x) if isinstance(x, np.ndarray) else torch.from_dlpack(x)

        def consume(images, labs, reps):
            with torch.no_grad():
                x = images if torch.is_tensor(images) else tensor(images)
                y = labs if torch.is_tensor(labs) else tensor(labs)
                m = x.mean()
                h = F.conv2d(x.unsqueeze(1), w1, padding=1)
                for _ in range(reps):
                    h = torch.relu(F.conv2d(h, w2, padding=1))
                sink.append(float(h.mean() + m + y.sum()))  # a device-to-host sync too
                sync()

        def prepared():
            return tensor(batch), tensor(labels).to(tdev)

        def batches(st):
            return torch.utils.data.DataLoader(st.as_torch_dataset(), batch_size=None)
    else:
        def consume(images, labs, reps):
            x = np.asarray(images)
            h = x - x.mean()
            for _ in range(reps + 1):
                h = (h[:, :-2, :-2] + h[:, :-2, 1:-1] + h[:, :-2, 2:] + h[:, 1:-1, :-2] +
                     h[:, 1:-1, 1:-1] + h[:, 1:-1, 2:] + h[:, 2:, :-2] + h[:, 2:, 1:-1] +
                     h[:, 2:, 2:])
            sink.append(float(h.mean() + np.asarray(labs).sum()))

        def prepared():
            return batch, labels

        def batches(st):
            return st

    def consumer_ms(reps, n=5):
        xb, yb = prepared()
        consume(xb, yb, reps)
        t0 = time.perf_counter()
        for _ in range(n):
            consume(xb, yb, reps)
        return 1e3 * (time.perf_counter() - t0) / n

    base = consumer_ms(0)
    per_rep = max((consumer_ms(4) - base) / 4, 1e-3)
    loads = [0]
    for r in a.ratios.split(","):
        reps = max(1, math.ceil((float(r) * producer_ms - base) / per_rep)) if r else 0
        if reps not in loads:
            loads.append(reps)

    results = {}
    for reps in loads:
        c_ms = consumer_ms(reps)
        row("consume_alone_%d" % reps, a.batch, c_ms / 1e3, producer_ms, c_ms, 0.0, 0.0)
        for prefetch in (a.prefetch, 0):
            what = "stream_%d" % reps + ("" if prefetch else "_noprefetch")
            with psfsim.Stream(config(a.count), a.batch, device=device, backend=backend,
                               prefetch=prefetch, batches_per_call=per_call) as st:
                loader = batches(st)
                epochs = []
                for epoch in range(a.epochs):
                    st.set_epoch(epoch)
                    for images, labs, _ in loader:
                        consume(images, labs, reps)
                    s = st.stats
                    epochs.append(s)
                    row("%s_e%d" % (what, epoch), s["images"], s["total_s"], producer_ms, c_ms,
                        s["wait_fraction"], s["steady_wait_fraction"])
            images = sum(s["images"] for s in epochs)
            total = sum(s["total_s"] for s in epochs)
            wait = sum(s["wait_s"] for s in epochs)
            first = epochs[0]["first_wait_s"]
            whole = {"total_s": total, "wait_fraction": wait / total,
                     "steady_wait_fraction": (wait - first) / (total - first),
                     "images_per_s": images / total}
            row(what, images, total, producer_ms, c_ms, whole["wait_fraction"],
                whole["steady_wait_fraction"])
            results[(reps, prefetch)] = (c_ms, whole, epochs)
    print("# producer %.3f ms per batch of %d alone (%.0f PSFs/s), %d batches a call" % (
        producer_ms, a.batch, 1e3 * a.batch / producer_ms, per_call))
    for reps in loads:
        c_ms, s, epochs = results[(reps, a.prefetch)]
        _, s0, _ = results[(reps, 0)]
        later = [e["wait_fraction"] for e in epochs[1:]]
        verdict = ""
        if c_ms >= producer_ms:
            met = s["steady_wait_fraction"] <= 0.10 and all(w <= 0.10 for w in later)
            verdict = ": goal (<= 10%%) %s" % ("met" if met else "MISSED")
        print("# consumer %.3f ms/batch alone (%.2fx the producer): waits %.1f%% of %d epochs "
              "(%.1f%% without the stream's first batch; %.1f%% without prefetch), %.0f PSFs/s%s"
              % (c_ms, c_ms / producer_ms, 100 * s["wait_fraction"], len(epochs),
                 100 * s["steady_wait_fraction"], 100 * s0["wait_fraction"], s["images_per_s"],
                 verdict))
        print("#   per epoch: %s (first batch %s ms)" % (
            ", ".join("%.1f%%" % (100 * e["wait_fraction"]) for e in epochs),
            ", ".join("%.2f" % (1e3 * e["first_wait_s"]) for e in epochs)))


if __name__ == "__main__":
    main()
