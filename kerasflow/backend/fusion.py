"""Kernel fusion for compiled ``Function`` plans (TF's grappler/XLA idea, small).

Three rewrites, applied when a ``Function`` is compiled with fusion on:

* **Elementwise chains** (``Add``/``Sub``/``Mul``/``Div``/``Maximum``/
  ``Minimum``/``Neg``/``Abs``/``Square``/``Sqrt``/``Exp``/``Log``/``Tanh``/``Sigmoid``/
  ``Relu``/``ReluGrad``/``ClipByValue`` over one float dtype) become one node
  whose kernel is generated Python compiled by numba: one parallel pass over
  memory instead of one numpy pass (and one temporary) per op. A chain may take
  full arrays of its output's shape, vectors broadcast along the last axis (a
  bias) and scalars; an intermediate value is fused away only when nothing
  outside the chain reads its values (readers of its shape only, such as the
  gradient's ``SumToLike``, get an alias of the same shape). Dense's bias-add +
  ReLU and the ReLU gradient are the typical cases.
* **Registered rewrites** (``register_rewrite``): patterns of several nodes
  replaced by one plan entry, such as ``pool_relu_grad``'s MaxPoolGrad + ReLU
  gradient + bias gradient.
* **Registered kernels**: an op may have a fused replacement kernel
  (``register_fused_kernel``), as every optimizer update op does in
  ``kerasflow.optimizers.fused`` (one parallel pass per variable).

Fused and unfused plans compute the same values up to float rounding: each
element goes through the same operations in the same dtype (see
``kerasflow.backend.jit`` for the compiler flags). A fused node falls back to the
op-by-op numpy kernels for inputs it does not handle (small arrays, shapes that
broadcast otherwise, other array types), so fusing never changes what runs.

On GPU a chain becomes one ``cupy.fuse`` kernel of the same ops (untested here:
no GPU in CI). Without numba on CPU nothing is rewritten.

Switch: ``set_fusion(False)`` or the environment variable ``KERASFLOW_FUSION=0``
(read when a plan is compiled; plans already compiled keep their kernels).
"""

from __future__ import annotations

import functools
import os

import numpy as np

from kerasflow.backend import jit
from kerasflow.backend.registry import get_op, register_op

__all__ = ["FusedNode", "MergedNode", "SHAPE_ONLY", "fusion_enabled", "kernel_for",
           "readers", "register_fused_kernel", "register_rewrite", "rewrite", "set_fusion"]

_FACTORIES: dict = {}
_REWRITES: list = []
_SWITCH: dict = {"on": None}
# Below this many output elements a chain runs op by op (numpy is as fast there).
MIN_SIZE = 4096

# Per op: scalar code over already-loaded operand names (each op's result is
# assigned to a local, so operands are names and may repeat).
_EXPR = {
    "Add": "{0} + {1}", "Sub": "{0} - {1}", "Mul": "{0} * {1}",
    "Div": "{0} / {1}", "Neg": "-{0}", "Square": "{0} * {0}",
    "Sqrt": "np.sqrt({0})", "Exp": "np.exp({0})", "Log": "np.log({0})",
    "Tanh": "np.tanh({0})", "Abs": "np.abs({0})",
    # np.maximum/np.minimum: NaN if either is NaN.
    "Maximum": "{0} if ({0} >= {1} or {0} != {0}) else {1}",
    "Minimum": "{0} if ({0} <= {1} or {0} != {0}) else {1}",
    "Relu": "{0} if ({0} >= _ZERO or {0} != {0}) else _ZERO",
    "ReluGrad": "{0} * (_ONE if {1} > _ZERO else _ZERO)",
    "Sigmoid": "_HALF * (_ONE + np.tanh(_HALF * {0}))",
}
# Ops worth a kernel alone (numpy makes several passes for them).
_ALONE = {"ReluGrad", "Sigmoid", "ClipByValue"}
# (op, input index) that read only the shape of that input.
SHAPE_ONLY = {("SumToLike", 1), ("UnreduceLike", 1), ("OnesLike", 0),
               ("ZerosLike", 0), ("ReducedCount", 0)}


def set_fusion(enabled: bool) -> None:
    """Turns fusion on or off for plans compiled from now on (None: env default)."""
    if enabled is not None and not isinstance(enabled, bool):
        raise TypeError(f"set_fusion expects a bool or None. Received: {enabled!r}.")
    _SWITCH["on"] = enabled


def fusion_enabled() -> bool:
    """``set_fusion``'s value, else False iff ``KERASFLOW_FUSION`` is 0/false/off."""
    if _SWITCH["on"] is not None:
        return _SWITCH["on"]
    env = os.environ.get("KERASFLOW_FUSION", "1").strip().lower()
    return env not in ("0", "false", "off", "no")


def register_fused_kernel(op: str, factory) -> None:
    """Registers ``factory(xp, attrs) -> kernel or None`` as op's fused kernel.

    The kernel takes the op's inputs as the numpy kernel does (without ``xp``
    and attributes); None keeps the registry's kernel.
    """
    _FACTORIES[op] = factory


def readers(order) -> dict:
    """``{tensor: [nodes of order reading it, in order]}`` (for rewrites)."""
    users: dict = {}
    for n in order:
        for t in n.inputs:
            users.setdefault(t, []).append(n)
    return users


def register_rewrite(fn) -> None:
    """Registers ``fn(order, keep, xp) -> order``, a pattern rewrite of a plan
    (several graph nodes into one plan entry with a registered op), run before
    the elementwise chains are fused."""
    _REWRITES.append(fn)


def kernel_for(node, xp, attrs):
    """The fused kernel to run for ``node`` in a plan, or None for the default."""
    if isinstance(node, FusedNode):
        return node.build(xp)
    factory = _FACTORIES.get(node.op)
    if factory is None or not fusion_enabled():
        return None
    return factory(xp, attrs)


class FusedNode:
    """A plan entry standing for a chain of elementwise nodes (``members``).

    Outputs: the chain's result, then aliases of it for intermediates whose
    shape (only) is read later. Inputs: the chain's external inputs, in order.
    """

    op = "FusedElementwise"

    def __init__(self, members, aliases):
        self.members = members
        self.attrs = {}
        final = members[-1]
        self.id, self.uid = final.id, final.uid
        self.name = f"{final.name} (fused: {'+'.join(m.op for m in members)})"
        inner = {t for m in members for t in m.outputs}
        self.inputs = tuple(dict.fromkeys(
            t for m in members for t in m.inputs if t not in inner))
        self.outputs = (final.outputs[0], *aliases)
        rank = len(final.outputs[0].shape)
        # Operand kind per input: 'f' full (output's shape), 'r' last-axis vector,
        # 's' one element.
        self.kinds = "".join(_kind(t.shape, rank) for t in self.inputs)

    def _fallback(self, xp):
        # Straight-line Python, one call per member (as Function's plan): no
        # per-step lookups of operands in a list or dict of values.
        env, names, lines = {}, {}, []
        for i, t in enumerate(self.inputs):
            names[t] = f"a{i}"
        for n, m in enumerate(self.members):
            opdef = get_op(m.op)
            bind = getattr(opdef.kernel, "bind", None)
            env[f"k{n}"] = bind(xp) if bind is not None and not m.attrs else \
                functools.partial(opdef.kernel, xp, **m.attrs)
            lines.append(f"    v{n} = k{n}({', '.join(names[t] for t in m.inputs)})")
            names[m.outputs[0]] = f"v{n}"
        outs = [names[t] for t in self.outputs]
        args = ", ".join(names[t] for t in self.inputs)
        ret = outs[0] if len(outs) == 1 else f"({', '.join(outs)},)"
        src = "\n".join([f"def run({args}):", *lines, f"    return {ret}", ""])
        exec(compile(src, "<kerasflow fused chain>", "exec"), env)  # noqa: S102
        return env["run"]

    def build(self, xp):
        """The callable for the plan: numba (CPU), cupy.fuse (GPU) or op by op."""
        fallback = self._fallback(xp)
        if xp is not np:
            return _cupy_kernel(xp, fallback, len(self.outputs))
        dtype = self.outputs[0].dtype
        kernel = jit.kernels(_generate(self.members, self.inputs, self.kinds,
                                       dtype), "kernel")
        return _numpy_runner(kernel, fallback, self.kinds, dtype, len(self.outputs))


class MergedNode:
    """A plan entry standing for several graph nodes, built by a registered
    rewrite: a registered ``op`` run on ``inputs`` with ``attrs``, producing
    ``outputs`` (tensors of the replaced nodes); named after ``last``."""

    def __init__(self, op, inputs, outputs, attrs, last):
        self.op, self.inputs, self.outputs, self.attrs = op, inputs, outputs, attrs
        self.id, self.uid = last.id, last.uid
        self.name = f"{last.name} (fused: {op})"


@register_op("FusedElementwise", lambda *specs, **_: None, differentiable=False)
def _fused_elementwise(xp, *arrays, fused=None):
    """Registry entry for ``FusedNode`` (its kernel comes from ``kernel_for``)."""
    return fused(*arrays)


def _kind(shape, rank):
    if len(shape) == rank:
        return "f"
    if all(d == 1 for d in shape):
        return "s"
    return "r"


def _numpy_runner(kernel, fallback, kinds, dtype, n_out):
    full = [i for i, k in enumerate(kinds) if k == "f"]
    two_d = "r" in kinds
    first = full[0]

    def run(*arrays):
        ref = arrays[first]
        # Below MIN_SIZE (or for other array types) the ops run one by one.
        if type(ref) is not np.ndarray or ref.size < MIN_SIZE or ref.size == 0:
            return fallback(*arrays)
        shape, size = ref.shape, ref.size
        cols = shape[-1] if shape else 1
        for a, k in zip(arrays, kinds):
            if (type(a) is not np.ndarray or a.dtype != dtype
                    or (k == "f" and a.shape != shape)
                    or (k == "r" and a.shape[-1] != cols)
                    or (k == "s" and a.size != 1)):
                return fallback(*arrays)
        out = np.empty(shape, dtype)
        rows = size // cols
        args = []
        for a, k in zip(arrays, kinds):
            if k == "f":
                args.append(a.reshape(rows, cols) if two_d else a.reshape(-1))
            else:
                args.append(a.reshape(-1))
        dest = out.reshape(rows, cols) if two_d else out.reshape(-1)
        if size < jit.PARALLEL_MIN:  # what jit.launch runs, without its frame
            kernel[0](dest, *args)
        else:
            jit.launch(kernel, size, dest, *args)
        return out if n_out == 1 else (out,) * n_out

    return run


def _generate(members, inputs, kinds, dtype):
    """Source of ``kernel(out, *inputs)`` for this chain (see ``jit.kernels``)."""
    two_d = "r" in kinds
    names = {t: f"x{i}" for i, t in enumerate(inputs)}
    idx = "i, j" if two_d else "i"
    pre, load, body = [], [], []
    for i, k in enumerate(kinds):
        if k == "s":
            pre.append(f"    x{i} = a{i}[0]")
        else:
            load.append(f"x{i} = a{i}[{idx if k == 'f' else 'j'}]")
    for n, m in enumerate(members):
        ops = [names[t] for t in m.inputs]
        if m.op == "ClipByValue":  # np.clip: minimum(maximum(x, lo), hi)
            body.append(f"c{n} = " + _EXPR["Maximum"].format(ops[0], ops[1]))
            ops = [f"c{n}", ops[2]]
            code = _EXPR["Minimum"].format(*ops)
        else:
            code = _EXPR[m.op].format(*ops)
        body.append(f"v{n} = {code}")
        names[m.outputs[0]] = f"v{n}"
    body.append(f"out[{idx}] = v{len(members) - 1}")
    args = ", ".join(["out"] + [f"a{i}" for i in range(len(inputs))])
    dt = np.dtype(dtype).name
    zero, one, half = (f"np.{dt}({v})" for v in ("0.0", "1.0", "0.5"))
    src = [f"def kernel({args}):", *pre,
           f"    _ZERO, _ONE, _HALF = {zero}, {one}, {half}"]
    if two_d:
        src += ["    for i in prange(out.shape[0]):",
                "        for j in range(out.shape[1]):"]
        ind = " " * 12
    else:
        src += ["    for i in prange(out.shape[0]):"]
        ind = " " * 8
    src += [ind + line for line in load + body]
    return "\n".join(src) + "\n"


def _cupy_kernel(xp, fallback, n_out):
    """GPU: the same op sequence as one ``cupy.fuse`` kernel (untested: no GPU).

    If cupy cannot fuse it (an op it does not trace), the chain runs op by op.
    """
    first = fallback if n_out == 1 else (lambda *a: fallback(*a)[0])
    state = {"fused": xp.fuse()(first)}

    def run(*arrays):
        fused = state["fused"]
        if fused is not None:
            try:
                out = fused(*arrays)
            except Exception:  # noqa: BLE001  (cupy could not fuse: go op by op)
                state["fused"] = None
            else:
                return out if n_out == 1 else (out,) * n_out
        return fallback(*arrays)

    return run


# -- the pass ------------------------------------------------------------------------
def _fusable(node):
    if node.op not in _EXPR and node.op != "ClipByValue":
        return False
    out = node.outputs[0]
    if out.shape is None or len(out.shape) == 0 or out.dtype.kind != "f" \
            or out.dtype.itemsize < 4:
        return False
    rank = len(out.shape)
    for t in node.inputs:
        if t.dtype != out.dtype or t.shape is None or len(t.shape) > rank:
            return False
        if len(t.shape) == rank or all(d == 1 for d in t.shape):
            continue
        # A vector along the last axis (a bias): (..., 1, C) against (..., C).
        if any(d != 1 for d in t.shape[:-1]) or t.shape[-1] != out.shape[-1] \
                or t.shape[-1] is None:
            return False
    return True


def rewrite(order, keep, xp):
    """``order`` (a plan's topological node list) with fusable chains fused.

    Args:
        order: nodes as ``Function`` schedules them.
        keep: tensors the plan returns (their values cannot be fused away).
        xp: numpy or cupy.

    Returns:
        A new list in which each fused chain is one ``FusedNode`` at the place
        of its last node; ``order`` itself when fusion is off or unavailable.
    """
    if not fusion_enabled():
        return order
    keep = set(keep)
    for fn in _REWRITES:  # their ops run numpy kernels where numba is missing
        order = fn(order, keep, xp)
    if not any(_fusable(n) for n in order):
        return order
    if xp is np and jit.numba_module() is None:
        return order
    pos = {id(n): i for i, n in enumerate(order)}
    users: dict = {}
    for n in order:
        for j, t in enumerate(n.inputs):
            users.setdefault(t, []).append((n, j))
    owner: dict = {}  # tensor -> [members, aliases] of the chain it ends
    for n in order:
        if not _fusable(n):
            continue
        members, aliases = [], []
        for t in dict.fromkeys(n.inputs):
            chain = owner.get(t)
            if chain is None or t in keep:
                continue
            uses = users.get(t, [])
            if any(u is not n for u, j in uses if (u.op, j) not in SHAPE_ONLY):
                continue
            if any((u.op, j) in SHAPE_ONLY for u, j in uses):
                aliases.append(t)
            del owner[t]
            members += chain[0]
            aliases += chain[1]
        owner[n.outputs[0]] = [sorted(members, key=lambda m: pos[id(m)]) + [n],
                               aliases]
    replace, drop = {}, set()
    for out, (members, aliases) in owner.items():
        final = members[-1]
        if len(members) == 1 and final.op not in _ALONE:
            continue
        last = pos[id(final)]
        if any(len(a.shape) != len(out.shape) or any(
                pos[id(u)] <= last for u, j in users.get(a, ())
                if (u.op, j) in SHAPE_ONLY) for a in aliases):
            continue
        replace[id(final)] = FusedNode(members, aliases)
        drop.update(id(m) for m in members[:-1])
    if not replace:
        return order
    return [replace.get(id(n), n) for n in order if id(n) not in drop]
