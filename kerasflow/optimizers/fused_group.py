"""One kernel call for all of a step's Adam updates (a plan rewrite).

A model's Adam step is one ``ApplyAdam`` node per variable, all sharing one
bias-corrected step size ``alpha``. Each node costs a Python call, a numba
dispatch and, on a parallel kernel, a wake-up of the thread pool; for a bias of
10 elements that is all it costs (~30-100 us in a plan where the caches are
cold after the GEMMs), as much as updating 10^5 elements. This rewrite (run by
``kerasflow.backend.fusion.rewrite`` when fusion is on and numba importable)
replaces each run of adjacent, compatible ``ApplyAdam`` nodes (same ``alpha``,
same hyper-parameters, no AMSGrad, no weight decay, distinct variables, values
nothing else in the plan reads) by one ``AdamGroup`` node: one numba call over
up to ``GROUP`` variables, whose ``prange`` runs over fixed-size chunks of all
of them, so big and small variables share one parallel launch.

Each element goes through exactly the operations of ``fused.adam_update`` (and
of the numpy kernel ``kernels._apply_adam``) in the same order and dtype: the
result is bitwise the per-variable one. Double buffering, slot checks and
constraints are the per-variable kernels' (``_output_buffer``, ``_check_slot``,
``_publish``). A step whose arrays the kernel does not take (non-contiguous,
another dtype, a non-numpy array) runs the per-variable kernels instead.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from kerasflow.backend import fusion, jit
from kerasflow.backend.registry import register_op
from kerasflow.optimizers import fused, kernels

__all__ = ["GROUP", "AdamGroupNode", "adam_group_update"]

prange = range  # plain Python until jit.kernels compiles the loop
GROUP = 8  # variables per call: one compiled signature (shorter tuples padded)
CHUNK = 1 << 14  # elements per prange iteration
ENABLED = True  # False: plans compiled from now on keep one node per variable


def adam_group_update(ws, gs, ms, vs, outs, chunks, alpha, c1, c2, eps):
    for c in prange(chunks.shape[0]):
        k = chunks[c, 0]
        lo = chunks[c, 1]
        hi = chunks[c, 2]
        # Slices, not ws[k][i]: fresh views let LLVM vectorize the inner loop
        # (indexing through the tuple in it ran 5x slower).
        w = ws[k][lo:hi]
        g = gs[k][lo:hi]
        m = ms[k][lo:hi]
        v = vs[k][lo:hi]
        out = outs[k][lo:hi]
        for i in range(w.shape[0]):
            gi = g[i]
            mi = m[i] + (gi - m[i]) * c1
            m[i] = mi
            vi = v[i] + (gi * gi - v[i]) * c2
            v[i] = vi
            out[i] = w[i] - mi / (np.sqrt(vi) + eps) * alpha


@register_op("AdamGroup", lambda *specs, **_: None, differentiable=False)
def _adam_group(xp, *arrays, fused=None):
    """Registry entry for ``AdamGroupNode`` (its kernel comes from ``build``)."""
    return fused(*arrays)


def _chunks(sizes):
    """int64 (n, 3) rows (variable index, start, stop) covering every element."""
    rows = [(k, lo, min(lo + CHUNK, n)) for k, n in enumerate(sizes)
            for lo in range(0, n, CHUNK)]
    return np.array(rows, dtype=np.int64).reshape(-1, 3)


class AdamGroupNode(fusion.FusedNode):
    """A plan entry standing for adjacent ``ApplyAdam`` nodes (``members``).

    Inputs: ``alpha``, then per member its variable, gradient, m and v tensors;
    outputs: the members' outputs (the updated values), in order.
    """

    op = "AdamGroup"

    def __init__(self, members):  # noqa: D107  (FusedNode's layout, other inputs)
        self.members = members
        self.attrs = {}
        self.id, self.uid = members[-1].id, members[-1].uid
        self.name = f"{members[-1].name} (fused: AdamGroup x{len(members)})"
        self.inputs = (members[0].inputs[2],) + tuple(
            t for m in members for t in (m.inputs[0], m.inputs[1], *m.inputs[3:5]))
        self.outputs = tuple(m.outputs[0] for m in members)

    def build(self, xp):
        """The plan's callable: one grouped numba call, else per member."""
        attrs = dict(self.members[0].attrs)
        single = [fusion.kernel_for(m, xp, attrs)
                  or functools.partial(kernels._apply_adam, xp, **attrs)
                  for m in self.members]
        variables = [m.inputs[0].node.attrs["variable"] for m in self.members]
        n = len(self.members)

        def per_member(alpha, *rest):
            return tuple(single[j](variables[j], rest[4 * j + 1], alpha,
                                   rest[4 * j + 2], rest[4 * j + 3])
                         for j in range(n))

        if xp is not np or jit.numba_module() is None:
            return per_member
        fn = jit.kernels(inspect.getsource(adam_group_update), "adam_group_update")
        dtype = np.dtype(self.members[0].inputs[0].dtype)
        sizes = [int(np.prod(v.shape)) for v in variables]
        chunks, total = _chunks(sizes), sum(sizes)
        empty = np.empty(0, dtype)
        pad = (empty,) * (GROUP - n)
        consts = tuple(dtype.type(c) for c in (1.0 - attrs["beta_1"],
                                               1.0 - attrs["beta_2"],
                                               attrs["epsilon"]))

        def run(alpha, *rest):
            flat = [[], [], [], [], []]
            for j, var in enumerate(variables):
                views = fused._flat(var, rest[4 * j + 1], rest[4 * j + 2:4 * j + 4])
                # One tuple type per argument: read-only arrays (ray.get) would
                # make the tuples heterogeneous.
                if (views is None or views[0].dtype != dtype
                        or not (views[0].flags.writeable and views[1].flags.writeable)):
                    return per_member(alpha, *rest)
                w, g, (m, v) = views
                for lst, a in zip(flat, (w, g, m, v)):
                    lst.append(a)
            news = [kernels._output_buffer(np, var) for var in variables]
            flat[4] = [a.reshape(-1) for a in news]
            jit.launch(fn, total,
                       *(tuple(lst) + pad for lst in flat), chunks,
                       dtype.type(alpha), *consts)
            return tuple(kernels._publish(var, new)
                         for var, new in zip(variables, news))

        return run


def _variable(node):
    return node.inputs[0].node.attrs.get("variable")


def _compatible(node, first):
    a = node.attrs
    return (node.op == "ApplyAdam" and not a.get("amsgrad") and not a.get("decay")
            and len(node.inputs) == 5
            and (first is None or (node.inputs[2] is first.inputs[2]
                                   and a == first.attrs
                                   and node.inputs[0].dtype == first.inputs[0].dtype)))


def group_adam(order, keep, xp):
    """Plan rewrite: runs of ``ApplyAdam`` nodes become ``AdamGroupNode``s."""
    if not ENABLED or xp is not np or jit.numba_module() is None:
        return order
    read = set(keep)
    for n in order:
        read.update(n.inputs)
    out, run = [], []

    def flush():
        if len(run) > 1:
            for lo in range(0, len(run), GROUP):
                part = run[lo:lo + GROUP]
                out.append(AdamGroupNode(part) if len(part) > 1 else part[0])
        else:
            out.extend(run)
        run.clear()

    for node in order:
        ok = (_compatible(node, run[0] if run else None)
              and node.outputs[0] not in read
              and all(_variable(node) is not _variable(m) for m in run))
        if not ok:
            flush()
            ok = _compatible(node, None) and node.outputs[0] not in read
        if ok:
            run.append(node)
        else:
            out.append(node)
    flush()
    return out


fusion.register_plan_rewrite(group_adam)
