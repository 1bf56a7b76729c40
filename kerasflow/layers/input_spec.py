"""``InputSpec``: what a layer accepts, checked on every symbolic call."""

from __future__ import annotations

__all__ = ["InputSpec", "assert_input_compatibility"]


class InputSpec:
    """What a layer accepts: rank (``ndim``/``min_ndim``) and fixed axis sizes
    (Keras' ``InputSpec``).

    Args:
        ndim: exact rank, batch axis included, or None.
        min_ndim: lowest rank, or None.
        axes: ``{axis: size}`` that the input must match, e.g. ``{-1: 3}``.
    """

    def __init__(self, ndim=None, min_ndim=None, axes=None):
        self.ndim, self.min_ndim, self.axes = ndim, min_ndim, dict(axes or {})


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
