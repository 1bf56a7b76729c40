"""Ops that check values at run time: ``check_numerics`` and ``reshape_batch``.

Static checks (shape inference) catch what is known while the graph is built;
these ops catch, when the graph runs, what only the fed values reveal, so a
wrong value becomes an error naming what was expected instead of a silently
wrong result.
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend.ops.shape import reshape_like
from kerasflow.backend.registry import apply, register_gradient, register_op

__all__ = ["check_numerics", "reshape_batch"]


@register_op("CheckNumerics", lambda x, **_: (x.shape, x.dtype))
def _check_numerics(xp, x, message="", minimum=None):
    if not bool(xp.isfinite(x).all()):
        bad = x[~xp.isfinite(x)].ravel()[0]
        raise ValueError(f"{message} Expected finite values. Received: {bad}.")
    if minimum is not None and x.size and bool((x < minimum).any()):
        raise ValueError(f"{message} Expected values >= {minimum}. Received: "
                         f"{x[x < minimum].ravel()[0]}.")
    return x


@register_gradient("CheckNumerics")
def _check_numerics_grad(node, g):
    return (g,)


def check_numerics(x, message, minimum=None):
    """``x`` unchanged; raises when it holds NaN or Inf (TF1's ``check_numerics``).

    Args:
        x: a float tensor or array of any shape.
        message: prefix of the error, naming what produced ``x``.
        minimum: optional lower bound every element must reach.

    Returns:
        ``x`` (an identity whose gradient passes through).

    Raises:
        ValueError: when the op runs on a non-finite value (or one below
            ``minimum``), naming it after ``message``.
    """
    return apply("CheckNumerics", x, message=message, minimum=minimum)


def _target_size(target):
    return int(np.prod([d for d in target if d != -1], dtype=np.int64))


def _reshape_batch_infer(x, target, who=""):
    out = tuple(None if d == -1 else d for d in target)
    if x.shape is None or not x.shape:
        return (None, *out) if x.shape is None else out, x.dtype
    rest = x.shape[1:]
    if None in rest:
        return (x.shape[0], *out), x.dtype
    size = int(np.prod(rest, dtype=np.int64))
    _check_sizes(size, target, who, x.shape)
    if -1 in target:
        out = tuple(size // _target_size(target) if d == -1 else d for d in target)
    return (x.shape[0], *out), x.dtype


def _check_sizes(size, target, who, shape):
    want = _target_size(target)
    ok = (want > 0 and size % want == 0) if -1 in target else size == want
    if not ok:
        what = "a multiple of" if -1 in target else ""
        raise ValueError(
            f"{who or 'reshape_batch'} expects inputs with {what} {want} elements "
            f"per sample to reshape to {tuple(target)}. Received: inputs of shape "
            f"{tuple(shape)} ({size} elements per sample).".replace("  ", " ")
        )


@register_op("ReshapeBatch", _reshape_batch_infer)
def _reshape_batch(xp, x, target, who=""):
    size = int(np.prod(x.shape[1:], dtype=np.int64))
    _check_sizes(size, target, who, x.shape)
    return xp.reshape(x, (x.shape[0], *target))


@register_gradient("ReshapeBatch")
def _reshape_batch_grad(node, g):
    return (reshape_like(g, node.inputs[0]),)


def reshape_batch(x, target_shape, who=""):
    """Reshapes ``(batch, ...)`` to ``(batch, *target_shape)``, keeping the batch.

    Unlike ``reshape(x, (-1, *target_shape))``, a per-sample size that differs
    from the target's can never silently change the batch size.

    Args:
        x: tensor or array of rank >= 1.
        target_shape: ints, at most one -1 (inferred).
        who: who reshapes (e.g. "Layer 'reshape'"), for messages.

    Raises:
        ValueError: the per-sample element counts differ (when the graph is
            built for static shapes, else when it runs), naming both.
    """
    target = tuple(int(d) for d in target_shape)
    return apply("ReshapeBatch", x, target=target, who=who)
