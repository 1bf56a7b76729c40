"""Sparse (row) updates for gradients of embedding tables.

When a variable's gradient is an ``IndexedSlicesToDense`` node (see
``kerasflow.backend.ops.embedding``), the optimizer builds its usual dense
update node and ``sparse_update`` rewrites it into one ``SparseApply`` node:
the same kernel run on the touched rows only. Per step it gathers the distinct
ids, sums duplicate rows, copies those rows of the variable and of its slots,
runs the optimizer's own kernel on them and writes them back; the dense
gradient is never built.

Semantics ("lazy", as TF1's ``LazyAdamOptimizer`` / TF-Addons ``LazyAdam`` and
TF1's sparse SGD / Momentum / Adagrad): rows absent from the batch keep their
value and their slots. For SGD and Adagrad this equals the dense update
exactly (a zero gradient changes neither). For Adam, RMSprop and momentum the
dense update would keep moving untouched rows with decaying moments; the lazy
one does not (bias correction still uses the global step). Weight decay and
constraints apply to the touched rows. Clipped gradients are dense (clipping
needs the whole gradient), so they take the dense path.

The variable's buffer is updated in place (a table-sized copy per step would
defeat the purpose): unlike the dense kernels, an array of the table fetched
earlier sees the change. A read-only buffer (from ``ray.get``) is copied once.
"""

from __future__ import annotations

from kerasflow.backend.ops.embedding import indexed_slices, unique_rows
from kerasflow.backend.ops.math import cast
from kerasflow.backend.registry import apply, get_op, register_op

__all__ = ["sparse_update"]


class _Rows:
    """Stands in for the Variable in the dense kernel: the touched rows."""

    __slots__ = ("value", "name", "constraint", "__weakref__")

    def __init__(self, value, name, constraint):
        self.value, self.name, self.constraint = value, name, constraint


def _infer(var, values, ids, *rest, dense_op, dense_attrs):
    return var.shape, var.dtype


@register_op("SparseApply", _infer, stateful=True, differentiable=False)
def _sparse_apply(xp, var, values, ids, *rest, dense_op, dense_attrs):
    table = var.value
    rows, grad = unique_rows(xp, values, ids, table.shape[1:])
    grad = grad.astype(table.dtype, copy=False)
    slot_pos = [i for i, r in enumerate(rest)
                if getattr(r, "ndim", 0) == table.ndim and r.shape == table.shape]
    args = list(rest)
    for i in slot_pos:
        args[i] = rest[i][rows]
    proxy = _Rows(table[rows], var.name, var.constraint)
    get_op(dense_op).kernel(xp, proxy, grad, *args, **dense_attrs)
    if not getattr(table.flags, "writeable", True):
        table = var.value = table.copy()
    table[rows] = proxy.value
    for i in slot_pos:
        rest[i][rows] = args[i]
    return table


def sparse_update(dense_update, grad):
    """The row-wise version of ``dense_update`` when ``grad`` is sparse.

    Args:
        dense_update: the optimizer's update node for (grad, var), whose inputs
            are (var, grad, scalars..., slots...) as every kernel in
            ``kerasflow.optimizers.kernels``.
        grad: the gradient it was built from.

    Returns:
        A ``SparseApply`` stateful tensor when ``grad`` is an embedding's sparse
        gradient, else ``dense_update`` unchanged.
    """
    sliced = indexed_slices(grad)
    node = getattr(dense_update, "node", None)
    if sliced is None or node is None or len(node.inputs) < 2 or \
            node.inputs[1] is not grad:
        return dense_update
    values, ids, _ = sliced
    var = node.inputs[0]
    if values.dtype != var.dtype:
        values = cast(values, var.dtype)
    return apply("SparseApply", var, values, ids, *node.inputs[2:],
                 dense_op=node.op, dense_attrs=dict(node.attrs))

