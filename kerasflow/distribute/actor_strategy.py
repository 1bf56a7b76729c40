"""What the Ray strategies share (internal; the public names are in
``kf.distribute``): ``ActorStrategy`` owns the scope/close lifecycle of
actor groups and the one ``run_steps`` loop of a driver call -- evaluation
and prediction on the actors or in process, a batch-size check, the call
retried after each recovery -- so ``SyncReplicaStrategy`` and
``ParameterServerStrategy`` only say how one call runs and how a failure is
recovered.
"""

from __future__ import annotations

import contextlib

import numpy as np

from kerasflow.distribute.distribute_lib import DefaultStrategy, Strategy
from kerasflow.steps.batch import StepResult

__all__ = ["ActorStrategy", "changed_state", "check_batch_size", "check_count",
           "check_metric_merge"]


def check_count(owner, name, value, allow_none=False):
    """Returns ``value`` when it is an int >= 1 (or None, if allowed).

    Raises:
        TypeError: not an int (bools included), naming ``owner`` and ``name``.
        ValueError: < 1.
    """
    if value is None and allow_none:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{owner} expects {name} to be an int. "
                        f"Received: {name}={value!r}")
    if value < 1:
        raise ValueError(f"{owner} expects {name} >= 1. Received: {name}={value}")
    return value


def check_metric_merge(owner, step, additive_only=False):
    """Raises when replicas cannot merge ``step``'s metric state: a metric
    assigns (not adds to) its state and has no ``merge_state`` of its own (or
    one that cannot be traced), or ``additive_only`` (the strategy only sums
    deltas) and any metric assigns.

    Raises:
        ValueError: naming the metrics and how to fix it.
    """
    refused = list(getattr(step, "merge_refused", ()))
    if additive_only:
        refused += [step.metric_variables[i].name
                    for i in getattr(step, "merge_index", ())]
    if refused:
        how = ("Train with MirroredStrategy or one process, or without these "
               "metrics." if additive_only else
               "Give the metric a merge_state(metrics) written with backend ops "
               "(a running maximum: self.best.assign(ops.maximum(self.best, "
               "m.best)) for each m in metrics), or train with one process.")
        raise ValueError(
            f"{owner} cannot merge the state of metric(s) {refused} across "
            f"replicas: their update_state assigns the state (e.g. a running "
            f"maximum), and summing the replicas' changes would be wrong. {how}")


def changed_state(step, last):
    """``step.get_state()`` when it differs from ``last`` (the driver changed
    a variable: a callback, ``set_weights``, a metric reset), else None."""
    now = step.get_state()
    if any(not np.array_equal(a, b) for a, b in zip(now, last)):
        return now
    return None


def check_batch_size(strategy, batches, unit):
    """Refuses global batches smaller than the number of parts they split into.

    Raises:
        ValueError: naming the strategy, the parts and the batch size.
    """
    n = strategy.num_replicas_in_sync
    if batches[0].feed is None and batches[0].size < n:
        raise ValueError(
            f"{type(strategy).__name__} splits each global batch over {n} {unit}, so "
            f"batch_size must be at least {n}. Received: a batch of "
            f"{batches[0].size} samples.")


class ActorStrategy(Strategy):
    """Base of the strategies whose replicas are Ray actors.

    Subclasses implement ``_run_call(step, batches)`` (one driver call on the
    actors, returning ``(loss, count, output_losses)`` per batch and leaving
    the driver's step variables current), ``_recover(err)`` (rebuild what
    failed, or raise) and ``close()``.

    Attributes:
        recoveries: one dict per recovery (``step``, ``error``, ``seconds``...).
    """

    _depth = 0
    _runs = 0  # open ``training()`` contexts
    _global_step = 0
    _unit = "replicas"  # what a global batch is split over, for messages

    def close(self):
        """Shuts the actors down (a later ``run_steps`` starts them again)."""
        raise NotImplementedError

    def sync_to_driver(self):
        """Makes the driver's variables current when the actors keep newer
        values between calls (see ``kerasflow/distribute/driver_state.py``); here a no-op."""

    @contextlib.contextmanager
    def scope(self):
        """Models built and fit inside train on the actors; leaving the
        outermost scope shuts them down."""
        self._depth += 1
        try:
            with super().scope():
                yield self
        finally:
            self._depth -= 1
            if self._depth == 0:
                self.close()

    @contextlib.contextmanager
    def training(self):
        """One ``fit`` / ``Estimator.train``: outside every ``scope()`` of this
        strategy, its actors are closed when the run ends (a model compiled
        in the scope and fit outside it, an Estimator's ``train_distribute``)."""
        self._runs += 1
        ok = False
        try:
            yield self
            ok = True
        finally:
            self._runs -= 1
            if self._depth == 0 and self._runs == 0:
                self.close()
            elif ok and self._runs == 0:  # the model holds the trained weights
                self.sync_to_driver()

    def run_steps(self, step, batches) -> list:
        """Trains on K global batches in one driver call (evaluation and
        prediction steps run on the actors when ``_run_inference`` can,
        else in this process on the actors' weights, pulled first).

        Returns:
            One ``StepResult`` per batch (global-batch loss and count), fewer
            when the replicas' own input (``BatchRef.feed``) ran out; the
            driver's step variables (weights, optimizer, metrics) hold the
            actors' values afterwards.

        Raises:
            ValueError: a global batch smaller than ``num_replicas_in_sync``.
            WorkerGroupError: failures beyond ``max_failures``, or an error a
                restart cannot fix (the message names role, rank and step).
        """
        if not batches:
            return []
        if step.kind != "train":
            done = self._run_inference(step, batches)
            if done is not None:  # on the actors, with the weights they hold
                return done
            self.sync_to_driver()  # else here, with the actors' weights
            return DefaultStrategy().run_steps(step, batches)
        check_batch_size(self, batches, self._unit)
        out = self._retrying(self._run_call, step, batches)
        results = [StepResult(loss, count, None, [], outs) for loss, count, outs in out]
        self._global_step += len(results)  # fewer: replica-side input ran out
        return results

    def _retrying(self, call, *args):
        """``call(*args)``, run again after each failure ``_recover`` fixed
        (it raises the ones it cannot)."""
        while True:
            try:
                return call(*args)
            except Exception as err:  # noqa: BLE001 - sorted by _recover
                self._recover(err)

    def _run_inference(self, step, batches):
        """An evaluation or prediction step's results computed on the actors
        (as ``run_steps`` returns them), or None: the driver runs the step
        after a pull. Here always None."""
        return None

    def _run_call(self, step, batches):
        raise NotImplementedError

    def _recover(self, err):
        raise NotImplementedError
