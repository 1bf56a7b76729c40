"""Keras 3's small ``keras.utils`` helpers for data and dtypes:
``pack_x_y_sample_weight``, ``unpack_x_y_sample_weight``,
``standardize_dtype``, ``is_keras_tensor`` (the last two the backend's)."""

from __future__ import annotations

from kerasflow.backend.keras_backend import is_keras_tensor, standardize_dtype

__all__ = ["get_source_inputs", "is_keras_tensor", "pack_x_y_sample_weight",
           "standardize_dtype",
           "unpack_x_y_sample_weight"]


def pack_x_y_sample_weight(x, y=None, sample_weight=None):
    """``x``, ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)``: the one form
    ``fit`` reads back (a list or tuple ``x`` alone is wrapped in a tuple)."""
    if y is None:
        return (x,) if isinstance(x, (tuple, list)) else x
    return (x, y) if sample_weight is None else (x, y, sample_weight)


def unpack_x_y_sample_weight(data):
    """``(x, y, sample_weight)`` from ``x``, ``(x,)``, ``(x, y)`` or
    ``(x, y, sample_weight)`` (lists as tuples); missing parts are None.

    Raises:
        ValueError: a tuple or list of more than three items.
    """
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return (data, None, None)
    if len(data) <= 3:
        return (*data, *(None,) * (3 - len(data)))
    raise ValueError(f"Data is expected to be in format `x`, `(x,)`, `(x, y)`, "
                     f"or `(x, y, sample_weight)`, found: {data}")


def get_source_inputs(tensor) -> list:
    """The input tensors (``kf.Input`` / placeholders) ``tensor`` is computed
    from, in graph order (Keras 3's ``keras.utils.get_source_inputs``); an
    input itself gives ``[tensor]``.

    Raises:
        TypeError: ``tensor`` is not symbolic.
    """
    from kerasflow.backend import walk  # noqa: PLC0415

    if not is_keras_tensor(tensor):
        raise TypeError(f"get_source_inputs expects a symbolic tensor "
                        f"(kerasflow.KerasTensor). Received: {type(tensor).__name__}.")
    return [out for node in walk([tensor]) if node.op == "Placeholder"
            for out in node.outputs]
