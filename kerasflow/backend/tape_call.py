"""Recorded computations of an eager ``GradientTape``: traced calls and ops.

``TapedCall`` is a layer (or model) call on arrays, traced once per input
signature on placeholders: a forward ``Function`` that also returns the
intermediate values the backward pass reads, and a backward ``Function`` fed
with them (so the forward pass is not run twice, and a dropout mask is the one
the forward pass drew). Eager ops on ``TapeArray``s are recorded one by one;
their backward ``Function`` is compiled once per (op, attributes, input
shapes) and cached. Both derive their gradients from the ops' registered rules
through ``gradients``: there is no second autodiff.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from kerasflow import tree
from kerasflow.backend.array import to_numpy
from kerasflow.backend.autodiff import gradients
from kerasflow.backend.function import Function
from kerasflow.backend.graph import (
    SymbolicTensor, placeholder, reachable_variables, tracing, walk,
)
from kerasflow.backend.registry import apply
from kerasflow.backend.tape_array import TapeArray, TapeRecord, active_tapes, wrap
from kerasflow.backend.variables import Variable

__all__ = ["TapedCall", "call_taped", "read_variables", "record_op"]

_LEAF_OPS = ("Placeholder", "Variable", "Const")


def _is_float(dtype) -> bool:
    return np.dtype(dtype).kind == "f"


class TapedCall:
    """A traced call whose eager runs are recorded on the active tapes.

    Args:
        inputs: flat list of placeholders the call was traced on.
        outputs: the traced outputs (any structure of tensors).
        updates: state updates to run with each forward pass.
        name: for error messages.
    """

    def __init__(self, inputs, outputs, updates=(), name="taped_call"):
        self.inputs = list(inputs)
        self.structure = outputs
        flat = tree.flatten(outputs)
        self.specs = [(o.shape, o.dtype) for o in flat]
        self.float_out = [i for i, o in enumerate(flat) if _is_float(o.dtype)]
        self.variables = reachable_variables(flat, trainable=True)
        self.diff_in = [j for j, p in enumerate(self.inputs) if _is_float(p.dtype)]
        ups = [placeholder(flat[i].dtype, flat[i].shape, name=f"upstream_{i}")
               for i in self.float_out]
        wrt = self.variables + [self.inputs[j] for j in self.diff_in]
        grads = gradients([flat[i] for i in self.float_out], wrt, grad_ys=ups) \
            if self.float_out and wrt else [None] * len(wrt)
        self.slots = [(k, g) for k, g in enumerate(grads) if g is not None]
        saved = _saved_tensors(flat, [g for _, g in self.slots])
        self.n_out = len(flat)
        self.forward = Function(self.inputs, flat + saved, updates=updates,
                                name=f"{name}_forward")
        self.backward = Function(self.inputs + saved + ups,
                                 [g for _, g in self.slots],
                                 name=f"{name}_backward") if self.slots else None

    def __call__(self, flat_inputs):
        """Runs the forward pass on arrays; float outputs come back as
        ``TapeArray``s recorded on the active tapes (when any gradient flows)."""
        values = self.forward(*[np.asarray(x) for x in flat_inputs])
        outs = [to_numpy(v) for v in values[:self.n_out]]
        if self.backward is None or not active_tapes():
            return tree.pack_sequence_as(self.structure, outs)
        record = TapeRecord(list(flat_inputs), self.specs, _call_vjp,
                            (self, values[self.n_out:]))
        floats = set(self.float_out)
        outs = [wrap(o, record, i) if i in floats else o for i, o in enumerate(outs)]
        return tree.pack_sequence_as(self.structure, outs)


_MAX_TAPED = 16


def call_taped(owner, fn, args, name="taped", key=None):
    """``fn(*args)`` on arrays as one recorded ``TapedCall``, traced on
    placeholders once per signature and cached on ``owner`` (a loss object: one
    compiled forward and backward instead of one record per op).

    Args:
        owner: object whose ``__dict__`` keeps the cache.
        fn: function of tensors, called on placeholders when tracing.
        args: arrays (or ``TapeArray``s), one per argument of ``fn``.
        name: for compiled functions' names.
        key: tells apart several functions cached on one owner.
    """
    arrays = [np.asarray(a) for a in args]
    key = (key,) + tuple((a.shape[1:] if a.ndim else None, a.dtype.str)
                         for a in arrays)
    cache = owner.__dict__.setdefault("_taped_calls", OrderedDict())
    entry = cache.get(key)
    if entry is None:
        phs = [placeholder(a.dtype, (None,) + a.shape[1:] if a.ndim else ())
               for a in arrays]
        with tracing():  # a graph is built: nothing here runs eagerly
            outputs = fn(*phs)
        entry = TapedCall(phs, outputs, (), name=name)
        cache[key] = entry
        if len(cache) > _MAX_TAPED:
            cache.popitem(last=False)
    return entry(list(args))


def _saved_tensors(forward_outputs, grads) -> list:
    """Forward tensors (not inputs, Variables or constants) the backward reads."""
    fwd = {id(n) for n in walk(forward_outputs)}
    saved, seen = [], set()
    for node in walk(grads):
        if id(node) in fwd:
            continue
        for t in node.inputs:
            if (id(t.node) in fwd and t.node.op not in _LEAF_OPS
                    and id(t) not in seen):
                seen.add(id(t))
                saved.append(t)
    return saved


def _call_vjp(record, upstream):
    call, saved = record.state
    feeds = ([np.asarray(x) for x in record.inputs] + list(saved)
             + [upstream[i] for i in call.float_out])
    grads = call.backward(*feeds)
    n_vars = len(call.variables)
    input_grads = [None] * len(record.inputs)
    var_grads = {}
    for (k, _), g in zip(call.slots, grads):
        g = to_numpy(g)
        if k < n_vars:
            var = call.variables[k]
            var_grads[id(var)] = (var, g)
        else:
            input_grads[call.diff_in[k - n_vars]] = g
    return input_grads, var_grads


# -- eager ops ----------------------------------------------------------------------
_OP_GRADS: OrderedDict = OrderedDict()
_MAX_OP_GRADS = 512


def _freeze(value):
    """A hashable stand-in for an attribute value, or raises TypeError."""
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__,) + tuple(_freeze(v) for v in value)
    if isinstance(value, np.ndarray):
        return ("ndarray", value.shape, value.dtype.str, value.tobytes())
    if isinstance(value, np.dtype):
        return value.str
    hash(value)
    return value


def _is_scalar(x) -> bool:
    return isinstance(x, (bool, int, float))


def record_op(opdef, inputs, attrs, out):
    """The registry's tape hook: ``out`` as ``TapeArray``s when a differentiable
    op read a recorded array (or one a tape watches), else ``out`` unchanged."""
    if opdef.stateful or not opdef.differentiable:
        return out
    tapes = active_tapes()
    watched = set().union(*(t.watched_ids() for t in tapes))
    if not any((isinstance(x, TapeArray) and x._tape_rec is not None)
               or id(x) in watched for x in inputs):
        return out
    outs = list(out) if opdef.num_outputs > 1 else [out]
    if not all(isinstance(o, (np.ndarray, np.generic)) for o in outs):
        return out  # device arrays: off the tape (numpy only)
    outs = [np.asarray(o) for o in outs]
    if not any(_is_float(o.dtype) for o in outs):
        return out
    record = TapeRecord(list(inputs), [(o.shape, o.dtype) for o in outs], _op_vjp,
                        (opdef.name, attrs))
    wrapped = [wrap(o, record, i) if _is_float(o.dtype) else o
               for i, o in enumerate(outs)]
    return tuple(wrapped) if opdef.num_outputs > 1 else wrapped[0]


def read_variables(inputs):
    """``inputs`` with each Variable replaced by a recorded read of its value,
    when the other inputs are arrays (an op mixing Variables and graph tensors
    stays symbolic)."""
    if not any(isinstance(x, Variable) for x in inputs) or any(
            isinstance(x, SymbolicTensor) and not isinstance(x, Variable)
            for x in inputs):
        return inputs
    return tuple(_read(x) if isinstance(x, Variable) else x for x in inputs)


def _read(var):
    if not var.trainable:
        return to_numpy(var.value)
    record = TapeRecord([], [(tuple(var.shape), var.dtype)], _read_vjp, var)
    return wrap(to_numpy(var.value), record, 0)


def _read_vjp(record, upstream):
    var = record.state
    return [], {id(var): (var, upstream[0])}


def _op_vjp(record, upstream):
    name, attrs = record.state
    arrays = [None if _is_scalar(x) else np.asarray(x) for x in record.inputs]
    fn, positions = _op_grad_fn(name, attrs, record.inputs, arrays, record.specs)
    input_grads = [None] * len(record.inputs)
    if fn is None:
        return input_grads, {}
    floats = [i for i, (_, dt) in enumerate(record.specs) if _is_float(dt)]
    grads = fn(*[a for a in arrays if a is not None], *[upstream[i] for i in floats])
    for pos, g in zip(positions, grads):
        input_grads[pos] = to_numpy(g)
    return input_grads, {}


def _op_grad_fn(name, attrs, inputs, arrays, specs):
    """(compiled backward of one op, input positions it differentiates)."""
    sig = tuple(("s", type(x).__name__, x) if a is None else ("a", a.shape, a.dtype.str)
                for x, a in zip(inputs, arrays))
    try:
        key = (name, _freeze(attrs), sig)
    except TypeError:
        key = None
    if key is not None and key in _OP_GRADS:
        _OP_GRADS.move_to_end(key)
        return _OP_GRADS[key]
    phs, sym = [], []
    for x, a in zip(inputs, arrays):
        if a is None:
            sym.append(x)
        else:
            ph = placeholder(a.dtype, a.shape)
            phs.append(ph)
            sym.append(ph)
    out = apply(name, *sym, **attrs)
    outs = list(out) if isinstance(out, tuple) else [out]
    floats = [o for o in outs if _is_float(o.dtype)]
    ups = [placeholder(o.dtype, o.shape) for o in floats]
    cand = [(i, s) for i, s in enumerate(sym)
            if arrays[i] is not None and _is_float(arrays[i].dtype)]
    grads = gradients(floats, [s for _, s in cand], grad_ys=ups) if cand else []
    keep = [(i, g) for (i, _), g in zip(cand, grads) if g is not None]
    entry = (Function(phs + ups, [g for _, g in keep], name=f"{name}_vjp")
             if keep else None, [i for i, _ in keep])
    if key is not None:
        _OP_GRADS[key] = entry
        if len(_OP_GRADS) > _MAX_OP_GRADS:
            _OP_GRADS.popitem(last=False)
    return entry
