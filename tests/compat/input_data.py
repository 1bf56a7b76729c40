"""The data source of the ported TF1 programs: a stand-in for TF1's
``tensorflow.examples.tutorials.mnist.input_data``, reading the real MNIST
files through ``kerasflow.datasets.mnist`` (no download).

``read_data_sets(dir, one_hot=True)`` returns ``.train``, ``.validation`` and
``.test`` sets with TF1's ``DataSet`` interface: ``images`` (N, 784) float32
in [0, 1], ``labels`` (one-hot float32 or int), ``num_examples`` and
``next_batch(batch_size)`` (reshuffled each epoch, as TF1's did). As TF1, the
first 5000 training images form the validation set. ``train_size`` keeps the
tests short: the programs' epochs then run over that many training images.
"""

from __future__ import annotations

import functools

import numpy as np

from kerasflow.datasets import mnist

__all__ = ["read_data_sets", "DataSet"]


class DataSet:
    def __init__(self, images, labels, seed=0):
        self.images = images
        self.labels = labels
        self.num_examples = images.shape[0]
        self._rng = np.random.RandomState(seed)
        self._order = self._rng.permutation(self.num_examples)
        self._pos = 0
        self.epochs_completed = 0

    def next_batch(self, batch_size, fake_data=False, shuffle=True):
        if self._pos + batch_size > self.num_examples:
            self.epochs_completed += 1
            self._order = self._rng.permutation(self.num_examples)
            self._pos = 0
        idx = self._order[self._pos:self._pos + batch_size]
        self._pos += batch_size
        return self.images[idx], self.labels[idx]


class _DataSets:
    def __init__(self, train, validation, test):
        self.train, self.validation, self.test = train, validation, test


@functools.lru_cache(maxsize=2)
def _load(path):
    (xtr, ytr), (xte, yte) = mnist.load_data(path=path)
    xtr = (xtr.reshape(-1, 784) / 255.0).astype(np.float32)
    xte = (xte.reshape(-1, 784) / 255.0).astype(np.float32)
    return xtr, ytr.astype(np.int64), xte, yte.astype(np.int64)


def read_data_sets(train_dir, one_hot=False, train_size=None, test_size=None,
                   seed=0):
    xtr, ytr, xte, yte = _load(str(train_dir))

    def labels(y):
        return np.eye(10, dtype=np.float32)[y] if one_hot else y

    end = None if train_size is None else 5000 + train_size
    return _DataSets(DataSet(xtr[5000:end], labels(ytr[5000:end]), seed),
                     DataSet(xtr[:5000], labels(ytr[:5000]), seed),
                     DataSet(xte[:test_size], labels(yte[:test_size]), seed))
