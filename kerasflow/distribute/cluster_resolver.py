"""Cluster descriptions (tf.distribute's ``cluster_resolver``): TF1's
``ClusterSpec`` (job name -> task addresses), ``TFConfigClusterResolver``,
and how many workers and parameter servers a ``TF_CONFIG``
(``{"cluster": {"chief": [...], "worker": [...], "ps": [...]}, "task":
{...}}``, TF's multi-worker convention) or a cluster resolver names.

The strategies use only the counts (Ray places their actors); TF1
between-graph programs use the addresses: ``tf1.server.Server`` maps the
head task's address onto the Ray head's GCS port. No ray import.
"""

from __future__ import annotations

import json
import os
import socket

__all__ = ["ClusterSpec", "TFConfigClusterResolver", "is_local", "load_tf_config",
           "local_tasks", "parse_ps_tf_config", "parse_tf_config",
           "resolver_workers"]


def load_tf_config(tf_config) -> dict:
    """A ``TF_CONFIG`` given as a JSON string or a dict, as a dict.

    Raises:
        ValueError: not valid JSON (naming the position), JSON nested deeper
            than Python's parser goes, or a task index < 0.
        TypeError: neither a str nor a dict, or a ``task`` that is not an
            object ``{"type": str, "index": int}``.
    """
    if isinstance(tf_config, str):
        try:
            tf_config = json.loads(tf_config)
        except json.JSONDecodeError as e:
            raise ValueError(f"TF_CONFIG must be valid JSON. Received: "
                             f"{tf_config!r:.200} ({e.msg} at position "
                             f"{e.pos})") from None
        except RecursionError:
            raise ValueError(f"TF_CONFIG must be JSON of a cluster and a task. "
                             f"Received: {len(tf_config)} characters nested "
                             f"deeper than Python's JSON parser goes.") from None
    if not isinstance(tf_config, dict):
        raise TypeError(f"TF_CONFIG must be a JSON object or dict. "
                        f"Received: {type(tf_config).__name__}")
    _check_task(tf_config.get("task"))
    return tf_config


def _check_task(task) -> None:
    """TF_CONFIG's ``task``: absent, or ``{"type": str, "index": int >= 0}``
    (an index of digits, ``"1"``, passes too)."""
    if task is None:
        return
    if not isinstance(task, dict):
        raise TypeError(f"TF_CONFIG's 'task' must be an object like "
                        f'{{"type": "worker", "index": 0}}. Received: {task!r:.200}')
    kind, index = task.get("type"), task.get("index", 0)
    if kind is not None and not isinstance(kind, str):
        raise TypeError(f"TF_CONFIG's task 'type' must be a job name (str). "
                        f"Received: type={kind!r:.200}")
    if isinstance(index, str) and index.isdigit():
        index = int(index)  # what int(task["index"]) has always accepted
    if isinstance(index, bool) or not isinstance(index, int):
        raise TypeError(f"TF_CONFIG's task 'index' must be an int. Received: "
                        f"index={index!r:.200}")
    if index < 0:
        raise ValueError(f"TF_CONFIG's task 'index' must be >= 0. Received: "
                         f"index={index}")


def _check_unique(jobs: dict, what: str) -> None:
    """Refuses one address given to two tasks (both would bind it), naming them."""
    seen = {}
    for job, tasks in jobs.items():
        items = tasks.items() if isinstance(tasks, dict) else enumerate(tasks)
        for i, addr in items:
            if not isinstance(addr, str):
                continue  # the caller reports what is not an address
            if addr in seen:
                raise ValueError(f"{what} expects one address per task. Received: "
                                 f"{addr!r} for both job '{seen[addr][0]}' task "
                                 f"{seen[addr][1]} and job '{job}' task {i}")
            seen[addr] = (job, i)


def _job_counts(tf_config, roles):
    """``({role: number of tasks}, cluster dict)`` of a TF_CONFIG."""
    tf_config = load_tf_config(tf_config)
    cluster = tf_config.get("cluster")
    if cluster is None:
        raise ValueError(f"TF_CONFIG expects a 'cluster' object. "
                         f"Received: {tf_config!r}")
    if not isinstance(cluster, dict):
        raise TypeError(f"TF_CONFIG expects a 'cluster' object. "
                        f"Received: {tf_config!r}")
    counts = {}
    for role in roles:
        tasks = cluster.get(role, [])
        if not isinstance(tasks, (list, tuple)):
            raise TypeError(f"TF_CONFIG's cluster['{role}'] must be a list of "
                            f"addresses. Received: {tasks!r}")
        counts[role] = len(tasks)
    _check_unique({j: t for j, t in cluster.items() if isinstance(t, (list, dict))},
                  "TF_CONFIG's cluster")
    return counts, cluster


def parse_tf_config(tf_config) -> int:
    """Number of workers of a TF_CONFIG dict or JSON string: its ``chief`` and
    ``worker`` tasks (TF's rule: the chief is a worker too).

    Raises:
        ValueError: not valid JSON, no ``cluster``, or no worker/chief task.
        TypeError: neither a str nor a dict, or a job that is not a list.
    """
    counts, cluster = _job_counts(tf_config, ("chief", "worker"))
    if sum(counts.values()) < 1:
        raise ValueError(f"TF_CONFIG's cluster lists no 'worker' or 'chief' task. "
                         f"Received: {cluster!r}")
    return sum(counts.values())


def parse_ps_tf_config(tf_config):
    """``(num_ps, num_workers, cluster)`` of a TF_CONFIG dict or JSON string
    with ``ps``, ``worker`` and optional ``chief`` jobs (the chief is the
    driver: it is not a worker actor).

    Raises:
        ValueError: malformed JSON, no ``cluster``, no ``ps`` or no ``worker``
            task.
        TypeError: not a str/dict, or a job that is not a list of addresses.
    """
    counts, cluster = _job_counts(tf_config, ("ps", "worker", "chief"))
    for role in ("ps", "worker"):
        if counts[role] < 1:
            raise ValueError(f"ParameterServerStrategy expects TF_CONFIG's cluster to "
                             f"list at least one '{role}' task. Received: {cluster!r}")
    return counts["ps"], counts["worker"], cluster


def resolver_workers(resolver) -> int:
    """Number of workers of a cluster resolver: a TF_CONFIG dict/JSON, or an
    object with ``num_workers`` or ``cluster_spec()``.

    Raises:
        TypeError: none of those.
    """
    if isinstance(resolver, (dict, str)):
        return parse_tf_config(resolver)
    if hasattr(resolver, "num_workers"):
        return int(resolver.num_workers)
    if hasattr(resolver, "cluster_spec"):
        spec = resolver.cluster_spec()
        spec = spec.as_dict() if hasattr(spec, "as_dict") else spec
        return parse_tf_config({"cluster": dict(spec)})
    raise TypeError(f"cluster_resolver must be a TF_CONFIG dict/JSON or have "
                    f"cluster_spec()/num_workers. Received: {resolver!r}")


def is_local(host) -> bool:
    """True when ``host`` is loopback or one of this host's names or addresses."""
    host = str(host).strip("[]")
    if host in ("localhost", "0.0.0.0", "::1", "") or host.startswith("127."):
        return True
    try:
        mine = {socket.gethostname(), socket.getfqdn()}
        mine |= set(socket.gethostbyname_ex(socket.gethostname())[2])
        return host in mine or socket.gethostbyname(host) in mine
    except OSError:
        return False


def local_tasks(addresses) -> int:
    """How many of the ``"host:port"`` ``addresses`` are on this host."""
    return sum(is_local(a.rpartition(":")[0]) for a in addresses)


class ClusterSpec:
    """TF1's ``tf.train.ClusterSpec``: job name -> task addresses.

    Args:
        cluster: ``{"ps": ["host:port", ...], "worker": [...]}`` (a list per
            job, or a ``{task_index: address}`` dict for sparse jobs), another
            ClusterSpec, or a ``TF_CONFIG`` dict/JSON string (its ``cluster``).

    Raises:
        TypeError: not a dict/ClusterSpec, or a job that is not a list/dict.
        ValueError: an address that is not a ``"host:port"`` string, or one
            address given to two tasks (naming both).

    Example:
        >>> spec = ClusterSpec({"ps": ["h0:2222"], "worker": ["h1:2222", "h2:2222"]})
        >>> spec.num_tasks("worker"), spec.task_address("ps", 0)
        (2, 'h0:2222')
    """

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            cluster = cluster.as_dict()
        if isinstance(cluster, str) or (isinstance(cluster, dict)
                                        and "cluster" in cluster):
            cluster = load_tf_config(cluster)["cluster"]
        if not isinstance(cluster, dict):
            raise TypeError(f"ClusterSpec expects a dict of job name -> list of "
                            f"'host:port' addresses. Received: {cluster!r}")
        self._jobs = {}
        for job, tasks in cluster.items():
            if isinstance(tasks, (list, tuple)):
                tasks = dict(enumerate(tasks))
            if not isinstance(tasks, dict):
                raise TypeError(f"ClusterSpec expects job '{job}' to be a list or "
                                f"dict of addresses. Received: {tasks!r}")
            for i, addr in tasks.items():
                if not isinstance(addr, str) or addr.rpartition(":")[2] == "" \
                        or not addr.rpartition(":")[2].isdigit():
                    raise ValueError(f"ClusterSpec expects 'host:port' addresses. "
                                     f"Received: job '{job}' task {i}: {addr!r}")
            self._jobs[str(job)] = {int(i): a for i, a in sorted(tasks.items())}
        _check_unique(self._jobs, "ClusterSpec")

    @classmethod
    def from_tf_config(cls, tf_config=None):
        """The ClusterSpec of ``TF_CONFIG`` (default: the environment's)."""
        import os

        return cls(load_tf_config(tf_config if tf_config is not None
                                  else os.environ.get("TF_CONFIG", "{}")))

    @property
    def jobs(self) -> list:
        """Job names, in the order given."""
        return list(self._jobs)

    def as_dict(self) -> dict:
        """``{job: [addresses]}`` (a dict ``{index: address}`` for sparse jobs)."""
        out = {}
        for job, tasks in self._jobs.items():
            dense = list(tasks) == list(range(len(tasks)))
            out[job] = list(tasks.values()) if dense else dict(tasks)
        return out

    def job_tasks(self, job_name) -> list:
        """Addresses of ``job_name``'s tasks by index (None for gaps).

        Raises:
            ValueError: no such job.
        """
        tasks = self._tasks(job_name)
        return [tasks.get(i) for i in range(max(tasks, default=-1) + 1)]

    def task_indices(self, job_name) -> list:
        return list(self._tasks(job_name))

    def num_tasks(self, job_name) -> int:
        return len(self._tasks(job_name))

    def task_address(self, job_name, task_index) -> str:
        """The ``host:port`` of one task.

        Raises:
            ValueError: no such job, or no such task in it (naming both).
        """
        tasks = self._tasks(job_name)
        if not isinstance(task_index, int) or task_index not in tasks:
            raise ValueError(f"Task index {task_index!r} is not in job '{job_name}' "
                             f"of the ClusterSpec: expected one of "
                             f"{sorted(tasks)}. Received: task_index={task_index!r}")
        return tasks[task_index]

    def _tasks(self, job_name):
        if job_name not in self._jobs:
            raise ValueError(f"Job name '{job_name}' is not in the ClusterSpec: "
                             f"expected one of {self.jobs}. Received: "
                             f"job_name={job_name!r}")
        return self._jobs[job_name]

    def __eq__(self, other):
        return isinstance(other, ClusterSpec) and self._jobs == other._jobs

    def __bool__(self):
        return bool(self._jobs)

    def __repr__(self):
        return f"ClusterSpec({self.as_dict()!r})"


class TFConfigClusterResolver:
    """``tf.distribute.cluster_resolver.TFConfigClusterResolver``: the
    cluster and task of the ``TF_CONFIG`` environment variable.

    Attributes:
        task_type, task_id: this process's task (None without a task).

    Raises:
        ValueError: TF_CONFIG that is not JSON, or whose task is not in its
            cluster (naming both).
    """

    def __init__(self, task_type=None, task_id=None):
        raw = os.environ.get("TF_CONFIG", "")
        conf = load_tf_config(raw) if raw else {}
        task = conf.get("task") or {}
        self._spec = ClusterSpec(conf.get("cluster") or {})
        self.task_type = task_type if task_type is not None else task.get("type")
        self.task_id = int(task_id if task_id is not None else task.get("index", 0))
        if self.task_type is not None and self._spec and self.task_type != "evaluator":
            self._spec.task_address(self.task_type, self.task_id)  # checks both

    def cluster_spec(self):
        """The ``ClusterSpec`` of TF_CONFIG's ``cluster`` (empty without one)."""
        return self._spec

    @property
    def num_workers(self) -> int:
        jobs = self._spec.jobs
        return sum(self._spec.num_tasks(j) for j in ("chief", "worker") if j in jobs) or 1

    def master(self, task_type=None, task_id=None, rpc_layer=None) -> str:
        t = task_type or self.task_type
        if t is None or not self._spec:
            return ""
        i = self.task_id if task_id is None else task_id
        return f"{rpc_layer or 'grpc'}://{self._spec.task_address(t, i)}"

    def __repr__(self):
        return (f"TFConfigClusterResolver({json.dumps(self._spec.as_dict())}, "
                f"task_type={self.task_type!r}, task_id={self.task_id})")
