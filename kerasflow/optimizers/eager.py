"""Optimizer steps on concrete gradients: ``apply_gradients(zip(arrays, vars))``.

Keras 3 applies an optimizer to arrays at once (a training loop written from
scratch). Here the symbolic update graph is built once per signature (which
variables, gradient shapes and dtypes) with gradient placeholders and compiled
with ``backend.Function``; every later call only feeds it, so a custom loop
pays what ``fit``'s apply half pays.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K

__all__ = ["EagerApply"]

_MAX_SIGNATURES = 16


class EagerApply:
    """Compiled update functions of one optimizer, one per signature."""

    def __init__(self):
        self._fns: dict = {}

    def __call__(self, optimizer, pairs) -> None:
        """Applies ``(array gradient, Variable)`` pairs now (None skipped)."""
        arrays = [None if g is None else _as_array(g, v) for g, v in pairs]
        key = tuple((id(v), None if a is None else a.shape) for a, (_, v)
                    in zip(arrays, pairs))
        entry = self._fns.get(key)
        if entry is None:
            phs = [None if a is None else K.placeholder(v.dtype, v.shape,
                                                        name=f"grad_{i}")
                   for i, (a, (_, v)) in enumerate(zip(arrays, pairs))]
            with K.tracing():  # graph only, even inside a recording tape
                updates = optimizer.build_updates(
                    [(p, v) for p, (_, v) in zip(phs, pairs)])
            entry = (K.Function([p for p in phs if p is not None], [],
                                updates=updates, name=f"{optimizer.name}_apply"),
                     [v for _, v in pairs])
            if len(self._fns) >= _MAX_SIGNATURES:
                self._fns.pop(next(iter(self._fns)))
            self._fns[key] = entry
        entry[0](*[a for a in arrays if a is not None])


def _as_array(grad, var):
    """``grad`` as a device array of the variable's dtype and shape.

    Raises:
        ValueError: a gradient whose shape differs from the variable's.
    """
    a = K.to_numpy(grad) if not isinstance(grad, np.ndarray) else grad
    a = np.asarray(a, dtype=var.dtype)
    if a.shape != tuple(var.shape):
        raise ValueError(f"The gradient of '{var.name}' must have the variable's "
                         f"shape {tuple(var.shape)}. Received: gradient of shape "
                         f"{a.shape}.")
    return a
