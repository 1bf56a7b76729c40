"""``StringLookup`` and ``IntegerLookup`` (Keras 3's layers of those names:
same arguments, defaults, index layout and values), eager numpy layers on
``IndexLookup``; call them on arrays or inside ``kerasflow.data`` ``map``."""

from __future__ import annotations

import numpy as np

from kerasflow.layers.preprocessing.index_lookup import IndexLookup

__all__ = ["StringLookup", "IntegerLookup"]

_DOC_ARGS = """
    Args:
        max_tokens: the most indices (vocabulary + mask + OOV); None: no limit.
        num_oov_indices: OOV buckets; with more than one, an OOV token goes
            to bucket {bucket}.
        mask_token: the token that maps to index 0 ('int' mode) or to nothing
            (the other modes); None: no mask.
        oov_token: the token that ``invert=True`` returns for OOV indices.
        vocabulary: a list or array of tokens (or None, then ``adapt``).
        idf_weights: with 'tf_idf', one weight per vocabulary token.
        invert: map indices back to tokens ('int' mode only).
        output_mode: 'int' (int64 indices, the input's shape), 'one_hot',
            'multi_hot' or 'count' (int64 vectors of the vocabulary size, as
            Keras' code produces), or 'tf_idf' (float32 counts times idf).
            The vector modes encode axis 1 of (batch, k) inputs: (batch,
            vocabulary_size), as ``CategoryEncoding``.
        pad_to_max_tokens: vector outputs of ``max_tokens`` entries.
        salt: with more than one OOV bucket, hash with keyed SipHash (an int
            k means (k, k)) instead of FarmHash.
        sparse: False only (dense outputs).
        encoding / vocabulary_dtype / oov_method: StringLookup's bytes
            decoding; IntegerLookup's 'int64' keys and 'floormod' or
            'farmhash' OOV buckets.

    Raises:
        ValueError: invalid arguments (named, with the received value), a
            repeated vocabulary or special tokens inside it, a vocabulary over
            ``max_tokens``, OOV inputs with ``num_oov_indices=0``, ``adapt``
            after a vocabulary was given.
        RuntimeError: a call before any vocabulary exists (pass
            ``vocabulary`` or call ``adapt``; Keras would map everything to
            OOV silently).
        TypeError: inputs of the wrong dtype, or a symbolic tensor (these
            layers run on arrays).
"""


class StringLookup(IndexLookup):
    """Maps strings to integer indices from a vocabulary (Keras 3's
    ``keras.layers.StringLookup``).

    Inputs: str/bytes/object arrays of any shape (bytes decoded with
    ``encoding``); with ``invert=True``, int indices (output: str array).
    {args}
    Example::

        >>> layer = StringLookup(vocabulary=["a", "b", "c"])
        >>> layer(np.array([["a", "c", "z"]]))      # -> [[1, 3, 0]]
    """

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None,
                 oov_token="[UNK]", vocabulary=None, idf_weights=None, invert=False,
                 output_mode="int", pad_to_max_tokens=False, sparse=False,
                 encoding="utf-8", name=None, salt=None, **kwargs):
        self.encoding = encoding
        kwargs.pop("vocabulary_dtype", None)
        super().__init__(max_tokens=max_tokens, num_oov_indices=num_oov_indices,
                         mask_token=mask_token, oov_token=oov_token,
                         vocabulary=vocabulary, idf_weights=idf_weights,
                         invert=invert, output_mode=output_mode, sparse=sparse,
                         pad_to_max_tokens=pad_to_max_tokens, salt=salt,
                         vocabulary_dtype="string", name=name, **kwargs)

    def _to_tokens(self, values):
        if values.dtype.kind == "U":
            return values.astype(object)
        if values.dtype.kind in "SO":
            def one(v):
                if isinstance(v, (bytes, np.bytes_)):
                    return bytes(v).decode(self.encoding)
                if isinstance(v, str):
                    return str(v)
                raise TypeError(f"Layer '{self.name}' (StringLookup) expects "
                                f"strings. Received: an element {v!r}.")
            return np.vectorize(one, otypes=[object])(values) if values.size else \
                values.astype(object)
        raise TypeError(f"Layer '{self.name}' (StringLookup) expects string "
                        f"inputs (str or bytes arrays). Received: "
                        f"dtype={values.dtype}.")

    def get_config(self):
        config = {**super().get_config(), "encoding": self.encoding}
        config.pop("vocabulary_dtype")
        config.pop("oov_method")
        return config


class IntegerLookup(IndexLookup):
    """Maps integers to contiguous indices from a vocabulary (Keras 3's
    ``keras.layers.IntegerLookup``).

    Inputs: integer arrays of any shape (int64 tokens); with ``invert=True``,
    indices (output: int64 tokens).
    {args}
    Example::

        >>> layer = IntegerLookup(vocabulary=[12, 36, 1138])
        >>> layer(np.array([[12, 1138, 42]]))       # -> [[1, 3, 0]]
    """

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None,
                 oov_token=-1, vocabulary=None, vocabulary_dtype="int64",
                 idf_weights=None, invert=False, output_mode="int", sparse=False,
                 pad_to_max_tokens=False, oov_method="floormod", salt=None,
                 name=None, **kwargs):
        if vocabulary_dtype != "int64":
            raise ValueError(f"Only `vocabulary_dtype='int64'` is supported at "
                             f"this time. Received: "
                             f"vocabulary_dtype={vocabulary_dtype}")
        super().__init__(max_tokens=max_tokens, num_oov_indices=num_oov_indices,
                         mask_token=mask_token, oov_token=oov_token,
                         vocabulary=vocabulary, idf_weights=idf_weights,
                         invert=invert, output_mode=output_mode, sparse=sparse,
                         pad_to_max_tokens=pad_to_max_tokens, oov_method=oov_method,
                         salt=salt, vocabulary_dtype="int64", name=name, **kwargs)

    def _to_tokens(self, values):
        if values.dtype.kind in "iub" or (values.dtype.kind == "O" and all(
                isinstance(v, (int, np.integer)) for v in values.reshape(-1))):
            return values.astype(np.int64)
        raise TypeError(f"Layer '{self.name}' (IntegerLookup) expects integer "
                        f"inputs. Received: dtype={values.dtype}.")


if StringLookup.__doc__:  # (python -OO strips docstrings)
    StringLookup.__doc__ = StringLookup.__doc__.replace("{args}", _DOC_ARGS.format(
        bucket="farmhash64(token) % num_oov_indices (TF's to_hash_bucket_fast)"))
    IntegerLookup.__doc__ = IntegerLookup.__doc__.replace("{args}", _DOC_ARGS.format(
        bucket="token % num_oov_indices (oov_method='floormod') or its farmhash"))
