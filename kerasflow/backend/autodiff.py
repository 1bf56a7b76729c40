"""Reverse-mode automatic differentiation, graph to graph (TF1's ``tf.gradients``).

``gradients(ys, xs)`` walks the nodes between ``xs`` and ``ys`` in reverse
topological order, asks each op's registered rule for its input gradients and
returns symbolic tensors: the gradient graph can be run, differentiated again
(second order) or shipped elsewhere. Two things happen here and nowhere else:
gradients reaching one tensor along several paths are summed, and gradients of
broadcast shape are summed back to the input's shape ("unbroadcast").
"""

from __future__ import annotations

from kerasflow.backend.graph import SymbolicTensor, constant, walk
from kerasflow.backend.ops.math import add_n, cast, ones_like, zeros_like
from kerasflow.backend.ops.shape import broadcast_like
from kerasflow.backend.registry import apply, get_op, register_gradient, register_op

__all__ = ["gradients", "sum_to_like"]


@register_op("SumToLike", lambda g, x: (x.shape, g.dtype))
def _sum_to_like(xp, g, x):
    if g.shape == x.shape:
        return g
    lead = g.ndim - x.ndim
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(x.shape) if d == 1 and g.shape[lead + i] != 1
    )
    return g.sum(axis=axes).reshape(x.shape)


@register_gradient("SumToLike")
def _sum_to_like_grad(node, gg):
    return broadcast_like(gg, node.inputs[0]), None


def sum_to_like(g, x):
    """Sums ``g`` over the axes along which ``x`` was broadcast to g's shape."""
    return apply("SumToLike", g, x)


def _unbroadcast(g, x):
    """Gradient ``g`` reduced to the shape of ``x``; skipped when provably equal."""
    # Unknown dims could hide a runtime broadcast (x fed with batch 1), so only a
    # fully known, equal static shape skips the runtime check.
    if g.shape is not None and g.shape == x.shape and None not in g.shape:
        return g
    return sum_to_like(g, x)


@register_op("EnsureShapeLike", lambda g, y, **_: (y.shape, g.dtype))
def _ensure_shape_like(xp, g, y, index=0):
    if g.shape != y.shape:
        raise ValueError(
            f"gradients() expects grad_ys[{index}] of the shape of ys[{index}], "
            f"{y.shape}. Received: grad_ys[{index}] of shape {g.shape}."
        )
    return g


@register_gradient("EnsureShapeLike")
def _ensure_shape_like_grad(node, gg):
    return gg, None


def _check_grad_y(gy, y, i):
    """``gy`` as a tensor of y's dtype and shape (static check, else at run time)."""
    if not isinstance(gy, SymbolicTensor):
        gy = constant(gy, dtype=y.dtype)
    if gy.dtype != y.dtype:
        raise TypeError(
            f"gradients() expects grad_ys[{i}] of the dtype of ys[{i}], "
            f"{y.dtype.name}. Received: grad_ys[{i}] of dtype {gy.dtype.name}."
        )
    ys_, gs = y.shape, gy.shape
    if ys_ is not None and gs is not None:
        # TF1 raises here rather than let a (3, 1) grad_y broadcast against (3,).
        if len(ys_) != len(gs) or any(
                a is not None and b is not None and a != b for a, b in zip(ys_, gs)):
            raise ValueError(
                f"gradients() expects grad_ys[{i}] of the shape of ys[{i}], {ys_}. "
                f"Received: grad_ys[{i}] of shape {gs}."
            )
        if None not in ys_ and None not in gs:
            return gy
    return apply("EnsureShapeLike", gy, y, index=i)


def _as_list(v):
    return list(v) if isinstance(v, (list, tuple)) else [v]


def gradients(ys, xs, grad_ys=None):
    """Symbolic gradients of ``sum(ys)`` with respect to each of ``xs``.

    Args:
        ys: a tensor or list of tensors to differentiate (float dtype).
        xs: a tensor or list of tensors (Variables, placeholders, any node output).
        grad_ys: optional initial gradients, one per ``ys`` of the same shape;
            defaults to ones (so a non-scalar y is summed, as in TF1).

    Returns:
        A list with one tensor per ``xs`` of the same shape, or None where ``x``
        does not influence any ``y``.

    Raises:
        NotImplementedError: an op on the path has no gradient rule, naming it.
        TypeError: a ``ys`` or ``xs`` entry that is not a symbolic tensor, or a
            ``grad_ys`` entry of another dtype than its ``ys``.
        ValueError: a ``grad_ys`` entry whose shape differs from its ``ys``
            (at graph construction when both are known, else when run).
    """
    ys, xs = _as_list(ys), _as_list(xs)
    for t in ys + xs:
        if not isinstance(t, SymbolicTensor):
            raise TypeError(
                f"gradients() takes symbolic tensors. Received: {type(t).__name__} "
                f"{t!r}."
            )
    grad_ys = [None] * len(ys) if grad_ys is None else _as_list(grad_ys)
    if len(grad_ys) != len(ys):
        raise ValueError(
            f"grad_ys needs one entry per ys: expected {len(ys)}, received "
            f"{len(grad_ys)}."
        )
    order, needed = _nodes_between(ys, xs)
    grads: dict[SymbolicTensor, list] = {}
    for i, (y, gy) in enumerate(zip(ys, grad_ys)):
        gy = ones_like(y) if gy is None else _check_grad_y(gy, y, i)
        grads.setdefault(y, []).append(gy)

    for node in reversed(order):
        outs = [grads.get(t) for t in node.outputs]
        if all(o is None for o in outs) or not node.inputs:
            continue
        out_grads = []
        for t, gl in zip(node.outputs, outs):
            if gl is None:
                out_grads.append(zeros_like(t) if len(node.outputs) > 1 else None)
            else:
                g = add_n(gl) if len(gl) > 1 else gl[0]
                grads[t] = [g]
                out_grads.append(g)
        opdef = get_op(node.op)
        if not opdef.differentiable:
            continue
        if opdef.gradient is None:
            raise NotImplementedError(
                f"No gradient is registered for op '{node.op}' (node "
                f"'{node.name}'). Register one with register_gradient('{node.op}') "
                f"or wrap the input in stop_gradient()."
            )
        in_grads = opdef.gradient(node, *out_grads)
        for x, g in zip(node.inputs, in_grads):
            if g is None or x not in needed or x.dtype.kind not in "fc":
                continue
            if g.dtype != x.dtype:
                g = cast(g, x.dtype)
            grads.setdefault(x, []).append(_unbroadcast(g, x))
    result = []
    for x in xs:
        gl = grads.get(x)
        result.append(None if gl is None else (add_n(gl) if len(gl) > 1 else gl[0]))
    return result


def _nodes_between(ys, xs):
    """Nodes on a path from some x to some y, in topological order.

    Also returns the tensors that depend on some x: only their gradients are
    kept, so rules' results for other inputs are dropped.
    """
    # Forward reachability from xs, computed over the backward-reachable set.
    back = walk(ys)  # inputs before users
    x_set = set(xs)
    reaches: set = set()  # tensors that depend on some x
    for node in back:
        # No gradient flows out of stop_gradient or a non-differentiable op, so
        # ops past them need no rule: stop_gradient() works around a missing one.
        hit = any(t in reaches for t in node.inputs) and _passes_gradient(node)
        for t in node.outputs:
            if hit or t in x_set:
                reaches.add(t)
    return [n for n in back if any(t in reaches for t in n.outputs)], reaches


def _passes_gradient(node):
    if node.op == "StopGradient":
        return False
    return get_op(node.op).differentiable
