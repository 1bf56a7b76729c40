"""``MultiHeadAttention`` (Vaswani et al., "Attention Is All You Need", 2017;
Keras 3's layer, its weight layout and masks).

Query, key and value are projected per head with kernels (features, heads,
dim) and biases (heads, dim); scores ``q k^T / sqrt(key_dim)`` are masked,
soft-maxed over the keys and (in training) dropped out; the heads' outputs
are projected back with a (heads, value_dim, output_dim) kernel.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.layers._masks import get_mask
from kerasflow.layers._utils import WeightArgs
from kerasflow.layers.base import Layer

__all__ = ["MultiHeadAttention"]

_PROJECTIONS = ("query", "key", "value")


def _positive_int(name, value):
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) \
            or value <= 0:
        raise ValueError(f"Received an invalid value for argument `{name}`, "
                         f"expected a positive integer. Received: {name}={value!r}")
    return int(value)


class MultiHeadAttention(Layer):
    """Multi-head attention over a sequence (Keras 3's ``MultiHeadAttention``).

    Call ``layer(query, value, key=None, attention_mask=None,
    return_attention_scores=False, training=None, use_causal_mask=False)``.

    Args:
        num_heads: number of heads. key_dim: size of each query/key head.
        value_dim: size of each value head (default key_dim).
        dropout: rate on the attention weights in training.
        use_bias: biases on the four projections.
        output_shape: int or tuple, the output's trailing dimensions
            (default: the query's last).
        attention_axes: int or tuple, the axes attention runs over (default:
            every axis but the batch and feature axes); others are batch axes.
        kernel_/bias_ initializer, regularizer, constraint: as Dense's.
        seed: dropout seed.

    Input: query (batch, T, dim_q); value (batch, S, dim_v); key (batch, S,
    dim_k), default value; with ``attention_axes``, inputs of any rank
    (batch, ..., dim) whose attention axes play T and S. ``attention_mask``
    bool (batch, T, S); padding masks of the inputs
    (``Embedding(mask_zero=True)``) and ``use_causal_mask`` are combined with
    it. Output: (batch, T, output_shape), and with
    ``return_attention_scores`` also the scores (batch, heads, T, S).

    Raises:
        ValueError: non-positive sizes; ``attention_axes`` naming the batch
            or feature axis; value and key of different inner shapes.
        NotImplementedError: ``use_gate`` or flash attention.
    """

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0,
                 use_bias=True, output_shape=None, attention_axes=None,
                 flash_attention=None, use_gate=False, sliding_window=None,
                 seed=None, **kwargs):
        self._w = WeightArgs(kwargs, "kernel", "bias")
        super().__init__(**kwargs)
        self.num_heads = _positive_int("num_heads", num_heads)
        self.key_dim = _positive_int("key_dim", key_dim)
        self.value_dim = self.key_dim if value_dim is None else _positive_int(
            "value_dim", value_dim)
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"`dropout` must be in [0, 1). Received: "
                             f"dropout={dropout!r}")
        if flash_attention or use_gate or sliding_window is not None:
            raise NotImplementedError(
                "MultiHeadAttention supports no gate, no flash attention and no "
                f"sliding window here. Received: use_gate={use_gate!r}, "
                f"flash_attention={flash_attention!r}, "
                f"sliding_window={sliding_window!r}.")
        if isinstance(output_shape, (list, tuple)):
            output_shape = tuple(_positive_int("output_shape", d)
                                 for d in output_shape)
        elif output_shape is not None:
            output_shape = _positive_int("output_shape", output_shape)
        if isinstance(attention_axes, (int, np.integer)):
            attention_axes = (int(attention_axes),)
        elif attention_axes is not None:
            if not isinstance(attention_axes, (list, tuple)):
                raise ValueError("`attention_axes` must be an int, list, or "
                                 f"tuple. Received: attention_axes="
                                 f"{attention_axes!r}")
            attention_axes = tuple(int(a) for a in attention_axes)
        self.attention_axes = attention_axes
        self.dropout, self.use_bias = float(dropout), bool(use_bias)
        self.output_dim = output_shape
        self.seed = seed

    # The projections' sizes depend on query, value and key, which arrive as
    # separate call arguments: the weights are made on the first call.
    _builds_in_call = True

    def build(self, query_shape, value_shape=None, key_shape=None):
        """Creates the four projections for inputs of these shapes."""
        value_shape = query_shape if value_shape is None else value_shape
        key_shape = value_shape if key_shape is None else key_shape
        if tuple(value_shape[1:-1]) != tuple(key_shape[1:-1]):
            raise ValueError(
                "All dimensions of `value` and `key`, except the last one, "
                f"must be equal. Received: value_shape={tuple(value_shape)} and "
                f"key_shape={tuple(key_shape)}")
        h = self.num_heads
        dims = {"query": (query_shape[-1], self.key_dim),
                "key": (key_shape[-1], self.key_dim),
                "value": (value_shape[-1], self.value_dim)}
        self._proj = {}
        for name in _PROJECTIONS:
            d_in, d = dims[name]
            kernel = self._w.add(self, "kernel", (d_in, h, d),
                                 weight_name=f"{name}/kernel")
            bias = self._w.add(self, "bias", (h, d), weight_name=f"{name}/bias") \
                if self.use_bias else None
            self._proj[name] = (kernel, bias)
        out = self.output_dim or query_shape[-1]
        out = out if isinstance(out, tuple) else (out,)
        self._out_kernel = self._w.add(self, "kernel", (h, self.value_dim, *out),
                                       weight_name="attention_output/kernel")
        self._out_bias = self._w.add(self, "bias", out,
                                     weight_name="attention_output/bias") \
            if self.use_bias else None
        self._build_equations(len(query_shape), len(out))
        self.built = True

    def _build_equations(self, rank, out_rank):
        """Keras 3's einsum equations for inputs of ``rank`` (batch included):
        projections, scores over ``attention_axes`` and the output."""
        letters = "abcdefghijklmnopqrstuvwxyz"
        free = letters[:rank - 1]
        self._proj_eq = f"{free}{letters[rank - 1]},{letters[rank - 1:rank + 2]}" \
                        f"->{free}{letters[rank:rank + 2]}"
        out = letters[rank + 1:rank + 1 + out_rank]
        self._out_eq = f"{free}{letters[rank - 1:rank + 1]}," \
                       f"{letters[rank - 1:rank + 1]}{out}->{free}{out}"
        # Projected tensors have rank + 1 axes: (batch, ..., heads, dim).
        prank = rank + 1
        axes = tuple(range(1, prank - 2)) if self.attention_axes is None else \
            tuple(a if a >= 0 else prank - 1 + a for a in self.attention_axes)
        if any(not 0 < a < prank - 2 for a in axes):
            raise ValueError(
                f"`attention_axes` must name axes of the inputs other than the "
                f"batch and feature axes (1 to {rank - 2}). Received: "
                f"attention_axes={self.attention_axes} for inputs of rank {rank}.")
        self._axes = axes
        target = letters[:prank]
        batch = [i for i in range(prank) if i not in axes + (prank - 1,)]
        source, k = "", prank
        for i in range(prank):
            if i in batch or i == prank - 1:
                source += target[i]
            else:
                source, k = source + letters[k], k + 1
        product = "".join([target[i] for i in batch] + [target[i] for i in axes]
                          + [source[i] for i in axes])
        self._dot_eq = f"{source},{target}->{product}"
        self._combine_eq = f"{product},{source}->{target}"
        self._score_rank = len(product)

    def _project(self, name, x):
        kernel, bias = self._proj[name]
        y = K.einsum(self._proj_eq, x, kernel)
        return y if bias is None else y + bias

    def _mask(self, query, value, key, attention_mask, use_causal_mask):
        """bool (batch or 1, T, S) of allowed positions, or None."""
        keep = None

        def both(m):
            nonlocal keep
            m = K.cast(m, "float32")
            keep = m if keep is None else keep * m

        q_mask, v_mask = get_mask(query), get_mask(value)
        k_mask = get_mask(key) if key is not value else None
        if q_mask is not None:
            both(K.expand_dims(q_mask, -1))
        for m in (v_mask, k_mask):
            if m is not None:
                both(K.expand_dims(m, 1))
        if use_causal_mask:
            t, s = query.shape[1], value.shape[1]
            if t is None or s is None:
                raise ValueError("use_causal_mask needs known sequence lengths. "
                                 f"Received: T={t}, S={s}.")
            both(np.tril(np.ones((1, t, s), "float32")))
        if attention_mask is not None:
            both(attention_mask)
        return None if keep is None else K.greater(keep, 0.0)

    def call(self, query, value, key=None, query_mask=None, value_mask=None,
             key_mask=None, attention_mask=None, return_attention_scores=False,
             training=None, use_causal_mask=False):
        key = value if key is None else key
        if not self.built:
            self.build(query.shape, value.shape, key.shape)
        for name, m in (("query", query_mask), ("value", value_mask),
                        ("key", key_mask)):
            if m is not None:
                attention_mask = _combine(attention_mask, name, m)
        q = self._project("query", query)
        k = self._project("key", key)
        v = self._project("value", value)
        keep = self._mask(query, value, key, attention_mask, use_causal_mask)
        if keep is not None:
            # Keras 3: the mask gains axes from the heads' axis on.
            expand = -2 * len(self._axes) - 1
            for _ in range(self._score_rank - len(keep.shape)):
                keep = K.expand_dims(keep, expand)
        scale = 1.0 / np.sqrt(self.key_dim)
        weights = None
        if self._fusable(q, training, return_attention_scores):
            # One op for scores, softmax and the weighted sum (backend.ops.attention).
            out = K.fused_attention(q, k, v, scale, mask=keep)
        else:
            scores = K.einsum(self._dot_eq, k, q * scale)  # (B, ..., N, <T>, <S>)
            if keep is not None:
                scores = scores + (1.0 - K.cast(keep, scores.dtype)) * -1e9
            norm = tuple(range(self._score_rank - len(self._axes), self._score_rank))
            weights = K.softmax(scores, axis=norm if len(norm) > 1 else -1)
            dropped = weights
            if training and self.dropout > 0:
                dropped = K.dropout(weights, self.dropout, seed=self.seed)
            out = K.einsum(self._combine_eq, dropped, v)  # (B, ..., T, N, dv)
        out = K.einsum(self._out_eq, out, self._out_kernel)
        if self._out_bias is not None:
            out = out + self._out_bias
        return (out, weights) if return_attention_scores else out

    def _fusable(self, q, training, return_scores):
        """Whether the fused attention op computes what the einsum/softmax
        graph would: one attention axis over 3-D inputs, float32/float64, no
        dropout on the weights in training, weights not returned."""
        return (K.fused_attention_enabled() and self._axes == (1,)
                and self._score_rank == 4 and q.dtype in (np.float32, np.float64)
                and not return_scores and not (training and self.dropout > 0))

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads,
                "key_dim": self.key_dim, "value_dim": self.value_dim,
                "dropout": self.dropout, "use_bias": self.use_bias,
                "output_shape": self.output_dim,
                "attention_axes": self.attention_axes,
                "seed": self.seed, **self._w.config()}


def _combine(attention_mask, name, mask):
    """``attention_mask`` and a (batch, len) padding mask of ``name``."""
    m = K.cast(mask, "float32")
    m = K.expand_dims(m, -1) if name == "query" else K.expand_dims(m, 1)
    if attention_mask is None:
        return K.greater(m, 0.0)
    return K.greater(K.cast(attention_mask, "float32") * m, 0.0)
