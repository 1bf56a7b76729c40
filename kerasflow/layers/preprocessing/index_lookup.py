"""``IndexLookup``: the vocabulary table behind ``StringLookup``,
``IntegerLookup`` and ``TextVectorization`` (Keras 3's
``keras/src/layers/preprocessing/index_lookup.py``: the same index layout,
adapt ordering, out-of-vocabulary buckets, encodings and errors), in numpy.

Index layout in 'int' mode: [mask (if ``mask_token``)] + ``num_oov_indices``
OOV buckets + the vocabulary; in the other modes the mask takes no index.
"""

from __future__ import annotations

import collections

import numpy as np

from kerasflow.layers.preprocessing.base import (
    EagerArrayLayer,
    adapt_batches,
    check_adaptable,
)
from kerasflow.layers.preprocessing.encoding import encode_categorical
from kerasflow.layers.preprocessing.hash_functions import hash_bucket

__all__ = ["IndexLookup"]

_MODES = ("int", "one_hot", "multi_hot", "count", "tf_idf")
_INT64_MAX = np.iinfo(np.int64).max


class IndexLookup(EagerArrayLayer):
    """Maps tokens to indices (or back, with ``invert``); see the subclasses."""

    def __init__(self, max_tokens, num_oov_indices, mask_token, oov_token,
                 vocabulary_dtype, vocabulary=None, idf_weights=None, invert=False,
                 output_mode="int", sparse=False, pad_to_max_tokens=False,
                 oov_method="farmhash", salt=None, name=None, **kwargs):
        vocabulary_size = kwargs.pop("vocabulary_size", None)
        has_input = kwargs.pop("has_input_vocabulary", vocabulary is not None)
        kwargs.pop("dtype", None)
        super().__init__(name=name, **kwargs)
        if max_tokens is not None and max_tokens <= 1:
            raise ValueError(f"If set, `max_tokens` must be greater than 1. "
                             f"Received: max_tokens={max_tokens}")
        if pad_to_max_tokens and max_tokens is None:
            raise ValueError(f"If pad_to_max_tokens is True, must set "
                             f"`max_tokens`. Received: max_tokens={max_tokens}")
        if num_oov_indices < 0:
            raise ValueError(f"`num_oov_indices` must be greater than or equal to "
                             f"0. Received: num_oov_indices={num_oov_indices}")
        output_mode = {"binary": "multi_hot", "tf-idf": "tf_idf"}.get(
            output_mode, output_mode)
        if output_mode not in _MODES:
            raise ValueError(f"Invalid value for argument `output_mode` of "
                             f"{type(self).__name__}. Expected one of {_MODES}. "
                             f"Received: output_mode={output_mode!r}")
        if invert and output_mode != "int":
            raise ValueError(f"`output_mode` must be `'int'` when `invert` is "
                             f"true. Received: output_mode={output_mode}")
        if sparse:
            raise ValueError("`sparse=True` is not supported by kerasflow "
                             "(dense outputs only). Received: sparse=True.")
        if idf_weights is not None and output_mode != "tf_idf":
            raise ValueError(f"`idf_weights` should only be set if `output_mode` "
                             f"is `'tf_idf'`. Received: idf_weights={idf_weights} "
                             f"and output_mode={output_mode}")
        if salt is not None and not (isinstance(salt, int) or (
                isinstance(salt, (tuple, list)) and len(salt) == 2)):
            raise ValueError(f"`salt` must be a tuple or list of 2 integers, or a "
                             f"single integer. Received: salt={salt}.")
        self.invert, self.max_tokens = bool(invert), max_tokens
        self.num_oov_indices = int(num_oov_indices)
        self.mask_token, self.oov_token = mask_token, oov_token
        self.output_mode, self.sparse = output_mode, False
        self.pad_to_max_tokens = bool(pad_to_max_tokens)
        self.vocabulary_dtype, self.oov_method = vocabulary_dtype, oov_method
        self.salt = [salt, salt] if isinstance(salt, int) else salt
        self._frozen_vocab_size = vocabulary_size
        # A vocabulary file is read once; its tokens, not its path, go into
        # the config, so a saved model does not need the file.
        self.input_vocabulary = None if isinstance(vocabulary, str) else vocabulary
        self.input_idf_weights = idf_weights
        self._has_input_vocabulary = has_input
        self._tokens: list = []
        self._index: dict = {}
        self._idf = None
        self._ready = False
        if output_mode == "tf_idf" and has_input and idf_weights is None \
                and vocabulary is not None:
            raise ValueError("When specifying the `vocabulary` argument, in TF-IDF "
                             "output mode, the `idf_weights` argument must also "
                             "be provided.")
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)

    # -- the index layout ---------------------------------------------------------
    def _oov_start_index(self):
        return 1 if self.mask_token is not None and self.output_mode == "int" else 0

    def _token_start_index(self):
        return self._oov_start_index() + self.num_oov_indices

    def vocabulary_size(self) -> int:
        """The number of indices: vocabulary plus mask and OOV indices."""
        return len(self._tokens) + self._token_start_index()

    def get_vocabulary(self, include_special_tokens=True) -> list:
        """The tokens in index order (mask and OOV tokens first when
        ``include_special_tokens``), so ``vocab[i]`` is index i's token."""
        vocab = ([self.mask_token] * self._oov_start_index()
                 + [self.oov_token] * self.num_oov_indices + list(self._tokens))
        return vocab if include_special_tokens else vocab[self._token_start_index():]

    # -- vocabulary ------------------------------------------------------------------
    def _to_tokens(self, values) -> np.ndarray:
        raise NotImplementedError

    def set_vocabulary(self, vocabulary, idf_weights=None):
        """Sets the vocabulary (and, in 'tf_idf' mode, the idf weights);
        leading special tokens in their layout order are accepted and
        skipped.

        Args:
            vocabulary: a list or array of tokens, or the path of a UTF-8 text
                file with one token per line (Keras 3).
            idf_weights: float per token, for 'tf_idf' mode.

        Raises:
            ValueError: an empty or repeated vocabulary, a special token inside
                it, more than ``max_tokens`` indices, or idf weights missing,
                unwanted or of another length.
            FileNotFoundError: a vocabulary path that does not exist.
        """
        if self.output_mode == "tf_idf":
            if idf_weights is None:
                raise ValueError("`idf_weights` must be set if output_mode is "
                                 "'tf_idf'.")
        elif idf_weights is not None:
            raise ValueError(f"`idf_weights` should only be set if output_mode is "
                             f"`'tf_idf'`. Received: output_mode={self.output_mode}"
                             f" and idf_weights={idf_weights}")
        if isinstance(vocabulary, str):
            vocabulary = _read_vocabulary_file(vocabulary, self.vocabulary_dtype)
        vocab = [t for t in self._to_tokens(np.asarray(vocabulary)).reshape(-1)]
        if not vocab:
            raise ValueError(f"Cannot set an empty vocabulary. Received: "
                             f"vocabulary={vocabulary}")
        start = self._token_start_index()
        special = [self.mask_token] * self._oov_start_index() + \
            [self.oov_token] * self.num_oov_indices
        found_special = vocab[:start] == special and start > 0
        tokens = vocab[start:] if found_special else vocab
        repeated = [t for t, c in collections.Counter(tokens).items() if c > 1]
        if repeated:
            raise ValueError(f"The passed vocabulary has at least one repeated "
                             f"term. Please uniquify your dataset. The repeated "
                             f"terms are: {repeated}")
        for token, what in ((self.mask_token, "mask"), (
                self.oov_token if self.invert else None, "OOV")):
            if token is not None and token in tokens:
                raise ValueError(
                    f"Found reserved {what} token at unexpected location in "
                    f"`vocabulary`. Note that passed `vocabulary` does not need to "
                    f"include the OOV and mask tokens. Either remove all mask and "
                    f"OOV tokens, or include them only at the start of the "
                    f"vocabulary in precisely this order: {special}. Received: "
                    f"{what}_token={token!r} at vocabulary index "
                    f"{vocab.index(token)}")
        if self.max_tokens is not None and start + len(tokens) > self.max_tokens:
            raise ValueError(f"Attempted to set a vocabulary larger than the "
                             f"maximum vocab size. Received vocabulary size is "
                             f"{start + len(tokens)}; `max_tokens` is "
                             f"{self.max_tokens}.")
        self._set_tokens(tokens)
        if self.output_mode == "tf_idf":
            idf = np.asarray(idf_weights, dtype=np.float64)
            if idf.ndim != 1 or len(idf) != len(vocab):
                raise ValueError(f"`idf_weights` must be a 1-D array of the "
                                 f"vocabulary's length. Received "
                                 f"len(idf_weights)={idf.size}, "
                                 f"len(vocabulary)={len(vocab)}")
            front = (0, 0.0) if found_special else (start, float(np.average(idf)))
            back = self.max_tokens - front[0] - len(idf) if (
                self.pad_to_max_tokens and self.max_tokens is not None) else 0
            self._idf = np.pad(idf, (front[0], back), constant_values=(
                front[1], 0.0)).astype("float32")

    def _set_tokens(self, tokens):
        self._tokens = [int(t) if self.vocabulary_dtype == "int64" else t
                        for t in tokens]
        start = self._token_start_index()
        self._index = {t: i + start for i, t in enumerate(self._tokens)}
        self._ready = True
        if self.output_mode != "int" and not self.pad_to_max_tokens:
            if self._frozen_vocab_size is not None and \
                    self._frozen_vocab_size != self.vocabulary_size() and self.built:
                raise RuntimeError(
                    f"When using `output_mode={self.output_mode}` and "
                    f"`pad_to_max_tokens=False`, the vocabulary size cannot be "
                    f"changed after the layer is called. Old vocab size is "
                    f"{self._frozen_vocab_size}, new vocab size is "
                    f"{self.vocabulary_size()}")
            self._frozen_vocab_size = self.vocabulary_size()

    def adapt(self, data, steps=None):
        """Builds the vocabulary from ``data`` (an array, whose rows are
        documents, a ``kerasflow.data.Dataset`` or an iterable of batches):
        tokens by decreasing count, ties by decreasing token (Keras), at most
        ``max_tokens`` indices; in 'tf_idf' mode also the idf weights
        ``log(1 + documents / (1 + documents with the token))``.

        Raises:
            ValueError: the layer was given a vocabulary.
        """
        check_adaptable(self)
        single = not (hasattr(data, "__iter__") and not isinstance(
            data, (list, tuple, np.ndarray, str, bytes)))
        self.adapt_documents(
            doc for batch in adapt_batches(data, steps, f"{type(self).__name__}.adapt")
            for doc in self._documents(batch, single))

    def adapt_documents(self, documents):
        """``adapt`` on an iterable of token lists (one per document)."""
        counts, doc_counts, n_docs = collections.Counter(), collections.Counter(), 0
        for doc in documents:
            counts.update(doc)
            doc_counts.update(set(doc))
            n_docs += 1
        for special in (self.mask_token, self.oov_token):
            counts.pop(special, None)
        if not counts:
            self._ready = True
            return
        tokens = np.array(list(counts), dtype=object)
        order = np.lexsort((tokens, np.array([counts[t] for t in tokens])))[::-1]
        if self.max_tokens:
            order = order[:self.max_tokens - self._token_start_index()]
        tokens = [tokens[i] for i in order]
        self._set_tokens(tokens)
        if self.output_mode == "tf_idf":
            idf = np.log(1 + n_docs / (1 + np.array([doc_counts[t] for t in tokens],
                                                    dtype=np.float64)))
            idf = idf.astype("float32")
            idf = np.pad(idf, (self._token_start_index(), 0),
                         constant_values=float(np.mean(idf)))
            if self.pad_to_max_tokens and self.max_tokens is not None:
                idf = np.pad(idf, (0, self.max_tokens - idf.size))
            self._idf = idf.astype("float32")

    def _documents(self, batch, single):
        """The token lists of ``batch`` (one per row; a vector given directly
        to adapt is a column of one-token rows, as Keras)."""
        x = self._to_tokens(np.asarray(batch, dtype=object) if isinstance(
            batch, list) else np.asarray(batch))
        if x.ndim == 0:
            x = x.reshape(1, 1)
        elif x.ndim == 1:
            x = x[:, None] if single else x[None, :]
        return [list(row.reshape(-1)) for row in x.reshape(x.shape[0], -1)]

    # -- lookup ------------------------------------------------------------------------
    def _oov_buckets(self, keys: np.ndarray) -> np.ndarray:
        # Keras: integer keys use floormod unless oov_method='farmhash' (the
        # salt only keys the hash).
        if self.vocabulary_dtype != "string" and self.oov_method != "farmhash":
            return np.mod(keys.astype(np.int64), self.num_oov_indices)
        return hash_bucket(keys, self.num_oov_indices, self.salt)

    def _lookup(self, keys: np.ndarray) -> np.ndarray:
        flat = keys.reshape(-1)
        uniq, inverse = np.unique(flat, return_inverse=True)
        if self.invert:
            vocab = self.get_vocabulary()
            start = self._token_start_index()
            out = [vocab[int(i)] if start <= int(i) < len(vocab) else self.oov_token
                   for i in uniq]
            if self.mask_token is not None:
                out = [self.mask_token if int(i) == 0 else o
                       for i, o in zip(uniq, out)]
            dtype = object if self.vocabulary_dtype == "string" else np.int64
            return np.array(out, dtype=dtype)[inverse].reshape(keys.shape)
        default = -1 if self.num_oov_indices != 1 else self._oov_start_index()
        idx = np.array([self._index.get(u, default) for u in uniq],
                       dtype=np.int64)[inverse].reshape(keys.shape)
        if self.mask_token is not None:
            idx = np.where(keys == self.mask_token,
                           0 if self.output_mode == "int" else _INT64_MAX, idx)
        missing = idx == -1
        if missing.any():
            if self.num_oov_indices == 0:
                raise ValueError(
                    f"When `num_oov_indices=0` all inputs should be in vocabulary, "
                    f"found OOV values {sorted(set(keys[missing].tolist()))[:10]}, "
                    f"consider setting `num_oov_indices=1`.")
            idx = np.where(missing, self._oov_buckets(keys) + self._oov_start_index(),
                           idx)
        return idx

    def _call_numpy(self, inputs):
        if not self._ready and not (self.output_mode != "int" and
                                    self.pad_to_max_tokens):
            raise RuntimeError(
                f"Layer '{self.name}' ({type(self).__name__}) has no vocabulary: "
                f"pass a `vocabulary` argument to the layer, or call "
                f"`adapt(data)` with some sample data, before calling it.")
        x = np.asarray(inputs, dtype=object) if isinstance(inputs, list) else \
            np.asarray(inputs)
        keys = x.astype(np.int64) if self.invert else self._to_tokens(x)
        if self.invert and x.dtype.kind not in "iu":
            raise TypeError(f"Layer '{self.name}' with invert=True expects integer "
                            f"indices. Received: dtype={x.dtype}.")
        scalar = keys.ndim == 0
        if scalar:
            keys = keys.reshape(1)
        idx = self._lookup(keys)
        if self.output_mode == "int":
            if self.invert and self.vocabulary_dtype == "string":
                idx = idx.astype(str)
            return idx[0] if scalar else idx
        depth = self.max_tokens if self.pad_to_max_tokens else self._frozen_vocab_size
        mode = "count" if self.output_mode == "tf_idf" else self.output_mode
        out = np.asarray(encode_categorical(idx, mode, depth, "int64"))
        if self.output_mode == "tf_idf":
            return out.astype("float32") * self._idf
        return out

    def compute_output_shape(self, input_shape):
        """The input shape ('int'), else the last axis replaced (one_hot of a
        trailing 1) or appended by the vocabulary size."""
        shape = tuple(input_shape)
        if self.output_mode == "int":
            return shape
        depth = self.max_tokens if self.pad_to_max_tokens else self._frozen_vocab_size
        if self.output_mode == "one_hot" and not (len(shape) > 1 and shape[-1] == 1):
            return shape + (depth,)
        return shape[:-1] + (depth,)

    def get_config(self):
        # An adapted vocabulary rides in the config (Keras keeps it in a saved
        # model's assets), so from_config / load_model rebuild the table.
        vocab = self.input_vocabulary
        idf = self.input_idf_weights
        if vocab is None and self._tokens:
            vocab = list(self._tokens)
            idf = None if self._idf is None else self._idf[
                self._token_start_index():self.vocabulary_size()].tolist()
        vocab = np.asarray(vocab).tolist() if isinstance(vocab, np.ndarray) else vocab
        idf = np.asarray(idf).tolist() if isinstance(idf, np.ndarray) else idf
        return {**super().get_config(), "invert": self.invert,
                "max_tokens": self.max_tokens, "num_oov_indices": self.num_oov_indices,
                "oov_token": self.oov_token, "mask_token": self.mask_token,
                "output_mode": self.output_mode, "sparse": self.sparse,
                "pad_to_max_tokens": self.pad_to_max_tokens,
                "vocabulary_dtype": self.vocabulary_dtype, "idf_weights": idf,
                "vocabulary": vocab, "vocabulary_size": self._frozen_vocab_size,
                "oov_method": self.oov_method, "salt": self.salt}


def _read_vocabulary_file(path, dtype):
    """The tokens of a vocabulary file: one per line, trailing blank lines
    dropped (Keras 3's ``load_assets``); ints for an integer vocabulary."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    while lines and lines[-1] == "":
        lines.pop()
    if dtype in ("string", str, object) or np.dtype(dtype).kind in "OUS":
        return lines
    return [int(line) for line in lines]
