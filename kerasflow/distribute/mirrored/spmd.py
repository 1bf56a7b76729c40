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
import os

import numpy as np

from kerasflow.distribute.actor_strategy import check_batch_size
from kerasflow.distribute.cluster_resolver import ClusterSpec, load_tf_config
from kerasflow.distribute.collective.base import CollectiveError
from kerasflow.distribute.collective.tcp import TcpRing
from kerasflow.distribute.distribute_lib import DefaultStrategy, Strategy
from kerasflow.distribute.job_secret import cluster_secret
from kerasflow.distribute.mirrored.replica import Replica
from kerasflow.distribute.task_threads import share_host_cores
from kerasflow.steps.batch import StepResult

__all__ = ["SpmdStrategy", "spmd_task"]

_ROLES = ("chief", "worker")


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

    Raises:
        ValueError: no task in TF_CONFIG.
        JobSecretError: a cluster spanning hosts without the job's secret
            (``$KERASFLOW_CLUSTER_SECRET``; ``kerasflow/distribute/job_secret.py``).

    Attributes:
        num_replicas_in_sync: the cluster's chief + worker tasks.
        task_rank: this process's rank (0 = chief).
        is_chief: rank 0 (the task that should write checkpoints and logs).
        threads: this process's BLAS and numba thread counts and the cores
            they come from (``task_threads.share_host_cores``).
    """

    # strategy.run(fn): traced once, this process runs its share (kerasflow.distribute.custom_loop)
    runs_replica_fns = True

    def __init__(self, tf_config=None, timeout=None, bind_address=None,
                 allow_insecure=False):
        task = spmd_task(tf_config)
        if task is None:
            raise ValueError("SpmdStrategy expects TF_CONFIG with a 'task'. Received: "
                             "none.")
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
        self._replica = Replica(self.task_rank, self.num_replicas_in_sync)
        self._keys: dict = {}
        self._ring = None
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
        except CollectiveError as e:
            ring.close()
            raise type(e)(f"{self._task(self.task_rank)}: {e} Ranks are TF_CONFIG's "
                          f"tasks in order: {self.addresses}.") from e
        self._ring = self._replica.coll = ring

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
            out = self._replica.run_steps(key, None, [b.materialize() for b in batches],
                                          first_step=self._global_step)
        except CollectiveError as e:  # name the peers by their TF_CONFIG tasks
            self.close()
            raise type(e)(f"{self._task(self.task_rank)}: {e} Ranks are TF_CONFIG's "
                          f"tasks in order: {self.addresses}.") from e
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
        """Closes the ring (a later step reconnects)."""
        if self._ring is not None:
            self._ring.close()
        self._ring = self._replica.coll = None

    def __repr__(self):
        return (f"SpmdStrategy(task {self.task_rank} of {self.num_replicas_in_sync}, "
                f"{self.addresses[self.task_rank]})")
