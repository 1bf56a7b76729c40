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
   step's apply graph), whose out-of-place updates write the new values
   straight into the segment's shared parameter array for this step
   (``ShmAllreduce.params``, double-buffered);
3. barrier; every rank copies the summed metric/loss tail. The new weights
   need no allgather: every rank's copies of a variable are views of the
   shared array (:class:`ZeroShard`), read where the owner wrote them.

One barrier pair per step, as the plain allreduce, no optimizer work
duplicated and no copy of the weights. It needs an optimizer whose update of a variable depends on that
variable's gradient only (Adam, SGD, RMSprop...): an update that reads
several gradients (global-norm clipping) refuses the plan, and the replicas
keep the plain allreduce. Slots of a variable are current on its owner only:
the driver pulls each from its owner (:attr:`ZeroPlan.owner_of`).
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.backend.graph import walk
from kerasflow.optimizers.kernels import set_update_target

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
    """One rank's side of a :class:`ZeroPlan` over shared parameter arrays.

    The weights live in the collective's two shared parameter arrays
    (``ShmAllreduce.params``): at step ``seq`` each owner's optimizer update
    writes the new values of its variables straight into their ranges of
    ``params[seq % 2]`` (``optimizers.kernels.set_update_target``: the
    updates are out of place, so they read the previous half and write this
    one), and after the step's second barrier every rank's copies of the
    others' variables become views of that half. No allgather, no copy. An
    update that kept its own buffer (a constraint) is copied in instead.
    :meth:`detach` gives the variables private copies again; it runs before
    the segment goes away and before another step's weights are written over
    the arrays.

    Args:
        step: the ``TrainStep``.
        plan: its ``ZeroPlan``.
        rank: this rank.
        halves: the two ``(size,)`` shared arrays (at least the step's
            ``layout.size`` elements, of ``layout.dtype``).
    """

    def __init__(self, step, plan, rank, halves):
        self.plan, self.rank, self.halves = plan, rank, tuple(halves)
        self.mine = [j for j, r in enumerate(plan.var_owner) if r == rank]
        self.others = [j for j, r in enumerate(plan.var_owner) if r != rank]
        self.fn = K.Function([step.grad_phs[j] for j in self.mine], [],
                             updates=plan.owned_updates[rank], name="apply_shard")
        self.spans = [(o, o + int(np.prod(sh, dtype=np.int64)), sh)
                      for o, sh in step.layout.entries]
        self.variables = step.trainable_variables
        self.tail = step.layout.size

    def apply(self, result, params):
        """Applies the optimizer to this rank's variables, reading their
        summed gradients from ``result``; their new values land in
        ``params`` (this step's half)."""
        variables, spans = self.variables, self.spans
        for j in self.mine:
            lo, hi, shape = spans[j]
            if _at(variables[j].value, params, lo):  # never read and write one range
                variables[j].value = variables[j].value.copy()
            set_update_target(variables[j], params[lo:hi].reshape(shape))
        self.fn(*[result[lo:hi].reshape(shape)
                  for lo, hi, shape in (spans[j] for j in self.mine)])
        for j in self.mine:
            lo, hi, shape = spans[j]
            if not _at(variables[j].value, params, lo):  # the update kept its own
                target = params[lo:hi].reshape(shape)
                np.copyto(target, variables[j].value)
                variables[j].value = target

    def gather(self, result, params, buf):
        """After the step: the other ranks' variables read from ``params``,
        and ``buf``'s metric/loss tail from ``result``."""
        variables, spans = self.variables, self.spans
        for j in self.others:
            lo, hi, shape = spans[j]
            if not _at(variables[j].value, params, lo):
                variables[j].value = params[lo:hi].reshape(shape)
        buf[self.tail:] = result[self.tail:]

    def detach(self):
        """Private copies of the values that live in the shared arrays
        (idempotent)."""
        for var in self.variables:
            if any(np.may_share_memory(var.value, h) for h in self.halves):
                var.value = var.value.copy()


def _at(value, params, lo):
    """True when ``value`` is the range of ``params`` starting at ``lo``."""
    return (isinstance(value, np.ndarray) and value.__array_interface__["data"][0]
            == params.__array_interface__["data"][0] + lo * params.itemsize)
