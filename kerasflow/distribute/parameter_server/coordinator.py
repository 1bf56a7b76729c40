"""The chief's side of a ``ParameterServerStrategy`` call (the role of
``tf.distribute.experimental.coordinator.ClusterCoordinator``).

One ``run_steps`` call schedules K global batches. Global batch t is cut
into ``num_workers`` contiguous parts; part p of every batch is queued on
worker p in a ``PSScheduler`` actor, which hands out tasks under the
consistency rule (Li et al., OSDI 2014, §3.5, bounded delay) and lets a free
or held-back worker take the oldest task queued on a busy one:

* ``staleness=0`` (sequential): step t starts when every part of step t-1
  was pushed and applied -- the result equals one process on the global
  batch (the shards sum the parts in part order, then apply once);
* ``staleness=tau``: step t starts when steps <= t-tau-1 were all pushed and
  applied, so the step a worker starts is at most tau ahead of the slowest
  part's clock (pushes for step t are still summed and applied once, in step
  order);
* ``staleness=None`` (asynchronous, Hogwild-style): no gate; every push is
  applied on arrival as its own optimizer step on the worker's batch mean.

Each worker runs one ``run_tasks`` call per chief call: it claims tasks, pulls
the weights from the shards and pushes its gradient slices to them itself
(§3: the scheduler only hands out work), claiming and pulling the next task
while it computes the current one when the rule allows. The chief sends
the call's row indices once and then only waits, and reads the per-task
results (losses, metric deltas, times) from the scheduler at the end.

Faults: every wait has a deadline naming the role, index and step (a task
claimed longer than the timeout names its worker). When a worker dies, its
claimed and queued tasks move to the surviving workers (computed again:
at-least-once computation, as TF's coordinator; a shard ignores a repeated
push of the same part of the same step, so each gradient reaches the weights
once). A dead shard raises, and the strategy restores the shards from the
chief's last snapshot and runs the call again.
"""

from __future__ import annotations

import logging
from collections import deque

import numpy as np

from kerasflow.distribute.runtime.errors import (
    ReplicaDiedError,
    ReplicaTimeoutError,
    WorkerGroupError,
)
from kerasflow.distribute.runtime.ray import wait_any

__all__ = ["run_call"]

log = logging.getLogger("kerasflow.distribute")


def _deadline_error(role, rank, what, timeout):
    return ReplicaTimeoutError(f"{role.capitalize()} {rank} did not finish {what} within "
                               f"{timeout:g} s.", [rank])


def _queues(alive, steps, parts):
    queues = {r: deque() for r in alive}
    for t in range(steps):
        for p in range(parts):
            queues[p if p in queues else alive[p % len(alive)]].append((t, p))
    return {r: sorted(q) for r, q in queues.items()}


def run_call(strategy, entry, data_key, batches):
    """Runs K global batches; returns per-step (loss, count, outputs, deltas).

    Args:
        strategy: the ``ParameterServerStrategy`` (groups, knobs, logs).
        entry: the shipped step's dict (``key``, ``plan``, ``step``).
        data_key: the workers' arrays key, or None (batches sent as arrays).
        batches: list of ``BatchRef``.

    Raises:
        ReplicaDiedError / ReplicaTimeoutError: a shard died or timed out, or
            no worker is left (the strategy recovers or gives up).
    """
    ps, workers, sched = strategy._ps, strategy._workers, strategy._sched
    tau, timeout = strategy.staleness, strategy._timeout
    n_parts = strategy.num_workers
    plan, key = entry["plan"], entry["key"]
    K_ = len(batches)
    first = strategy._global_step
    if data_key is None:
        payload = [[np.asarray(a) for a in b.arrays] for b in batches]
    else:
        payload = [np.asarray(b.indices, np.int64) for b in batches]
    alive = [r for r in range(workers.num_workers) if r not in strategy._dead]
    if not alive:
        raise ReplicaDiedError("ParameterServerStrategy has no live worker.", [])
    strategy._calls += 1
    call = strategy._calls
    ps.execute("begin", call, n_parts, tau is None)
    sched.execute("begin", call, _queues(alive, K_, n_parts), K_, n_parts, tau)
    args = (call, key, data_key, workers.put(payload), n_parts, tau, plan["push"],
            plan["separable"], sched.actors[0], list(ps.actors), timeout)
    what = f"steps {first}..{first + K_ - 1}"
    running = {workers.call(r, "run_tasks", *args): r for r in alive}

    def take_over(r):
        """Worker r died: its claimed and queued tasks go to the survivors."""
        first_report = r not in strategy._dead
        strategy._dead.add(r)
        lost = sched.execute("release", r)[0]
        left = [q for q in alive if q not in strategy._dead]
        if not left:
            raise ReplicaDiedError(f"Every PS worker died (last: worker {r} during "
                                   f"{what}).", [r])
        if not first_report:
            return
        msg = (f"PS worker {r} died during {what}; {len(lost)} task(s) rescheduled "
               f"on workers {left}")
        log.warning("ParameterServerStrategy: %s.", msg)
        strategy.recoveries.append(dict(kind="worker", rank=r, step=first + (
            min(lost)[0] if lost else 0), error=msg, seconds=0.0))

    while True:
        if not running:
            _, left, _ = sched.execute("status", timeout)[0]
            if not left:
                break
            # Tasks came back from a dead worker after the others finished.
            running = {workers.call(r, "run_tasks", *args): r for r in alive
                       if r not in strategy._dead}
        ready, _ = wait_any(list(running), strategy._poll)
        if not ready:
            _, _, old = sched.execute("status", timeout)[0]
            if old is not None:
                raise _deadline_error("worker", old[0], f"step {first + old[1]} "
                                      f"(part {old[2]})", timeout)
            continue
        r = running.pop(ready[0])
        try:
            workers.result(ready[0], r, what)
        except WorkerGroupError:
            strategy._check_shards()  # a dead shard raises (full recovery)
            if workers.is_alive(r):
                raise
            take_over(r)
    infos, trace, steals = sched.execute("results")[0]
    applied = [st["applied"] for st in ps.execute("stats")]
    want = K_ * (n_parts if tau is None else 1)
    if any(a != want for a in applied):
        raise RuntimeError(f"ParameterServerStrategy: shards applied {applied} "
                           f"pushes, expected {want} each (a bug).")
    return _collect(strategy, infos, trace, steals, batches, first, tau is None)


def _collect(strategy, infos, trace, steals, batches, first, async_mode):
    """Per-step (loss, count, outputs, deltas) from the tasks' infos, summed
    in (step, part) order; the strategy's clock and idle statistics."""
    K_ = len(batches)
    losses, outs, deltas = [0.0] * K_, [None] * K_, [None] * K_
    for (t, p), info in sorted(infos.items()):
        d = info["deltas"]
        deltas[t] = d if deltas[t] is None else [a + b for a, b in zip(deltas[t], d)]
        o = np.asarray(info["output_losses"], np.float64)
        if async_mode:
            scale = info["n"] / max(1, info["count"])
            losses[t] += info["loss"] * scale
            o = o * scale
        else:
            losses[t] += info["loss"]
        outs[t] = o if outs[t] is None else outs[t] + o
        strategy.idle_seconds += info["idle"]
        strategy.busy_seconds += info["busy"]
        for k, v in info.get("waits", {}).items():
            strategy.idle_parts[k] = strategy.idle_parts.get(k, 0.0) + v
    for t, p, r, gap in trace:
        strategy.clock_trace.append((first + t, p, r, gap))
        strategy.max_clock_gap = max(strategy.max_clock_gap, gap)
    strategy.steals += steals
    return [(losses[t], batches[t].size, [float(v) for v in outs[t]], deltas[t])
            for t in range(K_)]
