"""Stateful ops: assignments to Variables, and no_op/group for TF1-style fetches.

Stateful kernels receive the ``Variable`` object and replace or update its value.
A compiled plan runs them after every stateless node, so fetched values are the
pre-update ones ("updates applied after all outputs are computed").
"""

from __future__ import annotations

from kerasflow.backend.graph import Node, SymbolicTensor
from kerasflow.backend.ops import infer as I
from kerasflow.backend.registry import apply, register_op

__all__ = ["assign", "assign_add", "assign_sub", "no_op", "group",
           "global_variables_initializer"]


def _assign_infer(var, value, **_):
    if value.shape is not None:
        I.broadcast_dims(var.shape, value.shape)
        shape = I.broadcast_dims(var.shape, value.shape)
        if None not in shape and shape != var.shape:
            raise ValueError(
                f"cannot assign a value of shape {value.shape} to a variable of "
                f"shape {var.shape}."
            )
    return var.shape, var.dtype


def _store(xp, var, new):
    # The new array is built out of place: a value fetched in the same run (or a
    # read-only view handed out by ray.get) is never overwritten.
    var.value = xp.asarray(new, dtype=var.dtype)
    if var.constraint is not None:
        var.value = var.constraint(var.value)
    return var.value


@register_op("Assign", _assign_infer, stateful=True, differentiable=False)
def _assign(xp, var, value):
    return _store(xp, var, xp.broadcast_to(value, var.value.shape).copy())


@register_op("AssignAdd", _assign_infer, stateful=True, differentiable=False)
def _assign_add(xp, var, delta):
    return _store(xp, var, var.value + delta)


@register_op("AssignSub", _assign_infer, stateful=True, differentiable=False)
def _assign_sub(xp, var, delta):
    return _store(xp, var, var.value - delta)


def assign(var, value):
    """Graph node setting ``var`` to ``value`` (broadcast to var's shape)."""
    return apply("Assign", var, value)


def assign_add(var, delta):
    """Graph node adding ``delta`` to ``var``; it evaluates to the new value."""
    return apply("AssignAdd", var, delta)


def assign_sub(var, delta):
    """Graph node subtracting ``delta`` from ``var``; evaluates to the new value."""
    return apply("AssignSub", var, delta)


@register_op("NoOp", lambda *inputs: ((), "bool"), differentiable=False)
def _no_op(xp, *inputs):
    return None


def no_op(name=None):
    """An op that does nothing; fetching it returns None."""
    return _group(())


def _group(inputs, name=None):
    node = Node("NoOp", tuple(inputs), {}, name or "NoOp")
    node.outputs = (SymbolicTensor(node, 0, (), "bool"),)
    return node.outputs[0]


def group(*tensors, name=None):
    """One fetch that runs all ``tensors`` (e.g. several assignments); returns None.

    Equivalent of TF1's ``tf.group``.
    """
    flat = []
    for t in tensors:
        flat.extend(t if isinstance(t, (list, tuple)) else [t])
    return _group(flat, name)


def global_variables_initializer():
    """A no-op kept for TF1 programs: kerasflow Variables hold a value from creation.

    ``sess.run(global_variables_initializer())`` therefore changes nothing; to
    reset a Variable, call its ``assign``.
    """
    return no_op()
