#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Why a trivial consumer waits for psfsim.Stream (issue 27): the
stream_bench.py's trivial consumer (R = 0: the images' mean, one 3x3
convolution to 8 channels, a sum, a device-to-host sync) fed by a Stream,
with each producer call's time and each batch's wait recorded, under
variants that each remove one suspected coupling:

  base        the Stream as it is (stream=None: its calls wait for no
              stream of the consumer's)
  legacy      stream=0: each call first waits for the legacy default
              stream, where the consumer's kernels queue (the Stream's
              default before the fourteenth session)
  switch      base with sys.setswitchinterval(1e-4): the producer thread's
              returns from C take the GIL back sooner
and two references: the consumer alone, and the consumer while a thread
computes the same calls back to back with no Stream (the GPU shared, no
queue): the consumer's slowdown is the GPU's contention alone.

Prints CSV: variant,epoch,batches,wait_fraction,consumer_ms,produce_ms_per_batch,
call_ms_p50,call_ms_max,images_ms_p50,waits_over_0.2ms: consumer_ms the
consumer's own time a batch (the time not waiting), produce_ms_per_batch
and call_ms the Stream's calls (images and labels), images_ms their
Set.compute alone (on the Stream's thread), waits: batch index:ms. Without torch or CUDA: prints
why and exits 0.
Usage: stream_waits.py [--count 8192] [--batch 256] [--prefetch 2] [--epochs 3]"""
import argparse
import os
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
sys.path.insert(0, HERE)
import psfsim  # noqa: E402
from device_bench import config  # noqa: E402  (the same images)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=8192)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--prefetch", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=3)
    a = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print("# stream_waits: skipped: no torch (%s)" % e)
        return
    if not torch.cuda.is_available():
        print("# stream_waits: skipped: torch has no CUDA device")
        return
    gen = torch.Generator(device="cuda").manual_seed(1)
    w1 = 0.1 * torch.randn(8, 1, 3, 3, device="cuda", generator=gen)
    sink = []

    def consume(images, labels):
        with torch.no_grad():
            x = images if torch.is_tensor(images) else torch.from_dlpack(images)
            y = labels if torch.is_tensor(labels) else torch.from_dlpack(labels)
            m = x.mean()
            h = F.conv2d(x.unsqueeze(1), w1, padding=1)
            sink.append(float(h.mean() + m + y.sum()))
            torch.cuda.synchronize()

    print("variant,epoch,batches,wait_fraction,consumer_ms,produce_ms_per_batch,call_ms_p50,"
          "call_ms_max,images_ms_p50,waits_over_0.2ms", flush=True)
    with psfsim.Set(config(a.count), backend="gpu") as s:
        x, _ = s.compute(0, a.batch, device="cuda")
        y = torch.zeros(a.batch, 8, device="cuda")
        for _ in range(3):
            consume(x, y)
        t0 = time.perf_counter()
        for _ in range(20):
            consume(x, y)
        alone = 1e3 * (time.perf_counter() - t0) / 20
        print("consumer_alone,,20,0,%.3f,,,,," % alone, flush=True)
        # the consumer while a thread computes calls back to back (no Stream)
        per_call = psfsim.Stream(config(a.count), a.batch, backend="gpu").batches_per_call
        n = a.batch * per_call
        stop = threading.Event()
        calls = []

        def produce():
            side = torch.cuda.Stream()
            first = 0
            while not stop.is_set():
                t = time.perf_counter()
                s.compute(first, n, device="cuda", stream=side)
                calls.append(time.perf_counter() - t)
                first = (first + n) % (a.count - n)

        th = threading.Thread(target=produce)
        th.start()
        time.sleep(0.05)
        t0 = time.perf_counter()
        for _ in range(40):
            consume(x, y)
        shared = 1e3 * (time.perf_counter() - t0) / 40
        stop.set()
        th.join()
        c = 1e3 * np.array(calls[1:]) / per_call
        print("consumer_with_producer,,40,0,%.3f,%.3f,%.3f,%.3f,," % (
            shared, np.median(c), np.median(c) * per_call, c.max() * per_call), flush=True)

    images_s = []  # Set.compute's own time on the Stream's thread
    set_compute = psfsim.Set.compute

    def timed_compute(self, *args, **kw):
        t = time.perf_counter()
        r = set_compute(self, *args, **kw)
        if threading.current_thread().name == "psfsim.Stream":
            images_s.append(time.perf_counter() - t)
        return r

    psfsim.Set.compute = timed_compute
    for variant in ("base", "legacy", "switch"):
        old = sys.getswitchinterval()
        if "switch" in variant:
            sys.setswitchinterval(1e-4)
        with psfsim.Stream(config(a.count), a.batch, device="cuda", backend="gpu",
                           prefetch=a.prefetch, stream=0 if variant == "legacy" else None) as st:
            calls = []
            compute = st._compute

            def timed(*args, _c=compute, _calls=calls):
                t = time.perf_counter()
                r = _c(*args)
                _calls.append(time.perf_counter() - t)
                return r

            st._compute = timed
            for epoch in range(a.epochs):
                st.set_epoch(epoch)
                waits = []
                it = iter(st)
                while True:
                    t = time.perf_counter()
                    try:
                        images, labels, _ = next(it)
                    except StopIteration:
                        break
                    waits.append(time.perf_counter() - t)
                    consume(images, labels)
                sts = st.stats
                c = 1e3 * np.array(calls) if calls else np.zeros(1)
                im = 1e3 * np.array(images_s) if images_s else np.zeros(1)
                print("%s,%d,%d,%.4f,%.3f,%.3f,%.3f,%.3f,%.3f,%s" % (
                    variant, epoch, sts["batches"], sts["wait_fraction"],
                    1e3 * (sts["total_s"] - sts["wait_s"]) / max(sts["batches"], 1),
                    1e3 * sts["produce_s"] / max(sts["batches"], 1), np.median(c), c.max(),
                    np.median(im),
                    " ".join("%d:%.1f" % (i, 1e3 * w) for i, w in enumerate(waits)
                             if w > 2e-4)), flush=True)
                calls.clear()
                images_s.clear()
        sys.setswitchinterval(old)


if __name__ == "__main__":
    main()
