"""Feature scaling layers: ``Normalization`` (with ``adapt``) and ``Rescaling``
(Keras 3's ``keras.layers.Normalization`` / ``keras.layers.Rescaling``, same
arguments, defaults, weights and values).

Both are graph layers and differentiable with respect to their inputs.
"""

from __future__ import annotations

import math

import numpy as np

from kerasflow import backend as K
from kerasflow.layers.base import Layer
from kerasflow.layers.preprocessing.base import adapt_batches, check_numeric

__all__ = ["Normalization", "Rescaling"]


class Normalization(Layer):
    """Shifts and scales inputs to zero mean and unit variance per feature:
    ``(x - mean) / max(sqrt(variance), epsilon())`` (Keras 3's
    ``keras.layers.Normalization``).

    The mean and variance come from ``mean``/``variance`` or from ``adapt(data)``,
    which stores them in the non-trainable weights ``mean``, ``variance`` and
    ``count`` (so ``model.save`` keeps them; ``count`` stays 0, as in Keras
    3.15). After ``build`` or ``adapt`` the attributes ``mean`` and
    ``variance`` hold them in the inputs' broadcast shape, as Keras'.

    Args:
        axis: the axis or axes that keep their own statistics (default -1: one
            mean per feature of the last axis); None: one mean for everything.
        mean, variance: the statistics (scalars, or arrays broadcast over the
            kept axes from the right); both or neither.
        invert: the inverse transform ``mean + x * sqrt(variance)``.

    Input: a float tensor of any rank (cast to the layer's dtype, float32 by
    default); output: the same shape and the layer's dtype.

    Raises:
        ValueError: only one of mean/variance, shapes that differ or have more
            dimensions than ``axis`` names, an axis out of range or of unknown
            size, or ``adapt`` data whose kept axes differ from the built shape.
        TypeError: ``adapt`` data that is not an array, dataset or iterable.

    Example::

        >>> layer = Normalization()
        >>> layer.adapt(np.array([[0.0], [2.0]]))
        >>> layer(np.array([[2.0]]))     # -> [[1.0]]
    """

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, **kwargs):
        super().__init__(**kwargs)
        if axis is None:
            axis = ()
        elif isinstance(axis, (int, np.integer)):
            axis = (int(axis),)
        else:
            axis = tuple(int(a) for a in axis)
        self.axis = axis
        self.input_mean, self.input_variance = mean, variance
        self.invert = bool(invert)
        if (mean is not None) != (variance is not None):
            raise ValueError(
                f"When setting values directly, both `mean` and `variance` must "
                f"be set. Received: mean={mean} and variance={variance}")
        if mean is not None:
            if np.shape(mean) != np.shape(variance):
                raise ValueError(
                    f"When setting values directly, `mean` and `variance` must "
                    f"have the same shape. Received: mean shape "
                    f"{np.shape(mean)} and variance shape {np.shape(variance)}")
            if len(np.shape(mean)) > len(self.axis):
                raise ValueError(
                    f"The rank of `mean` must be less than or equal to the "
                    f"number of axes ({len(self.axis)}). Received: mean shape "
                    f"{np.shape(mean)} for axis {self.axis}")
        self._build_input_shape = None

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        ndim = len(input_shape)
        if any(a < -ndim or a >= ndim for a in self.axis):
            raise ValueError(
                f"All `axis` values must be in the range [-ndim, ndim). Received "
                f"inputs with ndim={ndim}, while axis={self.axis}")
        self._build_input_shape = input_shape
        self._keep_axis = tuple(sorted(a % ndim for a in self.axis))
        for d in self._keep_axis:
            if input_shape[d] is None:
                raise ValueError(
                    f"All `axis` values to be kept must have a known shape. "
                    f"Received axis={self.axis}, inputs.shape={input_shape}, "
                    f"with unknown axis at index {d}")
        self._reduce_axis = tuple(d for d in range(ndim) if d not in self._keep_axis)
        self._broadcast_shape = tuple(input_shape[d] if d in self._keep_axis else 1
                                      for d in range(ndim))
        self._stat_shape = tuple(input_shape[d] for d in self._keep_axis)
        if self.input_mean is None:
            self.adapt_mean = self.add_weight("mean", self._stat_shape, "zeros",
                                              trainable=False)
            self.adapt_variance = self.add_weight("variance", self._stat_shape,
                                                  "ones", trainable=False)
            self.count = self.add_weight("count", (), "zeros", trainable=False,
                                         dtype="int64")
        else:
            self._const_mean = self._broadcast(self.input_mean, ndim)
            self._const_variance = self._broadcast(self.input_variance, ndim)
        self.built = True

    def _broadcast(self, value, ndim):
        value = np.asarray(value, dtype=np.float64)
        if value.ndim > 0:  # the given dims fill the kept axes from the right
            expanded = [1] * ndim
            for i in range(1, value.ndim + 1):
                expanded[self._keep_axis[-i]] = value.shape[-i]
            value = value.reshape(expanded)
        return np.broadcast_to(value, self._broadcast_shape).astype(self.dtype)

    def adapt(self, data, steps=None):
        """Computes the mean and variance of ``data`` over the reduced axes.

        Args:
            data: an array, a ``kerasflow.data.Dataset`` (of batches, or of
                single rank-1 rows, which are batched by 128 as Keras does), a
                ``PyDataset``, or an iterable of batches such as a list of
                arrays or a generator (``(x, y)`` batches use ``x``).
            steps: read at most this many batches.

        Raises:
            ValueError: batches whose kept axes differ from the built shape;
                an empty iterable.
            TypeError: batches without a shape (scalars).
        """
        spec = getattr(data, "element_spec", None)
        if spec is not None and hasattr(data, "batch"):
            x_spec = spec[0] if isinstance(spec, tuple) else spec
            if len(tuple(x_spec.shape)) == 1:
                data = data.batch(128)
        batches = [b.astype(np.float64) if b.dtype.kind not in "f" else b
                   for b in adapt_batches(data, steps, "Normalization.adapt")]
        if any(b.ndim == 0 for b in batches):
            raise TypeError(
                "Normalization.adapt() expects batches that are arrays or "
                "tensors with a `.shape` attribute. Received: a scalar batch "
                f"of type {type(batches[0].item()).__name__}.")
        first = batches[0].shape
        if not self.built:
            self.build(first)
        for b in batches:
            if b.ndim != len(self._build_input_shape) or any(
                    b.shape[d] != self._build_input_shape[d]
                    for d in self._keep_axis):
                raise ValueError(
                    f"The layer was built with input_shape="
                    f"{self._build_input_shape}, but adapt() is being called "
                    f"with data with an incompatible shape, data.shape={b.shape}")
        if self.input_mean is not None:
            return
        if len(batches) == 1:  # Keras: np.mean / np.var of the whole array
            mean = np.mean(batches[0], axis=self._reduce_axis)
            var = np.var(batches[0], axis=self._reduce_axis)
        else:  # Keras' running merge of batch moments (Chan et al. 1979)
            mean = np.zeros(self._stat_shape)
            var = np.zeros(self._stat_shape)
            total = 0
            for b in batches:
                b_mean = np.mean(b, axis=self._reduce_axis)
                b_var = np.var(b, axis=self._reduce_axis)
                count = math.prod(b.shape[d] for d in self._reduce_axis)
                total += count
                w = count / total
                new_mean = mean * (1.0 - w) + b_mean * w
                var = (var + (mean - new_mean) ** 2) * (1.0 - w) + (
                    b_var + (b_mean - new_mean) ** 2) * w
                mean = new_mean
        self.adapt_mean.assign(np.asarray(mean, self.dtype).reshape(self._stat_shape))
        self.adapt_variance.assign(
            np.asarray(var, self.dtype).reshape(self._stat_shape))
        self._clear_eager_traces()

    @property
    def mean(self):
        """The mean in the inputs' broadcast shape ((1, features) by default),
        after ``build`` or ``adapt``; None before (Keras 3)."""
        return self._stat_value("_const_mean", "adapt_mean")

    @property
    def variance(self):
        """The variance in the inputs' broadcast shape; None before building."""
        return self._stat_value("_const_variance", "adapt_variance")

    def _stat_value(self, const, adapted):
        if not self.built:
            return None
        if self.input_mean is not None:
            return getattr(self, const)
        return np.reshape(getattr(self, adapted).numpy(),
                          self._broadcast_shape).astype(self.dtype)

    def _stats(self):
        if self.input_mean is not None:
            return self._const_mean, self._const_variance
        return (K.reshape(self.adapt_mean, self._broadcast_shape),
                K.reshape(self.adapt_variance, self._broadcast_shape))

    def call(self, inputs):
        check_numeric(self, inputs)
        x = inputs if inputs.dtype == np.dtype(self.dtype) else K.cast(
            inputs, self.dtype)
        mean, variance = self._stats()
        scale = K.maximum(K.sqrt(variance), K.epsilon())
        if self.invert:
            return mean + x * scale
        return (x - mean) / scale

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        def listify(v):
            return None if v is None else np.asarray(v).tolist()
        return {**super().get_config(), "axis": self.axis, "invert": self.invert,
                "mean": listify(self.input_mean),
                "variance": listify(self.input_variance)}


class Rescaling(Layer):
    """``inputs * scale + offset`` (Keras 3's ``keras.layers.Rescaling``), e.g.
    ``Rescaling(1 / 255)`` maps [0, 255] pixels to [0, 1], and
    ``Rescaling(1 / 127.5, offset=-1)`` to [-1, 1].

    Args:
        scale, offset: floats, or per-channel sequences (broadcast against the
            last axis, or the channel axis of (C, H, W) images when
            ``image_data_format()`` is 'channels_first', as Keras).

    Input: any numeric tensor; output: the same shape, the layer's dtype
    (float32 by default).
    """

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale, self.offset = scale, offset

    def call(self, inputs):
        check_numeric(self, inputs)
        scale = np.asarray(self.scale, self.dtype)
        offset = np.asarray(self.offset, self.dtype)
        if scale.ndim > 0 and K.image_data_format() == "channels_first":
            scale = scale.reshape(scale.shape + (1,) * (3 - scale.ndim))
        x = inputs if inputs.dtype == np.dtype(self.dtype) else K.cast(
            inputs, self.dtype)
        return x * scale + offset

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        def plain(v):
            return np.asarray(v).tolist() if isinstance(v, np.ndarray) else v
        return {**super().get_config(), "scale": plain(self.scale),
                "offset": plain(self.offset)}
