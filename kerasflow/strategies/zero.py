"""ZeRO stage 1 for synchronous replicas: the optimizer's work and slots
sharded over the ranks (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations
Toward Training Trillion Parameter Models", stage 1, partitioned by whole
parameters as PyTorch's ``ZeroRedundancyOptimizer`` does).

Each trainable variable is owned by one rank (greedy by size: the largest
unassigned variable goes to the least loaded rank). Per step, in the one
shared-memory round of :meth:`ShmAllreduce.reduce_apply`:

1. every rank writes its gradients into its slot; barrier;
2. each rank sums the slots over its own variables' ranges (a reduce-scatter)
   and applies the optimizer to its variables only (their update ops of the
   step's apply graph), then writes their new values into the segment's
   shared parameter array (``ShmAllreduce.params``);
3. barrier; every rank copies the summed metric/loss tail. The new weights
   need no allgather: the other ranks' copies of a variable are views of the
   shared array (:class:`ZeroShard`), read where the owner wrote them.

One barrier pair per step, as the plain allreduce, no optimizer work
duplicated and one copy of each weight (by its owner) per step. It needs an optimizer whose update of a variable depends on that
variable's gradient only (Adam, SGD, RMSprop...): an update that reads
several gradients (global-norm clipping) refuses the plan, and the replicas
keep the plain allreduce. Slots of a variable are current on its owner only:
the driver pulls each from its owner (:attr:`ZeroPlan.owner_of`).
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.backend.graph import walk

__all__ = ["ZeroPlan", "ZeroShard", "plan_zero"]


class ZeroPlan:
    """Who applies which variable.

    Attributes:
        world: number of ranks.
        var_owner: owning rank per trainable variable (``layout`` order).
        ranges: per rank, the ``(lo, hi)`` buffer ranges it reduces (its
            variables' gradients; the last rank also takes ``[g, size)``,
            the metric and loss tail).
        owned_updates: per rank, the apply graph's update ops it runs (its
            variables' updates plus the ones reading no gradient, such as
            ``iterations += 1``, which every rank runs).
        owner_of: rank holding the current value of each of
            ``step.variables`` (0 for variables every rank updates alike).
    """

    def __init__(self, world, var_owner, ranges, owned_updates, owner_of):
        self.world, self.var_owner, self.ranges = world, var_owner, ranges
        self.owned_updates, self.owner_of = owned_updates, owner_of


def plan_zero(step, world, size):
    """The ZeRO-1 plan of ``step`` over ``world`` ranks, or None when the
    optimizer is not separable per variable (or there is nothing to share).

    Args:
        step: a ``TrainStep`` (``apply_updates``, ``grad_phs``,
            ``trainable_variables``, ``variables``, ``layout``).
        world: ranks (>= 2 to be useful).
        size: elements of the replicas' whole buffer (gradients + tail).

    Returns:
        ``ZeroPlan`` or None.
    """
    needed = ("apply_updates", "grad_phs", "trainable_variables", "layout")
    if world < 2 or not all(hasattr(step, a) for a in needed):
        return None
    ph_index = {id(p.node): j for j, p in enumerate(step.grad_phs)}
    per_var, shared = [[] for _ in step.grad_phs], []
    assigned = {}  # id(Variable) -> trainable index of the update writing it
    for u in step.apply_updates:
        deps = {ph_index[id(n)] for n in walk([u]) if id(n) in ph_index}
        if len(deps) > 1:
            return None  # reads several gradients (global-norm clipping)
        written = [t.node.attrs.get("variable") for t in u.node.inputs
                   if t.node.op == "Variable"]
        if not deps:
            shared.append(u)
            continue
        (j,) = deps
        per_var[j].append(u)
        for v in written:
            if v is not None:
                assigned.setdefault(id(v), j)
    sizes = [int(np.prod(v.shape, dtype=np.int64)) for v in step.trainable_variables]
    load, var_owner = [0] * world, [0] * len(sizes)
    for j in sorted(range(len(sizes)), key=lambda j: (-sizes[j], j)):
        r = min(range(world), key=lambda r: (load[r], r))
        var_owner[j] = r
        load[r] += sizes[j]
    ranges = [[] for _ in range(world)]
    for j, (offset, _) in enumerate(step.layout.entries):
        ranges[var_owner[j]].append((offset, offset + sizes[j]))
    ranges[world - 1].append((step.layout.size, int(size)))
    owned = [[u for j, us in enumerate(per_var) if var_owner[j] == r for u in us]
             + shared for r in range(world)]
    owner_of = [var_owner[assigned[id(v)]] if id(v) in assigned else 0
                for v in step.variables]
    return ZeroPlan(world, var_owner, ranges, owned, owner_of)


class ZeroShard:
    """One rank's side of a :class:`ZeroPlan` over a shared parameter array.

    The optimizer's updates are out of place (``optimizers/kernels.py``
    swaps each variable's value with a spare buffer), so an owner keeps its
    variables private and copies their new values into their ranges of
    ``params`` after applying them; every other rank's copies of those
    variables are views of ``params`` (re-pointed after the step's second
    barrier), so they read each owner's update where it was written: no
    allgather copy. :meth:`detach` gives the viewing variables private copies
    again; it runs before the segment goes away and before another step's
    weights are written over the array.

    Args:
        step: the ``TrainStep``.
        plan: its ``ZeroPlan``.
        rank: this rank.
        params: ``(size,)`` array shared by the ranks (at least the step's
            ``layout.size`` elements, of ``layout.dtype``).
    """

    def __init__(self, step, plan, rank, params):
        self.plan, self.rank = plan, rank
        self.mine = [j for j, r in enumerate(plan.var_owner) if r == rank]
        self.fn = K.Function([step.grad_phs[j] for j in self.mine], [],
                             updates=plan.owned_updates[rank], name="apply_shard")
        self.spans = [(o, o + int(np.prod(sh, dtype=np.int64)), sh)
                      for o, sh in step.layout.entries]
        self.variables = step.trainable_variables
        self.views = [params[lo:hi].reshape(sh) for lo, hi, sh in self.spans]
        self.others = [j for j, r in enumerate(plan.var_owner) if r != rank]
        self.tail = step.layout.size

    def apply(self, result):
        """Applies the optimizer to this rank's variables, reading their
        summed gradients from ``result``, and publishes their new values in
        ``params``."""
        self.fn(*[result[lo:hi].reshape(sh)
                  for lo, hi, sh in (self.spans[j] for j in self.mine)])
        for j in self.mine:
            np.copyto(self.views[j], self.variables[j].value)

    def gather(self, result, buf):
        """After the step: the other ranks' variables read from ``params``,
        and ``buf``'s metric/loss tail from ``result``."""
        variables, views = self.variables, self.views
        for j in self.others:
            if variables[j].value is not views[j]:
                variables[j].value = views[j]
        buf[self.tail:] = result[self.tail:]

    def detach(self):
        """Private copies of the viewing variables' values (idempotent)."""
        for var, view in zip(self.variables, self.views):
            if var.value is view:
                var.value = view.copy()
