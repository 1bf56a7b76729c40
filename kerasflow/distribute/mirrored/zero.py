"""ZeRO stage 1 for synchronous replicas: the optimizer's work and slots
sharded over the ranks (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations
Toward Training Trillion Parameter Models", stage 1).

The flat gradient layout is cut into ``world`` contiguous element ranges of
equal cost, one per rank (an element costs 1, each variable's update call a
fixed amount more; cuts on 16-element boundaries), as DeepSpeed's stage 1
partitions its flat buffer: a variable that crosses a cut is applied in
pieces, each rank running its update on its elements only -- possible
because the optimizer updates (SGD, momentum, Adam, RMSprop, Adagrad) are
elementwise. When a crossing variable's update is not one of those (or it
has a constraint), the plan falls back to whole variables, greedy by size
(the largest unassigned variable to the least loaded rank), as PyTorch's
``ZeroRedundancyOptimizer`` partitions. Per step, in the one shared-memory
round of :meth:`ShmAllreduce.reduce_apply`:

1. every rank writes its gradients into its slot; barrier;
2. each rank sums the slots over its own ranges (a reduce-scatter) and
   applies the optimizer to its variables and pieces only (their update ops
   of the step's apply graph), whose out-of-place updates write the new
   values straight into the segment's shared parameter array for this step
   (``ShmAllreduce.params``, double-buffered);
3. barrier; every rank copies the summed metric/loss tail. The new weights
   need no allgather: every rank's copies of a variable are views of the
   shared array (:class:`ZeroShard`), read where the owners wrote them.

One barrier pair per step, as the plain allreduce, no optimizer work
duplicated and no copy of the weights. It needs an optimizer whose update of
a variable depends on that variable's gradient only: an update that reads
several gradients (global-norm clipping) refuses the plan, and the replicas
keep the plain allreduce. Slots of a variable are current on its owners only:
the driver pulls each from its owners (:attr:`ZeroPlan.owner_of`,
:func:`assemble`).
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.backend.graph import walk
from kerasflow.distribute.mirrored.zero_piece import SLICEABLE, Piece, at_offset
from kerasflow.optimizers.kernels import set_update_target

__all__ = ["ZeroPlan", "ZeroShard", "assemble", "plan_zero", "ranks_of"]

_ALIGN = 16  # elements per cut boundary (a 64-byte line of float32)
_CALL = 16384  # the cost of one update call, in elements (``_cuts``)


class ZeroPlan:
    """Who applies which variable, or which piece of it.

    Attributes:
        world: number of ranks.
        var_owner: per trainable variable (``layout`` order), the rank that
            applies all of it, or -1 for a variable applied in pieces.
        parts: per rank, ``(j, a, b)`` triples: the rank applies elements
            ``[a, b)`` of trainable variable ``j`` (all of it for an owned
            variable).
        ranges: per rank, the ``(lo, hi)`` buffer ranges it reduces (its
            parts' gradients; the last rank also takes ``[g, size)``, the
            metric and loss tail).
        owned_updates: per rank, the apply graph's update ops it runs whole
            (its owned variables' updates plus the ones reading no gradient,
            such as ``iterations += 1``, which every rank runs).
        split_updates: per variable applied in pieces, its update ops.
        owner_of: per ``step.variables`` entry, the rank holding its current
            value (0 for variables every rank updates alike), or a list of
            ``(rank, a, b)``: the ranks holding its pieces.
    """

    def __init__(self, world, var_owner, parts, ranges, owned_updates, split_updates,
                 owner_of):
        self.world, self.var_owner, self.parts = world, var_owner, parts
        self.ranges, self.owned_updates = ranges, owned_updates
        self.split_updates, self.owner_of = split_updates, owner_of


def plan_zero(step, world, size, call_cost=None):
    """The ZeRO-1 plan of ``step`` over ``world`` ranks, or None when the
    optimizer is not separable per variable (or there is nothing to share).

    Args:
        step: a ``TrainStep`` (``apply_updates``, ``grad_phs``,
            ``trainable_variables``, ``variables``, ``layout``).
        world: ranks (>= 2 to be useful).
        size: elements of the replicas' whole buffer (gradients + tail).
        call_cost: the cost of one update call in elements when balancing
            the ranges (default ``_CALL``; 0: equal element counts).

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
    call = _CALL if call_cost is None else int(call_cost)
    parts = (_contiguous_parts(step, world, sizes, per_var, call)
             or _greedy_parts(world, sizes))
    var_owner = [-1] * len(sizes)
    for r, mine in enumerate(parts):
        for j, a, b in mine:
            if (a, b) == (0, sizes[j]):
                var_owner[j] = r
    entries = step.layout.entries
    ranges = [[(entries[j][0] + a, entries[j][0] + b) for j, a, b in mine]
              for mine in parts]
    ranges[world - 1].append((step.layout.size, int(size)))
    ranges = [_merged(rs) for rs in ranges]
    owned = [[u for j, us in enumerate(per_var) if var_owner[j] == r for u in us]
             + shared for r in range(world)]
    split = {j: per_var[j] for j, r in enumerate(var_owner) if r < 0}
    pieces = {j: [(r, a, b) for r, mine in enumerate(parts) for jj, a, b in mine
                  if jj == j] for j in split}
    owner_of = []
    for v in step.variables:
        j = assigned.get(id(v))
        owner_of.append(0 if j is None else var_owner[j] if var_owner[j] >= 0
                        else pieces[j])
    return ZeroPlan(world, var_owner, parts, ranges, owned, split, owner_of)


def _merged(ranges):
    """Sorted ``(lo, hi)`` ranges with adjacent ones joined."""
    out = []
    for lo, hi in sorted(ranges):
        if out and out[-1][1] == lo:
            out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def _cuts(sizes, world, call):
    """``world + 1`` element offsets cutting the flat layout into ranges of
    equal cost: one per element plus ``call`` per variable (each update is
    one more call, measured ~25 us, the time of ~16k Adam elements here)."""
    total = sum(sizes) + call * len(sizes)
    cuts, cost, off, j = [0], 0, 0, 0
    for r in range(1, world):
        want = total * r // world
        while j < len(sizes) and cost + call + sizes[j] <= want:
            cost += call + sizes[j]
            off += sizes[j]
            j += 1
        inside = 0 if j == len(sizes) else max(0, want - cost - call)
        cut = (off + inside) // _ALIGN * _ALIGN
        cuts.append(min(max(cut, cuts[-1]), sum(sizes)))
    cuts.append(sum(sizes))
    return cuts


def _contiguous_parts(step, world, sizes, per_var, call):
    """Contiguous ranges of the flat layout of equal cost (``_cuts``), or
    None when a variable crossing a cut cannot be applied in pieces."""
    cuts = _cuts(sizes, world, call)
    parts = [[] for _ in range(world)]
    for j, (off, _) in enumerate(step.layout.entries):
        for r in range(world):
            lo, hi = max(off, cuts[r]), min(off + sizes[j], cuts[r + 1])
            if lo < hi:
                parts[r].append((j, lo - off, hi - off))
    owners = {}
    for r, mine in enumerate(parts):
        for j, _, _ in mine:
            owners.setdefault(j, set()).add(r)
    for j, rs in owners.items():
        if len(rs) > 1 and not _sliceable(per_var[j], step.trainable_variables[j],
                                          step.grad_phs[j]):
            return None
    return parts


def _greedy_parts(world, sizes):
    """Whole variables, the largest first to the least loaded rank."""
    load, parts = [0] * world, [[] for _ in range(world)]
    for j in sorted(range(len(sizes)), key=lambda j: (-sizes[j], j)):
        r = min(range(world), key=lambda r: (load[r], r))
        parts[r].append((j, 0, sizes[j]))
        load[r] += sizes[j]
    for mine in parts:
        mine.sort()
    return parts


def _sliceable(updates, var, grad_ph):
    """One elementwise update of ``var`` (no constraint) whose other inputs
    are its gradient, slots of its shape and scalars."""
    if len(updates) != 1 or getattr(var, "constraint", None) is not None:
        return False
    node = updates[0].node
    first = node.inputs[0].node
    if node.op not in SLICEABLE or first.attrs.get("variable") is not var:
        return False
    for t in node.inputs[1:]:
        if t.node is grad_ph.node or t.shape == ():
            continue
        if t.node.op != "Variable" or tuple(t.shape) != tuple(var.shape):
            return False
    return True


def assemble(owner_of, indices, got):
    """The driver's values of ``step.variables[i]`` for ``i`` in ``indices``
    from the ranks' answers.

    Args:
        owner_of: ``ZeroPlan.owner_of``.
        indices: the variables wanted.
        got: ``{rank: {i: array}}``, each rank's values of the variables it
            holds a current value or piece of.

    Returns:
        list of arrays, one per index (pieces put together).
    """
    out = []
    for i in indices:
        o = owner_of[i]
        if isinstance(o, int):
            out.append(got[o][i])
            continue
        value = np.array(got[o[0][0]][i])
        flat = value.reshape(-1)
        for r, a, b in o:
            flat[a:b] = np.asarray(got[r][i]).reshape(-1)[a:b]
        out.append(value)
    return out


def ranks_of(owner):
    """The ranks an ``owner_of`` entry names."""
    return [owner] if isinstance(owner, int) else [r for r, _, _ in owner]


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
        self.pieces = [Piece(self.variables[j], plan.split_updates[j][0],
                             step.grad_phs[j], self.spans[j][0], a, b)
                       for j, a, b in plan.parts[rank] if plan.var_owner[j] < 0]
        scalars = [t for p in self.pieces for t in p.scalars]
        # The pieces' scalars (Adam's step size reads ``iterations``) before
        # the owned updates run (they increment it), as in one plan.
        self.scalar_fn = K.Function([], scalars, name="piece_scalars") \
            if scalars else None

    def apply(self, result, params):
        """Applies the optimizer to this rank's variables and pieces,
        reading their summed gradients from ``result``; their new values
        land in ``params`` (this step's half)."""
        values = self.scalar_fn() if self.scalar_fn is not None else ()
        at = 0
        for piece in self.pieces:
            n = len(piece.scalars)
            piece.run(result, params, values[at:at + n])
            at += n
        variables, spans = self.variables, self.spans
        for j in self.mine:
            lo, hi, shape = spans[j]
            if at_offset(variables[j].value, params, lo):  # never read and write one range
                variables[j].value = variables[j].value.copy()
            set_update_target(variables[j], params[lo:hi].reshape(shape))
        self.fn(*[result[lo:hi].reshape(shape)
                  for lo, hi, shape in (spans[j] for j in self.mine)])
        for j in self.mine:
            lo, hi, shape = spans[j]
            if not at_offset(variables[j].value, params, lo):  # the update kept its own
                target = params[lo:hi].reshape(shape)
                np.copyto(target, variables[j].value)
                variables[j].value = target

    def gather(self, result, params, buf):
        """After the step: the other ranks' variables read from ``params``,
        and ``buf``'s metric/loss tail from ``result``."""
        variables, spans = self.variables, self.spans
        for j in self.others:
            lo, hi, shape = spans[j]
            if not at_offset(variables[j].value, params, lo):
                variables[j].value = params[lo:hi].reshape(shape)
        buf[self.tail:] = result[self.tail:]

    def detach(self):
        """Private copies of the values that live in the shared arrays
        (idempotent)."""
        for var in self.variables:
            if any(np.may_share_memory(var.value, h) for h in self.halves):
                var.value = var.value.copy()
