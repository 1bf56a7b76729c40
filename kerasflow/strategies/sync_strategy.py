"""The driver side of synchronous data parallelism on Ray actors.

``SyncReplicaStrategy`` is what ``MirroredStrategy`` and
``MultiWorkerMirroredStrategy`` share: a :class:`WorkerGroup` of
:class:`Replica` actors, the step and the training arrays shipped once (the
arrays found again by content on a later ``fit``, ``shipping.ArrayCache``),
then per ``run_steps`` call one small message (the K global batches' row
indices) and one small answer (K losses and the metric state).

The weights and optimizer slots stay on the replicas between calls, as the
workers of PyTorch DDP and Horovod keep theirs: the driver pulls them from
the replicas only when something reads them (``kerasflow/driver_state.py``:
a callback that may read the model, evaluation, prediction, the end of
``fit``) or when it changed a variable itself (a metric reset at an epoch's
start, ``set_weights``, a learning rate set by a callback), at most every
``commit_steps`` steps. Every pull is a commit (Horovod elastic's
``state.commit()``; ``replica_state.py``): when a replica dies or a
collective times out, the group is rebuilt, gets the committed state and
random streams, replays the calls logged since the commit and runs the
failed call again -- the run equals an unkilled one, dropout included (Ray
Train's full-group restart). ``max_failures`` caps recoveries. With an
optimizer whose updates are separable per variable, the replicas shard it
(ZeRO-1, ``zero.py``).

Evaluation and prediction run in the driver process, after a pull, unless
``evaluate_on_replicas`` is True (``sync_eval.py``; off by default: on two
cores the driver was faster): then each replica takes its rows of every
global batch, as in training, with the weights it holds (nothing is pulled),
and the driver sums the losses and metric deltas (merging assigned metric
state by ``merge_state``) or concatenates the outputs in rank order; what the
replicas cannot run as one process would (a custom ``test_step``, random or
stateful inference, GPU replicas) still runs in the driver.

Input the replicas read themselves (``distribute_datasets_from_function``, a
multi-worker ``experimental_distribute_dataset``, ``kf.data.from_ray``; see
``kerasflow/distribute_input.py``): each replica gets its source once
(``load_input``), and a call carries only the step count and a new-pass flag;
the replicas reduce their sample counts with the gradients (one buffer), so
the global batch is the sum of the local ones and the input ends on every
replica at the same step. After a recovery the rebuilt replicas start a new
pass over their sources (the rows of the interrupted epoch are read again).
"""

from __future__ import annotations

import logging
import time

import numpy as np

from kerasflow.distribute_input import DistributedDatasetsFromFunction, InputOptions
from kerasflow.distribute_lib import check_dataset_fn
from kerasflow import backend as K
from kerasflow.driver_state import mark_behind
from kerasflow.strategies.base import ActorStrategy, check_metric_merge
from kerasflow.strategies.errors import (
    ReplicaDiedError,
    ReplicaFailedError,
    ReplicaTimeoutError,
)
from kerasflow.strategies.replica import Replica, buffer_layout
from kerasflow.strategies.netaddr import parse_port_range
from kerasflow.strategies.replica_state import ReplicaStateMixin, StepEntry
from kerasflow.strategies.shipping import ArrayCache
from kerasflow.strategies.sync_eval import SyncEvalMixin
from kerasflow.strategies.transport import CollectiveError
from kerasflow.strategies.worker_group import WorkerGroup, check_placement

__all__ = ["CommunicationOptions", "SyncReplicaStrategy"]

log = logging.getLogger("kerasflow.strategies")


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

    Raises:
        ValueError: a non-positive timeout, an unknown implementation or a
            malformed port range.
    """

    def __init__(self, bytes_per_pack=0, timeout_seconds=300.0, implementation="auto",
                 port_range=None, interface=None):
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


class SyncReplicaStrategy(SyncEvalMixin, ReplicaStateMixin, ActorStrategy):
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

    # strategy.run(fn) traces fn and runs it on the replicas (kerasflow.replica_fn)
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
