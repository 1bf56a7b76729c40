"""Parameter-server workers: pull weights, compute gradients on a data shard,
push the gradients split by shard (Li et al., OSDI 2014, §3: "each worker
loads a part of the data ... pushes gradients to the servers ... pulls the
new weights"; ps-lite's ``KVWorker::Push``/``Pull``).

The driver (the chief) hands a worker one task at a time: a global batch's
row indices (it takes its contiguous part), and the shards' weight slices
(Ray passes the shards' ``pull`` results as arguments, actor to actor). The
worker returns a small info dict and one gradient slice per shard, so each
shard receives only its key range. Layer state updates (BatchNormalization's
moving statistics) stay on the worker (tf.distribute's ON_READ).

This module does not import ray: a ``WorkerGroup`` hosts :class:`PSWorker`.
"""

from __future__ import annotations

import time

import numpy as np

from kerasflow import backend as K
from kerasflow.strategies.ps_shard import encode_push
from kerasflow.strategies.replica import StepWorker

__all__ = ["PSWorker"]


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
        self._last_end = self._call = None

    def compute(self, call, key, data_key, batch, part, parts, async_mode, ranges,
                *weights):
        """One task: set weights, compute gradients on part ``part`` of
        ``parts`` of the global batch, return the pushes.

        Args:
            call: the chief's call number; the time before a call's first
                task is the chief's, not a wait on other workers (not idle).
            key / data_key: the step's and the arrays' keys (data_key None:
                ``batch`` is the list of batch arrays, else int64 row indices).
            part, parts: which contiguous share of the batch (the data-shard
                index; equals the worker's rank unless it took over a dead
                worker's task).
            async_mode: scale the loss by the worker's own batch (each push
                is a full optimizer step), not the global batch.
            ranges: per shard ``(lo, hi)`` flat offsets, or ``(lo, hi,
                sparse)`` (``ps_shard.push_layout``): embedding rows are
                pushed as row ids + rows.
            *weights: each shard's weight slice, in shard order.

        Returns:
            tuple ``(info, slice_0, ..., slice_{S-1})``; info holds ``loss``,
            ``count`` (rows of the global batch), ``n`` (this part's rows),
            ``deltas``, ``output_losses``, ``idle``, ``busy``.
        """
        t0, wall0 = time.perf_counter(), time.time()
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
                    output_losses=outs, idle=idle, busy=end - t0, rank=self.rank,
                    wall=(wall0, wall0 + (end - t0)))
        return (info,) + tuple(encode_push(grads, *r) if len(r) == 3 else
                               grads[r[0]:r[1]] for r in ranges)
