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

This module does not import ray: a ``WorkerGroup`` hosts :class:`PSShard`.
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["PSShard", "plan_shards"]


def _walk(tensors):
    from kerasflow.models.train_step import _walk as walk
    return walk(tensors)


def plan_shards(step, num_ps):
    """Splits ``step``'s trainable variables over ``num_ps`` shards.

    Args:
        step: a ``TrainStep``.
        num_ps: int >= 1, number of shards.

    Returns:
        dict with ``ranges`` (per shard ``(var_lo, var_hi, lo, hi)``: variable
        indices and flat-layout offsets), ``separable`` (bool), ``updates``
        (per shard, indices into ``step.apply_updates``) and ``owner`` (per
        ``step.variables`` entry: shard index, or None when no shard writes it).
        Shards beyond the number of variables own an empty range.
    """
    entries = step.layout.entries
    sizes = [int(np.prod(s, dtype=np.int64)) for _, s in entries]
    total = max(1, sum(sizes))
    cuts, acc, s = [0], 0, 1
    for i, n in enumerate(sizes):
        acc += n
        # Cut after variable i when the running total passes the next quota.
        while s < num_ps and acc >= total * s / num_ps and len(cuts) <= s:
            cuts.append(i + 1)
            s += 1
    while len(cuts) < num_ps:
        cuts.append(len(sizes))
    cuts.append(len(sizes))
    ranges = []
    for k in range(num_ps):
        a, b = cuts[k], max(cuts[k], cuts[k + 1])
        lo = entries[a][0] if a < len(entries) else step.layout.size
        hi = entries[b][0] if b < len(entries) else step.layout.size
        ranges.append((a, b, lo, hi))
    shard_of_var = {}
    for k, (a, b, _, _) in enumerate(ranges):
        for i in range(a, b):
            shard_of_var[i] = k
    ph = {id(p.node): i for i, p in enumerate(step.grad_phs)}
    updates, separable = [[] for _ in range(num_ps)], True
    reach = [set() for _ in range(num_ps)]
    var_index = {id(v): i for i, v in enumerate(step.variables)}
    common = set()
    for u_i, u in enumerate(step.apply_updates):
        nodes = list(_walk([u]))
        owners = {shard_of_var[ph[id(n)]] for n in nodes if id(n) in ph}
        touched = {var_index[id(n.attrs["variable"])] for n in nodes
                   if n.op == "Variable" and id(n.attrs["variable"]) in var_index}
        if len(owners) > 1:
            separable = False
        if not owners:
            for k in range(num_ps):
                updates[k].append(u_i)
            common |= touched
        elif len(owners) == 1:
            k = owners.pop()
            updates[k].append(u_i)
            reach[k] |= touched
    if not separable:
        updates = [list(range(len(step.apply_updates))) for _ in range(num_ps)]
    owner = [None] * len(step.variables)
    for k in range(num_ps):
        for i in sorted(reach[k]):
            if owner[i] is None:
                owner[i] = k
    for i in common:
        if owner[i] is None:
            owner[i] = 0
    for i, v in enumerate(step.trainable_variables):
        owner[var_index[id(v)]] = shard_of_var.get(i, 0)
    return dict(ranges=ranges, separable=separable, updates=updates, owner=owner)


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

    def load(self, step, plan):
        """Takes the step (variables at the chief's values) and the plan."""
        from kerasflow import backend as K
        self.step, self.plan = step, plan
        a, b, lo, hi = plan["ranges"][self.rank]
        self.lo, self.hi = lo, hi
        ups = [step.apply_updates[i] for i in plan["updates"][self.rank]]
        if plan["separable"]:
            phs = step.grad_phs[a:b]
            self._entries = [(o - lo, s) for o, s in step.layout.entries[a:b]]
            self._buf = np.zeros(hi - lo, step.layout.dtype)
        else:
            phs = step.grad_phs
            self._entries = list(step.layout.entries)
            self._buf = np.zeros(step.layout.size, step.layout.dtype)
        self._apply = K.Function(phs, [], updates=ups, name=f"ps{self.rank}_apply")
        self._own = [step.trainable_variables[i] for i in range(a, b)]
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
        if self.plan["separable"]:
            np.copyto(buf, slices[0])
            for g in slices[1:]:
                np.add(buf, g, out=buf)
        else:
            s = self.world
            for w in range(len(slices) // s):
                part = np.concatenate(slices[w * s:(w + 1) * s])
                if w == 0:
                    np.copyto(buf, part)
                else:
                    np.add(buf, part, out=buf)
        if self._entries:
            self._apply(*[buf[o:o + int(np.prod(sh, dtype=np.int64))].reshape(sh)
                          for o, sh in self._entries])
        self.version += 1
        self.progress += 1
        self.apply_seconds += time.perf_counter() - t0
        return self.version

    def pull(self, *deps):
        """This shard's weights as one flat array (``deps``: applies that must
        have run first; their values are unused)."""
        if not self._own:
            return np.zeros(0, self.step.layout.dtype)
        return np.concatenate([np.ravel(v.numpy()) for v in self._own])

    def get_state(self, indices):
        """Values of ``step.variables[i]`` for ``i`` in ``indices``."""
        return [self.step.variables[i].numpy() for i in indices]

    def emit(self, nbytes):
        """A float32 array of ``nbytes`` (pull bandwidth benchmark)."""
        buf = getattr(self, "_emit", None)
        if buf is None or buf.nbytes != nbytes:
            buf = self._emit = np.ones(nbytes // 4, np.float32)
        return buf

    def receive(self, *arrays):
        """Bytes received (push bandwidth benchmark: arrays come from workers)."""
        return int(sum(np.asarray(a).nbytes for a in arrays))

    def stats(self):
        return dict(version=self.version, apply_seconds=self.apply_seconds)
