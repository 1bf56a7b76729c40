"""``PyDataset``: a batch source indexed by batch number (Keras 3's base class)."""

from __future__ import annotations

__all__ = ["PyDataset"]


class PyDataset:
    """Base class of datasets that ``fit`` reads batch by batch (Keras 3).

    Subclasses define ``__len__`` (batches per epoch) and ``__getitem__(i)``
    returning ``(x, y)`` or ``(x, y, sample_weight)`` for batch ``i``;
    ``on_epoch_end()`` runs after each epoch. Batches are read in order, in this
    process (``workers``/``use_multiprocessing`` are accepted and ignored).
    """

    def __init__(self, workers=1, use_multiprocessing=False, max_queue_size=10):
        self.workers = workers
        self.use_multiprocessing = use_multiprocessing
        self.max_queue_size = max_queue_size

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __len__.")

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define "
                                  f"__getitem__.")

    def on_epoch_end(self):
        """Called after every epoch (shuffle here); does nothing by default."""
