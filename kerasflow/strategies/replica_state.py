"""The driver's record of one step's state on the replicas (weights that stay
on the replicas between calls).

Per driver call the replicas return only the metric state (a few numbers);
the weights and optimizer slots stay where they are updated, as each worker
keeps them in PyTorch DDP and Horovod, and the driver pulls them from rank 0
only when something reads them (``kerasflow/driver_state.py``: a callback
that may read the model, evaluation, prediction, the end of ``fit``) or when
the driver changed a variable (a metric reset, ``set_weights``, a learning
rate set by a callback) and must push it.

Every pull is a commit (Horovod elastic's ``state.commit()``): the driver's
variables then hold a consistent state, and the calls run since are logged
(their row indices: a few KB each). After a replica failure the rebuilt
group gets the committed state and replays the log before the failed call,
so at most ``commit_steps`` steps are redone and the run equals an unkilled
one (the random streams are committed too, see ``Replica.rng_state``).
"""

from __future__ import annotations

__all__ = ["StepEntry"]


class StepEntry:
    """What the driver knows about one step loaded on the replicas.

    Args:
        step: the driver's step (``variables``, ``metric_variables``).
        key: the replicas' key for it.

    Attributes:
        loaded: whether the current replica group holds the step.
        behind: whether the replicas hold newer values than the driver.
        metric_idx: positions of the metric variables in ``step.variables``.
        log: ``(first_step, payload)`` of the calls since the last commit.
        commit_metrics: the metric values at the last commit.
        commit_rng: the replicas' random-stream states at the last commit
            (one entry per rank; None when there is nothing to restore).
        logged_steps: steps in ``log``.
        plan / sharded: the step's ZeRO-1 plan (``zero.py``; False until
            computed, None when the optimizer cannot be sharded) and whether
            the replicas ran sharded since their slots were last made equal.
    """

    def __init__(self, step, key):
        self.step, self.key = step, key
        self.loaded, self.behind = True, False
        metric = {id(v) for v in step.metric_variables}
        self.metric_idx = [i for i, v in enumerate(step.variables) if id(v) in metric]
        self.log, self.logged_steps = [], 0
        self.commit_metrics, self.commit_rng = None, None
        self.plan = False     # the ZeRO-1 plan (None: not separable), once known
        self.sharded = False  # replicas hold only their own slots current
        self._refs = []
        self.mark()

    def mark(self, indices=None) -> None:
        """Records the driver's current value objects (all, or ``indices``):
        a variable is changed on the driver when its value object is no longer
        the one recorded (every assignment replaces the array)."""
        variables = self.step.variables
        if indices is None:
            self._refs = [v.value for v in variables]
        else:
            for i in indices:
                self._refs[i] = variables[i].value

    def changed(self) -> list:
        """Indices of the variables the driver assigned since :meth:`mark`."""
        return [i for i, (v, ref) in enumerate(zip(self.step.variables, self._refs))
                if v.value is not ref]

    def commit(self, rng=None) -> None:
        """The driver's variables are the replicas' state now: clears the log."""
        self.behind = False
        self.log, self.logged_steps = [], 0
        self.commit_metrics = [self.step.variables[i].numpy() for i in self.metric_idx]
        self.commit_rng = rng

    def record(self, first_step, payload, steps) -> None:
        """Logs one call run since the last commit (replayed after a failure)."""
        self.log.append((first_step, payload))
        self.logged_steps += steps
        self.behind = True
