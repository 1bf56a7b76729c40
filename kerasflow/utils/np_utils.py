"""Numpy utilities (Keras ``keras.utils.to_categorical`` / ``normalize``)."""

from __future__ import annotations

from typing import Any

import numpy as np

_MAX_SHOWN = 10


def _show(values: np.ndarray) -> str:
    uniq = np.unique(values)
    shown = ", ".join(str(v) for v in uniq[:_MAX_SHOWN].tolist())
    more = f", ... ({uniq.size} distinct)" if uniq.size > _MAX_SHOWN else ""
    return f"[{shown}{more}]"


def to_categorical(
    y: Any, num_classes: int | None = None, dtype: Any = "float32"
) -> np.ndarray:
    """Converts a class vector (integers) to a one-hot class matrix.

    As Keras' ``keras.utils.to_categorical``: the output has the shape of
    ``y`` plus a last axis of size ``num_classes``, except that a trailing
    axis of size 1 (e.g. labels of shape ``(n, 1)``) is dropped first.

    Example:
        >>> to_categorical([0, 2, 1], num_classes=3)
        array([[1., 0., 0.],
               [0., 0., 1.],
               [0., 1., 0.]], dtype=float32)

    Args:
        y: Array-like of integer class labels in ``[0, num_classes)``, any
            shape. Floats are accepted only if they hold whole numbers.
        num_classes: Total number of classes. Defaults to ``max(y) + 1``.
        dtype: Data type of the output. Defaults to ``"float32"``.

    Returns:
        An array of shape ``y.shape + (num_classes,)`` (see above for a
        trailing axis of size 1) and dtype ``dtype``, with a 1 at each label.

    Raises:
        ValueError: If a label is negative, is not a whole number, is
            ``>= num_classes`` (the offending labels are named), if
            ``num_classes`` is not a positive integer, or if ``y`` is empty and
            ``num_classes`` is not given.
    """
    arr = np.asarray(y)
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            bad = arr[~np.isfinite(arr) | (arr != np.round(arr))]
            raise ValueError(
                f"to_categorical: labels must be whole numbers, received {_show(bad)}"
            )
    elif arr.dtype.kind not in "biu":
        raise ValueError(
            f"to_categorical: labels must be integers, received dtype {arr.dtype}"
        )
    labels = arr.astype(np.int64)
    if labels.size and labels.min() < 0:
        raise ValueError(
            f"to_categorical: labels must be >= 0, received negative labels "
            f"{_show(labels[labels < 0])}"
        )
    if num_classes is None:
        if labels.size == 0:
            raise ValueError(
                "to_categorical: cannot infer num_classes from empty labels; "
                "pass num_classes"
            )
        num_classes = int(labels.max()) + 1
    elif (
        isinstance(num_classes, (bool, np.bool_))
        or not isinstance(num_classes, (int, np.integer))
        or num_classes < 1
    ):
        raise ValueError(
            f"to_categorical: num_classes must be a positive integer, "
            f"received {num_classes!r}"
        )
    num_classes = int(num_classes)
    if labels.size and labels.max() >= num_classes:
        raise ValueError(
            f"to_categorical: labels must be < num_classes={num_classes}, received "
            f"{_show(labels[labels >= num_classes])}"
        )
    shape = labels.shape
    if len(shape) > 1 and shape[-1] == 1:
        shape = shape[:-1]
    flat = labels.reshape(-1)
    out = np.zeros((flat.size, num_classes), dtype=dtype)
    out[np.arange(flat.size), flat] = 1
    return out.reshape(shape + (num_classes,))


def normalize(x: Any, axis: int = -1, order: int = 2) -> np.ndarray:
    """Normalizes an array to unit ``order``-norm along ``axis``.

    As Keras' ``keras.utils.normalize``: slices whose norm is 0 are left
    unchanged (all zeros) instead of producing NaNs.

    Args:
        x: Array-like to normalize, at least 1-D.
        axis: Axis along which to normalize. Defaults to the last one.
        order: Order of the norm, an integer >= 1 (2 for the L2 norm).

    Returns:
        An array of the same shape as ``x``. Floating inputs keep their dtype;
        other inputs are converted to ``float32``.

    Raises:
        ValueError: If ``order`` is not an integer >= 1, or ``x`` is 0-D.
        numpy.exceptions.AxisError: If ``axis`` is out of range (a
            ``ValueError`` subclass).
    """
    if (
        isinstance(order, (bool, np.bool_))
        or not isinstance(order, (int, np.integer))
        or order < 1
    ):
        raise ValueError(f"normalize: order must be an int >= 1, received {order!r}")
    arr = np.asarray(x)
    if arr.dtype.kind != "f":
        arr = arr.astype(np.float32)
    if arr.ndim == 0:
        raise ValueError("normalize: x must be at least 1-D, received a scalar")
    norm = np.linalg.norm(arr, ord=int(order), axis=axis, keepdims=True)
    norm = np.where(norm == 0, np.ones_like(norm), norm)
    return (arr / norm).astype(arr.dtype, copy=False)
