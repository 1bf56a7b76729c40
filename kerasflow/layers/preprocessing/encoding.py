"""Categorical encodings: ``encode_categorical`` (Keras'
``numerical_utils.encode_categorical_inputs``), ``CategoryEncoding`` and
``Discretization`` (Keras 3's layers of those names: same arguments, adapt
algorithm and values). Graph layers: they run eagerly on arrays and add ops
on symbolic tensors (no gradient: their outputs are counts)."""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.layers.base import Layer
from kerasflow.layers.layer_helpers import MISSING, pop_first_argument
from kerasflow.layers.preprocessing.base import adapt_batches

__all__ = ["CategoryEncoding", "Discretization", "encode_categorical"]

_MODES = ("int", "one_hot", "multi_hot", "count")


def encode_categorical(indices, output_mode, depth, dtype, count_weights=None):
    """Encodes integer ``indices`` (Keras 3's numpy-backend semantics).

    'int': ``indices`` cast to ``dtype``. 'one_hot': a ``depth`` axis appended
    (a trailing axis of size 1 replaced). 'multi_hot' / 'count': one-hot
    vectors combined (max / sum, ``count_weights`` weighting the sum) over
    axis 1 (axis 0 for a vector), so (batch, k) gives (batch, depth). Indices
    outside [0, depth) count nowhere. Works on arrays and symbolic tensors.
    """
    if output_mode == "int":
        return K.cast(indices, dtype)
    x = indices
    if len(x.shape) == 0:
        x = K.expand_dims(x, -1)
    if output_mode == "one_hot" and len(x.shape) > 1 and x.shape[-1] == 1:
        x = K.squeeze(x, -1)
    x = K.cast(x, "int64")
    hot = K.cast(K.equal(K.expand_dims(x, -1), np.arange(depth, dtype=np.int64)),
                 dtype)
    if output_mode == "one_hot":
        return hot
    axis = 1 if len(x.shape) > 1 else 0
    if output_mode == "multi_hot":
        return K.max(hot, axis=axis)
    if count_weights is not None:
        hot = hot * K.expand_dims(K.cast(count_weights, dtype), -1)
    return K.sum(hot, axis=axis)


def _check_mode(output_mode, allowed, layer):
    if output_mode not in allowed:
        raise ValueError(f"Invalid value for argument `output_mode` of {layer}. "
                         f"Expected one of {allowed}. Received: "
                         f"output_mode={output_mode!r}")


class CategoryEncoding(Layer):
    """Encodes integer categories in [0, num_tokens) as one-hot, multi-hot or
    count vectors (Keras 3's ``keras.layers.CategoryEncoding``).

    Args:
        num_tokens: the number of categories (the output's last dimension).
        output_mode: 'multi_hot' (default; 'binary' is an alias), 'one_hot'
            or 'count'.
        sparse: False only.

    Call args:
        inputs: integer categories: a scalar, (batch,) or (batch, k).
        count_weights: with 'count', per-input weights of the inputs' shape.

    Output: the layer's dtype (float32 by default): (num_tokens,) for a
    vector or scalar in multi_hot/count mode, (batch, num_tokens) for
    (batch, k), and an appended (or replacing a trailing 1) axis for one_hot.

    Raises:
        ValueError: a missing or non-positive num_tokens, an unknown mode,
            count_weights outside 'count' mode, or sparse=True.
    """

    def __init__(self, num_tokens=None, output_mode="multi_hot", sparse=False,
                 **kwargs):
        super().__init__(**kwargs)
        if output_mode == "binary":
            output_mode = "multi_hot"
        _check_mode(output_mode, ("count", "one_hot", "multi_hot"), "CategoryEncoding")
        if num_tokens is None:
            raise ValueError("num_tokens must be set to use this layer. If the "
                             "number of tokens is not known beforehand, use the "
                             "IntegerLookup layer instead.")
        if num_tokens < 1:
            raise ValueError(f"`num_tokens` must be >= 1. Received: "
                             f"num_tokens={num_tokens}.")
        if sparse:
            raise ValueError("`sparse=True` is not supported by kerasflow "
                             "(dense outputs only). Received: sparse=True.")
        self.num_tokens, self.output_mode = int(num_tokens), output_mode
        self.sparse = False

    def __call__(self, inputs=MISSING, *args, **kwargs):
        if inputs is MISSING:
            inputs = pop_first_argument(self, kwargs)
        if not K.is_symbolic(inputs):
            x = np.asarray(inputs)
            if x.dtype.kind not in "iub":
                raise TypeError(f"Layer '{self.name}' (CategoryEncoding) expects "
                                f"integer inputs. Received: dtype={x.dtype}.")
            weights = kwargs.pop("count_weights", args[0] if args else None)
            self._check_weights(weights)
            # Eager: computed at once (scalars and vectors have no batch axis).
            return np.asarray(encode_categorical(x, self.output_mode, self.num_tokens,
                                                 self.dtype, weights))
        return super().__call__(inputs, *args, **kwargs)

    def _check_weights(self, count_weights):
        if count_weights is not None and self.output_mode != "count":
            raise ValueError(f"`count_weights` is not used when `output_mode` is "
                             f"not `'count'`. Received `count_weights="
                             f"{count_weights}`.")

    def call(self, inputs, count_weights=None):
        self._check_weights(count_weights)
        return encode_categorical(inputs, self.output_mode, self.num_tokens,
                                  self.dtype, count_weights)

    def get_config(self):
        return {**super().get_config(), "num_tokens": self.num_tokens,
                "output_mode": self.output_mode, "sparse": self.sparse}


def _summarize(values, epsilon):
    values = np.sort(np.reshape(values, [-1]))
    step = max(values.size / (1.0 / epsilon), 1)
    boundaries = values[int(step - 1)::int(step)]
    return np.stack([boundaries, np.ones_like(boundaries) * step])


def _compress(summary, epsilon):
    if summary.shape[1] * epsilon < 1:
        return summary
    percents = epsilon + np.arange(0.0, 1.0, epsilon)
    cum = summary[1].cumsum()
    cum_pct = cum / cum[-1]
    new_bins = np.interp(percents, cum_pct, summary[0])
    cum = np.interp(percents, cum_pct, cum)
    weights = cum - np.concatenate((np.array([0]), cum[:-1]))
    return np.stack((new_bins, weights)).astype("float32")


class Discretization(Layer):
    """Buckets numbers by boundaries (Keras 3's ``keras.layers.Discretization``):
    index i where ``bin_boundaries[i-1] <= x < bin_boundaries[i]``.

    Args:
        bin_boundaries: sorted boundaries (len n gives n + 1 bins), or None
            with ``num_bins`` and ``adapt``.
        num_bins: the number of bins ``adapt`` makes (approximate quantiles
            with relative error ``epsilon``, Keras' algorithm).
        epsilon: the quantile summary's error tolerance.
        output_mode: 'int' (int32 bin indices), 'one_hot', 'multi_hot' or
            'count' (floats of the layer's dtype, depth n + 1).

    Input: floats of any shape; output: 'int' the same shape.

    Raises:
        ValueError: both or neither of bin_boundaries/num_bins, a negative
            num_bins, an unknown mode, sparse=True, ``adapt`` on a layer built
            with bin_boundaries, or a call before boundaries exist (naming
            ``adapt``).
    """

    def __init__(self, bin_boundaries=None, num_bins=None, epsilon=0.01,
                 output_mode="int", sparse=False, dtype=None, name=None, **kwargs):
        super().__init__(dtype=dtype, name=name, **kwargs)
        _check_mode(output_mode, _MODES, "Discretization")
        if sparse:
            raise ValueError("`sparse=True` is not supported by kerasflow. "
                             "Received: sparse=True.")
        if num_bins is not None and num_bins < 0:
            raise ValueError(f"`num_bins` must be greater than or equal to 0. "
                             f"Received: `num_bins={num_bins}`")
        if num_bins is not None and bin_boundaries is not None:
            raise ValueError(f"Both `num_bins` and `bin_boundaries` should not be "
                             f"set. Received: `num_bins={num_bins}` and "
                             f"`bin_boundaries={bin_boundaries}`")
        if num_bins is None and bin_boundaries is None:
            raise ValueError("You need to set either `num_bins` or "
                             "`bin_boundaries`.")
        self.bin_boundaries = None if bin_boundaries is None else list(bin_boundaries)
        self.num_bins, self.epsilon = num_bins, epsilon
        self.output_mode, self.sparse = output_mode, False
        self.summary = np.array([[], []], dtype="float32")

    def adapt(self, data, steps=None):
        """Sets ``bin_boundaries`` to ``num_bins`` approximate quantiles of
        ``data`` (an array, a ``kerasflow.data.Dataset`` or an iterable of
        batches).

        Raises:
            ValueError: the layer was built with ``bin_boundaries``.
        """
        if self.num_bins is None:
            raise ValueError("Cannot adapt a Discretization layer that has been "
                             "initialized with `bin_boundaries`, use `num_bins` "
                             "instead.")
        self.summary = np.array([[], []], dtype="float32")
        for batch in adapt_batches(data, steps, "Discretization.adapt"):
            summary = _summarize(np.asarray(batch).astype("float32"), self.epsilon)
            merged = np.concatenate((summary, self.summary), axis=1)
            merged = np.take(merged, np.argsort(merged[0]), axis=1)
            self.summary = _compress(merged, self.epsilon)
        self.bin_boundaries = _compress(self.summary,
                                        1.0 / self.num_bins)[0, :-1].tolist()
        self._clear_eager_traces()

    def __call__(self, inputs=MISSING, *args, **kwargs):
        if inputs is MISSING:
            inputs = pop_first_argument(self, kwargs)
        if self.bin_boundaries is None:
            raise ValueError("You need to either pass the `bin_boundaries` "
                             "argument at construction time or call "
                             "`adapt(dataset)` before you can start using the "
                             "`Discretization` layer.")
        if not K.is_symbolic(inputs):
            x = np.asarray(inputs)
            if x.dtype.kind not in "iuf":
                raise TypeError(f"Layer '{self.name}' (Discretization) expects "
                                f"numeric inputs. Received: dtype={x.dtype}.")
            return np.asarray(self.call(x))
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs):
        bounds = np.asarray(self.bin_boundaries, dtype=np.float64)
        x = K.cast(inputs, "float64") if not K.is_symbolic(inputs) else K.cast(
            inputs, "float32")
        # digitize: the number of boundaries <= x.
        idx = K.sum(K.cast(K.greater_equal(K.expand_dims(x, -1),
                                           bounds.astype(np.dtype(x.dtype))),
                           "int32"), axis=-1)
        dtype = "int32" if self.output_mode == "int" else self.dtype
        return encode_categorical(idx, self.output_mode, len(bounds) + 1, dtype)

    def get_config(self):
        return {**super().get_config(), "bin_boundaries": self.bin_boundaries,
                "num_bins": self.num_bins, "epsilon": self.epsilon,
                "output_mode": self.output_mode, "sparse": self.sparse}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if config.get("bin_boundaries") is not None and \
                config.get("num_bins") is not None:
            bounds = config.pop("bin_boundaries")
            layer = cls(**config)
            layer.bin_boundaries = bounds
            return layer
        return cls(**config)
