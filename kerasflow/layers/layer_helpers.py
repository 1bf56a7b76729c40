"""Helpers of the ``Layer`` base class: weight-size and shape checks, the
activity penalty, deduplication of variables, and ``call``'s parameters."""

from __future__ import annotations

import inspect
import os

import numpy as np

from kerasflow import backend as K

__all__ = ["activity_penalty", "call_params", "check_weight_size", "dedupe",
           "is_shape"]


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
