"""``tf.train.replica_device_setter`` and its ps strategies (TF 1.x
``device_setter.py``): a device function sending Variables to ps tasks and
everything else to the worker, for ``with tf.device(...)``."""

from __future__ import annotations

import numpy as np

from kerasflow.distribute.cluster_resolver import ClusterSpec

__all__ = ["replica_device_setter", "GreedyLoadBalancingStrategy",
           "byte_size_load_fn"]

# TF 1.x's default ps_ops: the stateful ops that hold parameters.
STANDARD_PS_OPS = ("Variable", "VariableV2", "AutoReloadVariable",
                   "MutableHashTable", "MutableHashTableV2",
                   "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2",
                   "MutableDenseHashTable", "MutableDenseHashTableV2",
                   "VarHandleOp")


class _RoundRobinStrategy:
    """TF1's default: the i-th ps op goes to task ``i % num_tasks``."""

    def __init__(self, num_tasks):
        self._num_tasks, self._next = num_tasks, 0

    def __call__(self, op):
        task = self._next
        self._next = (self._next + 1) % self._num_tasks
        return task


def byte_size_load_fn(op):
    """Bytes of ``op``'s output (TF1's load function for Variables).

    Raises:
        ValueError: an output of unknown shape.
    """
    out = op.outputs[0]
    shape = tuple(out.shape)
    if any(d is None for d in shape):
        raise ValueError(f"byte_size_load_fn needs a fully defined shape. "
                         f"Received: {op.name} of shape {shape}.")
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(out.dtype).itemsize


class GreedyLoadBalancingStrategy:
    """Places each ps op on the ps task with the least load so far.

    Args:
        num_tasks: number of ps tasks (int >= 1).
        load_fn: op -> load (default ``byte_size_load_fn``: bytes).

    Raises:
        ValueError: ``num_tasks`` < 1.
    """

    def __init__(self, num_tasks, load_fn=byte_size_load_fn):
        if num_tasks < 1:
            raise ValueError(f"GreedyLoadBalancingStrategy expects num_tasks >= 1. "
                             f"Received: num_tasks={num_tasks!r}")
        self._load_fn = load_fn
        self._loads = np.zeros(num_tasks, dtype=np.float64)

    def __call__(self, op):
        task = int(np.argmin(self._loads))
        self._loads[task] += self._load_fn(op)
        return task


def replica_device_setter(ps_tasks=0, ps_device="/job:ps", worker_device="/job:worker",
                          merge_devices=True, cluster=None, ps_ops=None,
                          ps_strategy=None):
    """A device function for ``tf.device``: Variables on ps tasks, the rest
    on ``worker_device`` (TF 1.x between-graph replication).

    Args:
        ps_tasks: number of ps tasks (ignored when ``cluster`` is given).
        ps_device: the ps job's device prefix.
        worker_device: where non-ps ops go (``"/job:worker/task:%d" % i``).
        merge_devices: accepted (TF1's default behaviour).
        cluster: a ``ClusterSpec`` or dict; its ``ps`` job gives ``ps_tasks``.
        ps_ops: op types placed on ps tasks (default: TF1's Variable ops).
        ps_strategy: callable op -> ps task index (default round-robin;
            ``GreedyLoadBalancingStrategy`` balances bytes).

    Returns:
        A device function, or None when there are no ps tasks (TF1's rule:
        ``tf.device(None)`` places nothing).

    Raises:
        TypeError: ``ps_strategy`` not callable.
    """
    # "/job:ps/cpu:0" (mnist_replica.py's) names job "ps"; its task goes after
    # the job (and replica), as TF1 merges it: "/job:ps/task:1/cpu:0".
    parts = [p for p in ps_device.split("/") if p and not p.startswith("task:")]
    job = next((p[len("job:"):] for p in parts if p.startswith("job:")), "ps")
    at = sum(p.startswith(("job:", "replica:")) for p in parts)
    if cluster is not None:
        cluster = ClusterSpec(cluster)
        ps_tasks = cluster.num_tasks(job) if job in cluster.jobs else 0
    if not ps_tasks:
        return None
    if ps_strategy is None:
        ps_strategy = _RoundRobinStrategy(ps_tasks)
    if not callable(ps_strategy):
        raise TypeError(f"ps_strategy must be callable. Received: {ps_strategy!r}")
    ps_ops = tuple(ps_ops or STANDARD_PS_OPS)

    def _chooser(op):
        if getattr(op, "type", None) in ps_ops:
            task = [f"task:{ps_strategy(op)}"]
            return "/" + "/".join(parts[:at] + task + parts[at:])
        return worker_device

    _chooser.worker_device = worker_device
    _chooser.ps_tasks = ps_tasks
    return _chooser
