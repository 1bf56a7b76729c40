"""The chief's scheduling loop of ``ParameterServerStrategy`` (the role of
``tf.distribute.experimental.coordinator.ClusterCoordinator``).

One ``run_steps`` call schedules K global batches. Each global batch t is
cut into ``num_workers`` contiguous parts; part p of every batch is queued on
worker p. A worker gets its next task (t, p) when the consistency rule lets
it start step t (Li et al., OSDI 2014, §3.5, bounded delay). A worker whose
queue is empty, or whose own next task the rule holds back, takes instead the
oldest task queued on a busy worker when the rule lets that start (any free
worker runs a closure, as in TF's ``ClusterCoordinator``): a straggler's
parts drain into the others, which keep computing instead of waiting on its
clock:

* ``staleness=0`` (sequential): step t starts when every part of step t-1
  was pushed and applied -- the result equals one process on the global
  batch (the shards sum the parts in part order, then apply once);
* ``staleness=tau``: step t starts when steps <= t-tau-1 were all pushed and
  applied, so the step a worker starts is at most tau ahead of the slowest
  part's clock (pushes for step t are still summed and applied once, in step
  order);
* ``staleness=None`` (asynchronous, Hogwild-style): no gate; every push is
  applied on arrival as its own optimizer step on the worker's batch mean.

With tau > 0 or async, a worker gets its next task while it computes the
current one when the rule already allows it (two in flight: Ray queues the
second at the actor, hiding the chief's round trip). A task's weights are
the shards' ``pull`` results, taken after the shard's
latest submitted apply (passed as a dependency), handed to the worker by Ray
actor to actor; the gradient slices go straight to the owning shards. The
driver only moves refs, indices and small info dicts.

Faults: every wait has a deadline naming the role, index and step. When a
worker dies, its in-flight task and its queue move to the surviving workers
(the task is computed again: at-least-once computation, as TF's coordinator;
its gradient reaches the shards once, since pushes go out only after a task
returned). A dead shard raises, and the strategy restores the shards from the
chief's last snapshot and runs the call again.
"""

from __future__ import annotations

import logging
import time
from collections import deque

import numpy as np

from kerasflow.strategies.errors import ReplicaDiedError, ReplicaTimeoutError
from kerasflow.strategies.worker_group import wait_any

__all__ = ["run_call"]

log = logging.getLogger("kerasflow.strategies")


def _deadline_error(role, rank, what, timeout):
    return ReplicaTimeoutError(f"{role.capitalize()} {rank} did not finish {what} within "
                               f"{timeout:g} s.", [rank])


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
    ps, workers = strategy._ps, strategy._workers
    tau, timeout = strategy.staleness, strategy._timeout
    n_parts, n_ps = strategy.num_workers, strategy.num_ps
    plan, key = entry["plan"], entry["key"]
    ranges = plan["push"]
    async_mode = tau is None
    K_ = len(batches)
    first = strategy._global_step
    if data_key is None:
        payload = [workers.put([np.asarray(a) for a in b.arrays]) for b in batches]
    else:
        payload = [np.asarray(b.indices, np.int64) for b in batches]
    alive = [r for r in range(workers.num_workers) if r not in strategy._dead]
    if not alive:
        raise ReplicaDiedError("ParameterServerStrategy has no live worker.", [])
    queues = {r: deque() for r in alive}
    for t in range(K_):
        for p in range(n_parts):
            queues[p if p in queues else alive[p % len(alive)]].append((t, p))
    for r in alive:
        queues[r] = deque(sorted(queues[r]))
    strategy._calls += 1
    done = [0] * K_
    completed = [0] * n_parts
    pushes = [dict() for _ in range(K_)]
    losses = [0.0] * K_
    counts = [b.size for b in batches]
    outs = [None] * K_
    deltas = [None] * K_
    apply_tok = list(strategy._apply_tok)
    next_apply = 0
    inflight = {}  # info ref -> (rank, t, part, slice refs, started)
    busy = dict.fromkeys(alive, 0)  # tasks in flight per worker
    depth = 1 if not async_mode and tau == 0 else 2  # prefetch when allowed

    def gate(t):
        return async_mode or t - tau - 1 < 0 or next_apply > t - tau - 1

    def start(r, t, p):
        pulls = [ps.call(s, "pull", *([apply_tok[s]] if apply_tok[s] is not None
                                       else [])) for s in range(n_ps)]
        refs = workers.call(r, "compute", strategy._calls, key, data_key, payload[t],
                            p, n_parts, async_mode, ranges, *pulls,
                            num_returns=1 + n_ps)
        inflight[refs[0]] = (r, t, p, refs[1:], time.monotonic())
        held = not (async_mode or t - tau - 1 < 0 or was_applied[0] > t - tau - 1)
        submitted[refs[0]] = (time.time(), held, last_seen[0], len(strategy.sub_order))
        strategy.sub_order.append(time.time())
        busy[r] += 1
        gap = t - min(completed)
        strategy.clock_trace.append((first + t, p, r, gap))
        strategy.max_clock_gap = max(strategy.max_clock_gap, gap)

    def steal(r):
        """Worker r cannot start its own next task: it takes the oldest task
        queued on a busy worker -- the one holding the clock back -- when the
        rule lets that start (a straggler's queue drains into the others)."""
        heads = [q for q in queues if q != r and queues[q] and busy[q]]
        if not heads:
            return False
        victim = min(heads, key=lambda q: queues[q][0])
        if not gate(queues[victim][0][0]):
            return False
        queues[r].appendleft(queues[victim].popleft())
        strategy.steals += 1
        return True

    def schedule():
        for r in list(queues):
            while busy[r] < depth:
                if (not queues[r] or not gate(queues[r][0][0])) and not steal(r):
                    break
                t, p = queues[r].popleft()
                start(r, t, p)

    def push_apply(slices):
        for s in range(n_ps):
            # Not separable: every worker's every slice, worker-major (flat, so
            # Ray resolves the refs).
            args = [x[s] for x in slices] if plan["separable"] else \
                [r for x in slices for r in x]
            apply_tok[s] = ps.call(s, "apply", apply_tok[s] or 0, *args)

    def take_over(r, task):
        """Worker r died: its task and queue go to the survivors."""
        first_report = r not in strategy._dead
        strategy._dead.add(r)
        lost = ([task] if task else []) + list(queues.pop(r, ()))
        busy.pop(r, None)
        survivors = [q for q in queues]
        if not survivors:
            raise ReplicaDiedError(f"Every PS worker died (last: worker {r} at "
                                   f"step {first + (task or (0,))[0]}).", [r])
        for i, item in enumerate(lost):
            queues[survivors[i % len(survivors)]].append(item)
        for q in survivors:
            queues[q] = deque(sorted(queues[q]))
        if not first_report:
            return
        msg = (f"PS worker {r} died at step {first + task[0] if task else first}; "
               f"{len(lost)} task(s) rescheduled on workers {survivors}")
        log.warning("ParameterServerStrategy: %s.", msg)
        strategy.recoveries.append(dict(kind="worker", rank=r, step=first + (
            task[0] if task else 0), error=msg, seconds=0.0))

    submitted, was_applied, last_seen = {}, [next_apply], [time.time()]
    schedule()
    while inflight:
        was_applied[0] = next_apply
        now = time.monotonic()
        soonest = min(v[4] for v in inflight.values()) + timeout
        ready, _ = wait_any(list(inflight), min(strategy._poll, soonest - now))
        if not ready:
            for ref, (r, t, p, _, t0) in inflight.items():
                if time.monotonic() - t0 > timeout:
                    raise _deadline_error("worker", r, f"step {first + t} (part {p})",
                                          timeout)
            continue
        ref = ready[0]
        last_seen[0] = time.time()
        r, t, p, slices, _ = inflight.pop(ref)
        if r in busy:
            busy[r] -= 1
        try:
            info = workers.result(ref, r, f"step {first + t}")
        except ReplicaDiedError:
            strategy._check_shards()  # a dead shard raises (full recovery)
            if workers.is_alive(r):
                raise
            take_over(r, (t, p))
            schedule()
            continue
        completed[p] += 1
        done[t] += 1
        d = info["deltas"]
        deltas[t] = d if deltas[t] is None else [a + b for a, b in zip(deltas[t], d)]
        o = np.asarray(info["output_losses"], np.float64)
        if async_mode:
            scale = info["n"] / max(1, info["count"])
            losses[t] += info["loss"] * scale
            o = o * scale
            push_apply([slices])
        else:
            losses[t] += info["loss"]
            pushes[t][p] = slices
            while next_apply < K_ and done[next_apply] == n_parts:
                push_apply([pushes[next_apply][q] for q in range(n_parts)])
                pushes[next_apply] = None
                next_apply += 1
        outs[t] = o if outs[t] is None else outs[t] + o
        sub, held, trig, idx = submitted.pop(ref)
        strategy.task_log.append((strategy._calls, r, sub, held, trig, last_seen[0],
                                  *info["wall"], idx))
        strategy.idle_seconds += info["idle"]
        strategy.busy_seconds += info["busy"]
        schedule()
    if any(q for q in queues.values()):
        raise RuntimeError("ParameterServerStrategy scheduler stopped with tasks "
                           "left (a bug): " + repr({r: list(q) for r, q in
                                                    queues.items() if q}))
    toks = [apply_tok[s] for s in range(n_ps) if apply_tok[s] is not None]
    ranks = [s for s in range(n_ps) if apply_tok[s] is not None]
    ps.wait(toks, timeout=timeout, what=f"apply up to step {first + K_ - 1}",
            ranks=ranks)
    strategy._apply_tok = [None] * n_ps
    return [(losses[t], counts[t], [float(v) for v in outs[t]], deltas[t])
            for t in range(K_)]
