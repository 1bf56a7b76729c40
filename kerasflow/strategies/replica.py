"""One synchronous data-parallel replica (the body of a Ray actor).

The driver ships the pickled ``TrainStep`` and the training arrays once; then
each ``run_steps`` call carries only the global batches' row indices. For every
batch the replica takes its contiguous share of the rows (rank order), and:

1. ``compute_gradients`` on its rows, scaled by the global batch size;
2. packs ``[gradients | metric deltas | loss | per-output losses]`` into one
   flat buffer and allreduces it (SUM, fixed order: every replica gets the
   same bits);
3. ``apply_gradients`` of the reduced gradients and adds the reduced metric
   deltas, so weights, optimizer slots and metric state stay identical on all
   replicas without ever being exchanged.

This is ``tf.distribute.MirroredStrategy``'s all-reduce of per-replica
gradients (loss scaled by the global batch, ``tf.nn.compute_average_loss``),
with K steps per driver call as Keras' ``steps_per_execution``. Ray stays out
of this module: the worker group hosts it.
"""

from __future__ import annotations

import time

import numpy as np

from kerasflow.backend.graph import walk
from kerasflow.backend.registry import get_op
from kerasflow.strategies.collective import CollectiveEndpoint

__all__ = ["Replica", "shard_bounds"]


def shard_bounds(n, world, rank):
    """Rows ``[lo, hi)`` of a global batch of ``n`` that ``rank`` of ``world``
    takes: contiguous, in rank order, sizes differing by at most one."""
    return n * rank // world, n * (rank + 1) // world


class Replica:
    """Worker object for ``WorkerGroup``: holds steps, data and the collective.

    Attributes:
        progress: steps completed (read by the driver's stuck detection).
    """

    def __init__(self, rank, world, device="cpu"):
        self.rank, self.world = rank, world
        self.progress = 0
        self.steps, self.data, self.buffers = {}, {}, {}
        self.endpoint = self.coll = None
        from kerasflow import backend as K
        self._K = K
        if device == "gpu":
            # One GPU per actor (num_gpus=1): gradients are staged through
            # host memory for the shm / tcp transports.
            K.set_device("gpu")

    # -- collective ------------------------------------------------------------
    def open_collective(self, plan):
        if self.coll is not None:
            self.coll.close()
            self.coll = None
        self.endpoint = CollectiveEndpoint(plan)
        return self.endpoint.address

    def connect_collective(self, addresses):
        self.coll = self.endpoint.connect(addresses)
        return True

    # -- state -----------------------------------------------------------------
    def load_step(self, key, step):
        """Keeps a step (already unpickled by the transport) under ``key``.

        Random ops (dropout) get per-replica seeds: rank 0 keeps the graph's
        seeds (the single-process stream), rank r offsets them, so replicas
        draw independent masks for their different rows."""
        if self.rank:
            _offset_seeds(step, self.rank)
        self.steps[key] = step
        return True

    def load_data(self, key, arrays):
        """Keeps the training arrays (read-only views of Ray's object store)."""
        self.data[key] = list(arrays)
        return True

    def drop_data(self, key):
        self.data.pop(key, None)
        return True

    def set_state(self, key, values):
        self.steps[key].set_state(values)
        return True

    def get_state(self, key):
        return self.steps[key].get_state()

    # -- training ----------------------------------------------------------------
    def _buffer(self, key, step):
        buf = self.buffers.get(key)
        if buf is None:
            layout = step.layout
            sizes = [int(np.prod(v.shape, dtype=np.int64)) for v in step.metric_variables]
            size = layout.size + sum(sizes) + step.num_outputs
            buf = self.buffers[key] = (np.zeros(size, layout.dtype), sizes)
        return buf

    def buffer_size(self, key):
        """Elements of the flat buffer this step allreduces."""
        return int(self._buffer(key, self.steps[key])[0].size)

    def run_steps(self, key, data_key, batches, first_step=0, return_state=False):
        """Runs one synchronous step per global batch.

        Args:
            key: the step's key (from ``load_step``).
            data_key: the arrays' key (from ``load_data``), or None when each
                batch is given as arrays.
            batches: list of int64 index arrays (rows of the global batch), or
                of array lists when ``data_key`` is None.
            first_step: global step number of the first batch (error messages).
            return_state: also return the step's variables after the last batch.

        Returns:
            dict with ``loss`` (list, global-batch loss per step), ``count``
            (global batch sizes), ``output_losses`` (list of lists),
            ``seconds`` (compute, allreduce: totals) and optionally ``state``.
        """
        step = self.steps[key]
        buf, metric_sizes = self._buffer(key, step)
        g = step.layout.size
        d_end = g + sum(metric_sizes)
        losses, counts, outs = [], [], []
        t_comm = t_total = 0.0
        for i, batch in enumerate(batches):
            t0 = time.perf_counter()
            if data_key is None:
                arrays = list(batch)
                n = len(arrays[0])
                lo, hi = shard_bounds(n, self.world, self.rank)
                mine = [a[lo:hi] for a in arrays]
            else:
                n = len(batch)
                lo, hi = shard_bounds(n, self.world, self.rank)
                mine = _take(self.data[data_key], batch[lo:hi])
            if hi > lo:
                res = step.compute_gradients(mine, n)
                buf[:g] = self._K.to_numpy(res.grads)
                pos = g
                for delta, size in zip(res.metric_deltas, metric_sizes):
                    buf[pos:pos + size] = np.ravel(delta)
                    pos += size
                buf[d_end] = res.loss
                buf[d_end + 1:] = res.output_losses or 0.0
            else:  # fewer rows than replicas in a last batch: contribute zeros
                buf[:] = 0.0
            t1 = time.perf_counter()
            self.coll.allreduce(buf, "SUM", step=first_step + i)
            t_comm += time.perf_counter() - t1
            step.apply_gradients(self._K.get_xp().asarray(buf[:g]))
            deltas, pos = [], g
            for var, size in zip(step.metric_variables, metric_sizes):
                deltas.append(buf[pos:pos + size].reshape(var.shape))
                pos += size
            if deltas:
                step.add_metric_deltas(deltas)
            losses.append(float(buf[d_end]))
            counts.append(n)
            outs.append([float(v) for v in buf[d_end + 1:]])
            self.progress += 1
            t_total += time.perf_counter() - t0
        out = dict(loss=losses, count=counts, output_losses=outs,
                   seconds=(t_total - t_comm, t_comm))
        if return_state:
            out["state"] = step.get_state()
        return out

    def close(self):
        if self.coll is not None:
            self.coll.close()
            self.coll = None
        return True


def _offset_seeds(step, rank):
    tensors = [t for name in step._GRAPH for t in getattr(step, name)
               if hasattr(t, "node")]
    for node in walk(tensors):
        try:
            random = get_op(node.op).random
        except KeyError:  # Variable, Placeholder, Const
            random = False
        if random and node.attrs.get("seed") is not None:
            node.attrs["seed"] = int(node.attrs["seed"]) + 7_919 * rank


def _take(arrays, idx):
    """Rows ``idx`` of each array (a view when the rows are contiguous)."""
    if len(idx) and idx[-1] - idx[0] == len(idx) - 1 and np.all(np.diff(idx) == 1):
        s = slice(int(idx[0]), int(idx[-1]) + 1)
        return [a[s] for a in arrays]
    return [a[idx] for a in arrays]
