"""One synchronous data-parallel replica (the body of a Ray actor).

The driver ships the pickled ``TrainStep`` and the training arrays once; then
each ``run_steps`` call carries only the global batches' row indices. For every
batch the replica takes its contiguous share of the rows (rank order), and:

1. ``compute_gradients`` on its rows, scaled by the global batch size, the
   gradients' MatMuls writing straight into the collective's buffer (the
   shared-memory slot itself; ``Function(..., into=...)``);
2. packs ``[gradients | metric deltas | partial metric states | loss |
   per-output losses | count]`` into that flat buffer and allreduces it
   (SUM, fixed order: every replica gets the same bits) -- or, with the
   optimizer sharded (ZeRO-1, ``zero.py``), reduces its own ranges and
   applies them, the weights living in the segment;
3. ``apply_gradients`` of the reduced gradients, adds the reduced metric
   deltas and merges the other replicas' partial states of metrics that
   assign their state (``merge_state``, ``kerasflow/metrics/merge.py``), so
   weights, optimizer slots and metric state stay identical on all replicas
   without ever being exchanged.

This is ``tf.distribute.MirroredStrategy``'s all-reduce of per-replica
gradients (loss scaled by the global batch, ``tf.nn.compute_average_loss``),
with K steps per driver call as Keras' ``steps_per_execution``. Ray stays out
of this module: the worker group hosts it.

A replica's own input: the sources it reads rows from (the replica side of
``distribute_datasets_from_function``, of a dataset read on the replicas and
of Ray Data splits; see ``kerasflow/distribute/input_lib.py``).

Evaluation and prediction on a synchronous replica (the replica side).

Each replica takes its contiguous share of every global batch's rows (rank
order, ``shard_bounds``, as training does) and runs the evaluation or
prediction step on them with the weights it holds: copied, inside the
replica, from the training step it updates (the driver's copy may be
older), or pushed by the driver when no training step is ahead of it. It
returns its rows' scaled losses and metric-state deltas, or its rows'
outputs; the driver combines them in rank order (``sync_strategy.py``).

This is tf.distribute's ``MirroredStrategy`` evaluation: each replica
computes its part of the global batch and the per-replica metric updates
are all-reduced (here: returned and summed by the driver, which also merges
the partial states of metrics that assign their state by their own
``merge_state``, ``kerasflow/metrics/merge.py``). Ray stays out of this
module: the worker group hosts it.
"""

from __future__ import annotations

import inspect
import itertools
import os
import time

import numpy as np

from kerasflow import backend as K
from kerasflow import tree
from kerasflow.backend.graph import walk
from kerasflow.backend.registry import get_op
from kerasflow.distribute.collective.plan import CollectiveMember
from kerasflow.distribute.mirrored.zero import ZeroShard, plan_zero
from kerasflow.distribute.values import shard_bounds
from kerasflow.steps.batch import take_rows

__all__ = ['Replica', 'StepWorker', 'buffer_layout', 'random_nodes', 'shard_bounds']


class StepWorker:
    """Base of the worker objects a driver ships a step and arrays to once
    (sync replicas, PS workers): a cache of steps and training arrays by key.

    Attributes:
        progress: steps or tasks completed (read by the driver's stuck
            detection).
    """

    def __init__(self, rank, world):
        self.rank, self.world = rank, world
        self.progress = 0
        self.steps, self.data = {}, {}

    def load_step(self, key, step):
        """Keeps a step (already unpickled by the transport) under ``key``.

        Random ops (dropout) get per-worker seeds: rank 0 keeps the graph's
        seeds (the single-process stream), rank r offsets them, so workers
        draw independent masks for their different rows."""
        if self.rank:
            _offset_seeds(step, self.rank)
        if hasattr(step, "bind_replica"):  # strategy.run's step: where its values go
            step.bind_replica(self.rank, self.world)
        self.steps[key] = step
        return True

    def load_data(self, key, arrays):
        """Keeps the training arrays (read-only views of Ray's object store)."""
        self.data[key] = list(arrays)
        return True

    def load_named(self, key, named):
        """Keeps one call's training arrays under ``key``, replacing every
        array held before (one ``fit`` at a time).

        Args:
            named: list of ``(content key, array or None)``; None: the array
                this worker already holds under that content key.
        """
        held = getattr(self, "named", {})
        self.named = {k: held[k] if a is None else a for k, a in named}
        self.data = {key: [self.named[k] for k, _ in named]}
        return True

    def drop_data(self, key):
        self.data.pop(key, None)
        return True

    def set_state(self, key, values):
        self.steps[key].set_state(values)
        return True

    def set_values(self, key, indices, values):
        """Sets ``variables[i]`` of step ``key`` for ``i`` in ``indices``."""
        variables = self.steps[key].variables
        K.assign_all([variables[i] for i in indices], values, "Replica")
        return True

    def rng_state(self, key):
        """Step ``key``'s random-stream states (``rng_state()``), or None."""
        get = getattr(self.steps[key], "rng_state", None)
        return None if get is None else get()

    def set_rng_state(self, key, state):
        """Restores :meth:`rng_state` (a recovery replaying from a commit)."""
        if state is not None:
            self.steps[key].set_rng_state(state)
        return True

    def get_state(self, key, indices):
        """Values of the step's ``variables[i]`` for ``i`` in ``indices``."""
        variables = self.steps[key].variables
        return [variables[i].numpy() for i in indices]

    def rows(self, data_key, batch, parts, part, source=None):
        """``(n, lo, hi, arrays)``: part ``part`` of ``parts`` (rows
        ``[lo, hi)``, ``shard_bounds``) of a global batch of ``n`` rows, given
        as int64 row indices into the arrays under ``data_key`` (of
        ``source``, default the training arrays ``data``), or as the batch's
        arrays when ``data_key`` is None."""
        if data_key is None:
            n = len(batch[0])
            lo, hi = shard_bounds(n, parts, part)
            return n, lo, hi, [a[lo:hi] for a in batch]
        n = len(batch)
        lo, hi = shard_bounds(n, parts, part)
        held = self.data if source is None else source
        return n, lo, hi, take_rows(held[data_key], batch[lo:hi])


class Replica(StepWorker, CollectiveMember):
    """Worker object for ``WorkerGroup``: holds steps, data and the collective.

    Attributes:
        progress: steps completed (read by the driver's stuck detection).
    """

    def __init__(self, rank, world, device="cpu"):
        super().__init__(rank, world)
        self.buffers, self.zero = {}, {}
        if device == "gpu":
            # One GPU per actor (num_gpus=1): the NCCL transport reduces the
            # buffer on the device; shm / tcp stage it through host memory.
            K.set_device("gpu")

    def get_state(self, key, indices):
        """Values of the step's ``variables[i]`` for ``i`` in ``indices``, as
        host arrays, not copied on the host: Ray serializes the returned
        arrays before this (single-threaded) actor runs anything else."""
        variables = self.steps[key].variables
        return [K.to_numpy(variables[i].value) for i in indices]

    def threads(self):
        """``OMP_NUM_THREADS`` of this replica (BLAS and numba's cap), as Ray
        set it from the CPUs the replica reserved."""
        return os.environ.get("OMP_NUM_THREADS")

    def collective_kind(self):
        """``(transport class name, array module of the reduced buffers)``."""
        mods = {type(b[0]).__module__.split(".")[0] for b in self.buffers.values()}
        return type(self.coll).__name__, ",".join(sorted(mods))

    # -- training ----------------------------------------------------------------
    def _buffer(self, key, step):
        # A device transport (NCCL) reduces the buffer where the gradients are.
        xp = K.get_xp() if getattr(self.coll, "on_device", False) else np
        buf = self.buffers.get(key)
        if buf is None or not isinstance(buf[0], xp.ndarray) or buf[3] is not self.coll:
            size, sizes, merged = buffer_layout(step, self.world)
            # The shared-memory slot itself, when it fits: the gradients are
            # packed straight into it (no copy into the segment).
            slot = getattr(self.coll, "slot", None)
            if not (xp is np and slot is not None and slot.size == size
                    and slot.dtype == np.dtype(step.layout.dtype)):
                slot = xp.zeros(size, step.layout.dtype)
            buf = self.buffers[key] = (slot, sizes, merged, self.coll)
            shard = self.zero.pop(key, None)
            if shard is not None:
                shard.detach()
        return buf[:3]

    def _zero(self, key, step):
        """This rank's ``ZeroShard`` of ZeRO-1 for ``step`` (``zero.py``), or
        None when the optimizer or the transport cannot shard."""
        if key in self.zero:
            return self.zero[key]
        size = buffer_layout(step, self.world)[0]
        halves = getattr(self.coll, "params", None)
        plan = None
        if hasattr(self.coll, "reduce_apply") and halves and all(
                v.dtype == halves[0].dtype for v in step.trainable_variables):
            plan = plan_zero(step, self.world, size)
        self.zero[key] = None if plan is None else ZeroShard(step, plan, self.rank,
                                                            halves)
        return self.zero[key]

    def _detach(self, keep=None):
        """Private copies of the weights of every step but ``keep`` that
        live in the collective's shared parameter array (``ZeroShard``)."""
        for key, shard in self.zero.items():
            if shard is not None and key != keep:
                shard.detach()

    def close(self):
        """Detaches the weights from the shared segment, then closes the
        collective (``CollectiveMember.close``)."""
        self._detach()
        return super().close()

    def run_steps(self, key, data_key, batches, first_step=0, return_state=False,
                  shard=False):
        """Runs one synchronous step per global batch.

        Args:
            key: the step's key (from ``load_step``).
            data_key: the arrays' key (from ``load_data``), or None when each
                batch is given as arrays.
            batches: list of int64 index arrays (rows of the global batch), or
                of array lists when ``data_key`` is None.
            first_step: global step number of the first batch (error messages).
            shard: apply the optimizer ZeRO-1 style (``zero.py``) when the
                step and the transport allow it; the slots of the variables
                other ranks own then go stale here.
            return_state: True: also return the step's variables after the
                last batch (``state``, ``get_state()`` order); a list of
                indices into ``step.variables``: only those (the metric
                state, when the weights stay on the replicas).

        Returns:
            dict with ``loss`` (list, global-batch loss per step), ``count``
            (global batch sizes), ``output_losses`` (list of lists),
            ``seconds`` (totals: compute, apply, copies into the buffer,
            allreduce including waits), ``work`` (per step, this rank's
            seconds outside the allreduce: the straggler spread) and
            optionally ``state``.
        """
        def rows():
            for batch in batches:
                n, lo, hi, mine = self.rows(data_key, batch, self.world, self.rank)
                yield n, mine
        return self._train(key, rows(), first_step, return_state, shard)

    def run_input_steps(self, key, feed_key, convert, k, new_pass, first_step=0,
                        return_state=False):
        """Up to ``k`` synchronous steps on rows this replica reads from its
        own input source (``load_input``); stops early, on every replica at
        the same step, once all replicas' sources are exhausted.

        Args:
            key: the step's key.
            feed_key: the source's key.
            convert: raw element -> list of arrays in step input order.
            k: steps to run.
            new_pass: start a new pass over the source first (an epoch).

        Returns:
            as ``run_steps``; fewer than ``k`` entries at the end of the input.
        """
        return self._train(key, self.input_rows(feed_key, convert, k, new_pass),
                           first_step, return_state)

    def _train(self, key, rows, first_step, return_state, shard=False):
        step = self.steps[key]
        buf, metric_sizes, merged = self._buffer(key, step)
        xp = np if isinstance(buf, np.ndarray) else K.get_xp()
        zero = self._zero(key, step) if shard and xp is np else None
        # One step's weights at a time in the shared parameter array; none
        # there when every rank applies the whole optimizer to its own copy.
        self._detach(keep=key if zero is not None else None)
        g = step.layout.size
        # [grads | metric deltas | partial metric states, one slot per rank
        #  (an allgather inside the SUM: the other slots are zeros) | loss |
        #  per-output losses | count]
        m0, mlen = g + sum(metric_sizes), sum(merged)
        d_end, c = m0 + self.world * mlen, len(buf) - 1
        mine_at = m0 + self.rank * mlen
        initial = np.concatenate([np.ravel(a) for a in step.merge_initial]) \
            if mlen else None
        losses, counts, outs = [], [], []
        into = xp is K.get_xp() and "out" in inspect.signature(
            step.compute_gradients).parameters
        clock = time.perf_counter
        t_comp = t_copy = t_comm = t_apply = 0.0
        work = []  # per step: this rank's own seconds (all but the allreduce)
        t_last = clock()
        for i, (n, mine) in enumerate(rows):
            t0 = clock()
            applied = t_apply
            t_copy += t0 - t_last  # this replica's rows gathered
            local = len(mine[0]) if mine else 0
            if local:
                # Global size unknown (own input): gradients of the local mean
                # loss times the local count; divided by the summed count below.
                if into:  # packed straight into the buffer
                    res = step.compute_gradients(mine, local if n is None else n,
                                                 out=buf[:g])
                    t_comp += clock() - t0
                else:
                    res = step.compute_gradients(mine, local if n is None else n)
                    t_comp += clock() - t0
                    buf[:g] = xp.asarray(res.grads) if xp is not np else \
                        K.to_numpy(res.grads)
                pos = g
                for delta, size in zip(res.metric_deltas, metric_sizes):
                    buf[pos:pos + size] = xp.ravel(xp.asarray(delta))
                    pos += size
                if mlen:
                    buf[m0:d_end] = 0.0
                    buf[mine_at:mine_at + mlen] = xp.asarray(np.concatenate(
                        [np.ravel(K.to_numpy(res.metric_deltas[i]))
                         for i in step.merge_index]))
                buf[d_end] = float(res.loss)
                if res.output_losses:
                    buf[d_end + 1:c] = xp.asarray([float(v) for v in res.output_losses],
                                                  buf.dtype)
                else:
                    buf[d_end + 1:c] = 0.0
                if n is None:
                    buf[:g] *= local
                    buf[d_end:c] *= local
                buf[c] = local
            else:  # no rows here (a short last batch, or input ran out): zeros
                buf[:] = 0.0
                if mlen:  # merging the initial state changes nothing
                    buf[mine_at:mine_at + mlen] = xp.asarray(initial)
            t1 = clock()
            if zero is not None and n is not None:
                # reduce own ranges -> apply own variables -> gather the rest
                spent = [0.0]

                def timed(result, params, apply=zero.apply):
                    a = clock()
                    apply(result, params)
                    spent[0] += clock() - a
                self.coll.reduce_apply(
                    buf, zero.plan.ranges[self.rank], timed, step=first_step + i,
                    gather=lambda res, params, z=zero.gather: z(res, params, buf))
                t2 = clock()
                t_comm += t2 - t1 - spent[0]
                t_apply += spent[0]
                tail = buf[g:]
            else:
                self.coll.allreduce(buf, "SUM", step=first_step + i)
                t2 = clock()
                t_comm += t2 - t1
                # metrics, losses and count: one small copy to the host
                tail = buf[g:] if xp is np else K.to_numpy(buf[g:])
            total = int(round(tail[-1]))
            if n is None:
                if total == 0:  # every replica's input is exhausted
                    break
                buf[:g] /= total
                tail[d_end - g:c - g] /= total
            if zero is None or n is None:
                step.apply_gradients(buf[:g] if xp is not np
                                     else K.get_xp().asarray(buf[:g]))
            deltas, pos = [], 0
            for var, size in zip(step.metric_variables, metric_sizes):
                deltas.append(tail[pos:pos + size].reshape(var.shape))
                pos += size
            if deltas:
                step.add_metric_deltas(deltas)
            if mlen:
                step.merge_partials([_split(tail[m0 - g + r * mlen:m0 - g + (r + 1) * mlen],
                                            merged) for r in range(self.world)])
            losses.append(float(tail[d_end - g]))
            counts.append(total if n is None else n)
            outs.append([float(v) for v in tail[d_end - g + 1:c - g]])
            self.progress += 1
            t_last = clock()
            t_apply += t_last - t2
            t_copy += t1 - t0
            work.append(t1 - t0 + t_apply - applied)
        # compute, apply, copies (rows gathered, buffer filled), allreduce
        # (waits included)
        out = dict(loss=losses, count=counts, output_losses=outs,
                   seconds=(t_comp, t_apply, t_copy - t_comp, t_comm), work=work)
        if return_state is True:
            out["state"] = step.get_state()
        elif return_state:  # indices of the variables wanted
            out["state"] = self.get_state(key, return_state)
        return out

    # -- input the replica reads itself: sources by key (each an ``InputSource``,
    # unpickled here); a pass over one is an iterator of raw elements
    # ``(x, y[, sample_weight])`` ---------------------------------------------------
    def _inputs(self):
        if not hasattr(self, "inputs"):
            self.inputs = {}  # key -> [source, iterator or None, fresh]
        return self.inputs

    def load_input(self, key, source):
        """Keeps ``source`` under ``key`` (its pipeline is built on first read)."""
        self._inputs()[key] = [source, None, False]
        return True

    def drop_input(self, key):
        self._inputs().pop(key, None)
        return True

    def peek_input(self, key):
        """One row of the first element of a new pass (the input signature);
        the element is kept for the first step.

        Returns:
            The raw element's structure with every array cut to one row.

        Raises:
            ValueError: the source yields no element.
        """
        entry = self._inputs()[key]
        it = entry[0].passes()
        first = next(it, None)
        if first is None:
            raise ValueError(f"The input of replica {self.rank} yielded no batch "
                             f"(its source: {type(entry[0]).__name__}).")
        entry[1], entry[2] = itertools.chain([first], it), True
        return tree.map_structure(lambda a: a[:1] if getattr(a, "ndim", 0) else a,
                                  first)

    def input_rows(self, key, convert, k, new_pass):
        """Up to ``k`` ``(n, arrays)`` pairs: ``arrays`` this replica's rows
        (None once its source is exhausted) and ``n`` the global batch size
        when known (sources of whole global batches), else None."""
        entry = self._inputs()[key]
        source = entry[0]
        if entry[1] is None or (new_pass and not entry[2]):
            entry[1] = source.passes()
        entry[2] = False
        for _ in range(k):
            raw = next(entry[1], None)
            if raw is None:
                yield None, None
                continue
            arrays = convert(raw)
            if not source.global_rows:
                yield None, arrays
                continue
            n = len(arrays[0])
            lo, hi = shard_bounds(n, self.world, self.rank)
            yield n, [a[lo:hi] for a in arrays]

    # -- evaluation and prediction on this replica's rows, and the arrays they read --
    def load_eval_arrays(self, key, named):
        """Keeps one evaluation's (or prediction's) arrays under ``key``, with
        the previous call's (older ones are dropped; the training arrays of
        ``load_named`` stay): an ``evaluate`` and a ``predict`` in turn send
        nothing again.

        Args:
            key: the data key the driver will name them by.
            named: list of ``(content key, array or None)``; None: the array
                this replica already holds under that content key, among the
                training arrays or the last two evaluation calls' arrays.

        Raises:
            KeyError: a content key this replica does not hold.
        """
        # [(data key, the call's arrays, {content key: array})], oldest first
        gens = getattr(self, "eval_gens", [])
        held = dict(getattr(self, "named", {}))
        for _, _, arrays in gens:
            held.update(arrays)
        now = {k: held[k] if a is None else a for k, a in named}
        self.eval_gens = gens[-1:] + [(key, [now[k] for k, _ in named], now)]
        self.eval_data = {k: arrays for k, arrays, _ in self.eval_gens}
        return True

    def eval_steps(self, key, data_key, batches, copy=None):
        """Loss and metric deltas of this replica's rows of each global batch.

        Args:
            key: the evaluation step's key (an ``EvalStep``, from ``load_step``).
            data_key: the arrays' key (``load_eval_arrays``), or None when
                each batch is given as arrays.
            batches: list of int64 (n,) row-index arrays into the arrays under
                ``data_key``, or of array lists (one global batch each).
            copy: ``(train key, [(i, j), ...])``: first set the step's
                ``variables[i]`` to the training step's ``variables[j]``
                (this replica's current weights); None: use the step's own.

        Returns:
            One entry per batch: None when this replica has no rows in it,
            else ``(loss, output_losses, metric_deltas)``: the loss and
            per-output losses (floats) of its rows times ``rows / n`` (summed
            over the replicas: the global batch's mean), and one numpy array
            per ``metric_variables`` entry (the batch's partial state at the
            ``merge_index`` positions).
        """
        step = self._eval_step(key, copy)
        out = []
        for batch in batches:
            n, lo, hi, mine = self._eval_rows(data_key, batch)
            if hi > lo:
                res = step.compute(mine, n)
                out.append((res.loss, list(res.output_losses),
                            [np.asarray(d) for d in res.metric_deltas]))
            else:
                out.append(None)
            self.progress += 1
        return out

    def predict_steps(self, key, data_key, batches, copy=None):
        """Model outputs for this replica's rows of each global batch.

        Args:
            key: the prediction step's key (a ``PredictStep``).
            data_key, batches, copy: as for :meth:`eval_steps`.

        Returns:
            One entry per batch: None when this replica has no rows in it,
            else a list of numpy arrays, one per model output, each
            ``(rows, ...)`` in the output's dtype (its rows of the batch).
        """
        step = self._eval_step(key, copy)
        out = []
        for batch in batches:
            _, lo, hi, mine = self._eval_rows(data_key, batch)
            out.append([K.to_numpy(o) for o in step.run(mine)] if hi > lo else None)
            self.progress += 1
        return out

    def _eval_step(self, key, copy):
        step = self.steps[key]
        if copy is not None:
            source, pairs = copy
            held = self.steps[source].variables
            # Copies: a training step's values may be views of its collective
            # buffer, which the next allreduce overwrites.
            K.assign_all([step.variables[i] for i, _ in pairs],
                         [held[j].numpy() for _, j in pairs],
                         "Replica")
        return step

    def _eval_rows(self, data_key, batch):
        # (n, lo, hi, this replica's arrays) from the evaluation arrays
        return self.rows(data_key, batch, self.world, self.rank,
                         None if data_key is None else self.eval_data)


def buffer_layout(step, world):
    """``(size, metric_sizes, merged_sizes)`` of a replica's flat buffer for
    ``step`` in a group of ``world``: gradients, one delta per metric
    variable, ``world`` slots of the merged metrics' partial states (see
    ``kerasflow/metrics/merge.py``), the loss, per-output losses, the count."""
    metric = [int(np.prod(v.shape, dtype=np.int64)) for v in step.metric_variables]
    merged = [metric[i] for i in step.merge_index]
    size = step.layout.size + sum(metric) + world * sum(merged) + step.num_outputs + 1
    return size, metric, merged


def _split(flat, sizes):
    out, pos = [], 0
    for n in sizes:
        out.append(flat[pos:pos + n])
        pos += n
    return out


def random_nodes(step) -> list:
    """The nodes of ``step``'s graph (every tensor its ``_GRAPH`` names)
    whose op draws random numbers (dropout)."""
    tensors = [t for name in step._GRAPH for t in getattr(step, name)
               if hasattr(t, "node")]
    out = []
    for node in walk(tensors):
        try:
            if get_op(node.op).random:
                out.append(node)
        except KeyError:  # Variable, Placeholder, Const
            pass
    return out


def _offset_seeds(step, rank):
    for node in random_nodes(step):
        if node.attrs.get("seed") is not None:
            node.attrs["seed"] = int(node.attrs["seed"]) + 7_919 * rank
