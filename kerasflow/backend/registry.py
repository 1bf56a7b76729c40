"""The op registry: per op a kernel, shape/dtype inference and a gradient rule.

``apply(op, *inputs, **attrs)`` is the single entry point every public op wrapper
calls. Given any symbolic input it checks shapes and dtypes with the op's
inference function and adds a ``Node``; given only arrays and numbers it runs the
kernel at once (the eager path used by tests and debugging).

Kernels have the signature ``kernel(xp, *arrays, **attrs)``, where ``xp`` is numpy
or cupy. Random kernels also take ``rng`` (a seeded generator bound per compiled
function); stateful kernels (assignments, optimizer updates) receive the
``Variable`` object itself as their first argument and update ``var.value``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from kerasflow.backend import array as _array
from kerasflow.backend import sequencing, tape_array
from kerasflow.backend.eager import EagerTensor, as_eager
from kerasflow.backend.graph import (
    Node, SymbolicTensor, TensorSpec, constant, in_tracing,
)
from kerasflow.backend.variables import Variable, get_autocast_scope

__all__ = ["OpDef", "register_op", "register_gradient", "register_op_family",
           "get_op", "apply", "set_tape_hook"]


@dataclass
class OpDef:
    """What the registry knows of one op."""

    name: str
    kernel: Callable
    infer: Callable
    num_outputs: int = 1
    stateful: bool = False
    random: bool = False
    differentiable: bool = True
    gradient: Callable | None = None
    writes_out: bool = False


_OPS: dict[str, OpDef] = {}
_FAMILIES: dict[str, Callable] = {}
# Records eager ops on a GradientTape (set by backend.tape): [record, read].
_TAPE_HOOK: list = [None, None]


def set_tape_hook(hook, read_variables=None) -> None:
    """Sets ``hook(opdef, inputs, attrs, result) -> result``, called for each
    eager op while a ``GradientTape`` records, and ``read_variables(inputs)``,
    which turns the Variables among an op's inputs into recorded reads of
    their values (``backend.tape`` sets both)."""
    _TAPE_HOOK[0], _TAPE_HOOK[1] = hook, read_variables


def register_op(name, infer, num_outputs=1, stateful=False, random=False,
                differentiable=True, writes_out=False):
    """Decorator registering ``kernel(xp, *arrays, **attrs)`` as op ``name``.

    Args:
        name: op name, CamelCase as in TensorFlow ("MatMul").
        infer: ``infer(*specs, **attrs) -> (shape, dtype)``, or a list of them when
            ``num_outputs > 1``; raises ValueError/TypeError for bad inputs.
        num_outputs: outputs per node.
        stateful: the kernel updates a Variable (its first input); such nodes run
            after every stateless node in a compiled plan.
        random: the kernel takes a keyword ``rng``.
        differentiable: False for ops whose outputs carry no gradient (argmax,
            comparisons, random draws); ``gradients`` then stops there quietly.
        writes_out: the kernel takes a keyword ``out`` (an array of the
            output's shape and dtype, or None) and writes its result there:
            ``Function(...)(*values, into=...)`` then computes an output
            straight into a caller's buffer.
    """

    def wrap(kernel):
        if name in _OPS:
            raise ValueError(f"Op '{name}' is registered twice.")
        _OPS[name] = OpDef(name, kernel, infer, num_outputs, stateful, random,
                           differentiable, writes_out=writes_out)
        return kernel

    return wrap


def register_gradient(name):
    """Decorator registering ``rule(node, *output_grads) -> tuple of input grads``.

    ``output_grads`` holds one symbolic gradient per output of ``node``; the rule
    returns one gradient (or None) per input, of the op's output-broadcast shape:
    ``gradients`` sums over broadcast axes centrally.
    """

    def wrap(rule):
        _OPS[name].gradient = rule
        return rule

    return wrap


def register_op_family(prefix, factory):
    """Declares ops named ``f"{prefix}{n}"`` that ``factory(n)`` registers.

    Ops whose output count is an attribute (``Split3``) are registered when a
    graph first needs them; a graph unpickled in another process (a Ray actor)
    needs them too before it ever built one, so ``get_op`` asks the factory.
    """
    _FAMILIES[prefix] = factory


def get_op(name) -> OpDef:
    """The ``OpDef`` of op ``name``; KeyError naming it when none is registered."""
    if name not in _OPS:
        for prefix in sorted(_FAMILIES, key=len, reverse=True):
            suffix = name[len(prefix):]
            if name.startswith(prefix) and suffix.isdigit():
                _FAMILIES[prefix](int(suffix))
                break
    try:
        return _OPS[name]
    except KeyError:
        raise KeyError(f"No op named '{name}' is registered.") from None


def _dtype_hint(inputs):
    for x in inputs:
        if isinstance(x, (bool, int, float)) or x is None:
            continue
        dt = getattr(x, "dtype", None)
        if dt is not None and np.dtype(dt).kind != "b":
            return np.dtype(dt)
    return None


def _scalar_dtype(x, hint):
    if isinstance(x, bool):
        return np.bool_
    if hint is None and isinstance(x, np.generic):
        return x.dtype  # np.float64 is a float; alone, it keeps its dtype
    if hint is not None and (isinstance(x, int) or hint.kind == "f"):
        return hint
    return _array.floatx() if isinstance(x, float) else np.int64


def apply(op: str, *inputs, name: str | None = None, **attrs):
    """Applies op ``op``: adds a node for symbolic inputs, else runs the kernel.

    Python numbers take the dtype of the op's first non-bool array input (as
    ``x * 2.0`` stays float32 in TF); lists become arrays.

    Returns:
        A ``SymbolicTensor`` (tuple of them for multi-output ops) when any input is
        symbolic; otherwise the kernel's array result.

    Raises:
        ValueError / TypeError: from the op's shape/dtype inference, naming the op.
    """
    opdef = _OPS[op]
    if _TAPE_HOOK[1] is not None and tape_array.recording():
        # On an eager tape, an op on Variables runs now on their values.
        inputs = _TAPE_HOOK[1](inputs)
    # While a step is traced, a random draw is a node even with a static shape:
    # run now, it would be one fixed draw baked into every step (tf.function's
    # semantics: the draw happens each time the step runs).
    symbolic = any(isinstance(x, SymbolicTensor) for x in inputs) or (
        opdef.random and in_tracing())
    hint = _dtype_hint(inputs)
    if symbolic:
        scope = get_autocast_scope()
        if scope is not None and scope.dtype is not None and op != "Cast":
            inputs = _autocast(inputs, scope.dtype, opdef.stateful)
        tensors = []
        for x in sequencing.latest(inputs, opdef.stateful):
            if isinstance(x, SymbolicTensor):
                tensors.append(x)
            elif isinstance(x, (bool, int, float)):
                tensors.append(constant(x, dtype=_scalar_dtype(x, hint)))
            else:
                tensors.append(constant(x))
        result = _infer(opdef, tensors, attrs, name)
        node = Node(op, tensors, attrs, name)
        specs = [result] if opdef.num_outputs == 1 else list(result)
        node.outputs = tuple(
            SymbolicTensor(node, i, shape, dtype) for i, (shape, dtype) in
            enumerate(specs)
        )
        return node.outputs[0] if opdef.num_outputs == 1 else node.outputs
    xp = _array.get_xp()
    arrays = []
    for x in inputs:
        if isinstance(x, (bool, int, float)):
            arrays.append(xp.asarray(x, dtype=_scalar_dtype(x, hint)))
        elif type(x) is EagerTensor:
            # Kernels see plain arrays: a subclass would slow every numpy call.
            arrays.append(x.view(np.ndarray))
        elif isinstance(x, xp.ndarray):
            arrays.append(x)
        else:
            # As constant() does in a graph: a list of Python floats is floatx.
            arrays.append(_array.to_device(_array.as_numpy(x)))
    _infer(opdef, [TensorSpec(a.shape, a.dtype) for a in arrays], attrs, name)
    if opdef.random:
        from kerasflow.backend.ops.random import eager_rng  # noqa: PLC0415

        return opdef.kernel(xp, *arrays, rng=eager_rng(attrs.get("seed")), **attrs)
    out = opdef.kernel(xp, *arrays, **attrs)
    if _TAPE_HOOK[0] is not None and tape_array.recording():
        return _TAPE_HOOK[0](opdef, inputs, attrs, out)
    # TF 2's eager tensor (``.numpy()``) at no cost: a view, made only here.
    if type(out) is np.ndarray:
        return out.view(EagerTensor)
    if type(out) is tuple:
        return tuple(as_eager(o) for o in out)
    return as_eager(out)  # a numpy scalar (reductions) as a 0-d EagerTensor


def _autocast(inputs, dtype, stateful):
    """``inputs`` with float Variables read as ``dtype`` (a stateful op's
    target, its first input, is written, not read: it stays)."""
    out = list(inputs)
    for i, x in enumerate(out):
        if (isinstance(x, Variable) and (i or not stateful)
                and x.dtype.kind == "f" and x.dtype != dtype
                and getattr(x, "autocast", True)):
            out[i] = apply("Cast", x, dtype=dtype)
    return out


def _infer(opdef, specs, attrs, name):
    try:
        return opdef.infer(*specs, **attrs)
    except (ValueError, TypeError) as e:
        label = f"'{name}' ({opdef.name})" if name else f"'{opdef.name}'"
        raise type(e)(f"Op {label}: {e}") from None
