"""TF1 between-graph clusters on Ray: ``tf.train.Server`` and the ps client.

The rendezvous (TF 1.x distributed runtime: every task runs the same
program with ``--job_name/--task_index`` and a ``ClusterSpec``):

* The **head task** is ``/job:ps/task:0`` (or ``chief``/``worker`` task 0 in
  a cluster without ps). Its process starts a Ray head whose GCS listens on
  that task's ClusterSpec port (``ray start --head --port=PORT
  --node-ip-address=HOST --block`` as a child process in its own process
  group, stopped by that group when the Server stops).
* Every other task waits (bounded) until that address accepts connections
  and joins with ``ray.init(address=HOST:PORT)``; a task on another host
  first joins its host to the cluster (``ray start --address=HOST:PORT
  --block``, its own child, stopped with it). With ``RAY_ADDRESS`` set,
  every task joins that cluster instead and nothing is started.
* Each ps task hosts its variables in the named actor ``"ps:<k>"``
  (``ps_task.PSTask``, pinned to its node, owned by its process) in the
  namespace ``"kerasflow-<hash of the ClusterSpec>"``; workers find them by
  name (bounded).

Ports to open between hosts: the head task's ClusterSpec port (Ray's GCS),
and Ray's own node ports on every host (object manager, node manager and
the worker port range, 10002-19999 by default; fix them with Ray's
``ray start`` options if a firewall needs a list). Every other task binds
its own ClusterSpec port for its lifetime (no traffic: it only makes a
second process claiming the same task fail, as TF's gRPC server did), so
those ports must be free on their hosts but need not be open.

Only the job's tasks can join: every task derives the cluster's Ray token
from the job's secret (``$KERASFLOW_CLUSTER_SECRET``; on one host a per-user
secret file; ``kerasflow/distribute/job_secret.py``) and the head starts Ray
with token authentication, listening on loopback when every task is local.

Every wait has a deadline (``timeout`` seconds, default
``$KERASFLOW_CLUSTER_TIMEOUT`` or 60) and an error naming the task that did
not come. No ray import here: Ray is reached through ``worker_group``.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import signal
import tempfile
import threading
import time

from kerasflow.distribute.cluster_resolver import ClusterSpec, is_local
from kerasflow.distribute.job_secret import cluster_secret, is_loopback, ray_token
from kerasflow.distribute.runtime import ray as wg
from kerasflow.distribute.task_threads import share_host_cores
from kerasflow.distribute.tf1.ps_task import PSTask
from kerasflow.distribute.tf1.ray_process import (
    RayProcess,
    claim_port,
    descendants,
    free_ports,
    split_address,
    wait_for_port,
)

__all__ = ["Server", "server_for_target", "PSClient", "descendants"]

_SERVERS: dict = {}  # target -> Server of this process


def server_for_target(target):
    """The running ``Server`` of this process whose ``target`` is ``target``.

    Raises:
        ValueError: none (naming the targets there are).
    """
    server = _SERVERS.get(target)
    if server is None:
        raise ValueError(f"tf.Session(target=...) expects the server.target of a "
                         f"tf.train.Server running in this process: one of "
                         f"{sorted(_SERVERS)}. Received: target={target!r}")
    return server


def _default_timeout():
    return float(os.environ.get("KERASFLOW_CLUSTER_TIMEOUT", "60"))


class Server:
    """TF1's ``tf.train.Server``: this process's task of a cluster.

    Args:
        server_or_cluster_def: a ``ClusterSpec``, or a dict / TF_CONFIG it
            accepts.
        job_name: this task's job (may be omitted when the cluster has one
            job). task_index: its index (default 0).
        protocol, config: accepted for TF1 programs (Ray carries the traffic).
        start: start at once (default True).
        timeout: seconds each rendezvous wait may take (default
            ``$KERASFLOW_CLUSTER_TIMEOUT`` or 60).
        allow_insecure: a cluster spanning hosts may run without the job's
            secret (and Ray without authentication): closed networks only.

    Attributes:
        target: ``"grpc://host:port"``, for ``tf.Session(server.target)``.
        cluster, job_name, task_index, namespace, ray_address.
        threads: this process's BLAS and numba thread counts: its share of
            the host's cores (cores // the cluster's tasks on this host, at
            least 1; ``distribute/task_threads.py``), the thread variables
            the user set winning.

    Raises:
        ValueError: a job name or task index not in the ClusterSpec (naming
            the expected ones), or the task already served by another process.
        TimeoutError: the head task did not come within ``timeout``.
        JobSecretError: a cluster spanning hosts without the job's secret
            (``$KERASFLOW_CLUSTER_SECRET``; ``kerasflow/distribute/job_secret.py``).
    """

    def __init__(self, server_or_cluster_def, job_name=None, task_index=None,
                 protocol=None, config=None, start=True, timeout=None,
                 allow_insecure=False):
        self.cluster = cluster = ClusterSpec(server_or_cluster_def)
        if job_name is None:
            if len(cluster.jobs) != 1:
                raise ValueError(f"tf.train.Server expects a job_name: one of "
                                 f"{cluster.jobs}. Received: job_name=None")
            job_name = cluster.jobs[0]
        task_index = 0 if task_index is None else task_index
        self.address = cluster.task_address(job_name, task_index)
        self.job_name, self.task_index = job_name, int(task_index)
        self.task = f"/job:{job_name}/task:{task_index}"
        self.target = f"grpc://{self.address}"
        self.timeout = _default_timeout() if timeout is None else float(timeout)
        digest = hashlib.sha1(json.dumps(cluster.as_dict(), sort_keys=True,
                                         default=str).encode()).hexdigest()
        self.namespace = f"kerasflow-{digest[:12]}"
        head_job = next(j for j in ("ps", "chief", "worker") if j in cluster.jobs)
        self.head_task = (head_job, cluster.task_indices(head_job)[0])
        self.head_address = cluster.task_address(*self.head_task)
        self.ray_address = None
        self._ray, self._actor, self._stopped = None, None, True
        self._claim = None
        self._allow_insecure = bool(allow_insecure)
        self.threads = share_host_cores(
            [cluster.task_address(j, i) for j in cluster.jobs
             for i in cluster.task_indices(j)], self.task)
        if start:
            self.start()

    @property
    def num_ps(self):
        return self.cluster.num_tasks("ps") if "ps" in self.cluster.jobs else 0

    def start(self):
        """Joins (or, for the head task, starts) the Ray cluster; a ps task
        then starts its variables' actor."""
        if not self._stopped:
            return
        deadline = time.monotonic() + self.timeout
        address = os.environ.get("RAY_ADDRESS")
        head = "/job:{}/task:{}".format(*self.head_task)
        is_head = not address and (self.job_name, self.task_index) == self.head_task
        self._claim = claim_port(self.address, self.task, keep=not is_head)
        if not address:
            self._secure_ray()
        try:
            address = self._rendezvous(address, deadline, head)
        except BaseException:
            if self._ray is not None:
                self._ray.stop()
                self._ray = None
            self._release()
            raise
        self.ray_address = address
        self._stopped = False
        _SERVERS[self.target] = self
        atexit.register(self.stop)
        try:
            self._connect(address, deadline, head)
            if self.job_name == "ps":
                self._start_ps(deadline)
        except BaseException:
            self.stop()
            raise

    def _secure_ray(self):
        """Ray's token for this cluster, derived from the job's secret that
        every task holds, so only the job's tasks can join its Ray (a stranger
        who knows the ClusterSpec cannot)."""
        hosts = [split_address(self.cluster.task_address(j, i))[0]
                 for j in self.cluster.jobs for i in self.cluster.task_indices(j)]
        secret = cluster_secret(hosts, "TF1 cluster", self._allow_insecure)
        if secret is None:  # allowed insecure: Ray without authentication
            os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        wg.secure_ray_env(token=None if secret is None else ray_token(secret),
                          local=all(is_loopback(h) for h in hosts))

    def _rendezvous(self, address, deadline, head):
        """The Ray address to join; starts the head (or this host's node)."""
        if not address:
            host, port = split_address(self.head_address)
            if (self.job_name, self.task_index) == self.head_task:
                temp = tempfile.mkdtemp(prefix="kf-tf1-")
                dash, agent = free_ports(2)
                self._ray = RayProcess([
                    "--head", f"--port={port}", f"--node-ip-address={host}",
                    "--include-dashboard=false", f"--temp-dir={temp}",
                    f"--dashboard-port={dash}",
                    f"--dashboard-agent-listen-port={agent}",
                    "--object-store-memory=" + os.environ.get(
                        "KERASFLOW_OBJECT_STORE_BYTES", str(512 << 20))], temp)
            wait_for_port(self.head_address, deadline, head, self._ray)
            if self._ray is None and not is_local(split_address(self.address)[0]):
                (agent,) = free_ports(1)
                self._ray = RayProcess([f"--address={self.head_address}",
                                         f"--dashboard-agent-listen-port={agent}"],
                                        tempfile.mkdtemp(prefix="kf-tf1-"))
            address = self.head_address
        return address

    def _connect(self, address, deadline, head):
        done, err = threading.Event(), []

        def connect():
            try:
                wg.init_ray(address=address, namespace=self.namespace)
            except BaseException as e:  # reported to the waiting thread
                err.append(e)
            done.set()

        threading.Thread(target=connect, daemon=True).start()
        if not done.wait(max(0.0, deadline - time.monotonic())):
            raise TimeoutError(f"{self.task} could not join the Ray cluster of "
                               f"{head} at {address} within {self.timeout:g} s.")
        if err:
            raise err[0]

    def _start_ps(self, deadline):
        name = f"ps:{self.task_index}"
        if wg.find_named_actor(name, self.namespace) is not None:
            raise ValueError(f"{self.task} is already served by another process: "
                             f"expected each task of the ClusterSpec to be started "
                             f"once. Received a second {self.task}.")
        self._actor = wg.create_named_actor(PSTask, name, self.namespace,
                                            (self.task_index, self.num_ps))
        wg.get_all([wg.remote_call(self._actor, "ping")],
                   deadline - time.monotonic(), [self.task])

    def join(self):
        """Serves until SIGTERM or SIGINT (TF1's ps loop), then stops: the
        variables' actor, this process's Ray connection and any Ray processes
        this Server started."""
        stop = threading.Event()
        handler = lambda *_: stop.set()  # noqa: E731
        old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            while not stop.wait(0.5):
                if self._ray is not None and not self._ray.alive():
                    raise RuntimeError(f"{self.task}: the Ray processes it started "
                                       f"exited (see {self._ray.temp_dir}).")
        finally:
            for s, h in old.items():
                signal.signal(s, h)
            self.stop()

    def stop(self):
        """Stops what this Server started; idempotent."""
        if self._stopped:
            return
        self._stopped = True
        _SERVERS.pop(self.target, None)
        if self._actor is not None:
            wg.kill_actor(self._actor)
            self._actor = None
        wg.disconnect_ray()
        if self._ray is not None:
            self._ray.stop()
            self._ray = None
        self._release()

    def _release(self):
        if self._claim is not None:
            self._claim.close()
            self._claim = None

    def ps_client(self):
        """A :class:`PSClient` for this cluster's ps tasks (bounded wait)."""
        return PSClient(self)


class PSClient:
    """A worker's handles on the ps tasks' actors: one concurrent call per
    ps task, each with a deadline (TF1's worker -> ps RPCs).

    Raises:
        TimeoutError: a ps task's actor did not appear within the server's
            timeout (naming the task).
    """

    def __init__(self, server):
        self.timeout = server.timeout
        self.names = [f"/job:ps/task:{k}" for k in range(server.num_ps)]
        self.actors = []
        deadline = time.monotonic() + server.timeout
        for k, who in enumerate(self.names):
            while (handle := wg.find_named_actor(f"ps:{k}", server.namespace)) is None:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{who} did not come within "
                                       f"{server.timeout:g} s: expected its "
                                       f"variables' actor in the cluster at "
                                       f"{server.ray_address}. Start that task.")
                time.sleep(0.2)
            self.actors.append(handle)

    def call(self, calls, timeout=None):
        """Runs ``{task: (method, args)}`` concurrently; returns ``{task:
        result}``.

        Raises:
            TimeoutError / RuntimeError: naming the ps task (see
                ``worker_group.get_all``).
        """
        tasks = list(calls)
        refs = [wg.remote_call(self.actors[k], calls[k][0], *calls[k][1])
                for k in tasks]
        out = wg.get_all(refs, self.timeout if timeout is None else timeout,
                         [self.names[k] for k in tasks])
        return dict(zip(tasks, out))
