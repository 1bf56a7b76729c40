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

from kerasflow import backend as K
from kerasflow.strategies.replica import buffer_layout
from kerasflow.strategies.zero import assemble, plan_zero, ranks_of

__all__ = ["ReplicaStateMixin", "StepEntry"]


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
        metric = {id(v) for v in getattr(step, "metric_variables", ())}
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

    def unmark(self, indices) -> None:
        """Makes :meth:`changed` report ``indices`` (values still to push)."""
        for i in indices:
            self._refs[i] = None

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


class ReplicaStateMixin:
    """``SyncReplicaStrategy``'s side of the weights kept on the replicas:
    pulls (commits), pushes of the driver's changes, the replay of logged
    calls after a recovery and the ZeRO-1 plan. Expects ``_group``,
    ``_steps`` (id -> :class:`StepEntry`), ``_cache``, ``_ship``,
    ``_recover`` and ``num_replicas_in_sync``."""

    #: Shard the optimizer over the replicas (ZeRO-1, ``zero.py``) when its
    #: updates are separable per variable; False: every replica applies all.
    shard_optimizer = True

    #: At most this many steps run between two commits (pulls of the weights)
    #: and are redone after a failure.
    commit_steps = 512

    @property
    def optimizer_sharded(self):
        """True when a step of this strategy ran with the optimizer sharded
        (ZeRO-1) since the replicas' slots were last made equal."""
        return any(e.sharded for e in self._steps.values())

    @property
    def data_shipments(self):
        """``(arrays, bytes)`` of training data sent to replicas so far."""
        return self._cache.shipped_arrays, self._cache.shipped_bytes

    # -- the weights on the replicas ------------------------------------------------
    def sync_to_driver(self):
        """Pulls the weights, optimizer slots and other variables of every
        step whose replicas are ahead of the driver into the driver's
        variables (a commit, see ``replica_state.py``). Called through
        ``kerasflow.driver_state.sync_driver_state`` before callbacks that
        may read the model, by evaluation and prediction, and at the end of
        ``fit``. A replica failure while pulling is recovered as in training.

        Raises:
            WorkerGroupError: failures beyond ``max_failures``.
        """
        for entry in list(self._steps.values()):
            while entry.behind:
                if self._group is None:  # given up: the driver keeps the commit
                    entry.behind = False
                    break
                try:
                    self._ship(entry.step, None)  # reloads after a failure
                    if entry.behind:
                        self._pull(entry)
                except Exception as err:  # noqa: BLE001 - sorted by _recover
                    self._recover(err)

    def _pull(self, entry, skip=()):
        """The replicas' values into the driver's variables (all but
        ``skip``; each from its ZeRO owner, else from rank 0), the replicas'
        random streams with them: a commit."""
        group, variables = self._group, entry.step.variables
        skip = set(skip)
        idx = [i for i in range(len(variables)) if i not in skip]
        owner = entry.plan.owner_of if entry.sharded and entry.plan else [0] * len(
            variables)
        # each variable from the rank(s) holding its current value (ZeRO slots)
        per = {}
        for i in idx:
            for r in ranks_of(owner[i]):
                per.setdefault(r, []).append(i)
        ranks = sorted(per)
        refs = [group.call(r, "get_state", entry.key, per[r]) for r in ranks]
        rngs = group.execute("rng_state", entry.key)
        got = group.wait(refs, what="get_state", ranks=ranks)
        values = assemble(owner, idx, {r: dict(zip(per[r], vals))
                                       for r, vals in zip(ranks, got)})
        K.assign_all([variables[i] for i in idx], values, "MirroredStrategy")
        entry.mark(idx)
        entry.commit(rngs if any(r is not None for r in rngs) else None)
        self.pulls += 1

    def _plan(self, entry):
        """The step's ZeRO-1 plan (``zero.py``) when the optimizer is sharded."""
        if not self.shard_optimizer or self.num_replicas_in_sync < 2:
            return None
        if entry.plan is False:
            size = buffer_layout(entry.step, self.num_replicas_in_sync)[0]
            entry.plan = plan_zero(entry.step, self.num_replicas_in_sync, size)
        return entry.plan

    def _unshard(self, entry):
        # A call that applies the whole optimizer on every replica needs every
        # replica's slots current: the owners' values to the driver, then to all.
        if entry.sharded:
            self._pull(entry)
            self._group.execute("set_state", entry.key,
                                self._group.put(entry.step.get_state()))
            entry.sharded = False

    def _sync_others(self, step):
        # Each step holds its own copy of the variables on the replicas: the
        # driver's copy must be current before another step runs.
        for entry in self._steps.values():
            if entry.step is not step and entry.behind and entry.loaded:
                self._pull(entry)

    def _replay(self, entry, data_key):
        # Horovod elastic's restore: the committed metric state and random
        # streams, then the calls run since the commit, again.
        group = self._group
        if entry.metric_idx:
            group.execute("set_values", entry.key, entry.metric_idx,
                          group.put(entry.commit_metrics))
        if entry.commit_rng is not None:
            group.execute("set_rng_state",
                          per_rank=[(entry.key, r) for r in entry.commit_rng])
        for first, payload in entry.log:
            ref = group.put(payload)
            group.execute("run_steps", entry.key, data_key, ref, first, False,
                          entry.sharded, timeout=self._timeout * len(payload))

