"""Evaluation and prediction on the replicas of a ``SyncReplicaStrategy``
(the driver side).

Each global batch is split over the replicas as in training (contiguous
rows in rank order, ``shard_bounds``); every replica runs its rows with the
weights it holds (``replica_eval.py``), so an ``evaluate`` between training
calls pulls nothing, and the driver combines what comes back: per batch the
replicas' scaled losses and per-output losses summed in rank order (the
global batch's mean), their metric-state deltas summed in rank order and
added to the driver's metric variables, and the partial states of metrics
that assign their state merged by the metrics' own ``merge_state`` (rank
order, ``kerasflow/metrics/merge.py``); for prediction the replicas' output
rows concatenated in rank order. This is tf.distribute's
``MirroredStrategy`` evaluation (per-replica steps, metrics all-reduced)
with Keras' ``Model.evaluate`` / ``Model.predict`` results: the same loss,
metrics and outputs as one process, up to float summation order.

The arrays go to the replicas once per content (``ArrayCache``'s
fingerprints): arrays the replicas already hold for training are not sent
again, validation data is sent at its first evaluation only.

The path is taken when ``evaluate_on_replicas`` is True (off by default: on
two cores the driver was faster for the MNIST MLP, slower for a convnet;
``benchmarks/bench_eval_replicas.py``). Steps the replicas cannot run as one
process would run them go to the driver, after a pull (``sync_to_driver``):
a custom ``test_step``; layer state carried across batches (a stateful RNN);
random ops in the inference graph (replicas would draw other numbers); a
metric that assigns its state without a ``merge_state`` it can trace; input
the replicas read themselves; GPU replicas; no replica group and no open
``scope()`` or ``fit`` that would close one.
"""

from __future__ import annotations

import time

import numpy as np

from kerasflow.distribute_lib import StepResult
from kerasflow.strategies.replica import random_nodes
from kerasflow.strategies.replica_state import StepEntry
from kerasflow.strategies.shipping import fingerprint

__all__ = ["EvalArrays", "SyncEvalMixin"]


class EvalArrays:
    """The driver's record of the evaluation arrays one replica group holds
    (``Replica.load_eval_arrays``: the last two calls' lists), by content
    (``shipping.fingerprint``).

    Attributes:
        shipped_arrays / shipped_bytes: arrays and bytes sent so far.
    """

    def __init__(self):
        self.shipped_arrays = self.shipped_bytes = 0
        self.group = None
        self.gens = []  # [(fingerprints, data key, the driver's list)]

    def ship(self, group, arrays, train_cache):
        """Has every replica of ``group`` hold ``arrays``; sends only those
        it holds neither as evaluation nor as training arrays
        (``train_cache``: the strategy's ``ArrayCache``).

        Returns:
            The data key the replicas know the list by.
        """
        if self.group is not group:  # a new group holds nothing
            self.group, self.gens = group, []
        for _, key, held in self.gens:
            if arrays is held:  # the same call's list: no hashing per call
                return key
        keys = tuple(fingerprint(a) for a in arrays)
        for i, (known, key, _) in enumerate(self.gens):
            if known == keys:
                self.gens[i] = (known, key, arrays)
                return key
        held = {k for known, _, _ in self.gens for k in known}
        if train_cache.current is not None:
            held |= set(train_cache.current[0])
        named = []
        for k, a in zip(keys, arrays):
            named.append((k, None if k in held else a))
            if k not in held:
                self.shipped_arrays += 1
                self.shipped_bytes += int(np.asarray(a).nbytes)
        data_key = f"e{time.time_ns()}"
        group.execute("load_eval_arrays", data_key, group.put(named))
        self.gens = self.gens[-1:] + [(keys, data_key, arrays)]
        return data_key


class _EvalEntry(StepEntry):
    """A ``StepEntry`` for an evaluation or prediction step, loaded on the
    replicas of ``group``; its metric variables are never pushed (the
    replicas compute deltas, partial states from the initial values)."""

    def __init__(self, step, key, group):
        super().__init__(step, key)
        self.group = group


class SyncEvalMixin:
    """``SyncReplicaStrategy``'s evaluation and prediction on its replicas
    (module docstring). Expects ``_group``, ``_start_group``, ``_steps``,
    ``_ship``, ``_sync_others``, ``_cache``, ``_recover``, ``_timeout``,
    ``_use_gpu``, ``_depth``, ``_runs`` and ``num_replicas_in_sync``.

    Attributes:
        evaluate_on_replicas: True: evaluation and prediction steps run on
            the replicas when they can (see the module docstring); False
            (the default): in the driver process after a pull of the
            weights. On a 2-core machine the driver, BLAS on both cores, was
            the faster for an MLP (``benchmarks/bench_eval_replicas.py``:
            replicas / driver 0.88 for ``evaluate``, 0.92 for ``predict``;
            1.72 and 1.53 for a convnet); the
            replicas pay where they have cores (or nodes) of their own.
        replica_eval_calls / driver_eval_calls: ``run_steps`` calls of
            evaluation or prediction steps run on the replicas / the driver.
    """

    evaluate_on_replicas = False
    replica_eval_calls = 0
    driver_eval_calls = 0

    @property
    def eval_data_shipments(self):
        """``(arrays, bytes)`` of evaluation data sent to replicas so far."""
        cache = self.__dict__.get("_eval_arrays")
        return (0, 0) if cache is None else (cache.shipped_arrays,
                                             cache.shipped_bytes)

    def _run_inference(self, step, batches):
        """``run_steps``'s results for an evaluation or prediction step run
        on the replicas: a ``StepResult`` per batch (the driver's metric
        variables updated) or a list of output arrays per batch; None when
        the driver must run it.

        Raises:
            WorkerGroupError: failures beyond ``max_failures``.
        """
        if not self._on_replicas(step, batches):
            self.driver_eval_calls += 1
            return None
        out = self._retrying(self._inference_call, step, batches)
        self.replica_eval_calls += 1
        return out

    def _on_replicas(self, step, batches):
        if not self.evaluate_on_replicas or self._use_gpu:
            return False
        if batches[0].feed is not None:  # read by the replicas: a fit's input
            return False
        if self._group is None and not (self._depth or self._runs):
            return False  # nothing would close a group started now
        if step.kind == "eval":
            ok = (hasattr(step, "compute") and not hasattr(step, "custom_logs")
                  and not step.state_updates and not step.merge_refused)
        else:
            ok = step.kind == "predict" and not step.updates
        if not ok:
            return False
        draws = self.__dict__.setdefault("_draws", {})
        known = draws.get(id(step))
        if known is None or known[0] is not step:
            if len(draws) > 64:  # steps of models compiled again
                draws.clear()
            known = draws[id(step)] = (step, bool(random_nodes(step)))
        return not known[1]

    def _inference_call(self, step, batches):
        group = self._group or self._start_group()
        copy = self._weights_on_replicas(step)
        group = self._group  # rebuilt by a replay's recovery, maybe
        entry = self._eval_entry(group, step, copy)
        if batches[0].indices is not None:
            cache = self.__dict__.setdefault("_eval_arrays", EvalArrays())
            data_key = cache.ship(group, batches[0].arrays, self._cache)
            payload = [np.asarray(b.indices, np.int64) for b in batches]
        else:
            data_key, payload = None, [[np.asarray(a) for a in b.arrays]
                                       for b in batches]
        ref = group.put(payload)
        method = "eval_steps" if step.kind == "eval" else "predict_steps"
        outs = group.execute(method, per_rank=[(entry.key, data_key, ref, copy)]
                             * self.num_replicas_in_sync,
                             timeout=self._timeout * len(batches))
        if step.kind == "predict":
            return [_concat([o[b] for o in outs]) for b in range(len(batches))]
        return [_combine(step, [o[b] for o in outs], batch.size)
                for b, batch in enumerate(batches)]

    def _weights_on_replicas(self, step):
        """``(training step key, [(i, j)...])`` when a training step on the
        replicas holds newer weights than the driver (copied there into
        ``step``'s ``variables[i]`` from its ``variables[j]``), else None."""
        behind = [e for e in self._steps.values() if e.behind]
        if not behind:
            return None
        src = behind[-1]
        self._sync_others(src.step)  # one step ahead at a time, as in training
        skip = {id(v) for v in getattr(step, "metric_variables", ())}
        reads = {id(v) for v in step.variables} - skip
        held = src.step.variables
        if not src.loaded or any(id(held[i]) in reads for i in src.changed()):
            # A rebuilt group (reload, replay), or weights the driver set
            # since (pushed first, as before a training call).
            self._ship(src.step, None)
        if not src.behind:  # the push pulled first: the driver is current
            return None
        pos = {id(v): j for j, v in enumerate(held)}
        return src.key, [(i, pos[id(v)]) for i, v in enumerate(step.variables)
                         if id(v) in pos and id(v) in reads]

    def _eval_entry(self, group, step, copy):
        """The step's entry, loaded on ``group``, its variables current on
        the replicas except those ``copy`` sets there."""
        steps = self.__dict__.setdefault("_eval_steps", {})
        entry = steps.get(id(step))
        if entry is None or entry.step is not step or entry.group is not group:
            for k in [k for k, e in steps.items() if e.group is not group]:
                del steps[k]  # loaded on a group that is gone
            key = f"e{len(steps)}-{time.time_ns()}"
            group.execute("load_step", key, group.put(step))  # the driver's values
            entry = steps[id(step)] = _EvalEntry(step, key, group)
            return entry
        skip = set(entry.metric_idx) | (set() if copy is None else
                                        {i for i, _ in copy[1]})
        changed = [i for i in entry.changed() if i not in skip]
        if changed:  # the driver's values the replicas' copy lacks
            values = [step.variables[i].numpy() for i in changed]
            group.execute("set_values", entry.key, changed, group.put(values))
        entry.mark()
        return entry


def _concat(parts):
    """One batch's outputs: the replicas' rows concatenated in rank order."""
    parts = [p for p in parts if p is not None]
    return [np.concatenate([p[k] for p in parts], axis=0) for k in range(len(parts[0]))]


def _combine(step, parts, n):
    """One batch's ``StepResult`` from the replicas' parts (rank order); the
    driver's metric variables take the summed deltas and merged partials."""
    parts = [p for p in parts if p is not None]
    loss = 0.0
    outs = [0.0] * len(parts[0][1])
    for p in parts:
        loss += p[0]
        outs = [a + b for a, b in zip(outs, p[1])]
    if step.metric_variables:
        deltas = []
        for i, var in enumerate(step.metric_variables):
            total = None
            for p in parts:
                d = np.asarray(p[2][i], var.dtype)
                total = d if total is None else total + d
            deltas.append(total)
        step.add_metric_deltas(deltas)
        if step.merge_index:
            step.merge_partials([[p[2][i] for i in step.merge_index] for p in parts])
    return StepResult(loss, n, None, [], outs)
