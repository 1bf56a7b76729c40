"""Embedding layer: integer ids to dense vectors, with a sparse gradient."""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.layers._masks import set_mask
from kerasflow.layers._utils import WeightArgs
from kerasflow.layers.base import Layer

__all__ = ["Embedding"]


class Embedding(Layer):
    """Turns integer ids into rows of a trainable table (Keras' ``Embedding``).

    ``y = embeddings[ids]``. The gradient of the table is sparse: only the rows
    of the batch's ids (``kerasflow.backend.embedding_lookup``), and every
    optimizer applies it to those rows only (lazy semantics for Adam, RMSprop
    and momentum: rows absent from a batch keep their moments; exact for SGD
    and Adagrad; see ``kerasflow.optimizers.sparse``).

    Args:
        input_dim: size of the vocabulary (ids lie in [0, input_dim)).
        output_dim: size of each vector.
        embeddings_initializer: default 'random_uniform' (U(-0.05, 0.05), as
            Keras' 'uniform').
        embeddings_regularizer, embeddings_constraint: as Dense's kernel ones
            (a regularizer makes the gradient dense: it reads the whole table).
        mask_zero: id 0 is padding: the layer emits a (batch, steps) mask that
            recurrent layers and GlobalAveragePooling1D honour.
        weights: an initial table (input_dim, output_dim), or ``[table]`` as
            Keras 2 programs pass pretrained vectors; the layer is built at once.

    Input: integer (or integral float) tensor (batch, ...).
    Output: (batch, ..., output_dim).

    Raises:
        ValueError: non-positive sizes; ``weights`` of another shape than
            (input_dim, output_dim); at run time, an id < 0 or >= input_dim,
            naming the layer, the range and the received ids.
    """

    def __init__(self, input_dim, output_dim, mask_zero=False, input_length=None,
                 weights=None, **kwargs):
        self._w = WeightArgs(kwargs, "embeddings")
        super().__init__(**kwargs)
        for name, v in (("input_dim", input_dim), ("output_dim", output_dim)):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"Both `input_dim` and `output_dim` should be "
                                 f"positive. Received: {name}={v!r}.")
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.mask_zero = bool(mask_zero)
        self.input_length = input_length
        if weights is not None:
            table = weights[0] if isinstance(weights, (list, tuple)) and len(
                weights) == 1 else weights
            self.build(None)
            self.set_weights([np.asarray(table)])

    def build(self, input_shape):
        self.embeddings = self._w.add(self, "embeddings",
                                      (self.input_dim, self.output_dim))
        self.built = True

    def call(self, inputs):
        ids = inputs if inputs.dtype.kind in "iu" else K.cast(inputs, "int64")
        out = K.embedding_lookup(self.embeddings, ids, owner=self.name)
        if self.mask_zero:
            set_mask(out, K.not_equal(ids, 0))
        return out

    def compute_mask(self, inputs, mask=None):
        """The (batch, ...) boolean mask ``inputs != 0``, or None."""
        return K.not_equal(inputs, 0) if self.mask_zero else None

    def get_config(self):
        config = super().get_config()
        config.update(input_dim=self.input_dim, output_dim=self.output_dim,
                      mask_zero=self.mask_zero, **self._w.config())
        if self.input_length is not None:
            config["input_length"] = self.input_length
        return config
