"""A piece of one optimizer update: elements ``[a, b)`` of a variable.

ZeRO-1's contiguous partition (``zero.py``) cuts the flat layout into equal
ranges, so a variable may be applied by two ranks, each on its elements. The
optimizer updates it allows (``SLICEABLE``) are elementwise: element ``i``
of the new value and of every slot depends on element ``i`` of the value,
the gradient and the slots and on scalars only, so running the op's kernel
on 1-D views of the elements gives, bitwise, those elements of the whole
update (the fused kernels do not reduce across elements, whatever their
thread count). The piece runs the kernel the compiled plan would pick
(``fusion.kernel_for``, else the op's numpy kernel) on a stand-in Variable
whose value is a view of the real one's elements; the slots are updated in
place through views of theirs, and the new values land in the step's half
of the shared parameter array (``set_update_target``).
"""

from __future__ import annotations

import functools

import numpy as np

from kerasflow import backend as K
from kerasflow.backend import fusion
from kerasflow.backend.registry import get_op
from kerasflow.optimizers.kernels import set_update_target

__all__ = ["SLICEABLE", "Piece", "at_offset"]

#: Update ops that may run on a piece of a variable (elementwise in value,
#: gradient and slots; scalars otherwise).
SLICEABLE = frozenset({"ApplyGradientDescent", "ApplyMomentum", "ApplyAdam",
                       "ApplyRMSProp", "ApplyAdagrad"})


class Piece:
    """Elements ``[a, b)`` of trainable variable ``var`` updated by
    ``update`` (one op of ``SLICEABLE``), at offset ``offset`` of the flat
    layout.

    Attributes:
        scalars: the update's scalar input tensors (learning rate, Adam's
            step size...), computed by the caller before the step's updates
            run (they may read ``iterations``, which the step increments).
    """

    def __init__(self, var, update, grad_ph, offset, a, b):
        self.var, self.a, self.b = var, a, b
        self.lo, self.hi = offset + a, offset + b
        node = update.node
        attrs = dict(node.attrs)
        fused = fusion.kernel_for(node, np, attrs)
        self.kernel = fused if fused is not None else functools.partial(
            get_op(node.op).kernel, np, **attrs)
        self.stand_in = K.Variable(np.zeros(b - a, var.dtype),
                                   name=f"{var.name}/piece_{a}_{b}")
        self.scalars, self.args = [], []
        for t in node.inputs[1:]:
            if t.node is grad_ph.node:
                self.args.append(("grad", None))
            elif t.node.op == "Variable" and t.shape != ():
                self.args.append(("slot", t.node.attrs["variable"]))
            else:
                self.args.append(("scalar", len(self.scalars)))
                self.scalars.append(t)

    def run(self, result, params, values):
        """Updates the piece: gradient from ``result``, scalars ``values``
        (this piece's, in ``scalars`` order), new values into ``params``."""
        var, a, b, lo, hi = self.var, self.a, self.b, self.lo, self.hi
        if np.may_share_memory(var.value, params):  # never read and write one half
            var.value = var.value.copy()
        stand_in = self.stand_in
        stand_in.value = _flat(var)[a:b]
        args = []
        for kind, x in self.args:
            if kind == "grad":
                args.append(result[lo:hi])
            elif kind == "slot":
                args.append(_flat(x)[a:b])
            else:
                args.append(values[x])
        # No reference kept here: the kernel writes into the target only
        # when nothing else holds it (``set_update_target``).
        set_update_target(stand_in, params[lo:hi])
        self.kernel(stand_in, *args)
        if not at_offset(stand_in.value, params, lo):  # the kernel kept its own
            np.copyto(params[lo:hi], stand_in.value)


def at_offset(value, params, lo):
    """True when ``value`` is the range of ``params`` starting at element
    ``lo`` (the same memory, not a copy)."""
    return (isinstance(value, np.ndarray) and value.__array_interface__["data"][0]
            == params.__array_interface__["data"][0] + lo * params.itemsize)


def _flat(var):
    """A 1-D view of ``var``'s value (made contiguous first if it is not, so
    in-place updates through the view reach the variable)."""
    if not var.value.flags.c_contiguous:
        var.value = np.ascontiguousarray(var.value)
    return var.value.reshape(-1)
