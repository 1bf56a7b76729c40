"""``ParameterServerStrategy`` on Ray actors (Li et al., "Scaling Distributed
Machine Learning with the Parameter Server", OSDI 2014;
``tf.distribute.experimental.ParameterServerStrategy``).

    strategy = kf.distribute.ParameterServerStrategy(num_ps=2, num_workers=2,
                                                     staleness=4)
    with strategy.scope():
        model = make_model()
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        model.fit(x, y, batch_size=256, epochs=3)   # 256 = the global batch

The driver is the chief (``tf.train.Supervisor``'s ``is_chief``): it ships
the step and the data once, queues each call's tasks in a scheduler actor
(``coordinator``, ``scheduler``) and then only waits, keeps the
last snapshot of every variable after each ``run_steps`` call (so callbacks,
evaluation and saving see current weights, and a lost shard is restored from
it), and runs evaluation and prediction in process. PS shard actors
(``shard``) own contiguous, byte-balanced ranges of the step's flat layout
with the optimizer slots of their variables; worker actors (``worker``)
claim tasks, pull from the shards, compute gradients on their part of each
global batch and push to the shards, claiming and pulling ahead while they
compute (the paper's workers and servers talk directly; §3).

``staleness`` is the consistency knob: 0 synchronous (equal to one process
on the global batch), ``tau`` > 0 bounded delay, None asynchronous.

Faults (``recoveries``, logged at WARNING on ``kerasflow.distribute``): a dead
worker's tasks run again on the other workers (at-least-once computation, as
TF's ``ClusterCoordinator``; each gradient still reaches the shards once,
because a shard ignores a second push of the same part of the same step),
and the
worker group is re-created at the next call; a dead shard, or a wait past its
deadline, restores every shard from the chief's last snapshot (taken after
each ``run_steps`` call) and runs the call again, so at most
``steps_per_execution`` steps are redone. Embedding gradients (row-sparse)
are pushed as row ids + rows; pulls are dense (workers pull every weight,
not only the rows their batch touches). Not done: sparse pulls, and pinning
actors to the hosts a TF_CONFIG names.
"""

from __future__ import annotations

import logging
import os
import time

import numpy as np

from kerasflow.distribute.actor_strategy import (
    ActorStrategy,
    changed_state,
    check_count,
    check_metric_merge,
)
from kerasflow.distribute.cluster_resolver import parse_ps_tf_config
from kerasflow.distribute.parameter_server.coordinator import run_call
from kerasflow.distribute.parameter_server.scheduler import PSScheduler
from kerasflow.distribute.parameter_server.shard import PSShard, plan_shards
from kerasflow.distribute.parameter_server.worker import PSWorker
from kerasflow.distribute.runtime.errors import (
    PlacementError,
    ReplicaDiedError,
    ReplicaTimeoutError,
)
from kerasflow.distribute.runtime.ray import check_placement, cluster_summary
from kerasflow.distribute.runtime.shipping import ship_arrays
from kerasflow.distribute.runtime.worker_group import WorkerGroup

__all__ = ["ParameterServerStrategy"]

log = logging.getLogger("kerasflow.distribute")


def _resources(res, default_cpus, name):
    if res is None:
        return dict(num_cpus=default_cpus, num_gpus=0, extra=None)
    if not isinstance(res, dict):
        raise TypeError(f"ParameterServerStrategy expects {name} to be a dict like "
                        f"{{'CPU': 1, 'GPU': 0}}. Received: {res!r}")
    extra = {k: float(v) for k, v in res.items() if k not in ("CPU", "GPU")}
    return dict(num_cpus=float(res.get("CPU", default_cpus)),
                num_gpus=float(res.get("GPU", 0)), extra=extra or None)


class ParameterServerStrategy(ActorStrategy):
    """Workers and parameter-server shards on Ray, with bounded staleness.

    Args:
        num_ps: int >= 1, PS shard actors.
        num_workers: int >= 1, worker actors; each global batch is split into
            this many contiguous parts.
        staleness: 0 (synchronous), int tau > 0 (a worker may start step t only
            when every part of steps <= t-tau-1 was pushed and applied), or None
            (asynchronous: every push applied on arrival, each worker's loss
            is its own batch mean, so one global batch makes num_workers
            optimizer steps, as TF's async PS training).
        variable_partitioner: None (whole variables are placed on shards,
            balancing bytes) or a ``FixedShardsPartitioner`` /
            ``MinSizePartitioner`` (``kf.distribute``):
            the row blocks it cuts a variable into may land on different
            shards (contiguous key ranges, cut at the block boundary nearest
            each shard's byte quota), each shard updating its rows.
        worker_resources / ps_resources: Ray resources per actor, e.g.
            ``{"CPU": 1}`` (default workers 0.5 CPU, shards 0.25 CPU).
        timeout: seconds, the deadline of every wait on an actor.
        max_failures: shard / worker-group recoveries before giving up.
        steps_per_execution: default global batches per chief call (32).

    Raises:
        ValueError: num_ps or num_workers < 1, negative staleness, a
            non-positive timeout, or actors the cluster cannot place
            (``PlacementError``, a ValueError, naming requested and available).
        TypeError: wrong argument types (a partitioner that is not callable).

    Attributes:
        recoveries: one dict per recovery (``kind`` "worker" or "ps",
            ``step``, ``error``, ``seconds``).
        clock_trace: ``(step, part, worker, gap)`` for every task start, gap
            = the started step minus the slowest part's completed steps.
        max_clock_gap: the largest gap seen (<= staleness).
        idle_seconds / busy_seconds: workers' summed time between / in tasks
            (a task: set the pulled weights, compute, send the pushes).
        idle_parts: the idle seconds split by what the workers waited on:
            ``claim`` (the scheduler's answer, incl. the bounded-delay rule
            holding a task back) and ``pull`` (the shards' weights, incl.
            a shard not yet at the step the rule asks for).
        steals: tasks a free worker took from another worker's queue.
    """

    _unit = "workers"
    _worker_factory = PSWorker  # stragglers.slow_workers swaps it (tests)

    def __init__(self, num_ps=1, num_workers=2, staleness=0, variable_partitioner=None,
                 worker_resources=None, ps_resources=None, timeout=120.0,
                 max_failures=3, steps_per_execution=32):
        check_count("ParameterServerStrategy", "num_ps", num_ps)
        check_count("ParameterServerStrategy", "num_workers", num_workers)
        if staleness is not None:
            if not isinstance(staleness, int) or isinstance(staleness, bool):
                raise TypeError(f"ParameterServerStrategy expects staleness to be an "
                                f"int >= 0 or None. Received: staleness={staleness!r}")
            if staleness < 0:
                raise ValueError(f"ParameterServerStrategy expects staleness >= 0 "
                                 f"(0 sync, tau bounded delay) or None (async). "
                                 f"Received: staleness={staleness}")
        if variable_partitioner is not None and not callable(variable_partitioner):
            raise TypeError(f"ParameterServerStrategy expects variable_partitioner "
                            f"to be None or a partitioner such as "
                            f"FixedShardsPartitioner(2). "
                            f"Received: {variable_partitioner!r}")
        self.variable_partitioner = variable_partitioner
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(f"ParameterServerStrategy expects timeout > 0 seconds. "
                             f"Received: timeout={timeout!r}")
        self.num_ps, self.num_workers, self.staleness = num_ps, num_workers, staleness
        self.num_replicas_in_sync = num_workers
        self.default_steps_per_execution = int(steps_per_execution)
        self._wres = _resources(worker_resources, 0.5, "worker_resources")
        self._pres = _resources(ps_resources, 0.25, "ps_resources")
        self._timeout, self._poll = float(timeout), min(5.0, float(timeout))
        self._max_failures = int(max_failures)
        self._ps = self._workers = self._sched = None
        self._entry, self._data, self._dead = None, None, set()
        self._calls = 0
        self.recoveries, self.clock_trace = [], []
        self.idle_parts = {}
        self.max_clock_gap = self.steals = 0
        self.idle_seconds = self.busy_seconds = 0.0
        self.cluster_spec = self._last_plan = None
        w, p = self._wres, self._pres
        if (w["num_cpus"], w["num_gpus"], w["extra"]) == (
                p["num_cpus"], p["num_gpus"], p["extra"]):
            check_placement(num_workers + num_ps, w["num_cpus"], w["num_gpus"],
                            "PACK", 1, "PS actor")
        else:
            check_placement(num_workers, w["num_cpus"], w["num_gpus"], "PACK", 1,
                            "PS worker")
            check_placement(num_ps, p["num_cpus"], p["num_gpus"], "PACK", 1,
                            "PS shard")
        total = num_workers * w["num_cpus"] + num_ps * p["num_cpus"]
        have = sum(r.get("CPU", 0) for _, r in cluster_summary())
        if total > have + 1e-9:
            raise PlacementError(f"Cannot place {num_workers} PS workers and {num_ps} "
                                 f"PS shards: they need {total:g} CPUs. The cluster "
                                 f"has {have:g}.")

    @classmethod
    def from_tf_config(cls, tf_config=None, **kwargs):
        """The strategy a TF_CONFIG cluster describes (the lecture's dict:
        ``{"cluster": {"ps": [...], "worker": [...], "chief": [...]},
        "task": {...}}``): one shard per ``ps`` task, one worker actor per
        ``worker`` task; the driver is the chief. Addresses are not used:
        Ray places the actors. ``tf_config`` defaults to ``$TF_CONFIG``.

        Raises:
            ValueError: no TF_CONFIG, malformed JSON, no ps or worker task.
        """
        if tf_config is None:
            tf_config = os.environ.get("TF_CONFIG")
            if not tf_config:
                raise ValueError("ParameterServerStrategy.from_tf_config expects a "
                                 "TF_CONFIG dict/JSON or the TF_CONFIG environment "
                                 "variable. Received: neither.")
        num_ps, num_workers, cluster = parse_ps_tf_config(tf_config)
        strategy = cls(num_ps=num_ps, num_workers=num_workers, **kwargs)
        strategy.cluster_spec = cluster
        return strategy

    # -- lifecycle -----------------------------------------------------------------
    def _start(self, which):
        if which == "ps":
            r = self._pres
            self._ps = WorkerGroup(PSShard, self.num_ps, num_cpus=r["num_cpus"],
                                   num_gpus=r["num_gpus"], bundle_resources=r["extra"],
                                   timeout=self._timeout, poll_interval=self._poll,
                                   name="shard")
            self._entry = None
        else:
            r = self._wres
            self._workers = WorkerGroup(
                self._worker_factory, self.num_workers, num_cpus=r["num_cpus"],
                num_gpus=r["num_gpus"], bundle_resources=r["extra"],
                timeout=self._timeout, poll_interval=self._poll, name="worker")
            self._sched = WorkerGroup(PSScheduler, 1, num_cpus=0,
                                      bundle_resources=r["extra"],
                                      timeout=self._timeout, poll_interval=self._poll,
                                      name="scheduler")
            self._dead, self._entry, self._data = set(), None, None

    def close(self):
        """Shuts every actor down (a later ``run_steps`` starts them again)."""
        for g in (self._ps, self._workers, self._sched):
            if g is not None:
                g.shutdown()
        self._ps = self._workers = self._sched = self._entry = self._data = None
        self._dead = set()

    def _check_shards(self):
        dead = [s for s in range(self.num_ps) if not self._ps.is_alive(s)]
        if dead:
            raise ReplicaDiedError(f"PS shard(s) {dead} died.", dead)

    # -- shipping --------------------------------------------------------------------
    def _ship(self, step, batches):
        if self._ps is None:
            self._start("ps")
        if self._workers is None or self._dead:
            if self._workers is not None:
                log.warning("ParameterServerStrategy: re-creating the worker group "
                            "(dead workers %s).", sorted(self._dead))
                self._workers.shutdown()
                self._sched.shutdown()
            self._start("worker")
        ps, wk = self._ps, self._workers
        e = self._entry
        if e is None or e["step"] is not step:
            key = f"s{time.time_ns()}"
            plan = self._last_plan = plan_shards(step, self.num_ps,
                                                 self.variable_partitioner)
            ref = ps.put(step)
            ps.execute("load", ref, plan)
            wk.execute("load_step", key, ref)
            metric = {id(v) for v in step.metric_variables}
            other = [i for i, v in enumerate(step.variables)
                     if plan["owner"][i] is None and id(v) not in metric]
            e = self._entry = dict(step=step, key=key, plan=plan, other=other,
                                   state=step.get_state())
        else:
            now = changed_state(step, e["state"])
            if now is not None:
                ref = ps.put(now)
                ps.execute("set_state", ref)
                wk.execute("set_state", e["key"], ref)
                e["state"] = now
        data_key, self._data = ship_arrays(wk, batches, self._data)
        return e, data_key

    def _snapshot(self, step, e):
        """The chief's copy of every variable: shard-owned ones from their
        shard, per-worker state (BN statistics) from worker 0."""
        state = step.get_state()
        owner, split = e["plan"]["owner"], e["plan"].get("split", {})
        by, rows = {}, {}
        for i, s in enumerate(owner):
            if i in split:
                for s_, r0, r1 in split[i]:
                    rows.setdefault(s_, []).append((i, r0, r1))
            elif s is not None:
                by.setdefault(s, []).append(i)
        shards = sorted(by)
        refs = [self._ps.call(s, "get_state", by[s]) for s in shards]
        got = self._ps.wait(refs, timeout=self._timeout, what="snapshot", ranks=shards)
        for s, vals in zip(shards, got):
            for i, v in zip(by[s], vals):
                state[i] = np.array(v)
        if rows:  # split variables: each shard's rows
            shards = sorted(rows)
            refs = [self._ps.call(s, "get_rows", rows[s]) for s in shards]
            got = self._ps.wait(refs, timeout=self._timeout, what="snapshot",
                                ranks=shards)
            for s, vals in zip(shards, got):
                for (i, r0, r1), v in zip(rows[s], vals):
                    state[i] = np.array(state[i])
                    state[i][r0:r1] = v
        if e["other"]:
            r = min(set(range(self.num_workers)) - self._dead)
            vals = self._workers.wait(
                [self._workers.call(r, "get_state", e["key"], e["other"])],
                timeout=self._timeout, what="snapshot", ranks=[r])[0]
            for i, v in zip(e["other"], vals):
                state[i] = np.array(v)
        step.set_state(state)

    # -- running ---------------------------------------------------------------------
    def _run_call(self, step, batches):
        # Workers push metric deltas that the driver sums: additive state only.
        check_metric_merge(type(self).__name__, step, additive_only=True)
        e, data_key = self._ship(step, batches)
        out = run_call(self, e, data_key, batches)
        self._snapshot(step, e)
        for *_, d in out:
            if d and step.metric_variables:
                step.add_metric_deltas(d)
        e["state"] = step.get_state()
        return [(loss, n, outs) for loss, n, outs, _ in out]

    def _recover(self, err):
        if not isinstance(err, (ReplicaDiedError, ReplicaTimeoutError)) or len(
                [r for r in self.recoveries if r["kind"] != "worker"]) >= \
                self._max_failures:
            self.close()
            raise err
        t0 = time.monotonic()
        dead_ps = (list(range(self.num_ps)) if self._ps is None  # died starting
                   else [s for s in range(self.num_ps) if not self._ps.is_alive(s)])
        kind = "ps" if dead_ps or isinstance(err, ReplicaTimeoutError) else "all workers"
        log.warning("ParameterServerStrategy: %s; restoring %s from the chief's "
                    "snapshot at step %d and running the call again.", err,
                    "the PS shards" if kind == "ps" else "the workers",
                    self._global_step)
        if self._ps is not None:
            self._ps.shutdown()
        self._start("ps")  # shards reload the chief's step (its last snapshot)
        if kind != "ps" or isinstance(err, ReplicaTimeoutError):
            if self._workers is not None:
                self._workers.shutdown()
                self._sched.shutdown()
            self._start("worker")
        self.recoveries.append(dict(kind=kind, rank=list(getattr(err, "ranks", [])),
                                    step=self._global_step, error=str(err),
                                    seconds=time.monotonic() - t0))

    def stats(self):
        """``dict(idle_share, idle_seconds, busy_seconds, max_clock_gap,
        recoveries)`` so far (seconds summed over workers)."""
        total = self.idle_seconds + self.busy_seconds
        return dict(idle_share=self.idle_seconds / total if total else 0.0,
                    idle_seconds=self.idle_seconds, busy_seconds=self.busy_seconds,
                    max_clock_gap=self.max_clock_gap,
                    recoveries=len(self.recoveries))

    def __repr__(self):
        return (f"ParameterServerStrategy(num_ps={self.num_ps}, "
                f"num_workers={self.num_workers}, staleness={self.staleness})")
