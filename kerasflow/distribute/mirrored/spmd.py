"""One OS process per worker (SPMD), the way TF, Horovod and torchrun start
jobs: every process runs the same script with its own ``TF_CONFIG``::

    TF_CONFIG='{"cluster": {"worker": ["h0:12345", "h1:12345"]},
                "task": {"type": "worker", "index": 0}}'

and ``MultiWorkerMirroredStrategy()`` there returns a :class:`SpmdStrategy`:
**this process is one replica**. Its rank is its place in the cluster's
``chief`` then ``worker`` tasks (the chief, or worker 0, is rank 0). Every
process builds its own model; ``fit`` on the same global batches (the same
seed in every process, as TF requires) has each process compute the
gradients of its contiguous share of each global batch (rank order, as the
replicas of ``MirroredStrategy`` split it), sum them with its peers, and
apply the same sum, so every process ends with the same weights, equal to
one process on the global batch (up to float rounding). Before the first
step every process takes the chief's variables (a broadcast, as TF's
collective strategies do), so the processes need not seed alike for the
weights (they must for the data order).

Rendezvous: the processes find each other through the TF_CONFIG addresses
themselves. Each task's gradient ring listens on its own TF_CONFIG
``host:port`` (open those ports between the hosts, as TF's gRPC servers
needed) and connects to the next task's; the handshake carries a digest of
the cluster, so a process of another job is refused. No Ray is started.
Every wait has the deadline of ``CommunicationOptions.timeout_seconds``
(default ``$KERASFLOW_CLUSTER_TIMEOUT`` or 60 s) and an error naming the task
that did not come; a peer that dies mid-step ends the others' steps with an
error naming it.

Tasks all on one host (loopback addresses, or this host's own names): the
gradient sums go through shared memory instead
(:class:`~kerasflow.distribute.collective.shm.ShmAllreduce`: futex waits,
slots summed in rank order, so the sums equal the ring's bit for bit with two
tasks and within rounding with more), while the TCP ring still does
everything else: the authenticated handshake, the chief's initial variables,
and the segment's name, which the chief draws at random (96 bits) and sends
over the ring, so only processes that proved the job's secret learn it. The
segment is created mode 0600 and its name unlinked once every task has
attached. The tasks first agree over the ring that every one of them sees all
tasks local and the same host (kernel boot id and ``/dev/shm`` mount), else
all use the ring. ``CommunicationOptions(implementation="ring")`` (TF's
``CommunicationImplementation.RING``) or ``$KERASFLOW_COLLECTIVE=tcp`` keeps
the sums on the ring; ``"shm"`` insists on shared memory. While the ring
idles, it watches the neighbours' connections (``TcpRing.watch``), so a peer
that dies still ends the others' steps at once, naming it. Measured on 2
busy cores: an 11 MB sum (the tutorial convnet's gradients) between two
processes takes 2.1-2.5 ms in shared memory against 7-16 ms over the
loopback ring, and the tutorial's two workers went from 0.93x to 1.02x one
process's samples/s (``benchmarks/bench_tutorial_multi_worker.py``).

Several tasks on one host: each process takes its share of the cores for its
BLAS and numba threads (cores // the cluster's tasks on this host, as Ray does
for its actors; ``distribute/task_threads.py``), logged once at INFO on
``kerasflow.distribute``; ``OMP_NUM_THREADS`` and the other thread variables
the user set win. Without it their thread pools oversubscribe the cores
(2 processes on 2 cores: 1,700 samples/s instead of 15,700 for the MNIST MLP,
``benchmarks/bench_spmd.py``).

Design after TF's ``CollectiveAllReduceStrategy`` launched per worker with
TF_CONFIG, and Horovod's one-process-per-rank ring allreduce.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import secrets
import socket
import threading

import numpy as np

from kerasflow.distribute.actor_strategy import check_batch_size
from kerasflow.distribute.cluster_resolver import (
    ClusterSpec,
    load_tf_config,
    local_tasks,
)
from kerasflow.distribute.collective.base import CollectiveError, CollectivePeerError
from kerasflow.distribute.collective.shm import ShmAllreduce
from kerasflow.distribute.collective.tcp import TcpRing
from kerasflow.distribute.distribute_lib import DefaultStrategy, Strategy
from kerasflow.distribute.job_secret import cluster_secret
from kerasflow.distribute.mirrored.replica import Replica, buffer_layout
from kerasflow.distribute.task_threads import share_host_cores
from kerasflow.steps.batch import StepResult

__all__ = ["ENV_COLLECTIVE", "SpmdStrategy", "spmd_task"]

ENV_COLLECTIVE = "KERASFLOW_COLLECTIVE"
_ROLES = ("chief", "worker")
# CommunicationOptions' names -> what a TF_CONFIG task can do: CPU processes
# have no NCCL, and with one process per task "hier" is shm or the ring.
_IMPLEMENTATIONS = {"auto": "auto", "shm": "shm", "tcp": "tcp", "ring": "tcp",
                    "hier": "auto", "nccl": "auto"}
_NAME = re.compile(r"kf-[0-9a-f]{24}")
_NAME_BYTES = 32
log = logging.getLogger("kerasflow.distribute")


def spmd_task(tf_config=None):
    """``(addresses in rank order, rank, cluster dict)`` when ``TF_CONFIG``
    names this process's task (SPMD mode), else None.

    Raises:
        ValueError: TF_CONFIG that is not JSON, lists no chief/worker task,
            or whose task type or index is not in its cluster (naming what
            it has).
    """
    raw = os.environ.get("TF_CONFIG") if tf_config is None else tf_config
    if not raw:
        return None
    conf = load_tf_config(raw)
    task = conf.get("task")
    if not task:
        return None
    cluster = ClusterSpec(conf.get("cluster") or {})
    jobs = [j for j in _ROLES if j in cluster.jobs]
    if not jobs:
        raise ValueError(f"MultiWorkerMirroredStrategy expects TF_CONFIG's cluster to "
                         f"list 'chief' or 'worker' tasks. Received: jobs {cluster.jobs}")
    kind, index = task.get("type"), task.get("index", 0)
    if kind not in jobs:
        raise ValueError(f"MultiWorkerMirroredStrategy expects TF_CONFIG's task type "
                         f"to be one of {jobs}. Received: type={kind!r}")
    cluster.task_address(kind, index)  # checks the index, naming the job's tasks
    order = [(j, i) for j in jobs for i in cluster.task_indices(j)]
    addresses = [cluster.task_address(j, i) for j, i in order]
    return addresses, order.index((kind, int(index))), cluster.as_dict()


def _implementation(value) -> str:
    """``value`` (a CommunicationOptions name, a ``CommunicationImplementation``
    or None) as ``"auto"``, ``"shm"`` or ``"tcp"``; ``"auto"`` yields to
    ``$KERASFLOW_COLLECTIVE``."""
    name = str(getattr(value, "value", value) or "auto").lower()
    source = f"implementation={value!r}"
    if name == "auto" and os.environ.get(ENV_COLLECTIVE):
        name = os.environ[ENV_COLLECTIVE].strip().lower()
        source = f"${ENV_COLLECTIVE}={os.environ[ENV_COLLECTIVE]!r}"
    if name not in _IMPLEMENTATIONS:
        raise ValueError(f"SpmdStrategy expects implementation in "
                         f"{tuple(_IMPLEMENTATIONS)}. Received: {source}")
    return _IMPLEMENTATIONS[name]


def _host_key() -> int:
    """This host's shared-memory namespace as a number below 2**56: tasks
    agree on the shared-memory path only when theirs match (host name, kernel
    boot id and the ``/dev/shm`` mount: containers with their own /dev/shm,
    or hosts reached through forwarded loopback ports, differ)."""
    parts = [socket.gethostname()]
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            parts.append(f.read().strip())
    except OSError:
        pass
    try:
        info = os.stat("/dev/shm")
        parts.append(f"{info.st_dev}:{info.st_ino}")
    except OSError:
        pass
    digest = hashlib.sha256("\0".join(parts).encode()).digest()
    return int.from_bytes(digest[:7], "little")


def _shm_room():
    """Bytes free in ``/dev/shm``, or None where POSIX shared memory is not a
    file system there (macOS)."""
    try:
        info = os.statvfs("/dev/shm")
    except (OSError, AttributeError):
        return None
    return info.f_bavail * info.f_frsize


class SpmdStrategy(Strategy):
    """This process as one replica of a TF_CONFIG job (see the module
    docstring); what ``MultiWorkerMirroredStrategy()`` returns when
    ``TF_CONFIG`` names a task.

    Args:
        tf_config: the TF_CONFIG JSON (default: the environment's).
        timeout: deadline of every wait, in seconds.
        bind_address: the address the ring's listener binds (default this
            task's TF_CONFIG address).
        allow_insecure: a cluster spanning hosts may run without the job's
            secret (closed networks only).
        implementation: what sums the gradients: ``"auto"`` (shared memory
            when every task is on this host, else the TCP ring; default,
            overridden by ``$KERASFLOW_COLLECTIVE``), ``"tcp"`` / ``"ring"``
            (TF's ``CommunicationImplementation.RING``: always the ring), or
            ``"shm"`` (shared memory, an error otherwise); ``"hier"`` and
            ``"nccl"`` act as ``"auto"`` (CPU processes, one per task).

    Raises:
        ValueError: no task in TF_CONFIG; an unknown ``implementation``;
            ``"shm"`` with a task on another host (naming it).
        JobSecretError: a cluster spanning hosts without the job's secret
            (``$KERASFLOW_CLUSTER_SECRET``; ``kerasflow/distribute/job_secret.py``).

    Attributes:
        num_replicas_in_sync: the cluster's chief + worker tasks.
        task_rank: this process's rank (0 = chief).
        is_chief: rank 0 (the task that should write checkpoints and logs).
        threads: this process's BLAS and numba thread counts and the cores
            they come from (``task_threads.share_host_cores``).
        implementation: the transport asked for (``"auto"``, ``"shm"`` or
            ``"tcp"``).
        transport: what sums the gradients once the tasks have met:
            ``"shm"``, ``"tcp"`` or ``"local"`` (one task); None before.

    Example:
        >>> # TF_CONFIG names two tasks on 127.0.0.1, in each process:
        >>> strategy = kf.distribute.MultiWorkerMirroredStrategy(
        ...     communication_options=kf.distribute.experimental.
        ...     CommunicationOptions(implementation="ring"))  # force the ring
        >>> model.fit(...); strategy.transport
        'tcp'
    """

    # strategy.run(fn): traced once, this process runs its share (kerasflow.distribute.custom_loop)
    runs_replica_fns = True

    def __init__(self, tf_config=None, timeout=None, bind_address=None,
                 allow_insecure=False, implementation="auto"):
        task = spmd_task(tf_config)
        if task is None:
            raise ValueError("SpmdStrategy expects TF_CONFIG with a 'task'. Received: "
                             "none.")
        self.implementation = _implementation(implementation)
        self.addresses, self.task_rank, self.cluster = task
        self.num_replicas_in_sync = len(self.addresses)
        self.is_chief = self.task_rank == 0
        self.timeout = float(timeout if timeout is not None else
                             os.environ.get("KERASFLOW_CLUSTER_TIMEOUT", "60"))
        self.token = hashlib.sha256(json.dumps(self.cluster, sort_keys=True)
                                    .encode()).hexdigest()
        self._bind = bind_address
        self._secret = cluster_secret([a.rsplit(":", 1)[0] for a in self.addresses],
                                      "TF_CONFIG cluster", allow_insecure)
        self.threads = share_host_cores(self.addresses, self._task(self.task_rank))
        self._all_local = self.threads["local_tasks"] == self.num_replicas_in_sync
        if self.implementation == "shm" and not self._all_local:
            remote = [a for a in self.addresses if local_tasks([a]) == 0]
            raise ValueError(
                f"SpmdStrategy(implementation='shm') expects every TF_CONFIG task "
                f"on this host. Received: tasks {remote} elsewhere; use 'auto' or "
                f"'ring' for a cluster spanning hosts.")
        self.transport = None
        self._replica = Replica(self.task_rank, self.num_replicas_in_sync)
        self._keys: dict = {}
        self._ring = None
        self._shm = None
        self._lost = None  # the watcher's message once a neighbour is gone
        self._lock = threading.Lock()  # self._shm between steps and the watcher
        self._global_step = 0

    def _task(self, rank):
        return f"TF_CONFIG task {rank} ({self.addresses[rank]})"

    def _connect(self):
        if self._ring is not None:
            return
        host, port = self.addresses[self.task_rank].rsplit(":", 1)
        try:
            ring = TcpRing(self.task_rank, self.num_replicas_in_sync,
                           host=self._bind or host, timeout=self.timeout,
                           token=self.token, port=int(port), secret=self._secret)
        except OSError as e:
            raise ValueError(
                f"{self._task(self.task_rank)} cannot listen on its address: expected "
                f"the port free for this task alone. Received: {e} (is another "
                f"process running this task?)") from e
        peers = [tuple(a.rsplit(":", 1)) for a in self.addresses]
        try:
            ring.connect([(h, int(p)) for h, p in peers])
            transport, why = self._agree_transport(ring)
        except CollectiveError as e:
            ring.close()
            raise type(e)(f"{self._task(self.task_rank)}: {e} Ranks are TF_CONFIG's "
                          f"tasks in order: {self.addresses}.") from e
        except ValueError:
            ring.close()
            raise
        self._lost = None
        self._ring = self._replica.coll = ring
        self.transport = transport
        if transport == "shm":
            ring.watch(self._peer_lost)
        log.info("%s: gradients summed %s (%s).", self._task(self.task_rank),
                 "in shared memory, the TCP ring carrying the handshake and "
                 "broadcasts" if transport == "shm" else "over the TCP ring", why)

    def _agree_transport(self, ring):
        """``(transport, reason)`` the tasks agree on over the connected ring:
        ``"shm"`` only when every task wants it (all tasks local, not forced
        to tcp) and all see the same host key; one MIN allreduce of
        ``[wants, key, -key]``.

        Raises:
            ValueError: ``implementation="shm"`` and the tasks did not agree.
            CollectiveError: a peer did not answer.
        """
        n = self.num_replicas_in_sync
        if n == 1:
            return "local", "one task"
        wants = self.implementation != "tcp" and self._all_local
        key = _host_key()
        flags = np.array([int(wants), key, -key], np.int64)
        ring.allreduce(flags, "MIN", step=-1)
        if flags[0] == 1 and flags[1] == -flags[2]:
            return "shm", f"all {n} tasks on this host"
        if self.implementation == "tcp":
            why = "implementation 'tcp' asked for"
        elif not self._all_local:
            why = "tasks on other hosts"
        elif flags[0] != 1:
            why = "a task that sees remote tasks or was asked for tcp"
        else:
            why = "tasks on other hosts or in other /dev/shm namespaces"
        if self.implementation == "shm":
            raise ValueError(f"{self._task(self.task_rank)} expects every task to "
                             f"share this host's memory (implementation='shm'). "
                             f"Received: {why}.")
        return "tcp", why

    def _peer_lost(self, peer, message):
        """The ring's watcher: a neighbour is gone; the shared-memory sums
        waiting on it stop at once (``ShmAllreduce.abort``)."""
        with self._lock:
            self._lost = message
            if self._shm is not None:
                self._shm.abort()

    def _collective(self, step):
        """What sums ``step``'s buffer: the ring, or a shared-memory segment
        sized for the buffer (a new one, its name agreed over the ring, when
        the segment held is sized for another step).

        Raises:
            CollectivePeerError: a neighbour is gone.
            CollectiveError: a peer did not receive the name or attach.
        """
        if self.transport != "shm":
            return self._ring
        if self._lost:
            raise CollectivePeerError(self._lost)
        size = buffer_layout(step, self.num_replicas_in_sync)[0]
        dtype = np.dtype(step.layout.dtype)
        held = self._shm
        if held is not None and (held.size, held.dtype) == (size, dtype):
            return held
        self._close_shm()
        name = self._agree_name(
            ShmAllreduce.segment_bytes(self.num_replicas_in_sync, size, dtype))
        if name is None:  # no room in the chief's /dev/shm: the ring for good
            self.transport = "tcp"
            return self._ring
        shm = ShmAllreduce(name, self.task_rank, self.num_replicas_in_sync,
                           size, dtype, timeout=self.timeout, global_rank=self.task_rank)
        with self._lock:
            self._shm = shm
            if self._lost:
                shm.abort()
        return shm

    def _agree_name(self, nbytes):
        """The name of a segment of ``nbytes``: the chief draws 96 random bits
        and sends them over the authenticated ring, so no process that did
        not prove the job's secret can learn the name (none derived from
        public data); None (an empty name, sent alike) when the chief's
        ``/dev/shm`` has no room for the segment (logged).

        Raises:
            CollectiveError: the chief sent no well-formed name.
        """
        buf = np.zeros(_NAME_BYTES, np.uint8)
        room = _shm_room() if self.task_rank == 0 else None
        if self.task_rank == 0 and (room is None or room >= nbytes):
            name = "kf-" + secrets.token_hex(12)
            buf[:len(name)] = np.frombuffer(name.encode(), np.uint8)
        self._ring.broadcast(buf, 0, step=-1)
        name = bytes(buf).rstrip(b"\0").decode("ascii", "replace")
        if not name:
            log.warning(
                "%s: the gradients' shared-memory segment needs %.1f MiB and "
                "/dev/shm %s: summing over the TCP ring instead (give /dev/shm "
                "more room, e.g. docker run --shm-size=1g).",
                self._task(self.task_rank), nbytes / 2 ** 20,
                f"has {room / 2 ** 20:.1f} MiB free" if room is not None
                else "of the chief has less free")
            return None
        if not _NAME.fullmatch(name):
            raise CollectiveError(f"Rank {self.task_rank} expected a shared-memory "
                                  f"name like 'kf-<24 hex digits>' from rank 0. "
                                  f"Received: {name!r:.60}")
        return name

    def _close_shm(self):
        with self._lock:
            shm, self._shm = self._shm, None
        if shm is None:
            return
        # The replica's buffers that are views of the segment go with it.
        for key in [k for k, b in self._replica.buffers.items() if b[3] is shm]:
            del self._replica.buffers[key]
        shm.close()

    def run_steps(self, step, batches) -> list:
        """Trains on each global batch: this process's share, gradients summed
        with the peers', the same update applied everywhere.

        Raises:
            ValueError: a global batch smaller than the number of tasks.
            CollectiveError: a peer did not come or died (naming its rank).
        """
        if not batches:
            return []
        if step.kind != "train":
            return DefaultStrategy().run_steps(step, batches)
        check_batch_size(self, batches, "tasks")
        self._connect()
        key = self._keys.get(id(step))
        if key is None:
            key = self._keys[id(step)] = f"s{len(self._keys)}"
            self._replica.load_step(key, step)
            self._broadcast_state(step)
        try:
            self._replica.coll = self._collective(step)
            out = self._replica.run_steps(key, None, [b.materialize() for b in batches],
                                          first_step=self._global_step)
        except CollectiveError as e:  # name the peers by their TF_CONFIG tasks
            lost = self._lost  # a dead neighbour, not the abort it caused
            self.close()
            raise type(e)(f"{self._task(self.task_rank)}: {lost or e} Ranks are "
                          f"TF_CONFIG's tasks in order: {self.addresses}.") from e
        self._global_step += len(out["loss"])
        return [StepResult(loss, count, None, [], outs) for loss, count, outs in
                zip(out["loss"], out["count"], out["output_losses"])]

    def _broadcast_state(self, step):
        """Every process starts from the chief's variables (weights, optimizer
        and metric state), as TF's collective strategies broadcast initial
        values: processes that initialized differently still train as one."""
        values = []
        for i, v in enumerate(step.get_state()):
            buf = np.ascontiguousarray(v).reshape(-1).copy()
            try:
                self._ring.broadcast(buf, 0, step=-1)
            except CollectiveError as e:
                self.close()
                raise type(e)(f"{self._task(self.task_rank)}: {e} (broadcasting the "
                              f"chief's initial variables)") from e
            values.append(buf.reshape(np.shape(v)))
        step.set_state(values)

    def close(self):
        """Closes the ring and the shared memory (a later step reconnects)."""
        if self._ring is not None:
            self._ring.close()  # its watcher first: no abort after this
        self._close_shm()
        self._ring = self._replica.coll = None

    def __repr__(self):
        return (f"SpmdStrategy(task {self.task_rank} of {self.num_replicas_in_sync}, "
                f"{self.addresses[self.task_rank]})")
