"""Dot-product and additive attention over [query, value, key] (Keras 3's
``Attention`` and ``AdditiveAttention``).

``Attention``: Luong-style scores ``q k^T`` (Luong et al., "Effective
Approaches to Attention-based Neural Machine Translation", 2015), optionally
times a learned scalar; ``score_mode='concat'`` sums ``tanh(q + k)`` instead.
``AdditiveAttention``: Bahdanau-style scores ``sum(scale * tanh(q + k))``
(Bahdanau et al., "Neural Machine Translation by Jointly Learning to Align and
Translate", 2015). Both soft-max the scores over the value steps and return
their weighted sum of the values.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.layers._masks import get_mask, set_mask
from kerasflow.layers.base import Layer

__all__ = ["Attention", "AdditiveAttention"]


def _check_list(layer, value, what, shapes=False):
    if not isinstance(value, (list, tuple)) or (shapes and not all(
            isinstance(s, (list, tuple)) for s in value)):
        raise ValueError(
            f"{type(layer).__name__} layer must be called on a list of {what}, "
            f"namely [query, value] or [query, value, key]. Received: "
            f"{what}={value!r}.")
    if not 2 <= len(value) <= 3:
        raise ValueError(
            f"{type(layer).__name__} layer accepts a {what} list of length 2 or "
            f"3, namely [query, value] or [query, value, key]. Received length: "
            f"{len(value)}.")


class Attention(Layer):
    """Dot-product attention (Keras 3's ``keras.layers.Attention``).

    Call ``layer([query, value])`` or ``layer([query, value, key])`` (key
    defaults to value), with optional ``mask=[query_mask, value_mask]``,
    ``training``, ``return_attention_scores`` and ``use_causal_mask``.

    Args:
        use_scale: multiply the scores by a learned scalar ``scale`` (init 1).
        score_mode: 'dot' (``q k^T``) or 'concat' (``concat_score_weight *
            sum(tanh(scale * (q + k)))``, a learned scalar init 1).
        dropout: rate on the attention weights, in training only.
        seed: int seed of the dropout.

    Input: query float (batch, Tq, dim), value (batch, Tv, dim), key (batch,
    Tv, dim). Masks: bool (batch, Tq) and (batch, Tv), True for real steps;
    by default the masks the inputs carry (``Embedding(mask_zero=True)``).
    ``use_causal_mask`` lets query step i see value steps <= i. Output (batch,
    Tq, dim) of the inputs' dtype, zero at masked query steps (and carrying the
    query mask); with ``return_attention_scores`` also the weights (batch, Tq,
    Tv).

    Raises:
        ValueError: inputs or masks not a list of 2 or 3; a bad score_mode; a
            query and key of different last dimensions.

    Example:
        >>> att = Attention()
        >>> out = att([np.ones((2, 3, 4), "float32"), np.ones((2, 5, 4), "float32")])
    """

    def __init__(self, use_scale=False, score_mode="dot", dropout=0.0, seed=None,
                 **kwargs):
        super().__init__(**kwargs)
        if score_mode not in ("dot", "concat"):
            raise ValueError(f"Invalid value for argument score_mode. Expected one "
                             f"of {{'dot', 'concat'}}. Received: "
                             f"score_mode={score_mode}")
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"`dropout` must be in [0, 1). Received: "
                             f"dropout={dropout!r}")
        self.use_scale, self.score_mode = bool(use_scale), score_mode
        self.dropout, self.seed = float(dropout), seed

    def build(self, input_shape):
        _check_list(self, input_shape, "inputs", shapes=True)
        q, v = input_shape[0], input_shape[1]
        k = input_shape[2] if len(input_shape) > 2 else v
        if q[-1] is not None and k[-1] is not None and q[-1] != k[-1]:
            raise ValueError(
                f"Layer '{self.name}' expects query and key of the same last "
                f"dimension. Received: query.shape={tuple(q)}, "
                f"key.shape={tuple(k)}.")
        self.scale = self.concat_score_weight = None
        if self.use_scale:
            self.scale = self.add_weight("scale", (), "ones")
        if self.score_mode == "concat":
            self.concat_score_weight = self.add_weight("concat_score_weight", (),
                                                       "ones")
        self.built = True

    def _scores(self, q, k):
        """(batch, Tq, Tv) scores of query (batch, Tq, d), key (batch, Tv, d)."""
        if self.score_mode == "dot":
            s = K.matmul(q, K.transpose_last(k))
            return s if self.scale is None else s * self.scale
        pair = K.expand_dims(q, -2) + K.expand_dims(k, -3)
        if self.scale is not None:
            pair = self.scale * pair
        return self.concat_score_weight * K.sum(K.tanh(pair), axis=-1)

    def call(self, inputs, mask=None, training=None, return_attention_scores=False,
             use_causal_mask=False):
        _check_list(self, inputs, "inputs")
        q, v = inputs[0], inputs[1]
        k = inputs[2] if len(inputs) > 2 else v
        if mask is None:
            mask = [get_mask(q), get_mask(v)]
        else:
            _check_list(self, mask, "mask")
        q_mask, v_mask = mask[0], mask[1]
        scores = self._scores(q, k)
        keep = None
        if v_mask is not None:
            keep = K.expand_dims(K.cast(v_mask, "bool"), -2)     # (batch, 1, Tv)
        if use_causal_mask:
            tq, tv = scores.shape[-2], scores.shape[-1]
            if tq is None or tv is None:
                raise ValueError(f"Layer '{self.name}': use_causal_mask needs known "
                                 f"sequence lengths. Received: Tq={tq}, Tv={tv}.")
            causal = np.tril(np.ones((1, tq, tv), bool))
            keep = causal if keep is None else K.logical_and(keep, causal)
        if keep is not None:
            # Keras subtracts 1e9 (65504 in float16) where a step is masked.
            big = 65504.0 if scores.dtype == np.float16 else 1.0e9
            scores = K.where(keep, scores, scores - big)
        weights = K.softmax(scores, axis=-1)
        dropped = weights
        if training and self.dropout > 0:
            dropped = K.dropout(weights, self.dropout, seed=self.seed)
        out = K.matmul(dropped, v)
        if q_mask is not None:
            q_mask = K.cast(q_mask, "bool")
            out = K.where(K.expand_dims(q_mask, -1), out, K.zeros_like(out))
            set_mask(out, q_mask)
        return (out, weights) if return_attention_scores else out

    def compute_output_shape(self, input_shape):
        return (*input_shape[0][:-1], input_shape[1][-1])

    def get_config(self):
        return {**super().get_config(), "use_scale": self.use_scale,
                "score_mode": self.score_mode, "dropout": self.dropout,
                "seed": self.seed}


class AdditiveAttention(Attention):
    """Additive (Bahdanau-style) attention (Keras 3's
    ``keras.layers.AdditiveAttention``): scores ``sum(scale * tanh(q + k),
    axis=-1)`` with a learned ``scale`` of shape (dim,) (glorot-uniform
    initialized) when ``use_scale`` (the default).

    Call, masks, inputs, outputs and errors as ``Attention``; arguments
    ``use_scale=True``, ``dropout``, ``seed``.
    """

    def __init__(self, use_scale=True, dropout=0.0, **kwargs):
        kwargs.pop("score_mode", None)
        super().__init__(use_scale=use_scale, dropout=dropout, **kwargs)

    def build(self, input_shape):
        _check_list(self, input_shape, "inputs", shapes=True)
        dim = input_shape[0][-1]
        if dim is None:
            raise ValueError(f"Layer '{self.name}' needs a known query dimension. "
                             f"Received: query.shape={tuple(input_shape[0])}.")
        self.scale = self.concat_score_weight = None
        if self.use_scale:
            self.scale = self.add_weight("scale", (dim,), "glorot_uniform")
        self.built = True

    def _scores(self, q, k):
        pair = K.tanh(K.expand_dims(q, -2) + K.expand_dims(k, -3))
        if self.scale is not None:
            pair = self.scale * pair
        return K.sum(pair, axis=-1)

    def get_config(self):
        config = super().get_config()
        config.pop("score_mode")
        return config
