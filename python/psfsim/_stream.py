# SPDX-License-Identifier: BSD-3-Clause
"""Streams for training loops (issue 27): batches of seeded random PSFs and
their labels, epoch after epoch, the next batch computed on a background
thread while the consumer uses this one, sharded over DataLoader workers
and distributed ranks so that no two shards repeat a draw.

The key. A stream's images are those of a random set (a config dict with
sweep.random): epoch e is the set whose sweep.random.seed is
epoch_seed(seed, e) (below) and whose sweep.random.count is epoch_size
(default: the config's count); image i of epoch e is image i of that set.
So (seed, epoch, index) names one image, and Stream.image(epoch, index),
Stream.epoch_set(epoch) or a psfsim.Set of Stream.epoch_config(epoch)
regenerate it: the same bits on one machine and build (README,
"Reproducibility": an image's bits are its own whatever the batch).

Shards. Epoch e's K images are split into num_shards contiguous blocks:
shard s takes images [s K // S, (s + 1) K // S) (S = num_shards; the
blocks' sizes differ by at most one; a shard may be empty when K < S), in
batches of batch_size from the block's first image (the last batch may be
short; drop_last=True leaves it out). The blocks are disjoint and their
union is the epoch. Each draw is already an independent random sample, so
the order needs no shuffling; a new epoch is new draws.

None of torch is imported here: shard and num_shards default, when the
iteration starts, from torch.utils.data.get_worker_info() and an
initialised torch.distributed, read only when the user's program has
imported torch already (sys.modules).
"""
import copy
import queue
import sys
import threading
import time
import weakref

import numpy as np

from . import _device
from ._errors import ArgumentError

_MASK64 = (1 << 64) - 1
_CALL_BYTES = 256 << 20  # images one call computes by default (batches_per_call)
_OWN_STREAM = 2  # cudaStreamPerThread: the calling thread's own default stream


def _splitmix64(x):
    """SplitMix64's output function of state x (Steele, Lea and Flood 2014,
    "Fast splittable pseudorandom number generators"; Vigna's splitmix64.c):
    z = x + 0x9E3779B97F4A7C15, then the two xor-shift-multiplies and the
    final xor-shift, all mod 2^64. A bijection of 64-bit integers."""
    z = (x + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def epoch_seed(seed, epoch):
    """The sweep.random.seed of a stream's epoch: seed itself for epoch 0
    (the stream's first epoch is the config's own set, the one the psfsim
    command writes), else splitmix64(splitmix64(seed) XOR epoch) >> 1 (a
    63-bit seed, in the config's range 0 .. 2^63 - 1; _splitmix64). seed
    and epoch: integers in 0 .. 2^63 - 1 (ValueError otherwise). A pure
    function of (seed, epoch), stable across versions: distinct epochs of
    one seed get distinct seeds (splitmix64 is a bijection) but for the
    dropped bit (a chance of 2^-63 per pair)."""
    for name, v in (("seed", seed), ("epoch", epoch)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v < 1 << 63:
            raise ValueError("%s: an integer in 0 .. 2^63 - 1, not %r" % (name, v))
    seed, epoch = int(seed), int(epoch)
    if epoch == 0:
        return seed
    return _splitmix64(_splitmix64(seed) ^ epoch) >> 1


def shard_range(count, shard, num_shards):
    """Shard shard's images of an epoch of count images: (first, end), the
    contiguous block [shard count // num_shards, (shard + 1) count //
    num_shards)."""
    if not 1 <= num_shards or not 0 <= shard < num_shards:
        raise ArgumentError("argument", "shard: %r is not a shard of %r (0 .. num_shards - 1)"
                            % (shard, num_shards))
    return shard * count // num_shards, (shard + 1) * count // num_shards


def _torch_shard(rank, world_size):
    """(shard, num_shards) from DataLoader's worker and the distributed
    rank, reading torch only when it is imported already."""
    worker, workers = 0, 1
    data = sys.modules.get("torch.utils.data")
    if data is not None and hasattr(data, "get_worker_info"):
        info = data.get_worker_info()
        if info is not None:
            worker, workers = int(info.id), int(info.num_workers)
    if rank is None or world_size is None:
        dist = sys.modules.get("torch.distributed")
        r, w = 0, 1
        if dist is not None and dist.is_available() and dist.is_initialized():
            r, w = int(dist.get_rank()), int(dist.get_world_size())
        rank = r if rank is None else rank
        world_size = w if world_size is None else world_size
    if not 0 <= rank < world_size:
        raise ArgumentError("argument", "rank: %r is not a rank of world_size %r" % (rank,
                                                                                  world_size))
    return rank * workers + worker, world_size * workers


class StreamBatch(tuple):
    """One batch of a Stream: (images, labels, indices).
    images: [n, M, M] (float32 or uint16; a psfsim.DeviceArray with device=,
    else NumPy); labels: [n, L] float32 (Stream.label_names; a DeviceArray
    on the same device with device=, else NumPy; None with labels=None);
    indices: [n] int64 NumPy, the images' indices in the epoch. epoch and
    seed (epoch_seed's, the epoch set's sweep.random.seed) as attributes:
    image indices[i] of epoch is Stream.image(epoch, indices[i])."""

    def __new__(cls, images, labels, indices, epoch, seed):
        self = tuple.__new__(cls, (images, labels, indices))
        self.epoch, self.seed = epoch, seed
        return self

    images = property(lambda self: self[0])
    labels = property(lambda self: self[1])
    indices = property(lambda self: self[2])


class _Stats:
    """One iteration's times (time.perf_counter seconds)."""

    def __init__(self):
        self.batches = self.images = self.ahead_calls = 0
        self.wait_s = self.first_wait_s = self.produce_s = 0.0
        self.start = self.end = None

    def as_dict(self):
        now = self.end if self.end is not None else time.perf_counter()
        total = now - self.start if self.start is not None else 0.0
        steady = total - self.first_wait_s
        return {"batches": self.batches, "images": self.images, "wait_s": self.wait_s,
                "first_wait_s": self.first_wait_s, "total_s": total,
                "produce_s": self.produce_s,
                "wait_fraction": self.wait_s / total if total > 0 else 0.0,
                "steady_wait_fraction": (self.wait_s - self.first_wait_s) / steady
                if steady > 0 else 0.0,
                "images_per_s": self.images / total if total > 0 else 0.0,
                "ahead_calls": self.ahead_calls}


class Stream:
    """Stream(config, batch_size, epoch_size=None, seed=None, epoch=0,
    shard=None, num_shards=None, rank=None, world_size=None, device=None,
    dtype=numpy.float32, labels="zernike", backend=None, gpus=None,
    threads=0, prefetch=1, drop_last=False, stream=None, base_dir=None,
    batches_per_call=None)

    An iterable over batches of a random set's images and labels, one
    epoch per iteration: `for images, labels, indices in stream` (a
    StreamBatch each; the module's docstring gives the key and the shards).

    config: a dict with sweep.random (psfsim.Set's dict; its seed is
    replaced by each epoch's, epoch_seed()). batch_size: images per batch
    (>= 1). epoch_size: the draws of an epoch (sweep.random.count; default
    the config's); the epoch is the set's count images (epoch_size times
    the other sweep axes' images, if any). seed: the stream's seed
    (default the config's sweep.random.seed), 0 .. 2^63 - 1. epoch: the
    epoch iterated (set_epoch changes it, as for PyTorch's
    DistributedSampler).
    shard, num_shards: this stream's part of each epoch (both or neither);
    default at each iteration: shard = rank * workers + worker_id,
    num_shards = world_size * workers, from torch.utils.data's
    get_worker_info() inside a DataLoader worker (else one worker), and
    rank, world_size: given, else those of an initialised
    torch.distributed, else 0 and 1.
    device: None (NumPy arrays) or "cuda", "cuda:N", N: images and labels
    as psfsim.DeviceArray on that GPU (DLPack: torch.from_dlpack). dtype:
    images float32 or uint16 (the PNG levels). labels: "zernike" (the
    manifest's z<j> of every label term, Set.label_j: each term's total),
    a list of numeric Set.params columns ("z4", "wavelength_nm", ...), or
    None. backend, gpus, threads, base_dir: psfsim.Set's. stream: the CUDA
    stream each batch's compute first waits for (Set.compute's); None:
    no stream of the consumer's (each call writes new arrays of its own,
    so it does not wait for the consumer's kernels in flight).
    batches_per_call: consecutive batches of the shard computed by one
    call (Set.compute) into one array, each batch a view of it: one call
    of many images keeps the GPU's lanes busy and allocates once, where a
    call per batch leaves the GPU idle between calls (bench/stream_bench.py).
    Default (None): as many as hold 256 MiB of images, 1 to 32.
    prefetch: calls computed ahead on a background thread (0: computed in
    __next__, no thread); at most prefetch calls (prefetch x
    batches_per_call batches) are computed or waiting beyond the one whose
    batches the consumer is taking, across an epoch's end too. Across it:
    after an epoch's first call a second, short-lived thread opens epoch +
    1's Set and computes one image of it (two Sets are then open: their
    plans and buffers, not images), and after its
    last call computes epoch + 1's first calls (at most prefetch, each as
    the consumer frees a slot), which an iteration of epoch + 1 (set_epoch(epoch + 1), as a
    training loop calls it) of the same shard and batches takes: its first
    batch waits for neither the Set's start nor its first call. After the
    epoch's end the stream holds them (its thread, its Set, at most
    prefetch calls' arrays) until that iteration takes them, or discards
    them, never giving their batches: set_epoch to another epoch, an
    iteration of another epoch, shard or batching, a break before the
    epoch's end, close(). Their images are
    the bits of Stream.image(epoch + 1, i), as any batch's; image(),
    images() and epoch_set() open Sets of their own and leave them alone.
    Each batch is a new array or a view of a call's (the consumer may keep
    it: the call's array lives while a view of it does). drop_last: leave
    out a shard's short last batch.

    Errors: a bad config raises psfsim.ConfigError here; an error while
    computing (in the thread) is raised by the consumer's next(). Breaking
    out of the loop, close() on the iterator or on the stream, or the
    iterator's garbage collection stop the thread (its compute in flight
    cancelled) and free its batches; after an epoch's end, close() on the
    stream, set_epoch to another epoch or the stream's garbage collection
    stop its work on the next epoch. stats: the current (or last)
    iteration's times: wait_s (the consumer blocked in next()),
    first_wait_s (the first batch's, iter()'s opening of the Set
    included), total_s (from iter() to the end or now), wait_fraction = wait_s / total_s,
    steady_wait_fraction (the first batch's wait left out of both),
    produce_s (the thread computing the epoch's calls, those computed
    before the iteration began included), batches, images, images_per_s,
    ahead_calls (the calls computed before the iteration began, in the
    previous epoch's iteration).
    A Stream pickles (for DataLoader workers) without its iteration."""

    def __init__(self, config, batch_size, epoch_size=None, seed=None, epoch=0, shard=None,
                 num_shards=None, rank=None, world_size=None, device=None, dtype=np.float32,
                 labels="zernike", backend=None, gpus=None, threads=0, prefetch=1,
                 drop_last=False, stream=None, base_dir=None, batches_per_call=None):
        from . import Set, _int  # noqa: circular at import time
        if not isinstance(config, dict):
            raise TypeError("psfsim.Stream: config: a dict with sweep.random (each epoch's seed "
                            "is written into sweep.random.seed), not %s" % type(config).__name__)
        rnd = config.get("sweep", {}).get("random") if isinstance(config.get("sweep"), dict) \
            else None
        if not isinstance(rnd, dict):
            raise ArgumentError("argument", "psfsim.Stream: config: no sweep.random group (a "
                                "stream draws a random set's images)")
        self.batch_size = _int(batch_size, "batch_size")
        if self.batch_size < 1:
            raise ValueError("batch_size: images per batch must be 1 or more (got %d)"
                             % self.batch_size)
        self.prefetch = _int(prefetch, "prefetch")
        if self.prefetch < 0:
            raise ValueError("prefetch: batches computed ahead, 0 or more (got %d)"
                             % self.prefetch)
        if seed is None:
            seed = rnd.get("seed")
        if seed is None:
            raise ArgumentError("argument", "psfsim.Stream: no seed: give seed= or "
                                "sweep.random.seed")
        epoch_seed(seed, 0)  # checks seed
        self.seed = int(seed)
        self.epoch_size = None if epoch_size is None else _int(epoch_size, "epoch_size")
        self.epoch = 0
        self.set_epoch(epoch)
        if (shard is None) != (num_shards is None):
            raise ArgumentError("argument", "shard, num_shards: give both or neither")
        if shard is not None:
            shard_range(0, _int(shard, "shard"), _int(num_shards, "num_shards"))
        self.shard, self.num_shards = shard, num_shards
        if (rank is None) != (world_size is None):
            raise ArgumentError("argument", "rank, world_size: give both or neither")
        if rank is not None and not 0 <= _int(rank, "rank") < _int(world_size, "world_size"):
            raise ArgumentError("argument", "rank: %r is not a rank of world_size %r"
                                % (rank, world_size))
        self.rank, self.world_size = rank, world_size
        self.device = None if device is None else _device.device_index(device)
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.dtype(np.float32), np.dtype(np.uint16)):
            raise TypeError("dtype: float32 or uint16, not %s" % self.dtype)
        self.drop_last = bool(drop_last)
        if batches_per_call is not None:
            batches_per_call = _int(batches_per_call, "batches_per_call")
            if batches_per_call < 1:
                raise ValueError("batches_per_call: batches computed by one call, 1 or more "
                                 "(got %d)" % batches_per_call)
        self.cuda_stream = stream
        self._config = copy.deepcopy(config)
        self._open = {"backend": backend, "gpus": gpus, "threads": threads,
                      "base_dir": base_dir}
        with Set(self.epoch_config(0), **self._open) as s:  # the config checked here
            self.count, self.npix = s.count, s.npix
            self._label_j = list(s.label_j)
            self.label_names, self._label_cols = self._labels(s, labels)
        if batches_per_call is None:
            batch_bytes = self.batch_size * self.npix * self.npix * self.dtype.itemsize
            batches_per_call = max(1, min(32, _CALL_BYTES // batch_bytes))
        self.batches_per_call = batches_per_call
        self._labels_arg = labels
        self._iters = weakref.WeakSet()
        self._stats = _Stats()
        self._ahead_lock = threading.Lock()
        self._ahead = None  # the next epoch's first calls (_Ahead), once an epoch ended

    # -- the key --
    def epoch_config(self, epoch):
        """The config dict of epoch's set: the stream's config with
        sweep.random.seed = epoch_seed(seed, epoch) (and .count =
        epoch_size when given)."""
        cfg = copy.deepcopy(self._config)
        cfg["sweep"]["random"]["seed"] = epoch_seed(self.seed, epoch)
        if self.epoch_size is not None:
            cfg["sweep"]["random"]["count"] = self.epoch_size
        return cfg

    def epoch_set(self, epoch):
        """An open psfsim.Set of epoch's images (the caller closes it)."""
        from . import Set
        return Set(self.epoch_config(epoch), **self._open)

    def image(self, epoch, index):
        """(image [M, M], labels [L] float32 or None) of image index of
        epoch, on the host, computed alone (a fresh Set): the bits the
        stream gave (on one machine and build)."""
        images, labels = self.images(epoch, index, 1)
        return images[0], None if labels is None else labels[0]

    def images(self, epoch, first, count, device=None):
        """(images [count, M, M], labels [count, L]) of images [first, first
        + count) of epoch, as the stream's batches (NumPy, or DeviceArrays
        with device=)."""
        with self.epoch_set(epoch) as s:
            self._check_labels(s)
            return self._compute(s, first, count, None if device is None else
                                 _device.device_index(device))

    # -- epochs and shards --
    def set_epoch(self, epoch):
        """The epoch the next iteration gives (PyTorch's DistributedSampler's
        set_epoch): every shard of every rank sets the same one."""
        epoch_seed(0, epoch)  # checks epoch
        self.epoch = int(epoch)
        if getattr(self, "_ahead_lock", None) is not None:
            self._drop_ahead(keep_epoch=self.epoch)

    def shard_info(self):
        """(shard, num_shards) an iteration started now takes (the class's
        docstring: given, or from torch's worker and rank)."""
        if self.shard is not None:
            return self.shard, self.num_shards
        return _torch_shard(self.rank, self.world_size)

    def _plan(self):
        """[(first, n)] of this shard's batches."""
        first, end = shard_range(self.count, *self.shard_info())
        out = []
        while first < end:
            n = min(self.batch_size, end - first)
            if n < self.batch_size and self.drop_last:
                break
            out.append((first, n))
            first += n
        return out

    def _calls(self, plan):
        """plan's batches grouped into calls: [(first, n, [(first, n), ...])],
        batches_per_call consecutive batches each (they are contiguous)."""
        k = self.batches_per_call
        out = []
        for i in range(0, len(plan), k):
            part = plan[i:i + k]
            out.append((part[0][0], sum(n for _, n in part), part))
        return out

    def _ahead_key(self, epoch, calls):
        """What an iteration's batches depend on beyond its Set: an _Ahead
        is taken only by an iteration of the same key (and CUDA stream)."""
        return (int(epoch), self.seed, self.epoch_size, self.prefetch, self.device, self.dtype,
                tuple(self.label_names), calls)

    def _put_ahead(self, ahead):
        """Keep ahead (an ended iteration's next epoch) for the iteration
        that takes it, discarding the one kept before."""
        with self._ahead_lock:
            old, self._ahead = self._ahead, ahead
        if old is not None:
            old.discard()

    def _take_ahead(self, epoch, calls):
        """The _Ahead kept for an iteration of epoch and calls, its Set open,
        or None (the one kept, of another epoch, shard or batching, or whose
        Set failed to open, discarded: its batches are never given)."""
        with self._ahead_lock:
            ahead, self._ahead = self._ahead, None
        if ahead is None:
            return None
        if ahead.key != self._ahead_key(epoch, calls) or ahead.cuda_stream is not self.cuda_stream:
            ahead.discard()
            return None
        ahead.opened.wait()
        if ahead.set is None:
            ahead.discard()
            return None
        return ahead

    def _drop_ahead(self, keep_epoch=None):
        """Discard the _Ahead kept, unless it is of keep_epoch."""
        with self._ahead_lock:
            ahead = self._ahead
            if ahead is None or ahead.epoch == keep_epoch:
                return
            self._ahead = None
        ahead.discard()

    def __len__(self):
        """Batches an iteration started now gives (shard_info's shard)."""
        return len(self._plan())

    # -- labels --
    def _labels(self, s, labels):
        """(names, columns) of the labels: columns None for "zernike"
        (Set.zernike's totals at the label terms), else params columns."""
        if labels is None:
            return [], []
        if isinstance(labels, str) and labels == "zernike":
            if not s.label_j:
                raise ArgumentError("argument", "labels: the set has no label terms (no "
                                    "Zernike term is non-zero): give params columns or None")
            return ["z%d" % j for j in s.label_j], None
        if isinstance(labels, str):
            raise ArgumentError("argument", "labels: \"zernike\", a list of Set.params columns "
                                "or None, not %r" % labels)
        names = list(labels)
        dt = s.params_dtype()
        for n in names:
            if n not in dt.names or dt[n].kind not in "iuf":
                raise ArgumentError("argument", "labels: %r is not a numeric Set.params column "
                                    "(%s)" % (n, ", ".join(k for k in dt.names
                                                           if dt[k].kind in "iuf")))
        if not names:
            raise ArgumentError("argument", "labels: an empty list (None for no labels)")
        return names, names

    def _check_labels(self, s):
        if self._label_cols is None and list(s.label_j) != self._label_j:
            raise ArgumentError("argument", "labels: the epoch's label terms %s differ from "
                                "the first epoch's %s" % (s.label_j, self._label_j))

    def _compute(self, s, first, count, device):
        """(images, labels) of [first, first + count) of the open set s."""
        images, metrics = s.compute(first, count, dtype=self.dtype, device=device,
                                    stream=self._wait_stream(device))
        if not self.label_names:
            return images, None
        if self._label_cols is None:
            total = s.zernike(first, count)
            host = np.ascontiguousarray(total[:, s._label_mode], dtype=np.float32)
        else:
            p = s.params(first, count, metrics, frame=False)
            host = np.ascontiguousarray(np.stack([p[c] for c in self._label_cols], axis=1),
                                        dtype=np.float32)
        if device is None:
            return images, host
        labels = _device.DeviceArray(host.shape, np.float32, device)
        _device.copy(device, labels.ptr, host.ctypes.data, host.nbytes)
        return images, labels

    def _wait_stream(self, device):
        """The stream a call of the stream's waits for: the caller's
        (stream=), else, for device arrays, the producing thread's own
        per-thread default stream (CUDA's handle 2), where nothing is ever
        queued: a call writes only arrays of its own, new, so it need not
        wait for the consumer's kernels (the legacy default stream's, where
        PyTorch queues them). A consumer that synchronises every batch
        never noticed that wait (bench/stream_waits.py, bench/RESULTS.md
        run 63); one that queues without synchronising would hold each call
        back by its whole queue. Freed arrays' memory is reused in stream
        order by the pool (psfsim_device_alloc)."""
        if self.cuda_stream is not None or device is None:
            return self.cuda_stream
        return _OWN_STREAM

    # -- iterating --
    def __iter__(self):
        it = _StreamIter(self)
        self._iters.add(it)
        return it

    @property
    def stats(self):
        """The current (or last) iteration's times (the class's docstring)."""
        return self._stats.as_dict()

    def close(self):
        """Stop every iteration of this stream still running, and discard
        the next epoch's calls computed ahead (its thread stopped, its Set
        closed, its batches freed)."""
        for it in list(self._iters):
            it.close()
        self._drop_ahead()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_iters"] = None
        state["_stats"] = _Stats()
        state["_ahead_lock"] = state["_ahead"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._iters = weakref.WeakSet()
        self._ahead_lock = threading.Lock()

    def as_torch_dataset(self):
        """This stream as a torch.utils.data.IterableDataset (imports torch
        now): each item the tuple of tensors (images, labels, indices),
        images and labels on the stream's device (torch.from_dlpack, no
        copy) or the CPU (torch.from_numpy), indices int64 on the CPU. Give
        it to DataLoader with batch_size=None (the stream batches); each
        worker takes its shard (the class's docstring); set_epoch as the
        stream's. With device=, keep num_workers=0: the stream computes
        ahead on its own thread and a forked worker cannot use CUDA."""
        from ._torch import StreamDataset
        return StreamDataset(self)

    def __repr__(self):
        return ("psfsim.Stream(count=%d, batch_size=%d, seed=%d, epoch=%d, labels=%s, "
                "device=%s)" % (self.count, self.batch_size, self.seed, self.epoch,
                                self.label_names, self.device))


def _rows(a, first, count):
    """Entries [first, first + count) of a call's array: a view (NumPy or
    DeviceArray), None for None."""
    if a is None:
        return None
    if isinstance(a, np.ndarray):
        return a[first:first + count]
    return a.rows(first, count)


def _batches(call, images, labels, epoch, seed):
    """A computed call's batches: StreamBatch views of its arrays."""
    first, _, parts = call
    return [StreamBatch(_rows(images, f - first, n), _rows(labels, f - first, n),
                        np.arange(f, f + n, dtype=np.int64), epoch, seed) for f, n in parts]


class _Ahead:
    """The next epoch's first calls, computed by an epoch's thread after
    its last call, while the consumer takes that epoch's last batches (its
    Set opened earlier, after the ending epoch's first call: a Set's start,
    about 15 ms on the GPU, is longer than the batches left at the end): the
    iteration of that epoch (epoch + 1) with the same calls (shard and
    batching: key, Stream._ahead_key) takes them and goes on from there, so
    that its first batch does not wait for its Set's start and first call.
    calls: the first calls of the epoch's (at most prefetch); slots: the
    ending epoch's, so that its calls and these together stay within
    prefetch calls beyond the one the consumer takes; the taker keeps
    slots, queue and stop. Until an iteration takes it, its iterator (before
    its epoch's end, which then hands it to the stream) or the stream (after)
    owns it, and discard() stops and frees it."""

    def __init__(self, key, cuda_stream, epoch, seed, calls, slots):
        self.key, self.cuda_stream = key, cuda_stream
        self.epoch, self.seed, self.calls, self.slots = epoch, seed, calls, slots
        self.queue = queue.Queue()
        self.stop = threading.Event()
        self.opened = threading.Event()  # set once the Set is open, or failed to open
        self._lock = threading.Lock()
        self.set = None
        self.thread = None  # the ending epoch's, which runs run()
        self._opener = None  # the thread running open() (start_open)
        self.done = 0  # calls computed, their batches on queue
        self.produce_s = 0.0

    def open(self, ref):
        """On start_open's thread, during the ending epoch (once its first
        call is queued), or on the ending epoch's thread (run) if that one
        never started: open this epoch's Set and compute its first image (discarded), which
        starts the backend (a GPU Set starts its lanes, plans and graph at
        its first compute: run 58 saw the next epoch's first batch still
        wait 7 ms with the Set only opened), so that at the boundary only
        its first calls are left to compute. Once; an error leaves set None (the taker
        opens the Set itself and raises)."""
        if self.opened.is_set():
            return
        s = None
        try:
            stream = ref()
            if stream is not None and not self.stop.is_set():
                s = stream.epoch_set(self.epoch)
        except Exception:  # noqa: BLE001 (the taker opens the Set itself and raises)
            s = None
        stream = None
        if s is not None and self.calls:
            try:  # one image starts the Set's backend (a GPU's lanes, plans, graph)
                stream = ref()
                if stream is not None and not self.stop.is_set():
                    s.compute(self.calls[0][0], 1, dtype=stream.dtype, device=stream.device,
                              stream=stream._wait_stream(stream.device))
            except Exception:  # noqa: BLE001 (computed again by the taker, which raises)
                pass
            stream = None
        with self._lock:
            if s is not None and self.stop.is_set():
                s.close()
                s = None
            self.set = s
        self.opened.set()

    def start_open(self, ref):
        """open() on a thread of its own (once), started by the ending
        epoch's thread after its first call: the Set's start and first
        image take about 10 ms on the GPU, which on the producing thread
        itself delayed that epoch's next call by as much, and the consumer
        waited for it in every epoch (bench/stream_waits.py)."""
        with self._lock:
            if self._opener is not None or self.stop.is_set():
                return
            opener = threading.Thread(target=self.open, args=(ref,),
                                      name="psfsim.Stream.open", daemon=True)
            try:
                opener.start()
            except RuntimeError:  # no thread to be had: run() opens the Set itself
                return
            self._opener = opener

    def _join_opener(self):
        with self._lock:
            opener = self._opener
        if opener is not None and opener is not threading.current_thread():
            opener.join()

    def run(self, ref):
        """On the thread, after its epoch's end: open the epoch's Set (if
        open() has not, or wait for start_open's thread), then compute
        calls, each once a slot is free.
        Stops at stop, at the stream's garbage collection (ref: a weak
        reference, so that the thread does not keep the stream alive) or at
        an error (the iteration that takes this computes that call again
        and raises)."""
        self._join_opener()
        self.open(ref)
        s = self.set
        if s is None:
            return
        for call in self.calls:
            while not self.slots.acquire(timeout=0.05):
                if self.stop.is_set() or ref() is None:
                    return
            stream = ref()
            if self.stop.is_set() or stream is None:
                self.slots.release()
                return
            t0 = time.perf_counter()
            try:
                images, labels = stream._compute(s, call[0], call[1], stream.device)
            except Exception:  # noqa: BLE001 (computed again by the taker)
                self.slots.release()  # the taker's: no call holds it
                return
            finally:
                stream = None
            self.produce_s += time.perf_counter() - t0
            for i, batch in enumerate(_batches(call, images, labels, self.epoch, self.seed)):
                self.queue.put(("batch", batch, i == 0))
            self.done += 1

    def discard(self):
        """Stop the thread's work here (its compute in flight cancelled),
        close the Set and free the batches computed: none is ever given."""
        with self._lock:
            self.stop.set()
            s = self.set
        if s is not None:
            s.cancel()
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join()
        self._join_opener()  # its Set, opened after stop, closed by open() itself
        with self._lock:
            s = self.set
        if s is not None:
            s.close()
        _drain(self.queue)


def _drain(q):
    while True:
        try:
            q.get_nowait()
        except queue.Empty:
            return


def _produce(ref, s, calls, epoch, seed, out, slots, stop, stats, after, ahead):
    """The background thread: each call of calls computed once a slot is
    free, its batches put on out as ("batch", StreamBatch, first), first
    true for a call's first batch (whose taking frees the call's slot);
    ("end", None, 0) after the last call, ("error", exception, 0) on an
    error. after: the _Ahead this iteration took (its thread joined first,
    its calls on out already, computed here from its done on). ahead: the
    next epoch's, run after "end". ref: a weak reference to the stream;
    the thread holds none to the iterator, so that the consumer dropping it
    stops the thread."""
    try:
        if after is not None:
            after.thread.join()
            stats.produce_s += after.produce_s
            stats.ahead_calls = after.done
            calls = calls[after.done:]
        for call in calls:
            while not slots.acquire(timeout=0.05):
                if stop.is_set():
                    return
            stream = ref()
            if stop.is_set() or stream is None:
                return
            t0 = time.perf_counter()
            images, labels = stream._compute(s, call[0], call[1], stream.device)
            stream = None
            stats.produce_s += time.perf_counter() - t0
            batches = _batches(call, images, labels, epoch, seed)
            for i, batch in enumerate(batches):
                out.put(("batch", batch, i == 0))
            if ahead is not None:
                ahead.start_open(ref)  # once: the next epoch's Set starts while this one runs
        if stop.is_set():
            return
        out.put(("end", None, 0))
        if ahead is not None:
            ahead.run(ref)  # while the consumer takes the last calls' batches
    except BaseException as e:  # noqa: BLE001 (re-raised by the consumer)
        if not stop.is_set():
            out.put(("error", e, 0))


class _StreamIter:
    """One epoch of a Stream (its __iter__): the epoch's Set, opened here
    or taken with the calls computed ahead (_Ahead), and the thread
    computing ahead (prefetch >= 1)."""

    def __init__(self, stream):
        t0 = time.perf_counter()
        self._stream = stream
        self.epoch = stream.epoch
        self.seed = epoch_seed(stream.seed, self.epoch)
        self._plan = stream._plan()
        self._calls = stream._calls(self._plan)
        self._next_call = 0
        self._ready = []  # prefetch 0: the current call's batches not yet taken
        self._stats = stream._stats = _Stats()
        self._next = 0
        self._done = self._ended = False
        self._thread = self._ahead = None
        after = stream._take_ahead(self.epoch, self._calls)
        self._set = after.set if after is not None else stream.epoch_set(self.epoch)
        try:
            stream._check_labels(self._set)
            if self._set.count != stream.count:
                raise ArgumentError("argument", "psfsim.Stream: epoch %d has %d images, not %d"
                                    % (self.epoch, self._set.count, stream.count))
        except BaseException:
            if after is not None:
                after.discard()
            else:
                self._set.close()
            raise
        if stream.prefetch > 0 and self._plan:
            if after is not None:  # its batches first on the queue, its slots taken
                self._queue, self._slots, self._stop = after.queue, after.slots, after.stop
            else:
                self._queue = queue.Queue()
                self._slots = threading.Semaphore(stream.prefetch)
                self._stop = threading.Event()
            nxt = self.epoch + 1
            if nxt < 1 << 63:
                self._ahead = _Ahead(stream._ahead_key(nxt, self._calls), stream.cuda_stream,
                                     nxt, epoch_seed(stream.seed, nxt),
                                     self._calls[:stream.prefetch], self._slots)
            self._thread = threading.Thread(
                target=_produce, name="psfsim.Stream", daemon=True,
                args=(weakref.ref(stream), self._set, self._calls, self.epoch, self.seed,
                      self._queue, self._slots, self._stop, self._stats, after, self._ahead))
            if self._ahead is not None:
                self._ahead.thread = self._thread
            self._thread.start()
        # The Set's opening (or waiting for the one opened ahead) is the
        # first batch's wait too: iter() and next() block the consumer alike.
        self._stats.start = t0
        self._init_wait = time.perf_counter() - t0

    def __iter__(self):
        return self

    def __next__(self):
        st = self._stats
        t0 = time.perf_counter()
        if st.start is None:
            st.start = t0
        if self._done:
            raise StopIteration
        try:
            if self._thread is None:
                batch = self._compute_next(t0)
            else:
                kind, batch, first = self._queue.get()
                if kind == "end":
                    self._ended = True
                    if self._ahead is not None:  # the stream keeps it now
                        self._stream._put_ahead(self._ahead)
                        self._ahead = None
                    raise StopIteration
                if kind == "error":
                    raise batch
                if first:
                    self._slots.release()  # a call taken: one more may start
        except BaseException:
            self.close()
            raise
        self._next += 1
        wait = time.perf_counter() - t0
        if st.batches == 0:
            wait += self._init_wait
            st.first_wait_s = wait
        st.wait_s += wait
        st.batches += 1
        st.images += len(batch[2])
        return batch

    def _compute_next(self, t0):
        """prefetch 0: the next batch, its call computed now when the
        previous call's batches are all taken."""
        if not self._ready:
            if self._next_call >= len(self._calls):
                raise StopIteration
            call = self._calls[self._next_call]
            self._next_call += 1
            images, labels = self._stream._compute(self._set, call[0], call[1],
                                                   self._stream.device)
            self._stats.produce_s += time.perf_counter() - t0
            self._ready = _batches(call, images, labels, self.epoch, self.seed)
        return self._ready.pop(0)

    def close(self):
        """Stop the thread (cancelling its compute in flight), free the
        batches not taken, discard the next epoch's calls computed ahead
        and close the epoch's Set. After the epoch's end the thread goes on
        with the next epoch's calls, which the stream holds (Stream.close
        stops it)."""
        if self._done:
            return
        self._done = True
        if self._stats.end is None and self._stats.start is not None:
            self._stats.end = time.perf_counter()
        if self._thread is not None:
            if not self._ended:
                self._stop.set()
                self._set.cancel()
                if self._ahead is not None:
                    self._ahead.discard()
                    self._ahead = None
                self._thread.join()
            _drain(self._queue)
        self._set.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
