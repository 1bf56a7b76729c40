"""Categorical columns: vocabulary, hash bucket, identity, crossed, weighted."""

from __future__ import annotations

import itertools

import numpy as np

from kerasflow.feature_column.base import (
    CategoricalColumn,
    FeatureColumn,
    as_2d,
    fingerprint64,
    hash_strings,
    missing_mask,
    raw_feature,
)

__all__ = [
    "categorical_column_with_hash_bucket",
    "categorical_column_with_identity",
    "categorical_column_with_vocabulary_file",
    "categorical_column_with_vocabulary_list",
    "crossed_column",
    "weighted_categorical_column",
]


def _check_key(key, what):
    if not isinstance(key, str) or not key:
        raise ValueError(f"{what} expects a non-empty string key. Received: "
                         f"key={key!r}.")


class VocabularyColumn(CategoricalColumn):
    """Ids from a vocabulary; unseen values go to OOV buckets or ``default_value``."""

    def __init__(self, key, vocabulary, default_value=-1, num_oov_buckets=0):
        _check_key(key, "categorical_column_with_vocabulary_list")
        vocabulary = list(vocabulary)
        if not vocabulary:
            raise ValueError(f"Column '{key}' expects a non-empty vocabulary. "
                             f"Received: {vocabulary!r}.")
        if len(set(vocabulary)) != len(vocabulary):
            raise ValueError(f"Column '{key}' expects a vocabulary without "
                             f"duplicates. Received: {vocabulary!r}.")
        if num_oov_buckets < 0:
            raise ValueError(f"num_oov_buckets must be >= 0. Received: "
                             f"{num_oov_buckets}.")
        if num_oov_buckets and default_value != -1:
            raise ValueError("Can't specify both default_value and num_oov_buckets.")
        if default_value != -1 and not 0 <= default_value < len(vocabulary):
            raise ValueError(f"default_value must be -1 or in [0, "
                             f"{len(vocabulary)}). Received: {default_value}.")
        self.key, self.name = key, key
        self.vocabulary = vocabulary
        self.default_value = int(default_value)
        self.num_oov_buckets = int(num_oov_buckets)
        self._table = {str(v): i for i, v in enumerate(vocabulary)}

    @property
    def num_buckets(self):
        return len(self.vocabulary) + self.num_oov_buckets

    def transform(self, features, cache):
        raw = as_2d(raw_feature(features, self.key, self.name), self.key)
        valid = ~missing_mask(raw)
        uniq, inv = np.unique(raw.astype(str), return_inverse=True)
        n = len(self.vocabulary)
        ids_u = np.empty(len(uniq), np.int64)
        for i, u in enumerate(uniq):
            hit = self._table.get(u)
            if hit is not None:
                ids_u[i] = hit
            elif self.num_oov_buckets:
                ids_u[i] = n + fingerprint64(u.encode("utf-8")) % self.num_oov_buckets
            else:
                ids_u[i] = self.default_value
        ids = ids_u[inv].reshape(raw.shape)
        return self._pack(ids, valid & (ids >= 0))


def _positive_int(value, name: str) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be an int >= 1. Received: {name}={value!r}.")
    return int(value)


class HashedColumn(CategoricalColumn):
    """``fingerprint64(str(value)) % hash_bucket_size`` (see ``fingerprint64``)."""

    def __init__(self, key, hash_bucket_size, dtype="string"):
        _check_key(key, "categorical_column_with_hash_bucket")
        self.key, self.name = key, key
        self.hash_bucket_size = _positive_int(hash_bucket_size, "hash_bucket_size")
        self.dtype = dtype

    @property
    def num_buckets(self):
        return self.hash_bucket_size

    def transform(self, features, cache):
        raw = as_2d(raw_feature(features, self.key, self.name), self.key)
        return self._pack(hash_strings(raw, self.hash_bucket_size),
                          ~missing_mask(raw))


class IdentityColumn(CategoricalColumn):
    """Integer values used as ids directly."""

    def __init__(self, key, num_buckets, default_value=None):
        _check_key(key, "categorical_column_with_identity")
        _positive_int(num_buckets, "num_buckets")
        if default_value is not None and not 0 <= default_value < num_buckets:
            raise ValueError(f"default_value must be in [0, {num_buckets}). "
                             f"Received: {default_value}.")
        self.key, self.name = key, key
        self._num_buckets = int(num_buckets)
        self.default_value = default_value

    @property
    def num_buckets(self):
        return self._num_buckets

    def transform(self, features, cache):
        raw = as_2d(raw_feature(features, self.key, self.name), self.key)
        if raw.dtype.kind not in "iu":
            raise TypeError(f"categorical_column_with_identity '{self.key}' expects "
                            f"integer values. Received: dtype {raw.dtype}.")
        valid = raw >= 0
        bad = valid & (raw >= self._num_buckets)
        if bad.any():
            if self.default_value is None:
                raise ValueError(
                    f"Column '{self.key}' expects values in [0, {self._num_buckets})."
                    f" Received: {raw[bad][:5].tolist()} (set default_value to map "
                    f"them to a bucket).")
            raw = np.where(bad, self.default_value, raw)
        return self._pack(raw, valid)


class CrossedColumn(CategoricalColumn):
    """Hashed cartesian product of keys / categorical columns.

    Each combination's parts (a raw key's value as text, a categorical column's
    id as "<name>=<id>") are joined with "\\x1f" and hashed with
    ``fingerprint64`` modulo ``hash_bucket_size``.
    """

    def __init__(self, keys, hash_bucket_size, hash_key=None):
        keys = list(keys)
        if len(keys) < 2:
            raise ValueError(f"crossed_column expects at least 2 keys. Received: "
                             f"keys={keys!r}.")
        for k in keys:
            if not isinstance(k, (str, CategoricalColumn)):
                raise TypeError(f"crossed_column keys are strings or categorical "
                                f"columns. Received: {k!r}.")
        if not isinstance(hash_bucket_size, (int, np.integer)) or hash_bucket_size < 1:
            raise ValueError(f"hash_bucket_size must be an int >= 1. Received: "
                             f"{hash_bucket_size!r}.")
        self.keys = keys
        self.hash_bucket_size = int(hash_bucket_size)
        self.name = "_X_".join(k if isinstance(k, str) else k.name for k in keys)

    @property
    def num_buckets(self):
        return self.hash_bucket_size

    @property
    def parents(self):
        return [k for k in self.keys if isinstance(k, FeatureColumn)]

    def _parts(self, features, cache):
        parts = []
        for k in self.keys:
            if isinstance(k, str):
                raw = as_2d(raw_feature(features, k, self.name), k)
                parts.append((raw.astype(str), ~missing_mask(raw)))
            else:
                ids, w = k.ids_and_weights(features, cache)
                text = np.char.add(f"{k.name}=", ids.astype(str))
                parts.append((text, w > 0))
        return parts

    def transform(self, features, cache):
        parts = self._parts(features, cache)
        n = len(parts[0][0])
        if all(p[0].shape[1] == 1 for p in parts):  # one value each: vectorized
            joined = parts[0][0][:, 0]
            valid = parts[0][1][:, 0].copy()
            for text, ok in parts[1:]:
                joined = np.char.add(np.char.add(joined, "\x1f"), text[:, 0])
                valid &= ok[:, 0]
            ids = hash_strings(joined, self.hash_bucket_size)
            return self._pack(ids[:, None], valid[:, None])
        rows = []
        for r in range(n):
            choices = [[t for t, ok in zip(text[r], okr) if ok]
                       for text, okr in ((p[0], p[1][r]) for p in parts)]
            rows.append([fingerprint64("\x1f".join(c).encode("utf-8"))
                         % self.hash_bucket_size
                         for c in itertools.product(*choices)])
        k = max(1, max(len(r) for r in rows))
        ids = np.zeros((n, k), np.int64)
        valid = np.zeros((n, k), bool)
        for r, row in enumerate(rows):
            ids[r, :len(row)] = row
            valid[r, :len(row)] = True
        return self._pack(ids, valid)


class WeightedColumn(CategoricalColumn):
    """A categorical column whose ids carry weights from another feature."""

    def __init__(self, categorical_column, weight_feature_key, dtype="float32"):
        if not isinstance(categorical_column, CategoricalColumn):
            raise TypeError(f"weighted_categorical_column expects a categorical "
                            f"column. Received: {categorical_column!r}.")
        _check_key(weight_feature_key, "weighted_categorical_column")
        self.categorical_column = categorical_column
        self.weight_feature_key = weight_feature_key
        self.name = f"{categorical_column.name}_weighted_by_{weight_feature_key}"

    @property
    def num_buckets(self):
        return self.categorical_column.num_buckets

    @property
    def parents(self):
        return [self.categorical_column]

    def transform(self, features, cache):
        ids, w = self.categorical_column.ids_and_weights(features, cache)
        wf = as_2d(raw_feature(features, self.weight_feature_key, self.name),
                   self.weight_feature_key).astype(np.float32)
        if wf.shape != ids.shape:
            raise ValueError(f"Column '{self.name}' expects weights of the ids' "
                             f"shape {ids.shape}. Received: {wf.shape}.")
        return {self.name + "/ids": ids, self.name + "/weights": w * wf}


def categorical_column_with_vocabulary_list(key, vocabulary_list, dtype=None,
                                            default_value=-1, num_oov_buckets=0):
    """Ids by position in ``vocabulary_list`` (TF's name and rules).

    Values not in the list go to ``len(vocabulary_list) + fingerprint64(value) %
    num_oov_buckets`` when ``num_oov_buckets > 0``, else to ``default_value``
    (-1: dropped, i.e. an all-zero indicator). "" and -1 mean missing.

    Raises:
        ValueError: empty or duplicated vocabulary, both default_value and
            num_oov_buckets.
    """
    return VocabularyColumn(key, vocabulary_list, default_value, num_oov_buckets)


def categorical_column_with_vocabulary_file(key, vocabulary_file, vocabulary_size=None,
                                            dtype=None, default_value=-1,
                                            num_oov_buckets=0):
    """As ``..._vocabulary_list`` with one value per line of ``vocabulary_file``
    (the first ``vocabulary_size`` lines when given).

    Raises:
        FileNotFoundError: no such file. ValueError: fewer lines than
            vocabulary_size.
    """
    with open(vocabulary_file, encoding="utf-8") as f:
        vocab = [line.rstrip("\r\n") for line in f]
    vocab = [v for v in vocab if v != ""]
    if vocabulary_size is not None:
        if vocabulary_size > len(vocab):
            raise ValueError(f"vocabulary_size={vocabulary_size} but "
                             f"'{vocabulary_file}' has {len(vocab)} entries.")
        vocab = vocab[:vocabulary_size]
    return VocabularyColumn(key, vocab, default_value, num_oov_buckets)


def categorical_column_with_hash_bucket(key, hash_bucket_size, dtype="string"):
    """Ids ``fingerprint64(utf8(str(value))) % hash_bucket_size``.

    See ``fingerprint64`` for the (stable, documented) hash. Integers hash as
    their decimal text, as TF does.
    """
    return HashedColumn(key, hash_bucket_size, dtype)


def categorical_column_with_identity(key, num_buckets, default_value=None):
    """Integer features as ids in [0, num_buckets); others raise unless
    ``default_value`` is given (then they map to it). -1 means missing."""
    return IdentityColumn(key, num_buckets, default_value)


def crossed_column(keys, hash_bucket_size, hash_key=None):
    """Hashed feature crosses (see ``CrossedColumn``)."""
    return CrossedColumn(keys, hash_bucket_size, hash_key)


def weighted_categorical_column(categorical_column, weight_feature_key,
                                dtype="float32"):
    """Weights each id of ``categorical_column`` by ``features[weight_feature_key]``
    (same shape as the ids)."""
    return WeightedColumn(categorical_column, weight_feature_key, dtype)
