# SPDX-License-Identifier: BSD-3-Clause
"""psfsim.Stream (issue 27): batches of seeded random PSFs and labels for
training loops. (seed, epoch, index) regenerates its image bit for bit (a
fresh Stream, Stream.image, a psfsim.Set of the epoch's seed); epochs
differ; shards (explicit, or from torch's DataLoader worker and
distributed rank, faked here without torch) are disjoint and their union
is the epoch; labels are Set.params' values; prefetching gives what no
prefetching gives, and the next epoch's first calls computed at an
epoch's end are that epoch's images (and that shard's), discarded when
another epoch is iterated; errors reach the consumer; leaving the loop or
closing the stream stops the thread. The device cases skip without a GPU, the torch ones without
torch (the GPU machine has both)."""
import gc
import importlib
import os
import pickle
import subprocess
import sys
import threading
import time
import types

import numpy as np
import pytest

import psfsim
import gpu_probe


def config(count=11, seed=7, wavelengths=False):
    cfg = {"name": "stream",
           "optics": {"wavelength_nm": 600.0, "f_number": 12.0,
                      "aperture": {"diameter_m": 1.0, "obscuration": 0.2}},
           "sampling": {"pupil_samples": 24, "padding": 2.0},
           "sweep": {"random": {"count": count, "seed": seed,
                                "zernike": [(4, "normal", 0.05), (7, "uniform", 0.02),
                                            (11, "normal", 0.03)]}}}
    if wavelengths:
        cfg["sweep"]["random"]["wavelength_nm"] = [500.0, 600.0, 700.0]
    return cfg


def collect(stream):
    """Every batch of one iteration: (images, labels, indices) concatenated
    on the host, and the batch sizes."""
    ims, labs, idx, sizes = [], [], [], []
    for images, labels, indices in stream:
        ims.append(np.asarray(images))
        labs.append(np.asarray(labels))
        idx.append(np.asarray(indices))
        sizes.append(len(indices))
    if not ims:
        return None, None, np.zeros(0, np.int64), sizes
    return np.concatenate(ims), np.concatenate(labs), np.concatenate(idx), sizes


def set_images(cfg, first, count, backend="cpu"):
    with psfsim.Set(cfg, backend=backend) as s:
        return s.compute(first, count)[0], s.params(first, count, frame=False)


# -- the key --

def test_splitmix64_reference_values():
    """SplitMix64 from state 0: Vigna's splitmix64.c outputs (the state
    advanced by the golden gamma before each)."""
    from psfsim._stream import _splitmix64
    gamma = 0x9E3779B97F4A7C15
    assert _splitmix64(0) == 0xE220A8397B1DCDAF
    assert _splitmix64(gamma) == 0x6E789E6AA1B965F4
    assert _splitmix64((2 * gamma) % 2**64) == 0x06C45D188009454F


def test_epoch_seed_formula():
    from psfsim._stream import _splitmix64
    assert psfsim.epoch_seed(7, 0) == 7
    for seed, epoch in [(7, 1), (7, 2), (0, 1), (2**63 - 1, 5), (123456789, 2**40)]:
        want = _splitmix64(_splitmix64(seed) ^ epoch) >> 1
        assert psfsim.epoch_seed(seed, epoch) == want
        assert 0 <= want < 2**63
    seeds = {psfsim.epoch_seed(7, e) for e in range(1000)}
    assert len(seeds) == 1000
    for bad in [(-1, 0), (2**63, 0), (1, -1), (1.0, 1), (True, 1)]:
        with pytest.raises(ValueError):
            psfsim.epoch_seed(*bad)


def test_epoch_zero_is_the_configs_set():
    cfg = config()
    im, lab, idx, sizes = collect(psfsim.Stream(cfg, 4, prefetch=0))
    assert sizes == [4, 4, 3] and list(idx) == list(range(11))
    want, _ = set_images(cfg, 0, 11)
    assert im.tobytes() == want.tobytes()


@pytest.mark.parametrize("epoch", [1, 3])
def test_seed_epoch_index_regenerates(epoch):
    cfg = config()
    st = psfsim.Stream(cfg, 4, seed=99, epoch=epoch)
    im, lab, idx, _ = collect(st)
    assert list(idx) == list(range(11))
    # a psfsim.Set of the epoch's seed, the documented formula
    other = config()
    other["sweep"]["random"]["seed"] = psfsim.epoch_seed(99, epoch)
    want, p = set_images(other, 0, 11)
    assert im.tobytes() == want.tobytes()
    assert np.array_equal(lab, np.stack([p["z4"], p["z7"], p["z11"]], 1).astype(np.float32))
    # a fresh stream, other batches and shards: the same bits per index
    fresh = psfsim.Stream(config(seed=5), 3, seed=99, epoch=epoch, shard=1, num_shards=2)
    im2, lab2, idx2, _ = collect(fresh)
    assert list(idx2) == list(range(5, 11))
    assert im2.tobytes() == im[5:].tobytes() and lab2.tobytes() == lab[5:].tobytes()
    # one image alone
    for k in (0, 6, 10):
        one, labels = fresh.image(epoch, k)
        assert one.tobytes() == im[k].tobytes() and labels.tobytes() == lab[k].tobytes()
    with fresh.epoch_set(epoch) as s:
        assert s.info["seed"] == psfsim.epoch_seed(99, epoch)
        assert s.compute(4, 1)[0].tobytes() == im[4:5].tobytes()


def test_epochs_differ_and_set_epoch():
    st = psfsim.Stream(config(), 11)
    im0, lab0, _, _ = collect(st)
    st.set_epoch(1)
    im1, lab1, _, _ = collect(st)
    assert st.epoch == 1
    assert not np.any(lab0 == lab1)  # every drawn value differs
    assert all(not np.array_equal(im0[k], im1[k]) for k in range(11))
    st.set_epoch(0)
    again, _, _, _ = collect(st)
    assert again.tobytes() == im0.tobytes()


def test_epoch_size_replaces_the_count():
    cfg = config(count=5)
    st = psfsim.Stream(cfg, 4, epoch_size=9, epoch=2)
    assert st.count == 9
    im, lab, idx, sizes = collect(st)
    assert sizes == [4, 4, 1]
    short = psfsim.Stream(cfg, 4, epoch=2)  # the same draws: a draw's value is the count's too
    im5, lab5, _, _ = collect(short)
    assert im5.tobytes() == im[:5].tobytes() and lab5.tobytes() == lab[:5].tobytes()


# -- shards --

@pytest.mark.parametrize("count", [11, 3])
def test_shards_disjoint_union_is_the_epoch(count):
    whole_im, whole_lab, _, _ = collect(psfsim.Stream(config(count), 4, epoch=1))
    for num in range(1, 5):
        seen = []
        for shard in range(num):
            st = psfsim.Stream(config(count), 2, epoch=1, shard=shard, num_shards=num)
            im, lab, idx, sizes = collect(st)
            lo, hi = shard * count // num, (shard + 1) * count // num
            assert list(idx) == list(range(lo, hi))
            assert len(st) == len(sizes) == (hi - lo + 1) // 2
            if len(idx):
                assert im.tobytes() == whole_im[idx].tobytes()
                assert lab.tobytes() == whole_lab[idx].tobytes()
            seen += list(idx)
        assert sorted(seen) == list(range(count)) and len(set(seen)) == count


def test_shard_range():
    assert [psfsim.shard_range(10, s, 4) for s in range(4)] == [(0, 2), (2, 5), (5, 7), (7, 10)]
    with pytest.raises(psfsim.ArgumentError):
        psfsim.shard_range(10, 4, 4)


def test_drop_last():
    st = psfsim.Stream(config(11), 4, drop_last=True)
    _, _, idx, sizes = collect(st)
    assert sizes == [4, 4] and list(idx) == list(range(8))


def fake_torch(monkeypatch, worker=None, rank=None):
    """torch.utils.data (get_worker_info) and torch.distributed as a
    DataLoader worker and a distributed rank see them, without torch."""
    data = types.ModuleType("torch.utils.data")
    data.get_worker_info = lambda: None if worker is None else types.SimpleNamespace(
        id=worker[0], num_workers=worker[1])
    dist = types.ModuleType("torch.distributed")
    dist.is_available = lambda: True
    dist.is_initialized = lambda: rank is not None
    dist.get_rank = lambda: rank[0]
    dist.get_world_size = lambda: rank[1]
    monkeypatch.setitem(sys.modules, "torch.utils.data", data)
    monkeypatch.setitem(sys.modules, "torch.distributed", dist)


def test_shards_from_torch_worker_and_rank(monkeypatch):
    count = 23
    st = psfsim.Stream(config(count), 2)
    seen = []
    for rank in range(2):
        for worker in range(3):
            fake_torch(monkeypatch, (worker, 3), (rank, 2))
            assert st.shard_info() == (rank * 3 + worker, 6)
            _, _, idx, _ = collect(st)
            s = rank * 3 + worker
            assert list(idx) == list(range(s * count // 6, (s + 1) * count // 6))
            seen += list(idx)
    assert sorted(seen) == list(range(count))
    # explicit rank and world size with DataLoader's workers
    fake_torch(monkeypatch, (1, 2), None)
    assert psfsim.Stream(config(count), 2, rank=2, world_size=3).shard_info() == (5, 6)
    assert psfsim.Stream(config(count), 2).shard_info() == (1, 2)
    # explicit shards win
    assert psfsim.Stream(config(count), 2, shard=0, num_shards=1).shard_info() == (0, 1)
    fake_torch(monkeypatch, None, None)
    assert st.shard_info() == (0, 1)


def test_no_torch_import():
    """psfsim and a stream's iteration leave torch unimported."""
    code = ("import sys, psfsim\n"
            "from test_stream import config\n"
            "st = psfsim.Stream(config(), 4)\n"
            "n = sum(len(b[2]) for b in st)\n"
            "assert n == 11, n\n"
            "assert not [m for m in sys.modules if m == 'torch' or m.startswith('torch.')]\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.abspath(__file__)),
                                         os.path.dirname(psfsim.__path__[0]),
                                         env.get("PYTHONPATH", "")])
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


# -- labels --

def test_labels_are_params_values():
    cfg = config(wavelengths=True)
    st = psfsim.Stream(cfg, 5, epoch=4)
    assert st.label_names == ["z4", "z7", "z11"]
    _, lab, idx, _ = collect(st)
    with st.epoch_set(4) as s:
        p = s.params(frame=False)
        z = s.zernike()
        assert s.label_j == [4, 7, 11]
        assert np.array_equal(lab, z[:, [s.term_j.index(j) for j in (4, 7, 11)]]
                              .astype(np.float32))
    for i, name in enumerate(st.label_names):
        assert np.array_equal(lab[:, i], p[name].astype(np.float32))
    cols = psfsim.Stream(cfg, 5, epoch=4, labels=["wavelength_nm", "z7", "draw"])
    assert cols.label_names == ["wavelength_nm", "z7", "draw"]
    _, lab2, _, _ = collect(cols)
    assert lab2.dtype == np.float32 and lab2.shape == (11, 3)
    assert set(lab2[:, 0]) <= {500.0, 600.0, 700.0} and len(set(lab2[:, 0])) > 1
    assert np.array_equal(lab2[:, 0], p["wavelength_nm"].astype(np.float32))
    assert np.array_equal(lab2[:, 1], lab[:, 1])
    assert np.array_equal(lab2[:, 2], np.arange(11, dtype=np.float32))
    none = psfsim.Stream(cfg, 5, labels=None)
    assert [b.labels for b in none] == [None, None, None]
    for bad in ["zern", ["backend"], ["nope"], []]:
        with pytest.raises(psfsim.ArgumentError, match="labels"):
            psfsim.Stream(cfg, 5, labels=bad)


def test_uint16_images():
    cfg = config()
    im, _, _, _ = collect(psfsim.Stream(cfg, 4, dtype=np.uint16, epoch=1))
    other = config()
    other["sweep"]["random"]["seed"] = psfsim.epoch_seed(7, 1)
    with psfsim.Set(other, backend="cpu") as s:
        assert im.dtype == np.uint16 and im.tobytes() == s.compute(dtype=np.uint16)[0].tobytes()


# -- the thread --

@pytest.mark.parametrize("prefetch", [1, 3])
def test_prefetch_gives_what_no_prefetch_gives(prefetch):
    base = collect(psfsim.Stream(config(), 3, epoch=2, prefetch=0))
    got = collect(psfsim.Stream(config(), 3, epoch=2, prefetch=prefetch))
    assert got[0].tobytes() == base[0].tobytes() and got[1].tobytes() == base[1].tobytes()
    assert list(got[2]) == list(base[2]) and got[3] == base[3] == [3, 3, 3, 2]


def test_new_arrays_per_batch():
    kept = list(psfsim.Stream(config(), 2, prefetch=2))
    ptrs = {b.images.ctypes.data for b in kept} | {b.labels.ctypes.data for b in kept}
    assert len(ptrs) == 2 * len(kept)
    whole, _, _, _ = collect(psfsim.Stream(config(), 11))
    assert np.concatenate([b.images for b in kept]).tobytes() == whole.tobytes()


def counting():
    """(Counting, calls, settle): a Stream whose calls append (the Set's
    seed, first image) to calls; settle(n) waits for n calls, then long
    enough for one more to start, were it allowed."""
    calls = []

    class Counting(psfsim.Stream):
        def _compute(self, s, first, count, device):
            calls.append((s.info["seed"], first))
            return psfsim.Stream._compute(self, s, first, count, device)

    def settle(n):
        end = time.monotonic() + 10
        while len(calls) < n and time.monotonic() < end:
            time.sleep(0.01)
        time.sleep(0.2)

    return Counting, calls, settle


def test_prefetch_bound():
    """At most prefetch batches computed ahead of the consumer."""
    Counting, calls, settle = counting()

    def firsts():
        return [f for _, f in calls]

    st = Counting(config(count=20), 2, prefetch=2, batches_per_call=1)
    it = iter(st)
    next(it)
    settle(3)
    assert firsts() == [0, 2, 4]  # the batch taken and two ahead
    next(it)
    settle(4)
    assert firsts() == [0, 2, 4, 6]
    it.close()
    # Two batches a call: the call being taken and prefetch calls ahead.
    calls.clear()
    st = Counting(config(count=20), 2, prefetch=1, batches_per_call=2)
    it = iter(st)
    next(it)  # the first call's first batch: one more call may start
    settle(2)
    assert firsts() == [0, 4]
    next(it)  # its last batch
    settle(2)
    assert firsts() == [0, 4]
    next(it)  # the second call's first: a third may start
    settle(3)
    assert firsts() == [0, 4, 8]
    it.close()


def stream_threads():
    return [t for t in threading.enumerate() if t.name == "psfsim.Stream"]


def no_stream_threads(timeout=10.0):
    """Wait for the streams' threads (an earlier test's next-epoch work,
    which ends by itself) to end; True when none is left."""
    end = time.monotonic() + timeout
    while stream_threads() and time.monotonic() < end:
        time.sleep(0.01)
    return not stream_threads()


def ahead_of(st):
    """The next epoch's calls the stream holds, its thread's work done."""
    ahead = st._ahead
    assert ahead is not None
    ahead.thread.join(10)
    assert not ahead.thread.is_alive()
    return ahead


def images_of(st, epoch, indices):
    """Stream.image's bits of each index of epoch, stacked."""
    return np.stack([st.image(epoch, int(i))[0] for i in indices])


def test_next_epoch_computed_ahead():
    """After an epoch's last call the thread opens epoch + 1's Set and
    computes its first calls (prefetch of them), which the iteration of
    epoch + 1 takes: its batches are Stream.image's bits, epoch after
    epoch (an iteration that took the work hands on the next)."""
    st = psfsim.Stream(config(), 2, batches_per_call=2, prefetch=2)
    first = collect(st)
    assert st.stats["ahead_calls"] == 0
    for epoch in (1, 2):
        ahead = ahead_of(st)
        assert ahead.epoch == epoch and ahead.done == 2  # prefetch calls, no more
        assert [c[0] for c in ahead.calls] == [0, 4]
        st.set_epoch(epoch)
        assert st._ahead is ahead  # set_epoch to its epoch keeps it
        it = iter(st)
        assert it._set is ahead.set and st._ahead is None
        got = collect(it)
        assert st.stats["ahead_calls"] == 2 and st.stats["batches"] == 6
        assert list(got[2]) == list(range(11)) and got[3] == [2, 2, 2, 2, 2, 1]
        assert got[0].tobytes() == images_of(st, epoch, range(11)).tobytes()
        want = collect(psfsim.Stream(config(), 2, epoch=epoch, prefetch=0))
        assert got[0].tobytes() == want[0].tobytes() and got[1].tobytes() == want[1].tobytes()
        assert got[0].tobytes() != first[0].tobytes()
    st.close()
    assert st._ahead is None and no_stream_threads()


def test_ahead_work_discarded_for_another_epoch():
    """The next epoch's work, when another epoch is iterated, is discarded
    (its Set closed) and none of its batches is given; image(), images()
    and epoch_set() leave it alone."""
    st = psfsim.Stream(config(), 3, batches_per_call=1, prefetch=2)
    collect(st)
    ahead = ahead_of(st)
    one, _ = st.image(1, 4)
    with st.epoch_set(1) as s:
        assert s.compute(4, 1)[0].tobytes() == one.tobytes()
    assert st._ahead is ahead
    st.set_epoch(3)  # another epoch: discarded now
    assert st._ahead is None and ahead.set._h is None and ahead.queue.empty()
    got = collect(st)
    assert st.stats["ahead_calls"] == 0
    assert got[0].tobytes() == images_of(st, 3, range(11)).tobytes()
    # no set_epoch: the same epoch again, the work on epoch 4 discarded
    ahead = ahead_of(st)
    assert ahead.epoch == 4
    again = collect(st)
    assert st.stats["ahead_calls"] == 0 and again[0].tobytes() == got[0].tobytes()
    assert ahead.set._h is None
    # another batching of the same epoch
    ahead = ahead_of(st)
    st.set_epoch(4)
    st.batch_size = 4
    got = collect(st)
    assert st.stats["ahead_calls"] == 0 and got[3] == [4, 4, 3]
    assert got[0].tobytes() == images_of(st, 4, range(11)).tobytes()
    st.close()


def test_ahead_work_is_the_shards():
    """A shard's next-epoch work is that shard's calls; another shard's
    iteration of that epoch discards it."""
    st = psfsim.Stream(config(), 2, shard=1, num_shards=2, batches_per_call=1, prefetch=2)
    collect(st)
    ahead = ahead_of(st)
    assert [c[0] for c in ahead.calls] == [5, 7] and ahead.done == 2
    st.set_epoch(1)
    got = collect(st)
    assert st.stats["ahead_calls"] == 2 and list(got[2]) == list(range(5, 11))
    assert got[0].tobytes() == images_of(st, 1, range(5, 11)).tobytes()
    ahead = ahead_of(st)
    assert ahead.epoch == 2
    st.set_epoch(2)
    st.shard = 0
    got = collect(st)
    assert st.stats["ahead_calls"] == 0 and list(got[2]) == list(range(5))
    assert got[0].tobytes() == images_of(st, 2, range(5)).tobytes()
    assert ahead.set._h is None
    st.close()


def test_ahead_within_the_prefetch_bound():
    """Across an epoch's end too, at most prefetch calls are computed or
    waiting beyond the one the consumer takes."""
    Counting, calls, settle = counting()
    st = Counting(config(count=8), 2, prefetch=1, batches_per_call=1)
    s0, s1 = psfsim.epoch_seed(7, 0), psfsim.epoch_seed(7, 1)
    it = iter(st)
    for k in range(3):
        next(it)
    settle(4)
    assert calls == [(s0, 0), (s0, 2), (s0, 4), (s0, 6)]  # the epoch's last, none beyond
    next(it)  # the last call taken: epoch 1's first may start
    settle(5)
    assert calls[4:] == [(s1, 0)]
    with pytest.raises(StopIteration):
        next(it)
    settle(5)
    assert len(calls) == 5
    st.set_epoch(1)
    it = iter(st)
    settle(5)
    assert len(calls) == 5  # the work taken holds the one slot
    b = next(it)
    assert list(b.indices) == [0, 1]
    settle(6)
    assert calls[5:] == [(s1, 2)]
    it.close()
    st.close()


def test_close_stops_the_next_epochs_work():
    """The thread working on the next epoch stops at the stream's close(),
    at the iterator's close() or a break before the epoch's end, and at
    the stream's garbage collection; no thread is left."""
    assert no_stream_threads()
    orig = psfsim.Stream._compute
    started = threading.Event()

    class Slow(psfsim.Stream):
        def _compute(self, s, first, count, device):
            if s.info["seed"] != 7:  # the next epoch's calls
                started.set()
                time.sleep(0.3)
            return orig(self, s, first, count, device)

    # the stream's close() while the thread computes epoch 1's first call
    st = Slow(config(), 3, batches_per_call=1, prefetch=2)
    collect(st)
    assert started.wait(10) and st._ahead is not None
    assert len(stream_threads()) == 1
    st.close()
    assert stream_threads() == [] and st._ahead is None
    # the iterator's close() after the epoch's last call, before its end
    # (four calls, two ahead: the third taken frees a slot for epoch 1's first)
    started.clear()
    it = iter(st)
    for _ in range(3):
        next(it)
    assert started.wait(10)  # the last call computed, the next epoch's begun
    it.close()
    assert stream_threads() == [] and st._ahead is None
    # a break there
    started.clear()
    for i, b in enumerate(st):
        if i == 2:
            assert started.wait(10)
            break
    assert no_stream_threads(5) and st._ahead is None
    # the stream dropped after its epoch: the thread ends after its call
    started.clear()
    collect(st)
    assert started.wait(10)
    del st, it, b
    gc.collect()
    assert no_stream_threads(5)


def test_next_epoch_error_raised_by_its_iteration(monkeypatch):
    """A failure of the next epoch's work is the failure of that epoch's
    iteration: its call computed again there, the error raised by next()."""
    orig = psfsim.Stream._compute

    def failing(self, s, first, count, device):
        if s.info["seed"] != 7 and first >= 3:
            raise psfsim.ComputeError("compute", "boom at %d" % first)
        return orig(self, s, first, count, device)

    monkeypatch.setattr(psfsim.Stream, "_compute", failing)
    st = psfsim.Stream(config(), 3, batches_per_call=1, prefetch=2)
    collect(st)
    assert ahead_of(st).done == 1  # the second call failed
    st.set_epoch(1)
    got = []
    with pytest.raises(psfsim.ComputeError, match="boom at 3"):
        for b in st:
            got.append(list(b.indices))
    assert got == [[0, 1, 2]] and st.stats["ahead_calls"] == 1
    assert no_stream_threads()


@pytest.mark.parametrize("per_call", [1, 2, 3, 5])
@pytest.mark.parametrize("prefetch", [0, 1])
def test_batches_per_call_gives_the_same_batches(per_call, prefetch):
    """Batches cut from one call's arrays are the batches computed alone."""
    base = collect(psfsim.Stream(config(), 3, epoch=2, prefetch=0, batches_per_call=1))
    st = psfsim.Stream(config(), 3, epoch=2, prefetch=prefetch, batches_per_call=per_call)
    assert st.batches_per_call == per_call
    got = collect(st)
    assert got[0].tobytes() == base[0].tobytes() and got[1].tobytes() == base[1].tobytes()
    assert list(got[2]) == list(base[2]) and got[3] == base[3] == [3, 3, 3, 2]


def test_batches_per_call_default_and_bad():
    # 48 x 48 float32 images, 3 a batch: 256 MiB holds far more than 32 batches.
    assert psfsim.Stream(config(), 3).batches_per_call == 32
    with pytest.raises(ValueError, match="batches_per_call"):
        psfsim.Stream(config(), 3, batches_per_call=0)


def test_bad_config_raises():
    with pytest.raises(psfsim.ConfigError, match="sweep.random.count"):
        psfsim.Stream(config(), 4, epoch_size=0)
    with pytest.raises(psfsim.ArgumentError, match="sweep.random"):
        psfsim.Stream({"name": "x", "optics": {"wavelength_nm": 500.0}}, 4)
    with pytest.raises(TypeError, match="dict"):
        psfsim.Stream("configs/defocus.cfg", 4)
    with pytest.raises(ValueError, match="batch_size"):
        psfsim.Stream(config(), 0)
    with pytest.raises(psfsim.ArgumentError, match="shard"):
        psfsim.Stream(config(), 4, shard=1)


def test_error_in_thread_raised_in_consumer(monkeypatch):
    assert no_stream_threads()
    before = threading.active_count()
    orig = psfsim.Stream._compute

    def failing(self, s, first, count, device):
        if first >= 4:
            raise psfsim.ComputeError("compute", "boom at %d" % first)
        return orig(self, s, first, count, device)

    monkeypatch.setattr(psfsim.Stream, "_compute", failing)
    st = psfsim.Stream(config(), 4, batches_per_call=1)
    got = []
    with pytest.raises(psfsim.ComputeError, match="boom at 4"):
        for b in st:
            got.append(list(b.indices))
    assert got == [[0, 1, 2, 3]]
    gc.collect()
    assert threading.active_count() == before


def producers():
    """The streams' producing threads (not the next epoch's opener,
    psfsim.Stream.open, which ends by itself once the Set is open)."""
    return sum(t.name == "psfsim.Stream" for t in threading.enumerate())


def wait_threads(n, timeout=5.0):
    end = time.monotonic() + timeout
    while threading.active_count() != n and time.monotonic() < end:
        time.sleep(0.01)
    return threading.active_count()


def test_which_stream_a_call_waits_for():
    """A Stream's calls wait for the stream= given; without one, host
    arrays wait for none (None) and device arrays for the producing
    thread's own per-thread default stream (CUDA's handle 2, where nothing
    is queued), not the consumer's legacy default stream."""
    st = psfsim.Stream(config(count=8), 4)
    assert st._wait_stream(None) is None
    assert st._wait_stream(0) == 2 and st._wait_stream(1) == 2
    st.cuda_stream = 12345
    assert st._wait_stream(0) == 12345 and st._wait_stream(None) == 12345


def test_break_stops_the_thread():
    assert no_stream_threads()
    before = threading.active_count()
    st = psfsim.Stream(config(count=200), 4, prefetch=2)
    for i, b in enumerate(st):
        assert producers() == 1 and threading.active_count() <= before + 2
        if i == 2:
            break
    assert threading.active_count() == before  # joined when the loop let go
    assert st.stats["batches"] == 3 and st.stats["images"] == 12
    # an iterator kept: close(), or the stream's close()
    it = iter(st)
    next(it)
    assert producers() == 1
    it.close()
    assert threading.active_count() == before
    with pytest.raises(StopIteration):
        next(it)
    with st:
        it = iter(st)
        next(it)
        assert producers() == 1
    assert threading.active_count() == before
    # a consumer's exception in the loop
    with pytest.raises(KeyError):
        for b in st:
            raise KeyError("consumer")
    assert wait_threads(before) == before
    # many iterations, none left behind
    for _ in range(20):
        for b in st:
            break
    assert threading.active_count() == before


def test_stats():
    st = psfsim.Stream(config(count=8), 2, prefetch=0)
    collect(st)
    s = st.stats
    assert s["batches"] == 4 and s["images"] == 8
    assert 0 < s["produce_s"] <= s["wait_s"] <= s["total_s"]  # no thread: next() computes
    # a consumer slower than the stream waits for nothing but the first batch
    st = psfsim.Stream(config(count=12), 2, prefetch=1)
    for b in st:
        time.sleep(0.1)
    s = st.stats
    assert s["batches"] == 6 and s["total_s"] >= 0.6
    assert s["steady_wait_fraction"] < 0.1, s
    assert s["wait_s"] >= s["first_wait_s"] > 0


def test_pickles():
    st = psfsim.Stream(config(), 4, epoch=2)
    it = iter(st)
    next(it)
    copy = pickle.loads(pickle.dumps(st))
    it.close()
    a, b = collect(st), collect(copy)
    assert a[0].tobytes() == b[0].tobytes() and copy.epoch == 2


def test_torch_dataset_needs_torch():
    try:
        importlib.import_module("torch")
        pytest.skip("torch is installed")
    except ImportError:
        pass
    with pytest.raises(ImportError):
        psfsim.Stream(config(), 4).as_torch_dataset()


def need_torch():
    try:
        return importlib.import_module("torch")
    except ImportError:
        pytest.skip("torch is not installed")


def test_torch_dataloader_workers():
    torch = need_torch()
    st = psfsim.Stream(config(count=23), 3, epoch=1, backend="cpu", threads=1)
    whole, lab, _, _ = collect(st)
    ds = st.as_torch_dataset()
    assert isinstance(ds, torch.utils.data.IterableDataset)
    # spawn: the workers unpickle the stream (no CUDA state forked from this process)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=3,
                                         multiprocessing_context="spawn")
    seen = []
    for images, labels, indices in loader:
        assert images.dtype == torch.float32 and labels.shape == (len(indices), 3)
        assert images.numpy().tobytes() == whole[indices.numpy()].tobytes()
        assert labels.numpy().tobytes() == lab[indices.numpy()].tobytes()
        seen += indices.tolist()
    assert sorted(seen) == list(range(23))
    ds.set_epoch(2)
    seen2 = [i for _, _, idx in loader for i in idx.tolist()]
    assert sorted(seen2) == list(range(23)) and st.epoch == 2


# -- the device (skipped without a GPU) --

def need_gpu():
    why = gpu_probe.gpu_missing(config(1))
    if why:
        pytest.skip("no GPU here: %s" % why)


def test_device_stream_equals_the_host():
    need_gpu()
    st = psfsim.Stream(config(), 4, epoch=3, device="cuda", backend="gpu")
    host = psfsim.Stream(config(), 4, epoch=3, backend="gpu")
    got = list(st)
    want = collect(host)
    assert all(isinstance(b.images, psfsim.DeviceArray) and
               isinstance(b.labels, psfsim.DeviceArray) for b in got)
    assert got[0].labels.shape == (4, 3) and got[0].labels.dtype == np.float32
    assert np.concatenate([b.images.numpy() for b in got]).tobytes() == want[0].tobytes()
    assert np.concatenate([b.labels.numpy() for b in got]).tobytes() == want[1].tobytes()
    with host.epoch_set(3) as s:
        assert s.compute(5, 1)[0].tobytes() == want[0][5:6].tobytes()
    im, lab = st.images(3, 2, 3, device="cuda")
    assert im.numpy().tobytes() == want[0][2:5].tobytes()
    assert lab.numpy().tobytes() == want[1][2:5].tobytes()


@pytest.mark.parametrize("per_call", [1, 3])
def test_device_batches_per_call(per_call):
    """Device batches cut from one call's DeviceArray (views) are the host's."""
    need_gpu()
    want = collect(psfsim.Stream(config(), 3, epoch=1, backend="gpu", batches_per_call=1))
    st = psfsim.Stream(config(), 3, epoch=1, device="cuda", backend="gpu",
                       batches_per_call=per_call)
    kept = list(st)
    assert all(isinstance(b.images, psfsim.DeviceArray) for b in kept)
    assert [len(b.indices) for b in kept] == [3, 3, 3, 2]
    got = np.concatenate([b.images.numpy() for b in kept])
    labs = np.concatenate([b.labels.numpy() for b in kept])
    assert got.tobytes() == want[0].tobytes() and labs.tobytes() == want[1].tobytes()
    # a view outlives the call's array it was cut from
    last = kept[-1].images
    del kept
    gc.collect()
    assert last.numpy().tobytes() == want[0][9:].tobytes()


def test_device_break_stops_the_thread():
    need_gpu()
    assert no_stream_threads()
    before = threading.active_count()
    st = psfsim.Stream(config(count=400), 8, device="cuda", backend="gpu", prefetch=2)
    for i, b in enumerate(st):
        if i == 3:
            break
    assert threading.active_count() == before


def test_device_torch_dataset():
    need_gpu()
    torch = need_torch()
    st = psfsim.Stream(config(), 4, epoch=1, device="cuda", backend="gpu")
    want = collect(psfsim.Stream(config(), 4, epoch=1, backend="gpu"))
    got = list(torch.utils.data.DataLoader(st.as_torch_dataset(), batch_size=None))
    assert all(i.is_cuda and lab.is_cuda and not idx.is_cuda for i, lab, idx in got)
    assert torch.cat([i for i, _, _ in got]).cpu().numpy().tobytes() == want[0].tobytes()
    assert torch.cat([lab for _, lab, _ in got]).cpu().numpy().tobytes() == want[1].tobytes()
