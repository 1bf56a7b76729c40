"""Parameter-server workers: pull weights, compute gradients on a data shard,
push the gradients split by shard (Li et al., OSDI 2014, §3: "each worker
loads a part of the data ... pushes gradients to the servers ... pulls the
new weights"; ps-lite's ``KVWorker::Push``/``Pull``).

In each chief call a worker runs :meth:`PSWorker.run_tasks`: it claims tasks
(a global batch's part) from the ``PSScheduler`` actor, pulls the shards'
weight slices and pushes one gradient slice per shard to the shards itself,
so each shard receives only its key range and no per-task message goes
through the chief. Layer state updates (BatchNormalization's
moving statistics) stay on the worker (tf.distribute's ON_READ).

This module does not import ray: a ``WorkerGroup`` hosts :class:`PSWorker`.
"""

from __future__ import annotations

import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from kerasflow import backend as K
from kerasflow.distribute.mirrored.replica import StepWorker
from kerasflow.distribute.parameter_server.shard import encode_push
from kerasflow.distribute.runtime.ray import get_all, remote_call

__all__ = ["PSWorker"]

# Tasks a worker claims, and weights it pulls (at most tau), beyond the one
# it computes (tau > 0 or async): the answers have that many tasks' time to
# come back.
_CLAIMS_AHEAD = 2


class PSWorker(StepWorker):
    """Worker object of one PS worker (hosted by a ``WorkerGroup`` actor).

    Args:
        rank, world: this worker's index and the number of workers.

    Attributes:
        progress: tasks completed (read by the driver's stuck detection).
        idle_seconds / busy_seconds: time between tasks / inside tasks.
    """

    def __init__(self, rank, world):
        super().__init__(rank, world)
        self.idle_seconds = self.busy_seconds = 0.0
        self._last_end = self._call = self._threads = None

    def close(self):
        """Stops the communication threads (before the actor is killed)."""
        for ex in self._threads or ():
            ex.shutdown(wait=False)
        self._threads = None

    def _comm(self, which, fn, *args):
        """Runs ``fn(*args)`` on background thread ``which`` (0: submits
        remote calls, in order; 1 / 2: waits for the scheduler's / the
        shards' answers, in order, so neither holds the other back) and
        returns a ``Future``: pushes, pulls and claims overlap the task's
        computation, as ps-lite's non-blocking ``Push``/``Pull`` do."""
        if self._threads is None:
            self._threads = [ThreadPoolExecutor(1, thread_name_prefix=f"ps-{n}")
                             for n in ("send", "claims", "pulls")]
        return self._threads[which].submit(fn, *args)

    def run_tasks(self, call, key, data_key, payload, parts, tau, ranges,
                  separable, scheduler, shards, timeout):
        """Runs tasks of chief call ``call`` until the scheduler has none left
        (Li et al., OSDI 2014, §3: the worker pulls weights from and pushes
        gradients to the servers itself; the scheduler only hands out work).

        With ``tau`` > 0 or async (``tau`` None) the worker claims its next
        tasks while it computes the current one, and each push also pulls
        (ps-lite's ``PushPull``); with ``tau`` > 0 the weights it returns
        serve a task up to ``min(2, tau)`` tasks later, so no round trip lies
        between two tasks (async: one task later, as fresh as a pull at the
        start of the previous task). A
        task for step t starts only with weights in which every step
        <= t - tau - 1 is applied (else it pulls again, waiting on the
        shards). ``tau=0``
        claims, pulls and pushes in turn (step t needs step t-1 applied).

        Args:
            payload: per global batch, its int64 row indices (``data_key``
                set) or its arrays.
            parts: parts per global batch.
            ranges, separable: the shards' push layout (``plan_shards``).
            scheduler: the ``PSScheduler`` actor handle; shards: the shard
                actor handles in shard order.
            timeout: seconds any one remote answer may take.

        Returns:
            int, tasks run.

        Raises:
            TimeoutError / RuntimeError: a shard or the scheduler did not
                answer in time, or died.
        """
        names = [f"PS shard {s}" for s in range(len(shards))]
        ahead = tau is None or tau > 0
        runs, done = 0, None

        def need(t):
            return 0 if tau is None else max(0, t - tau)

        def pulls(t):
            return [remote_call(h, "call", "pull", call, need(t)) for h in shards]

        def ahead_of_time(submit, who):
            """Submits on the send thread, waits on a receive thread."""
            refs = self._comm(0, submit)
            return self._comm(1 if who[0] == "the PS scheduler" else 2,
                              lambda: get_all(refs.result(), timeout, who))

        def held(since, what):
            if time.monotonic() - since > timeout:
                raise TimeoutError(f"PS worker {self.rank} waited more than "
                                   f"{timeout:g} s for {what}.")
            time.sleep(0.0005)

        def weights(t, got):
            since = time.monotonic()
            got = got.result() if isinstance(got, Future) else \
                get_all(got, timeout, names)
            while not all(g is not None and g[0] >= need(t) for g in got):
                # The bounded-delay rule holds step t back: ask again.
                held(since, f"the shards to apply the steps step {t} needs")
                got = get_all(pulls(t), timeout, names)
            return [g[1] for g in got]

        def claim(ahead_claims=()):
            """The next task: the first task among the answers to the claims
            sent ahead (in order), else asked for again while the rule holds
            tasks back, with the last finished task's report (it may open the
            rule)."""
            nonlocal done
            since, got = time.monotonic(), None
            while ahead_claims and (got is None or got[0] != "task"):
                got = ahead_claims.popleft().result()[0]
            while got is None or got[0] == "wait":
                if got is not None:
                    held(since, "a task the bounded-delay rule lets start")
                fin, done = done, None
                got = get_all([remote_call(scheduler, "call", "claim", call,
                                           self.rank, fin)], timeout,
                              ["the PS scheduler"])[0]
            return got

        self._last_end, self._call = time.perf_counter(), call
        got = claim()
        waited = time.perf_counter() - self._last_end
        refs = pulls(got[1]) if got[0] == "task" else None
        # The pushes of task k also pull the weights for task k + 1 + depth:
        # depth <= tau tasks, hiding the round trip behind that many tasks.
        # Async has no bound to spend: depth 1 (a task misses the worker's
        # own previous push, as with a pull sent while that one computes).
        depth = 0 if not ahead else 1 if tau is None else min(_CLAIMS_AHEAD, tau)
        after = deque(ahead_of_time(lambda: pulls(0), names) for _ in range(depth))
        last, claims = None, deque()
        while got[0] == "task":
            _, t, p = got
            w0 = time.perf_counter()
            flat = weights(t, refs)
            w1 = time.perf_counter()
            while ahead and len(claims) < _CLAIMS_AHEAD:
                # Claim the tasks after this one now (their answers come back
                # while it computes); report the previous one with them.
                fin, done = done, None
                claims.append(ahead_of_time(lambda fin=fin: [remote_call(
                    scheduler, "call", "claim", call, self.rank, fin)],
                    ["the PS scheduler"]))
            waits = dict(claim=waited, pull=w1 - w0, send=time.perf_counter() - w1)
            info, *slices = self.compute(call, key, data_key, payload[t], p, parts,
                                         tau is None, ranges, *flat)
            how = "push_pull" if ahead else "push"
            last = ahead_of_time(lambda t=t, p=p, slices=slices: [remote_call(
                h, "call", how, call, t, p, *((slices[s],) if separable else
                                               tuple(slices)))
                for s, h in enumerate(shards)], names)
            # Handing the pushes to the send thread is the task's own work.
            now = time.perf_counter()
            extra, self._last_end = now - self._last_end, now
            info["busy"] += extra
            info["waits"] = waits
            self.busy_seconds += extra
            done, runs = (t, p, info), runs + 1
            if ahead:
                after.append(last)
                refs = after.popleft()
                got = claim(claims)
            else:
                got = claim()
                if got[0] == "task":
                    refs = pulls(got[1])
            waited = time.perf_counter() - self._last_end
        # Every push of this worker ran once its last ones did (actor order).
        if last is not None:
            last.result()
        if done:
            get_all([remote_call(scheduler, "call", "finish", call, self.rank, *done)],
                    timeout, ["the PS scheduler"])
        return runs

    def compute(self, call, key, data_key, batch, part, parts, async_mode, ranges,
                *weights):
        """One task: set weights, compute gradients on part ``part`` of
        ``parts`` of the global batch, return the pushes.

        Args:
            call: the chief's call number; idle time is counted from the end
                of the previous task of the same call (or from the start of
                ``run_tasks``, which sets it), never across calls.
            key / data_key: the step's and the arrays' keys (data_key None:
                ``batch`` is the list of batch arrays, else int64 row indices).
            part, parts: which contiguous share of the batch (the data-shard
                index; equals the worker's rank unless it took over a dead
                worker's task).
            async_mode: scale the loss by the worker's own batch (each push
                is a full optimizer step), not the global batch.
            ranges: per shard ``(lo, hi)`` flat offsets, or ``(lo, hi,
                sparse)`` (``shard.push_layout``): embedding rows are
                pushed as row ids + rows.
            *weights: each shard's weight slice, in shard order.

        Returns:
            tuple ``(info, slice_0, ..., slice_{S-1})``; info holds ``loss``,
            ``count`` (rows of the global batch), ``n`` (this part's rows),
            ``deltas``, ``output_losses``, ``idle``, ``busy``.
        """
        t0 = time.perf_counter()
        idle = 0.0 if self._last_end is None or call != self._call else \
            t0 - self._last_end
        self._call = call
        step = self.steps[key]
        flat = np.concatenate([np.asarray(w) for w in weights]) if weights else None
        if flat is not None and flat.size:
            K.assign_all(step.trainable_variables, step.layout.unpack(flat),
                         "PS worker")
        n, lo, hi, mine = self.rows(data_key, batch, parts, part)
        sizes = [int(np.prod(v.shape, dtype=np.int64)) for v in step.metric_variables]
        if hi > lo:
            res = step.compute_gradients(mine, (hi - lo) if async_mode else n)
            grads = K.to_numpy(res.grads)
            deltas = [np.asarray(d) for d in res.metric_deltas]
            loss, outs = res.loss, list(res.output_losses)
        else:  # fewer rows than parts in a last batch: push zeros
            grads = np.zeros(step.layout.size, step.layout.dtype)
            deltas = [np.zeros(s) for s in sizes]
            loss, outs = 0.0, []
        self.progress += 1
        end = time.perf_counter()
        self.idle_seconds += idle
        self.busy_seconds += end - t0
        self._last_end = end
        info = dict(loss=float(loss), count=n, n=hi - lo, deltas=deltas,
                    output_losses=outs, idle=idle, busy=end - t0, rank=self.rank)
        return (info,) + tuple(encode_push(grads, *r) if len(r) == 3 else
                               grads[r[0]:r[1]] for r in ranges)
