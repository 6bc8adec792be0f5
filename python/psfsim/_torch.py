# SPDX-License-Identifier: BSD-3-Clause
"""psfsim.Stream as a PyTorch IterableDataset (Stream.as_torch_dataset).
This module imports torch: psfsim imports it only when
as_torch_dataset() is called. A module-level class, so that DataLoader's
workers can unpickle it (the spawn start method)."""
import numpy as np
import torch
from torch.utils.data import IterableDataset


def _tensor(a):
    """A DeviceArray as a CUDA tensor (DLPack, no copy), a NumPy array as a
    CPU tensor (sharing its memory), None as None."""
    if a is None:
        return None
    if isinstance(a, np.ndarray):
        return torch.from_numpy(a)
    return torch.from_dlpack(a)


class StreamDataset(IterableDataset):
    """A psfsim.Stream's batches as tuples of tensors (images [n, M, M],
    labels [n, L] float32, indices [n] int64), one epoch per iteration; in
    a DataLoader (batch_size=None) each worker iterates its own shard
    (psfsim.Stream's docstring). set_epoch(e) as the stream's; stream: the
    psfsim.Stream."""

    def __init__(self, stream):
        super().__init__()
        self.stream = stream

    def set_epoch(self, epoch):
        self.stream.set_epoch(epoch)

    def __iter__(self):
        it = iter(self.stream)
        try:
            for images, labels, indices in it:
                yield _tensor(images), _tensor(labels), torch.from_numpy(indices)
        finally:
            it.close()
