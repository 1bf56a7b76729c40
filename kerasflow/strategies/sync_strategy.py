"""The driver side of synchronous data parallelism on Ray actors.

``SyncReplicaStrategy`` is what ``MirroredStrategy`` and
``MultiWorkerMirroredStrategy`` share: a :class:`WorkerGroup` of
:class:`Replica` actors, the step and the training arrays shipped once, then
per ``run_steps`` call one small message (the K global batches' row indices)
and one answer (K losses and rank 0's variables). The driver's step is set to
rank 0's variables after every call, so the driver's model is current for
callbacks, evaluation and saving, and every call is a commit point: when a
replica dies or a collective times out, the group is rebuilt, the driver's
state (the last commit) is pushed, and the failed call is run again -- at most
K = ``steps_per_execution`` steps are redone (Horovod elastic's commit/restore,
Ray Train's full-group restart). ``max_failures`` caps recoveries.

Evaluation and prediction run in the driver process (the weights there are
current after every call).

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
from kerasflow.strategies.base import ActorStrategy, changed_state, check_metric_merge
from kerasflow.strategies.errors import (
    ReplicaDiedError,
    ReplicaFailedError,
    ReplicaTimeoutError,
)
from kerasflow.strategies.replica import Replica, buffer_layout
from kerasflow.strategies.shipping import ship_arrays
from kerasflow.strategies.netaddr import parse_port_range
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


class SyncReplicaStrategy(ActorStrategy):
    """N replica actors that run ``compute -> allreduce -> apply`` in lockstep.

    Subclasses call ``_setup(...)`` from ``__init__``; see MirroredStrategy.

    Attributes:
        num_replicas_in_sync: number of replicas.
        recoveries: one dict per recovery (``step``, ``error``, ``seconds``).
        comm_seconds / compute_seconds: replica 0's totals so far.
    """

    default_steps_per_execution = 16

    def _setup(self, num_replicas, options, *, transport, use_gpu=False,
               placement="STRICT_PACK", max_failures=3, workers_per_bundle=1):
        self.num_replicas_in_sync = int(num_replicas)
        self._use_gpu, self._placement = use_gpu, placement
        self._transport, self._timeout = transport, options.timeout_seconds
        self._net = options.network()
        self._max_failures, self._per_bundle = int(max_failures), workers_per_bundle
        self._group = None
        self._steps = {}   # id(step) -> (step, key, last synced state)
        self._data = None  # (arrays list, key)
        self._feeds = set()  # keys of the input sources the replicas hold
        self._coll = None  # (size, dtype) of the current collective
        self.recoveries = []
        self.comm_seconds = self.compute_seconds = 0.0
        # Placement errors surface here; actors start on the first step.
        check_placement(self.num_replicas_in_sync, 1.0, 1 if use_gpu else 0,
                        placement, workers_per_bundle, "replica")

    # -- group lifecycle -------------------------------------------------------------
    def _start_group(self):
        self._group = WorkerGroup(
            Replica, self.num_replicas_in_sync, args=("gpu" if self._use_gpu else "cpu",),
            num_cpus=1.0, num_gpus=1 if self._use_gpu else 0,
            strategy=self._placement, placement_timeout=30.0,
            timeout=self._timeout, poll_interval=min(5.0, self._timeout),
            stall_timeout=self._timeout, name="replica",
            workers_per_bundle=self._per_bundle)
        self._steps, self._data, self._coll = {}, None, None
        self._feeds = set()
        return self._group

    def close(self):
        """Closes the replicas' collectives and shuts the replica actors down
        (a later ``run_steps`` restarts them); idempotent."""
        self._teardown(graceful=True)

    def _teardown(self, graceful):
        # A failed group is killed at once: its live replicas may be blocked
        # in a collective until the deadline, and dead ones free their memory.
        if self._group is not None:
            self._group.shutdown(graceful=graceful)
        self._group = None
        self._steps, self._data, self._coll = {}, None, None
        self._feeds = set()

    @property
    def worker_group(self):
        """The live :class:`WorkerGroup` (None after ``close``)."""
        return self._group

    # -- shipping ------------------------------------------------------------------------
    def _ship(self, step, batches):
        group = self._group or self._start_group()
        entry = self._steps.get(id(step))
        if entry is None or entry[0] is not step:
            key = f"s{len(self._steps)}-{time.time_ns()}"
            state = step.get_state()
            group.execute("load_step", key, group.put(step))
            entry = self._steps[id(step)] = [step, key, state]
        else:
            now = changed_state(step, entry[2])
            if now is not None:  # replicas take the driver's values
                group.execute("set_state", entry[1], group.put(now))
                entry[2] = now
        size = buffer_layout(step, self.num_replicas_in_sync)[0]
        want = (size, np.dtype(step.layout.dtype).name)
        if self._coll != want:
            group.setup_collective(want[0], want[1], self._transport, self._timeout,
                                   **self._net)
            self._coll = want
        data_key, self._data = ship_arrays(group, batches, self._data)
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
        return [(entry[1], ref.feed.key, ref.feed.convert, len(batches), new_pass,
                 self._global_step, r == 0) for r in range(self.num_replicas_in_sync)]

    # -- running -------------------------------------------------------------------------
    def _run_call(self, step, batches):
        check_metric_merge(type(self).__name__, step)
        if batches[0].feed is not None:
            self._load_feed(batches[0].feed.feed)
        entry, data_key = self._ship(step, batches)
        group = self._group
        if batches[0].feed is not None:
            out = group.execute("run_input_steps",
                                per_rank=self._feed_payload(entry, batches),
                                timeout=self._timeout * len(batches))[0]
            return self._commit(step, entry, out)
        if data_key is None:
            payload = [[np.asarray(a) for a in b.arrays] for b in batches]
        else:
            payload = [np.asarray(b.indices, np.int64) for b in batches]
        ref = group.put(payload)
        per_rank = [(entry[1], data_key, ref, self._global_step, r == 0)
                    for r in range(self.num_replicas_in_sync)]
        # Each step's collective has its own deadline and stuck replicas are
        # caught by progress pings; the call's deadline scales with K.
        out = group.execute("run_steps", per_rank=per_rank,
                            timeout=self._timeout * len(batches))[0]
        return self._commit(step, entry, out)

    def _commit(self, step, entry, out):
        state = [np.array(v) for v in out["state"]]  # writable copies
        step.set_state(state)
        entry[2] = state
        self.compute_seconds += out["seconds"][0]
        self.comm_seconds += out["seconds"][1]
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
