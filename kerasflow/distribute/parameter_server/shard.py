"""Parameter-server shards: which variables each shard owns, and the shard
actor body that applies pushed gradients to them (Li et al., OSDI 2014, §3:
"server nodes maintain a partition of the globally shared parameters").

A shard owns a contiguous range of the ``TrainStep``'s flat gradient layout,
cut at variable boundaries so that the shards hold about the same number of
bytes (TF's ``ParameterServerStrategy`` places whole variables round-robin;
balancing bytes is the paper's key-range partitioning). The shard keeps a
copy of the step, and runs only the part of the optimizer's apply graph that
reads its gradient placeholders (one fused update per variable, with its
slots) plus the updates that read none (``iterations += 1``). When one update
reads the gradients of several shards (global-norm clipping), the split is
not separable: every shard then receives every slice and runs the full apply,
and only its own range is used -- correct, at S times the apply cost.

With a ``variable_partitioner`` (TF's partitioned variables) a variable's row
blocks may be cut between shards: each shard holding rows of it runs the
variable's update on its copy with a gradient that is zero outside its rows,
and only its rows are authoritative (pulled, snapshotted). That is exact
when the update is elementwise (SGD, momentum, Adam, RMSprop, Adagrad...);
an update with a reduction over the variable (``clipnorm``) is not, and the
plan falls back to the full apply on every shard.

This module does not import ray: a ``WorkerGroup`` hosts :class:`PSShard`.
"""

from __future__ import annotations

import itertools
import time

import numpy as np

from kerasflow import backend as K
from kerasflow.backend.graph import walk
from kerasflow.distribute.parameter_server.partitioners import row_bounds

__all__ = ["PSShard", "decode_push", "encode_push", "plan_shards",
           "push_layout"]


_ROW_UNSAFE = frozenset({"Sum", "Mean", "Max", "Min", "Prod", "ReducedCount",
                         "MatMul", "Reshape", "Transpose", "ArgMax", "ArgMin",
                         "Concat", "Gather", "Tile", "Flatten"})


def _units(step, partitioner):
    """``(var, r0, r1, flat_lo, flat_hi)`` row blocks of the flat layout."""
    units = []
    for i, ((o, shape), v) in enumerate(zip(step.layout.entries,
                                            step.trainable_variables)):
        n = int(np.prod(shape, dtype=np.int64))
        rows = int(shape[0]) if len(shape) else 1
        k = 1
        if partitioner is not None and len(shape) and rows > 1:
            parts = partitioner(tuple(shape), np.dtype(v.dtype))
            k = int(parts[0]) if parts else 1
        if k <= 1:
            units.append((i, 0, rows, o, o + n))
            continue
        per = n // rows
        b = row_bounds(rows, k)
        for r0, r1 in itertools.pairwise(b):
            units.append((i, r0, r1, o + r0 * per, o + r1 * per))
    return units


def _cuts(sizes, num_ps, nearest):
    total = max(1, sum(sizes))
    cuts, acc, s = [0], 0, 1
    if nearest:  # cut at the unit boundary nearest each quota (split variables)
        cum = np.cumsum([0] + list(sizes))
        for s in range(1, num_ps):
            j = int(np.argmin(np.abs(cum - total * s / num_ps)))
            cuts.append(max(j, cuts[-1]))
    else:
        for i, n in enumerate(sizes):
            acc += n
            # Cut after unit i when the running total passes the next quota.
            while s < num_ps and acc >= total * s / num_ps and len(cuts) <= s:
                cuts.append(i + 1)
                s += 1
        while len(cuts) < num_ps:
            cuts.append(len(sizes))
    cuts.append(len(sizes))
    return cuts


def push_layout(step, ranges, pieces):
    """Per shard ``(lo, hi, sparse)``: its flat range and, for the pieces of
    embedding tables (a gradient that is an ``IndexedSlicesToDense`` node),
    ``(flat_lo, flat_hi, row_len)`` segments that workers push as row ids +
    rows (ps-lite's sparse key-value push)."""
    out = []
    for (_, _, lo, hi), mine in zip(ranges, pieces):
        sparse = []
        for i, _, _, flo, fhi in mine:
            g, sh = step.grads[i], step.layout.entries[i][1]
            if getattr(g.node, "op", None) == "IndexedSlicesToDense" and len(sh) > 1:
                sparse.append((flo, fhi, int(np.prod(sh[1:], dtype=np.int64))))
        out.append((lo, hi, sparse))
    return out


def encode_push(grads, lo, hi, sparse):
    """The push of flat ``grads[lo:hi]``: the array itself, or with sparse
    segments a dict ``dense`` (the array with those segments cut out) and
    ``rows`` (per segment: int64 ids of its nonzero rows, and those rows)."""
    if not sparse:
        return grads[lo:hi]
    dense, rows, at = [], [], lo
    for flo, fhi, rl in sparse:
        dense.append(grads[at:flo])
        block = grads[flo:fhi].reshape(-1, rl)
        ids = np.flatnonzero(np.any(block != 0, axis=1))
        rows.append((ids, block[ids]))
        at = fhi
    dense.append(grads[at:hi])
    return dict(dense=np.concatenate(dense), rows=rows)


def decode_push(push, lo, hi, sparse, out):
    """Writes the push of ``encode_push`` into ``out`` (length hi-lo);
    returns the number of sparse rows received."""
    if not isinstance(push, dict):
        np.copyto(out, push)
        return 0
    at, d, n = lo, 0, 0
    dense = push["dense"]
    for (flo, fhi, rl), (ids, rows) in zip(sparse, push["rows"]):
        out[at - lo:flo - lo] = dense[d:d + flo - at]
        d += flo - at
        seg = out[flo - lo:fhi - lo].reshape(-1, rl)
        seg[...] = 0
        seg[ids] = rows
        n += len(ids)
        at = fhi
    out[at - lo:hi - lo] = dense[d:]
    return n


def plan_shards(step, num_ps, partitioner=None, placement=None):
    """Splits ``step``'s trainable variables over ``num_ps`` shards.

    Args:
        step: a ``TrainStep``.
        num_ps: int >= 1, number of shards.
        partitioner: None (whole variables) or a ``partitioners.Partitioner``:
            variables it cuts into k row blocks may be split at those row
            boundaries between neighbouring shards.
        placement: None (cut by bytes), or the shard of each trainable
            variable, non-decreasing (TF1's ``replica_device_setter`` chose
            them; the step lists its variables grouped by shard).

    Returns:
        dict with ``ranges`` (per shard ``(var_lo, var_hi, lo, hi)``: the
        trainable variables it holds a part of and its flat-layout offsets),
        ``pieces`` (per shard ``(var, row_lo, row_hi, flat_lo, flat_hi)``),
        ``separable`` (bool), ``updates`` (per shard, indices into
        ``step.apply_updates``), ``owner`` (per ``step.variables`` entry: shard
        index, or None when no shard writes it; the first shard for a split
        variable) and ``split`` (``step.variables`` index -> ``[(shard, r0,
        r1)]`` for split variables and their row-shaped optimizer slots).
        Shards beyond the number of variables own an empty range.
    """
    units = _units(step, partitioner)
    if placement is not None:
        if list(placement) != sorted(placement) or len(placement) != len(units):
            raise ValueError(f"plan_shards expects one non-decreasing shard index "
                             f"per trainable variable. Received: {placement!r}")
        cuts = [sum(1 for p in placement if p < k) for k in range(num_ps)]
        cuts.append(len(units))
    else:
        cuts = _cuts([u[4] - u[3] for u in units], num_ps,
                     nearest=partitioner is not None)
    ranges, pieces = [], []
    size = step.layout.size
    for k in range(num_ps):
        mine = []
        for u in units[cuts[k]:max(cuts[k], cuts[k + 1])]:
            if mine and mine[-1][0] == u[0]:  # blocks of one variable: merge
                mine[-1] = (u[0], mine[-1][1], u[2], mine[-1][3], u[4])
            else:
                mine.append(u)
        pieces.append(mine)
        if mine:
            ranges.append((mine[0][0], mine[-1][0] + 1, mine[0][3], mine[-1][4]))
        else:
            nxt = units[cuts[k]][3] if cuts[k] < len(units) else size
            nv = units[cuts[k]][0] if cuts[k] < len(units) else len(step.layout.entries)
            ranges.append((nv, nv, nxt, nxt))
    shards_of = {}  # trainable index -> [(shard, r0, r1)]
    for k, mine in enumerate(pieces):
        for i, r0, r1, _, _ in mine:
            shards_of.setdefault(i, []).append((k, r0, r1))
    ph = {id(p.node): i for i, p in enumerate(step.grad_phs)}
    updates, separable = [[] for _ in range(num_ps)], True
    reach = [set() for _ in range(num_ps)]
    var_index = {id(v): i for i, v in enumerate(step.variables)}
    common, split, every = set(), {}, set()
    for u_i, u in enumerate(step.apply_updates):
        nodes = walk([u])
        reads = {ph[id(n)] for n in nodes if id(n) in ph}
        owners = {k for i in reads for k, _, _ in shards_of[i]}
        touched = {var_index[id(n.attrs["variable"])] for n in nodes
                   if n.op == "Variable" and id(n.attrs["variable"]) in var_index}
        every |= touched
        if len(owners) > 1:
            (i,) = reads if len(reads) == 1 else (None,)
            if i is None or any(n.op in _ROW_UNSAFE for n in nodes):
                separable = False
                continue
            # One split variable, elementwise update: every shard holding
            # rows of it runs it; its rows (and its slots' rows) are its own.
            rows = step.trainable_variables[i].shape[0]
            for k in owners:
                updates[k].append(u_i)
            first = shards_of[i][0][0]
            for t in touched:
                shape = step.variables[t].shape
                if len(shape) and shape[0] == rows:
                    split[t] = list(shards_of[i])
                else:
                    reach[first].add(t)
        elif not owners:
            for k in range(num_ps):
                updates[k].append(u_i)
            common |= touched
        else:
            k = owners.pop()
            updates[k].append(u_i)
            reach[k] |= touched
    owner = [None] * len(step.variables)
    if not separable:  # every shard runs the full apply: shard 0 has it all
        updates = [list(range(len(step.apply_updates))) for _ in range(num_ps)]
        for t in every:
            owner[t] = 0
        return dict(ranges=ranges, pieces=pieces, separable=False,
                    updates=updates, owner=owner, split={},
                    push=push_layout(step, ranges, pieces))
    for k in range(num_ps):
        for i in sorted(reach[k]):
            if owner[i] is None:
                owner[i] = k
    for i in common:
        if owner[i] is None:
            owner[i] = 0
    for i, v in enumerate(step.trainable_variables):
        where = shards_of.get(i, [(0, 0, 0)])
        owner[var_index[id(v)]] = where[0][0]
        if len(where) > 1:
            split[var_index[id(v)]] = list(where)
    for t, where in split.items():
        owner[t] = where[0][0]
    return dict(ranges=ranges, pieces=pieces, separable=separable,
                updates=updates, owner=owner, split=split,
                push=push_layout(step, ranges, pieces))


class PSShard:
    """Worker object of one PS shard (hosted by a ``WorkerGroup`` actor).

    Attributes:
        progress: pushes applied (read by the driver's stuck detection).
        version: global steps (or async pushes) applied.
    """

    def __init__(self, rank, world):
        self.rank, self.world = rank, world
        self.progress = self.version = 0
        self.step = self.plan = self._apply = None
        self.apply_seconds = 0.0
        self.sparse_rows = 0
        self.call, self.applied, self._pending, self._seen = None, 0, {}, set()

    def load(self, step, plan):
        """Takes the step (variables at the chief's values) and the plan."""
        self.step, self.plan = step, plan
        a, b, lo, hi = plan["ranges"][self.rank]
        self.lo, self.hi = lo, hi
        ups = [step.apply_updates[i] for i in plan["updates"][self.rank]]
        pieces = plan["pieces"][self.rank]
        if plan["separable"]:
            phs = step.grad_phs[a:b]
            # (buffer offset, shape, rows r0:r1 of it or None when whole)
            self._entries = []
            for i, r0, r1, flo, fhi in pieces:
                sh = tuple(step.layout.entries[i][1])
                part = None if (r0, r1) == (0, sh[0] if sh else 1) \
                    else (r0, r1, fhi - flo)
                self._entries.append((flo - lo, sh, part))
            self._buf = np.zeros(hi - lo, step.layout.dtype)
        else:
            phs = step.grad_phs
            self._entries = [(o, tuple(sh), None) for o, sh in step.layout.entries]
            self._buf = np.zeros(step.layout.size, step.layout.dtype)
        self._apply = K.Function(phs, [], updates=ups, name=f"ps{self.rank}_apply")
        self._own = []
        for i, r0, r1, _, _ in pieces:
            sh = tuple(step.layout.entries[i][1])
            whole = (r0, r1) == (0, sh[0] if sh else 1)
            self._own.append((step.trainable_variables[i],
                              None if whole else slice(r0, r1)))
        self.version = 0
        return True

    def set_state(self, values):
        """Restores every variable of the step (chief's snapshot)."""
        self.step.set_state(values)
        return True

    def apply(self, token, *slices):
        """Sums the pushed gradient slices (in the order given: deterministic)
        and runs one optimizer step on this shard's variables.

        Args:
            token: the previous apply's return value (orders the applies).
            *slices: each worker's gradient for this shard's range (separable),
                or every shard range of every worker in worker-major order.

        Returns:
            int, the shard's version after the apply.
        """
        t0 = time.perf_counter()
        buf = self._buf
        push = self.plan["push"]
        if self.plan["separable"]:
            lo, hi, sp = push[self.rank]
            tmp = np.empty_like(buf)
            for w, g in enumerate(slices):
                self.sparse_rows += decode_push(g, lo, hi, sp, buf if w == 0 else tmp)
                if w:
                    np.add(buf, tmp, out=buf)
        else:
            s = self.world
            part = np.empty_like(buf)
            for w in range(len(slices) // s):
                for k in range(s):
                    lo, hi, sp = push[k]
                    self.sparse_rows += decode_push(slices[w * s + k], lo, hi, sp,
                                                    part[lo:hi])
                if w == 0:
                    np.copyto(buf, part)
                else:
                    np.add(buf, part, out=buf)
        if self._entries:
            feeds = []
            for o, sh, part in self._entries:
                if part is None:
                    feeds.append(buf[o:o + int(np.prod(sh, dtype=np.int64))]
                                 .reshape(sh))
                else:  # rows r0:r1 of a split variable; the rest is not ours
                    r0, r1, n = part
                    full = np.zeros(sh, buf.dtype)
                    full[r0:r1] = buf[o:o + n].reshape((r1 - r0,) + sh[1:])
                    feeds.append(full)
            self._apply(*feeds)
        self.version += 1
        self.progress += 1
        self.apply_seconds += time.perf_counter() - t0
        return self.version

    def begin(self, call, parts, async_mode):
        """Starts chief call ``call``: steps of ``parts`` pushes each, applied
        in step order (``async_mode``: each push on arrival)."""
        self.call, self.parts, self.async_mode = call, parts, async_mode
        self.applied, self._pending, self._seen = 0, {}, set()
        return True

    def push(self, call, t, part, *slices):
        """A worker's gradient for part ``part`` of step ``t`` (Li et al.,
        OSDI 2014, §3.3 push). Sync / bounded delay: step t is applied once
        every part of it and every earlier step arrived, the parts summed in
        part order (deterministic); async: applied on arrival. A repeated
        ``(t, part)`` (a task computed again after its worker died) is
        ignored, so each gradient reaches the weights once.

        Args:
            *slices: this shard's range of the part's gradient (separable),
                or every shard's range in shard order (not separable).

        Returns:
            int, steps (async: pushes) of this call applied so far.
        """
        if call != self.call or (t, part) in self._seen:
            return self.applied
        self._seen.add((t, part))
        if self.async_mode:
            self.apply(0, *slices)
            self.applied += 1
            return self.applied
        self._pending.setdefault(t, {})[part] = slices
        while len(self._pending.get(self.applied, ())) == self.parts:
            got = self._pending.pop(self.applied)
            self.apply(0, *[x for q in range(self.parts) for x in got[q]])
            self.applied += 1
        return self.applied

    def push_pull(self, call, t, part, *slices):
        """:meth:`push`, then :meth:`pull` (ps-lite's ``PushPull``: one
        round trip; the worker uses the weights for a later task)."""
        self.push(call, t, part, *slices)
        return self.pull(call)

    def pull(self, call=None, need=0):
        """``(applied, weights)``: steps (async: pushes) of call ``call``
        applied so far and this shard's weights as one flat array; None while
        fewer than ``need`` are applied (the bounded-delay rule: a worker
        starting step t needs every step <= t - tau - 1; it asks again)."""
        if call is not None and (call != self.call or self.applied < need):
            return None
        if not self._own:
            return self.applied, np.zeros(0, self.step.layout.dtype)
        return self.applied, np.concatenate([np.ravel(
            v.numpy() if rows is None else np.asarray(v.numpy())[rows])
            for v, rows in self._own])

    def get_state(self, indices):
        """Values of ``step.variables[i]`` for ``i`` in ``indices``."""
        return [self.step.variables[i].numpy() for i in indices]

    def get_rows(self, items):
        """Rows ``r0:r1`` of ``step.variables[i]`` for ``(i, r0, r1)`` in
        ``items`` (split variables and their slots)."""
        return [np.asarray(self.step.variables[i].numpy())[r0:r1]
                for i, r0, r1 in items]

    def stats(self):
        return dict(version=self.version, apply_seconds=self.apply_seconds,
                    sparse_rows=self.sparse_rows, applied=self.applied)
