"""``TextVectorization`` (Keras 3's ``keras.layers.TextVectorization``: the
same standardization, splitting, n-grams, vocabulary and outputs), an eager
numpy layer over a ``StringLookup`` with mask token ''."""

from __future__ import annotations

import re

import numpy as np

from kerasflow.layers.preprocessing.base import (
    EagerArrayLayer,
    adapt_batches,
    check_adaptable,
)
from kerasflow.layers.preprocessing.lookup import StringLookup

__all__ = ["TextVectorization"]

# Keras' DEFAULT_STRIP_REGEX, applied by TF's RE2 regex_replace.
_PUNCTUATION = re.compile(r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']')
# tf.strings.split with no separator splits on ASCII whitespace.
_WHITESPACE = re.compile(r"[ \t\n\v\f\r]+")
_UPPER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
_STANDARDIZE = ("lower_and_strip_punctuation", "lower", "strip_punctuation")


class TextVectorization(EagerArrayLayer):
    """Turns strings into token indices or token-count vectors (Keras 3's
    ``keras.layers.TextVectorization``): standardize, split, form n-grams,
    look tokens up in a vocabulary built by ``adapt`` or given.

    Args:
        max_tokens: the most indices, including the mask (''; 'int' mode) and
            the OOV token '[UNK]'.
        standardize: 'lower_and_strip_punctuation' (default), 'lower',
            'strip_punctuation', None, or a callable on a numpy str array.
            Lowercasing is ASCII-only, as TF's ``strings.lower``.
        split: 'whitespace' (default), 'character', None, or a callable
            taking a str and returning its tokens.
        ngrams: None, an int n (all 1..n-grams) or a tuple of widths; n-grams
            are tokens joined by ' ', widths in order.
        output_mode: 'int' (int64 (batch, output_sequence_length) indices, 0
            padded; without a length, padded to the longest row), 'multi_hot',
            'count' (int64 (batch, vocabulary size)) or 'tf_idf' (float32).
        output_sequence_length: pad or truncate 'int' outputs to this length.
        pad_to_max_tokens: vector outputs of ``max_tokens`` entries.
        vocabulary, idf_weights: a given vocabulary (and idf weights).
        encoding: of bytes inputs.

    Input: (batch,) or (batch, 1) str/bytes arrays, or a list of str.

    Raises:
        ValueError: invalid arguments (named, with the value), inputs of rank
            above 1 whose last axis is not 1 (with a split), ``adapt`` after a
            vocabulary was given.
        RuntimeError: a call before ``adapt`` or a vocabulary.
        TypeError: non-string inputs or a symbolic tensor (this layer runs
            on arrays: use it in a ``kerasflow.data`` ``map``).

    Example::

        >>> tv = TextVectorization(max_tokens=10, output_sequence_length=4)
        >>> tv.adapt(["the cat sat", "the dog"])
        >>> tv(["The cat!"])                 # -> [[2, 4, 0, 0]]
    """

    def __init__(self, max_tokens=None, standardize="lower_and_strip_punctuation",
                 split="whitespace", ngrams=None, output_mode="int",
                 output_sequence_length=None, pad_to_max_tokens=False,
                 vocabulary=None, idf_weights=None, sparse=False, ragged=False,
                 encoding="utf-8", name=None, **kwargs):
        if not (standardize is None or callable(standardize)
                or standardize in _STANDARDIZE):
            raise ValueError(f"Invalid value for argument `standardize`. Expected "
                             f"one of {_STANDARDIZE}, None or a callable. "
                             f"Received: standardize={standardize!r}")
        if not (split is None or callable(split) or split in ("whitespace",
                                                              "character")):
            raise ValueError(f"Invalid value for argument `split`. Expected one of "
                             f"('whitespace', 'character'), None or a callable. "
                             f"Received: split={split!r}")
        output_mode = {"binary": "multi_hot", "tf-idf": "tf_idf"}.get(
            output_mode, output_mode)
        if output_mode not in ("int", "multi_hot", "count", "tf_idf"):
            raise ValueError(f"Invalid value for argument `output_mode`. Expected "
                             f"one of ('int', 'multi_hot', 'count', 'tf_idf'). "
                             f"Received: output_mode={output_mode!r}")
        if isinstance(ngrams, list):
            ngrams = tuple(ngrams)
        if not (ngrams is None or isinstance(ngrams, int) or (
                isinstance(ngrams, tuple) and all(isinstance(n, int)
                                                  for n in ngrams))):
            raise ValueError(f"`ngrams` must be None, an integer, or a tuple of "
                             f"integers. Received: ngrams={ngrams}")
        if output_mode == "int" and not (output_sequence_length is None or
                                         isinstance(output_sequence_length, int)):
            raise ValueError(f"`output_sequence_length` must be either None or an "
                             f"integer when `output_mode` is 'int'. Received: "
                             f"output_sequence_length={output_sequence_length}")
        if output_mode != "int" and output_sequence_length is not None:
            raise ValueError(f"`output_sequence_length` must not be set if "
                             f"`output_mode` is not 'int'. Received "
                             f"output_sequence_length={output_sequence_length}.")
        if sparse or ragged:
            raise ValueError(f"kerasflow's TextVectorization gives dense outputs: "
                             f"sparse and ragged must be False. Received: "
                             f"sparse={sparse}, ragged={ragged}.")
        has_input = kwargs.pop("has_input_vocabulary", vocabulary is not None)
        vocabulary_size = kwargs.pop("vocabulary_size", None)
        kwargs.pop("dtype", None)
        super().__init__(name=name, **kwargs)
        self._max_tokens = max_tokens
        self._standardize, self._split = standardize, split
        self._ngrams_arg = ngrams
        self._ngrams = tuple(range(1, ngrams + 1)) if isinstance(ngrams, int) \
            else ngrams
        self._output_mode = output_mode
        self._output_sequence_length = output_sequence_length
        self._encoding, self._pad = encoding, bool(pad_to_max_tokens)
        self._has_input_vocabulary = has_input
        self._lookup_layer = StringLookup(
            max_tokens=max_tokens, vocabulary=vocabulary, idf_weights=idf_weights,
            pad_to_max_tokens=pad_to_max_tokens, mask_token="",
            output_mode=output_mode, encoding=encoding,
            has_input_vocabulary=has_input, vocabulary_size=vocabulary_size,
            name=f"{self.name}_lookup")

    # -- text to tokens ---------------------------------------------------------------
    def _strings(self, inputs) -> np.ndarray:
        x = np.asarray(inputs, dtype=object) if isinstance(inputs, (list, tuple)) \
            else np.asarray(inputs)
        if x.dtype.kind not in "USO":
            raise TypeError(f"Layer '{self.name}' (TextVectorization) expects "
                            f"string inputs. Received: dtype={x.dtype}.")
        return self._lookup_layer._to_tokens(x)

    def _standardized(self, x: np.ndarray) -> np.ndarray:
        if callable(self._standardize):
            return self._lookup_layer._to_tokens(np.asarray(self._standardize(
                x.astype(str))))
        out = x
        if self._standardize in ("lower", "lower_and_strip_punctuation"):
            out = np.vectorize(lambda s: s.translate(_UPPER), otypes=[object])(out)
        if self._standardize in ("strip_punctuation", "lower_and_strip_punctuation"):
            out = np.vectorize(lambda s: _PUNCTUATION.sub("", s), otypes=[object])(out)
        return out

    def _split_one(self, s: str) -> list:
        if self._split == "whitespace":
            return [t for t in _WHITESPACE.split(s) if t]
        if self._split == "character":
            return list(s)
        return [str(t) for t in self._split(s)]

    def _ngrammed(self, tokens: list) -> list:
        if self._ngrams is None:
            return tokens
        return [" ".join(tokens[i:i + n]) for n in self._ngrams
                for i in range(len(tokens) - n + 1)]

    def _documents(self, inputs) -> list:
        """One token list per row of ``inputs``."""
        x = self._standardized(self._strings(inputs))
        if x.ndim == 0:
            x = x.reshape(1)
        if self._split is None:
            return [self._ngrammed([t for t in row.reshape(-1)])
                    for row in x.reshape(x.shape[0], -1)]
        if x.ndim > 1:
            if x.shape[-1] != 1:
                raise ValueError(f"When using `TextVectorization` to tokenize "
                                 f"strings, the input rank must be 1 or the last "
                                 f"shape dimension must be 1. Received: "
                                 f"inputs.shape={x.shape} with rank={x.ndim}")
            x = x[..., 0]
        return [self._ngrammed(self._split_one(s)) for s in x.reshape(-1)]

    # -- vocabulary ------------------------------------------------------------
    def adapt(self, data, batch_size=None, steps=None):
        """Builds the vocabulary from ``data``: an array or list of strings
        (one document each), a ``kerasflow.data.Dataset`` of string batches,
        or an iterable of batches.

        Raises:
            ValueError: the layer was given a vocabulary.
        """
        check_adaptable(self)
        if isinstance(data, (list, tuple)):
            data = np.asarray(data, dtype=object)
        self._lookup_layer.adapt_documents(
            doc for batch in adapt_batches(data, steps, "TextVectorization.adapt")
            for doc in self._documents(batch))

    def set_vocabulary(self, vocabulary, idf_weights=None):
        """Sets the vocabulary (see ``StringLookup.set_vocabulary``)."""
        self._lookup_layer.set_vocabulary(vocabulary, idf_weights)

    def get_vocabulary(self, include_special_tokens=True) -> list:
        """The tokens in index order ('' and '[UNK]' first in 'int' mode)."""
        return self._lookup_layer.get_vocabulary(include_special_tokens)

    def vocabulary_size(self) -> int:
        """The number of indices, special tokens included."""
        return self._lookup_layer.vocabulary_size()

    # -- call ------------------------------------------------------------------
    def _call_numpy(self, inputs):
        docs = self._documents(inputs)
        lookup = self._lookup_layer
        if not lookup._ready:
            raise RuntimeError(f"Layer '{self.name}' (TextVectorization) has no "
                               f"vocabulary: call `adapt(data)` or pass "
                               f"`vocabulary` before calling it.")
        flat = np.array([t for d in docs for t in d] or [""], dtype=object)
        idx = lookup._lookup(flat)
        rows, pos = [], 0
        for d in docs:
            rows.append(idx[pos:pos + len(d)])
            pos += len(d)
        if self._output_mode == "int":
            length = self._output_sequence_length
            if length is None:
                length = max((len(r) for r in rows), default=0)
            out = np.zeros((len(rows), length), dtype=np.int64)
            for i, r in enumerate(rows):
                r = r[:length]
                out[i, :len(r)] = r
            return out
        depth = lookup.max_tokens if self._pad else lookup._frozen_vocab_size
        counts = np.zeros((len(rows), depth), dtype=np.int64)
        for i, r in enumerate(rows):
            r = r[(r >= 0) & (r < depth)]
            np.add.at(counts[i], r, 1)
        if self._output_mode == "multi_hot":
            return np.minimum(counts, 1)
        if self._output_mode == "tf_idf":
            return counts.astype("float32") * lookup._idf
        return counts

    def compute_output_shape(self, input_shape):
        """(batch, output_sequence_length) in 'int' mode, else (batch,
        vocabulary size)."""
        if self._output_mode == "int":
            return (input_shape[0], self._output_sequence_length)
        lookup = self._lookup_layer
        return (input_shape[0], lookup.max_tokens if self._pad
                else lookup._frozen_vocab_size)

    def get_config(self):
        lookup = self._lookup_layer.get_config()
        return {**super().get_config(), "max_tokens": self._max_tokens,
                "standardize": self._standardize, "split": self._split,
                "ngrams": self._ngrams_arg, "output_mode": self._output_mode,
                "output_sequence_length": self._output_sequence_length,
                "pad_to_max_tokens": self._pad, "sparse": False, "ragged": False,
                "vocabulary": lookup["vocabulary"],
                "idf_weights": lookup["idf_weights"], "encoding": self._encoding,
                "vocabulary_size": lookup["vocabulary_size"]}
