"""``InputSpec``: what a layer accepts, checked on every symbolic call."""

from __future__ import annotations

__all__ = ["InputSpec", "assert_input_compatibility"]


class InputSpec:
    """What a layer accepts: rank, fixed axis sizes or a whole shape (Keras 3's
    ``InputSpec``).

    Args:
        dtype: expected dtype name, or None.
        shape: expected shape, batch axis included, None for any size
            (``(None, 4, 3)``); sets ``ndim``.
        ndim: exact rank, batch axis included, or None.
        max_ndim, min_ndim: highest / lowest rank, or None.
        axes: ``{axis: size}`` that the input must match, e.g. ``{-1: 3}``.
        allow_last_axis_squeeze: accepted for Keras compatibility.
        name: the input's name, or None.
        optional: the input may be None.

    Raises:
        ValueError: ``shape`` given with a different ``ndim``.
    """

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None,
                 min_ndim=None, axes=None, allow_last_axis_squeeze=False,
                 name=None, optional=False):
        if shape is not None:
            shape = tuple(None if d is None else int(d) for d in shape)
            if ndim is not None and ndim != len(shape):
                raise ValueError(f"InputSpec expects ndim to match shape. "
                                 f"Received: shape={shape}, ndim={ndim}.")
            ndim = len(shape)
        self.dtype, self.shape, self.ndim = dtype, shape, ndim
        self.max_ndim, self.min_ndim = max_ndim, min_ndim
        self.axes = dict(axes or {})
        self.allow_last_axis_squeeze = allow_last_axis_squeeze
        self.name, self.optional = name, optional

    def __repr__(self):
        parts = [f"{k}={v}" for k, v in (
            ("dtype", self.dtype), ("shape", self.shape), ("ndim", self.ndim),
            ("max_ndim", self.max_ndim), ("min_ndim", self.min_ndim),
            ("axes", self.axes or None)) if v is not None]
        return f"InputSpec({', '.join(parts)})"


def assert_input_compatibility(spec, inputs, layer_name):
    """Checks a single symbolic input against ``spec`` (None: no check).

    Raises:
        ValueError: a rank or an axis size that ``spec`` rules out, naming the
            layer, the expected value and the received shape.
    """
    if spec is None or isinstance(inputs, (list, tuple, dict)):
        return
    shape = inputs.shape
    if shape is None:
        return
    where = f"Input 0 of layer '{layer_name}' is incompatible with the layer:"
    if spec.ndim is not None and len(shape) != spec.ndim:
        raise ValueError(
            f"{where} expected ndim={spec.ndim}, found ndim={len(shape)}. Full "
            f"shape received: {shape}.")
    if spec.max_ndim is not None and len(shape) > spec.max_ndim:
        raise ValueError(
            f"{where} expected max_ndim={spec.max_ndim}, found ndim={len(shape)}. "
            f"Full shape received: {shape}.")
    if spec.shape is not None and any(
            a is not None and b is not None and a != b
            for a, b in zip(spec.shape, shape)):
        raise ValueError(f"{where} expected shape={spec.shape}, found shape="
                         f"{shape}.")
    if spec.min_ndim is not None and len(shape) < spec.min_ndim:
        raise ValueError(
            f"{where} expected min_ndim={spec.min_ndim}, found ndim={len(shape)}. "
            f"Full shape received: {shape}.")
    for axis, size in spec.axes.items():
        got = shape[axis] if -len(shape) <= axis < len(shape) else None
        if got is not None and got != size:
            raise ValueError(
                f"{where} expected axis {axis} of input shape to have value "
                f"{size}, but received input with shape {shape}.")
