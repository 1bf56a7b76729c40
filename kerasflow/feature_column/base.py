"""Feature column contract: host-side transform, then graph-side tensors.

A feature column (TF's ``tf.feature_column``) turns raw input features into
model inputs in two stages:

1. ``transform(features)`` runs on the host with numpy on each batch: strings
   become ids (vocabulary, hashing, crosses), numbers are reshaped, normalized
   or bucketized. Its outputs are numeric arrays under derived keys:
   ``"<name>"`` (dense values, float32 (batch, dimension)) or ``"<name>/ids"``
   (int64 (batch, k)) and ``"<name>/weights"`` (float32 (batch, k)); a missing
   value has weight 0 (and id 0).
2. ``dense_tensor`` / ``linear_logits`` build the graph on those arrays (fed as
   placeholders by the Estimator, or given directly as arrays to run eagerly).
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = [
    "IDS",
    "WEIGHTS",
    "CategoricalColumn",
    "DenseColumn",
    "FeatureColumn",
    "as_2d",
    "fingerprint64",
    "raw_feature",
]

IDS, WEIGHTS = "/ids", "/weights"


def fingerprint64(data: bytes) -> int:
    """The stable 64-bit hash used for hash buckets, OOV buckets and crosses.

    ``int.from_bytes(blake2b(data, digest_size=8).digest(), "little")``
    (BLAKE2b, RFC 7693): identical on every platform, process and Python
    version (unlike Python's salted ``hash``). TF uses FarmHash Fingerprint64,
    so bucket ids differ from TF's, but are as stable.
    """
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def hash_strings(values: np.ndarray, buckets: int) -> np.ndarray:
    """``fingerprint64(utf8(str(v))) % buckets`` for each element (unique-wise)."""
    uniq, inv = np.unique(values.astype(str), return_inverse=True)
    ids = np.fromiter((fingerprint64(u.encode("utf-8")) % buckets for u in uniq),
                      dtype=np.int64, count=len(uniq))
    return ids[inv].reshape(values.shape)


def raw_feature(features, key, column_name):
    """``features[key]`` as a numpy array, or a clear KeyError."""
    if not isinstance(features, dict):
        raise TypeError(f"Feature columns read a dict of features. Received: "
                        f"{type(features).__name__}.")
    if key not in features:
        raise KeyError(f"Feature column '{column_name}' expects feature key '{key}'. "
                       f"Received features with keys: {sorted(features)}.")
    return np.asarray(features[key])


def as_2d(values, name):
    """(batch,) -> (batch, 1); (batch, k) stays; more axes are flattened."""
    if values.ndim == 0:
        raise ValueError(f"Feature '{name}' must be batched (first axis = "
                         f"examples). Received: a scalar.")
    return values.reshape(len(values), -1) if values.ndim != 1 else values[:, None]


def missing_mask(values):
    """True where a value is absent: "" for strings, -1 for integers."""
    if values.dtype.kind in "USO":
        return values.astype(str) == ""
    if values.dtype.kind in "iu":
        return values < 0
    return np.zeros(values.shape, bool)


class FeatureColumn:
    """Base class. Subclasses define ``name`` and ``transform``."""

    name: str = ""

    @property
    def parents(self) -> list:
        return []

    def transform(self, features: dict, cache: dict) -> dict:
        """Host-side arrays for this column: {derived key: array}."""
        raise NotImplementedError

    def _cached(self, features, cache):
        if self.name not in cache:
            cache[self.name] = self.transform(features, cache)
        return cache[self.name]

    def __repr__(self):
        return f"{type(self).__name__}(name='{self.name}')"


class DenseColumn(FeatureColumn):
    """Produces a dense float tensor (batch, dimension)."""

    @property
    def dimension(self) -> int:
        raise NotImplementedError

    def dense_tensor(self, inputs: dict, state: dict):
        """Graph (or eager) tensor (batch, dimension) from transformed inputs."""
        raise NotImplementedError


class CategoricalColumn(FeatureColumn):
    """Produces ids in [0, num_buckets) with weights: (batch, k) each."""

    @property
    def num_buckets(self) -> int:
        raise NotImplementedError

    def ids_and_weights(self, features, cache):
        """(ids int64 (batch, k), weights float32 (batch, k)) on the host."""
        out = self._cached(features, cache)
        return out[self.name + IDS], out[self.name + WEIGHTS]

    def _pack(self, ids, valid):
        ids = np.where(valid, ids, 0).astype(np.int64)
        return {self.name + IDS: ids,
                self.name + WEIGHTS: valid.astype(np.float32)}
