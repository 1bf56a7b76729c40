"""Evaluation and prediction on a synchronous replica (the replica side).

Each replica takes its contiguous share of every global batch's rows (rank
order, ``shard_bounds``, as training does) and runs the evaluation or
prediction step on them with the weights it holds: copied, inside the
replica, from the training step it updates (the driver's copy may be
older), or pushed by the driver when no training step is ahead of it. It
returns its rows' scaled losses and metric-state deltas, or its rows'
outputs; the driver combines them in rank order (``sync_eval.py``).

This is tf.distribute's ``MirroredStrategy`` evaluation: each replica
computes its part of the global batch and the per-replica metric updates
are all-reduced (here: returned and summed by the driver, which also merges
the partial states of metrics that assign their state by their own
``merge_state``, ``kerasflow/metrics/merge.py``). Ray stays out of this
module: the worker group hosts it.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K

__all__ = ["ReplicaEval"]


class ReplicaEval:
    """Mixin of ``Replica`` (a ``StepWorker``: ``steps``, ``rows``, ``rank``,
    ``world``, ``progress``): evaluation and prediction on this replica's
    rows, and the arrays they read."""

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
