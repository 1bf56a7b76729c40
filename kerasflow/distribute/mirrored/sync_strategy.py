"""The driver side of synchronous data parallelism on Ray actors.

``SyncReplicaStrategy`` is what ``MirroredStrategy`` and
``MultiWorkerMirroredStrategy`` share: a :class:`WorkerGroup` of
:class:`Replica` actors, the step and the training arrays shipped once (the
arrays found again by content on a later ``fit``, ``shipping.ArrayCache``),
then per ``run_steps`` call one small message (the K global batches' row
indices) and one small answer (K losses and the metric state).

The weights and optimizer slots stay on the replicas between calls, as the
workers of PyTorch DDP and Horovod keep theirs: the driver pulls them from
the replicas only when something reads them (``kerasflow/distribute/driver_state.py``:
a callback that may read the model, evaluation, prediction, the end of
``fit``) or when it changed a variable itself (a metric reset at an epoch's
start, ``set_weights``, a learning rate set by a callback), at most every
``commit_steps`` steps. Every pull is a commit (Horovod elastic's
``state.commit()``; ``StepEntry`` below): when a replica dies or a
collective times out, the group is rebuilt, gets the committed state and
random streams, replays the calls logged since the commit and runs the
failed call again -- the run equals an unkilled one, dropout included (Ray
Train's full-group restart). ``max_failures`` caps recoveries. With an
optimizer whose updates are separable per variable, the replicas shard it
(ZeRO-1, ``zero.py``).

Evaluation and prediction run in the driver process, after a pull, unless
``evaluate_on_replicas`` is True (below; off by default: on two
cores the driver was faster): then each replica takes its rows of every
global batch, as in training, with the weights it holds (nothing is pulled),
and the driver sums the losses and metric deltas (merging assigned metric
state by ``merge_state``) or concatenates the outputs in rank order; what the
replicas cannot run as one process would (a custom ``test_step``, random or
stateful inference, GPU replicas) still runs in the driver.

Input the replicas read themselves (``distribute_datasets_from_function``, a
multi-worker ``experimental_distribute_dataset``, ``kf.data.from_ray``; see
``kerasflow/distribute/input_lib.py``): each replica gets its source once
(``load_input``), and a call carries only the step count and a new-pass flag;
the replicas reduce their sample counts with the gradients (one buffer), so
the global batch is the sum of the local ones and the input ends on every
replica at the same step. After a recovery the rebuilt replicas start a new
pass over their sources (the rows of the interrupted epoch are read again).

The driver's record of one step's state on the replicas (weights that stay
on the replicas between calls).

Per driver call the replicas return only the metric state (a few numbers);
the weights and optimizer slots stay where they are updated, as each worker
keeps them in PyTorch DDP and Horovod, and the driver pulls them from rank 0
only when something reads them (``kerasflow/distribute/driver_state.py``: a callback
that may read the model, evaluation, prediction, the end of ``fit``) or when
the driver changed a variable (a metric reset, ``set_weights``, a learning
rate set by a callback) and must push it.

Every pull is a commit (Horovod elastic's ``state.commit()``): the driver's
variables then hold a consistent state, and the calls run since are logged
(their row indices: a few KB each). After a replica failure the rebuilt
group gets the committed state and replays the log before the failed call,
so at most ``commit_steps`` steps are redone and the run equals an unkilled
one (the random streams are committed too, see ``Replica.rng_state``).

Evaluation and prediction on the replicas of a ``SyncReplicaStrategy``
(the driver side).

Each global batch is split over the replicas as in training (contiguous
rows in rank order, ``shard_bounds``); every replica runs its rows with the
weights it holds (``replica.py``), so an ``evaluate`` between training
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

import logging
import time

import numpy as np

from kerasflow import backend as K
from kerasflow.distribute.actor_strategy import ActorStrategy, check_metric_merge
from kerasflow.distribute.collective.base import CollectiveError
from kerasflow.distribute.collective.netaddr import parse_port_range
from kerasflow.distribute.driver_state import mark_behind
from kerasflow.distribute.input_lib import (
    DistributedDatasetsFromFunction,
    InputOptions,
    check_dataset_fn,
)
from kerasflow.distribute.mirrored.replica import Replica, buffer_layout, random_nodes
from kerasflow.distribute.mirrored.zero import assemble, plan_zero, ranks_of
from kerasflow.distribute.runtime.errors import (
    ReplicaDiedError,
    ReplicaFailedError,
    ReplicaTimeoutError,
)
from kerasflow.distribute.runtime.ray import check_placement
from kerasflow.distribute.runtime.shipping import ArrayCache, fingerprint
from kerasflow.distribute.runtime.worker_group import WorkerGroup
from kerasflow.steps.batch import StepResult

__all__ = ['CommunicationOptions', 'EvalArrays', 'StepEntry', 'SyncReplicaStrategy']


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


log = logging.getLogger("kerasflow.distribute")


class CommunicationOptions:
    """How replicas communicate (``tf.distribute.experimental.CommunicationOptions``).

    Args:
        timeout_seconds: deadline of every collective and every wait on a
            replica, in seconds (default 300; None means the default).
        implementation: collective transport: ``"auto"`` (shared memory on
            one node, a tcp ring between nodes, both when mixed), ``"shm"``,
            ``"tcp"``, ``"hier"``; TF's ``CommunicationImplementation`` names
            ``"RING"`` (tcp) and ``"NCCL"`` are accepted.
        bytes_per_pack: accepted for compatibility; one flat buffer is always
            reduced per step.
        port_range: kerasflow's addition: ``(low, high)`` or ``"low-high"``,
            the ports the tcp ring's listeners bind in (first free one; default
            any free port). Keep it clear of Ray's ports (workers use
            10002-19999 by default) and open in the firewall between nodes.
        interface: kerasflow's addition: the network interface name (resolved
            on each replica's node, as ``NCCL_SOCKET_IFNAME``) or IP address
            the tcp listeners bind on; default the node's Ray address.
        bind_address: kerasflow's addition, for TF_CONFIG workers (one
            process per task): the address the ring's listener binds; default
            the task's own TF_CONFIG address, never the wildcard unless asked
            (``"0.0.0.0"``).
        allow_insecure: kerasflow's addition, for TF_CONFIG workers: run a
            cluster spanning hosts without the job's secret (a closed network
            only; ``kerasflow/distribute/job_secret.py``). Actors a driver
            starts always get a fresh secret.

    Raises:
        ValueError: a non-positive timeout, an unknown implementation or a
            malformed port range.
    """

    def __init__(self, bytes_per_pack=0, timeout_seconds=300.0, implementation="auto",
                 port_range=None, interface=None, bind_address=None,
                 allow_insecure=False):
        timeout_seconds = 300.0 if timeout_seconds is None else timeout_seconds
        if not isinstance(timeout_seconds, (int, float)) or timeout_seconds <= 0:
            raise ValueError(f"CommunicationOptions expects timeout_seconds > 0. "
                             f"Received: timeout_seconds={timeout_seconds!r}")
        impl = str(getattr(implementation, "value", implementation)).lower()
        impl = {"ring": "tcp", "auto": "auto"}.get(impl, impl)
        if impl not in ("auto", "shm", "tcp", "hier", "nccl"):
            raise ValueError(f"CommunicationOptions expects implementation in "
                             f"('auto', 'shm', 'tcp', 'hier', 'ring', 'nccl'). "
                             f"Received: implementation={implementation!r}")
        self.timeout_seconds = float(timeout_seconds)
        self.implementation = impl
        self.bytes_per_pack = bytes_per_pack
        self.port_range = parse_port_range(port_range)
        self.interface = None if interface is None else str(interface)
        self.bind_address = None if bind_address is None else str(bind_address)
        self.allow_insecure = bool(allow_insecure)

    def network(self):
        """``port_range`` and ``interface`` as keyword arguments for the plan."""
        return {"port_range": self.port_range, "interface": self.interface}

    @classmethod
    def check(cls, owner, options):
        """``options``, or the defaults when None.

        Raises:
            TypeError: not a ``CommunicationOptions`` (naming ``owner``).
        """
        options = cls() if options is None else options
        if not isinstance(options, cls):
            raise TypeError(f"{owner} expects communication_options to be a "
                            f"CommunicationOptions. Received: {options!r}")
        return options


class SyncReplicaStrategy(ActorStrategy):
    """N replica actors that run ``compute -> allreduce -> apply`` in lockstep.

    Subclasses call ``_setup(...)`` from ``__init__``; see MirroredStrategy.

    Attributes:
        num_replicas_in_sync: number of replicas.
        recoveries: one dict per recovery (``step``, ``error``, ``seconds``).
        comm_seconds / compute_seconds: replica 0's totals so far.
        step_work: per rank, the last (<= 4096) steps' seconds outside the
            allreduce (compute, copies, apply): a synchronous step waits for
            the slowest rank, so the spread across ranks is the stragglers'
            cost (``benchmarks/scaling_model.py --validate`` reads it).
        evaluate_on_replicas: True: evaluation and prediction steps run on
            the replicas when they can (see the module docstring); False
            (the default): in the driver process after a pull of the
            weights. On a 2-core machine the driver, BLAS on both cores, was
            the faster for an MLP (``benchmarks/bench_eval_replicas.py``:
            replicas / driver 0.88 for ``evaluate``, 0.92 for ``predict``;
            1.72 and 1.53 for a convnet); the replicas pay where they have
            cores (or nodes) of their own.
        replica_eval_calls / driver_eval_calls: ``run_steps`` calls of
            evaluation or prediction steps run on the replicas / the driver.
    """

    default_steps_per_execution = 64

    def _setup(self, num_replicas, options, *, transport, use_gpu=False,
               placement="STRICT_PACK", max_failures=3, workers_per_bundle=1,
               cpus_per_replica=1.0):
        self.num_replicas_in_sync = int(num_replicas)
        # Ray sets each actor's OMP_NUM_THREADS (BLAS, and numba's cap) from
        # its CPUs: the replicas' threads add up to the cores, never more.
        self._cpus = float(cpus_per_replica)
        self._use_gpu, self._placement = use_gpu, placement
        self._transport, self._timeout = transport, options.timeout_seconds
        self._net = options.network()
        self._max_failures, self._per_bundle = int(max_failures), workers_per_bundle
        self._group = None
        self._steps = {}   # id(step) -> StepEntry
        self._cache = ArrayCache()
        self._feeds = set()  # keys of the input sources the replicas hold
        self._coll = None  # (size, dtype) of the current collective
        self.recoveries = []
        self.comm_seconds = self.compute_seconds = 0.0
        self.step_seconds = dict(compute=0.0, apply=0.0, copies=0.0, allreduce=0.0,
                                 steps=0)
        self.step_work = [[] for _ in range(self.num_replicas_in_sync)]
        self.pulls = 0
        # Placement errors surface here; actors start on the first step.
        check_placement(self.num_replicas_in_sync, self._cpus, 1 if use_gpu else 0,
                        placement, workers_per_bundle, "replica")

    # -- group lifecycle -------------------------------------------------------------
    def _start_group(self):
        self._group = WorkerGroup(
            Replica, self.num_replicas_in_sync, args=("gpu" if self._use_gpu else "cpu",),
            num_cpus=self._cpus, num_gpus=1 if self._use_gpu else 0,
            strategy=self._placement, placement_timeout=30.0,
            timeout=self._timeout, poll_interval=min(5.0, self._timeout),
            stall_timeout=self._timeout, name="replica",
            workers_per_bundle=self._per_bundle)
        self._forget_group()
        return self._group

    def _forget_group(self):
        for entry in self._steps.values():  # reloaded (and replayed) on use
            entry.loaded = False
        self._cache.reset()
        self._coll = None
        self._feeds = set()

    def close(self):
        """Pulls the replicas' weights into the driver's model, closes the
        replicas' collectives and shuts the replica actors down (a later
        ``run_steps`` restarts them); idempotent."""
        if self._group is not None:
            try:
                self.sync_to_driver()
            except Exception as err:  # noqa: BLE001 - closing anyway
                log.warning("%s: the replicas' weights could not be pulled at "
                            "close (%s); the model keeps the last commit.",
                            type(self).__name__, err)
        self._teardown(graceful=True)
        self._steps = {}

    def _teardown(self, graceful):
        # A failed group is killed at once: its live replicas may be blocked
        # in a collective until the deadline, and dead ones free their memory.
        if self._group is not None:
            self._group.shutdown(graceful=graceful)
        self._group = None
        self._forget_group()

    @property
    def worker_group(self):
        """The live :class:`WorkerGroup` (None after ``close``)."""
        return self._group

    # -- shipping ------------------------------------------------------------------------
    def _ship(self, step, batches):
        group = self._group or self._start_group()
        self._sync_others(step)
        entry, replay = self._steps.get(id(step)), False
        if entry is None or entry.step is not step:
            key = f"s{len(self._steps)}-{time.time_ns()}"
            group.execute("load_step", key, group.put(step))
            entry = self._steps[id(step)] = StepEntry(step, key)
            entry.commit()
        elif not entry.loaded:  # a rebuilt group: the last commit, then the log
            pending = entry.changed() if entry.behind else []  # not pushed yet
            group.execute("load_step", entry.key, group.put(step))
            entry.loaded, replay = True, entry.behind
            entry.mark()
            entry.unmark(pending)  # pushed after the replay
        size = buffer_layout(step, self.num_replicas_in_sync)[0]
        want = (size, np.dtype(step.layout.dtype).name)
        if self._coll != want:
            group.setup_collective(want[0], want[1], self._transport, self._timeout,
                                   **self._net)
            self._coll = want
        arrays = self._cache.arrays if batches is None else (
            batches[0].arrays if batches[0].indices is not None else None)
        data_key = None if arrays is None else self._cache.ship(group, arrays)
        if replay:
            self._replay(entry, data_key)
        changed = entry.changed()
        if changed:  # replicas take the driver's values
            if entry.behind:  # the rest first: the commit includes the change
                self._pull(entry, skip=changed)
            values = [step.variables[i].numpy() for i in changed]
            group.execute("set_values", entry.key, changed, group.put(values))
            entry.mark(changed)
            entry.commit(entry.commit_rng)  # nothing ran since the pull
        return entry, data_key

    # -- input the replicas read ------------------------------------------------------
    reads_replica_input = True

    def _load_feed(self, feed):
        group = self._group or self._start_group()
        if feed.key not in self._feeds:
            for old in self._feeds:  # one fit's input at a time
                group.execute("drop_input", old)
            group.execute("load_input",
                          per_rank=[(feed.key, src) for src in feed.sources])
            self._feeds = {feed.key}
        return group

    def node_ids(self):
        """The Ray node id of every replica, in rank order (starts the
        replicas if they are not running)."""
        return (self._group or self._start_group()).node_ids()

    def peek_input(self, feed):
        """Starts every replica's first pass over its source and returns rank
        0's first element cut to one row (the model reads the input signature
        from it).

        Raises:
            WorkerGroupError: a replica's source failed (e.g. ``dataset_fn``
                raised or returned no dataset), naming the rank.
        """
        return self._load_feed(feed).execute("peek_input", feed.key)[0]

    def _feed_payload(self, entry, batches):
        ref = batches[0].feed
        new_pass = any(b.feed.new_pass for b in batches)
        return [(entry.key, ref.feed.key, ref.feed.convert, len(batches), new_pass,
                 self._global_step, r == 0) for r in range(self.num_replicas_in_sync)]

    # -- running -------------------------------------------------------------------------
    def _run_call(self, step, batches):
        check_metric_merge(type(self).__name__, step)
        if batches[0].feed is not None:
            self._load_feed(batches[0].feed.feed)
        entry, data_key = self._ship(step, batches)
        group = self._group
        if batches[0].feed is not None:
            self._unshard(entry)
            out = group.execute("run_input_steps",
                                per_rank=self._feed_payload(entry, batches),
                                timeout=self._timeout * len(batches))[0]
            return self._commit(step, entry, out)
        if data_key is None:
            payload = [[np.asarray(a) for a in b.arrays] for b in batches]
        else:
            payload = [np.asarray(b.indices, np.int64) for b in batches]
        # Rows by index: the weights stay on the replicas and only the metric
        # state comes back (the call is logged until the next commit).
        lazy = data_key is not None
        ret = entry.metric_idx if lazy else True
        shard = lazy and self._plan(entry) is not None
        if not shard:
            self._unshard(entry)
        ref = group.put(payload)
        per_rank = [(entry.key, data_key, ref, self._global_step, ret if r == 0 else False,
                     shard) for r in range(self.num_replicas_in_sync)]
        # Each step's collective has its own deadline and stuck replicas are
        # caught by progress pings; the call's deadline scales with K.
        outs = group.execute("run_steps", per_rank=per_rank,
                             timeout=self._timeout * len(batches))
        out = outs[0]
        self._record_work(outs)
        if not lazy:
            return self._commit(step, entry, out)
        if entry.metric_idx:
            K.assign_all([step.variables[i] for i in entry.metric_idx], out["state"],
                         "MirroredStrategy")
            entry.mark(entry.metric_idx)
        entry.sharded |= shard
        entry.record(self._global_step, payload, len(batches))
        mark_behind(self)
        self._account(out)
        if entry.logged_steps >= self.commit_steps:
            self._pull(entry)
        return zip(out["loss"], out["count"], out["output_losses"])

    def _record_work(self, outs):
        """Keeps the last steps' per-rank work seconds (``step_work``)."""
        work = self.step_work
        for r, o in enumerate(outs):
            if r < len(work):
                work[r].extend(o.get("work", ()))
                del work[r][:-4096]

    def _account(self, out):
        comp, apply, copies, comm = out["seconds"]
        self.compute_seconds += comp + apply + copies
        self.comm_seconds += comm
        sec = self.step_seconds
        sec["compute"] += comp
        sec["apply"] += apply
        sec["copies"] += copies
        sec["allreduce"] += comm
        sec["steps"] += len(out["loss"])

    def _commit(self, step, entry, out):
        state = [np.array(v) for v in out["state"]]  # writable copies
        K.assign_all(step.variables, state, "MirroredStrategy")
        entry.mark()
        entry.commit()
        self._account(out)
        return zip(out["loss"], out["count"], out["output_losses"])

    def _recover(self, err):
        recoverable = isinstance(err, (ReplicaDiedError, ReplicaTimeoutError)) or (
            isinstance(err, ReplicaFailedError)
            and isinstance(err.cause, CollectiveError))
        name = type(self).__name__
        if not recoverable or len(self.recoveries) >= self._max_failures:
            self._teardown(graceful=False)
            if recoverable:
                raise type(err)(
                    f"{name} gives up after {len(self.recoveries)} recoveries "
                    f"(max_failures={self._max_failures}): {err}", err.ranks,
                    err.cause) from err
            raise err
        t0 = time.monotonic()
        log.warning("%s: %s; rebuilding the replica group from the last commit "
                    "(step %d).", name, err, self._global_step)
        self._teardown(graceful=False)
        self._start_group()
        self.recoveries.append(dict(step=self._global_step, error=str(err),
                                    seconds=time.monotonic() - t0))

    # strategy.run(fn) traces fn and runs it on the replicas (kerasflow.distribute.custom_loop)
    runs_replica_fns = True

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """Datasets built on the replicas (tf.distribute's
        ``distribute_datasets_from_function``): ``dataset_fn(InputContext)``
        is called in each replica actor, once per input pipeline (one per
        replica: ``num_input_pipelines`` = ``num_replicas_in_sync``,
        ``input_pipeline_id`` = the rank), and each replica reads its own
        dataset. Its batches are that replica's share of the global batch
        (``input_context.get_per_replica_batch_size(global_batch_size)``);
        the global batch is their concatenation in rank order. Per driver
        call only the step count crosses the driver.

        Args:
            dataset_fn: picklable callable ``InputContext -> Dataset``.
            options: a ``kf.distribute.InputOptions`` or None.

        Returns:
            A ``DistributedDatasetsFromFunction`` to pass to ``Model.fit``
            (the replicas start when training starts).

        Raises:
            TypeError: ``dataset_fn`` is not callable; (when training starts)
                it returned no dataset, naming the replica.
        """
        check_dataset_fn(dataset_fn)
        InputOptions.check("distribute_datasets_from_function", options)
        return DistributedDatasetsFromFunction(dataset_fn, self.num_replicas_in_sync,
                                               options)

    def __repr__(self):
        return (f"{type(self).__name__}(num_replicas_in_sync="
                f"{self.num_replicas_in_sync}, transport={self._transport!r})")

    # -- evaluation and prediction on the replicas (module docstring) ----------------
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

    # -- the weights kept on the replicas: pulls (commits), pushes of the driver's
    # changes, the replay of logged calls after a recovery, the ZeRO-1 plan ------
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
        variables (a commit, see ``StepEntry`` below). Called through
        ``kerasflow.distribute.driver_state.sync_driver_state`` before callbacks that
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
