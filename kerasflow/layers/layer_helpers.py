"""Helpers of the ``Layer`` base class: weight-size and shape checks, the
activity penalty, deduplication of variables, and ``call``'s parameters."""

from __future__ import annotations

import inspect
import os

import numpy as np

from kerasflow import backend as K

__all__ = ["MISSING", "activity_penalty", "call_params", "check_weight_size",
           "dedupe", "first_call_param", "is_shape", "pop_first_argument"]


def is_shape(s):
    return isinstance(s, (list, tuple)) and all(
        d is None or isinstance(d, (int, np.integer)) for d in s)


def activity_penalty(regularizer, output):
    """``regularizer(output)`` over the batch size (Keras 3), so that its
    strength does not depend on the batch."""
    loss = regularizer(output)
    if output.shape is None or len(output.shape) > 0:
        batch = K.cast(K.shape_of(output)[0], loss.dtype)
        loss = K.divide(loss, K.maximum(batch, 1.0))
    return loss


def dedupe(variables):
    seen, out = set(), []
    for v in variables:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


_PARAMS: dict = {}


def call_params(cls):
    p = _PARAMS.get(cls)
    if p is None:
        p = _PARAMS[cls] = set(inspect.signature(cls.call).parameters)
    return p


_FIRST: dict = {}


def first_call_param(cls):
    """Name of the first argument of ``cls.call`` after self (None for *args)."""
    name = _FIRST.get(cls, False)
    if name is False:
        params = list(inspect.signature(cls.call).parameters.values())[1:]
        name = _FIRST[cls] = params[0].name if params and params[0].kind in (
            params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD) else None
    return name


class _Missing:
    __slots__ = ()

    def __repr__(self):
        return "<no inputs>"


MISSING = _Missing()  # default of Layer.__call__'s first argument


def pop_first_argument(layer, kwargs):
    """The first argument of ``layer(...)`` when given by its name in ``call``
    (``mha(query=q, value=v)``), as Keras 3's ``Layer.__call__`` takes it.

    Raises:
        TypeError: no argument names ``call``'s first parameter.
    """
    name = first_call_param(type(layer))
    if name is not None and name in kwargs:
        return kwargs.pop(name)
    raise TypeError(
        f"Layer '{layer.name}' ({type(layer).__name__}) expects its first input "
        f"positionally or as `{name or 'inputs'}=`. Received: no positional "
        f"argument and keyword arguments {sorted(kwargs)}.")


def check_weight_size(layer, name, shape, dtype):
    """Refuses a weight larger than this machine's memory, naming the layer."""
    nbytes = int(np.prod([int(d) for d in shape], dtype=object)) * np.dtype(
        dtype).itemsize
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not POSIX: numpy will tell
        return
    if nbytes > memory:
        raise ValueError(
            f"Layer '{layer}' expects weight '{name}' to fit in memory "
            f"({memory / 2**30:.1f} GiB). Received: shape {tuple(shape)} of "
            f"{dtype}, {nbytes / 2**30:.4g} GiB; check the layer's arguments "
            f"(units, filters, input size)."
        )
