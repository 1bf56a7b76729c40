"""``MultiWorkerMirroredStrategy``: synchronous data parallelism across the
nodes of a Ray cluster (``tf.distribute.MultiWorkerMirroredStrategy``).

One placement-group bundle per worker, ``STRICT_SPREAD`` so workers land on
distinct nodes; ``replicas_per_worker`` replicas share each worker's node.
Gradients travel over a TCP ring between nodes (shared memory inside a node
when a worker holds several replicas). The script is the same as on one
process: connect with ``ray.init(address=...)`` or ``RAY_ADDRESS`` (else a
local Ray starts), then ``with strategy.scope(): model.fit(...)``.

The worker count comes from ``num_workers``, a ``cluster_resolver``, a
``TF_CONFIG`` environment variable (``{"cluster": {"worker": [...]}, ...}``),
or, failing all, the number of alive Ray nodes. Unlike TF, the addresses in
TF_CONFIG are not used: Ray places the workers.
"""

from __future__ import annotations

import json
import os

from kerasflow.strategies.sync_strategy import CommunicationOptions, SyncReplicaStrategy

__all__ = ["InputContext", "MultiWorkerMirroredStrategy", "parse_tf_config"]


def load_tf_config(tf_config) -> dict:
    """A ``TF_CONFIG`` given as a JSON string or a dict, as a dict.

    Raises:
        ValueError: not valid JSON (naming the position).
        TypeError: neither a str nor a dict.
    """
    if isinstance(tf_config, str):
        try:
            tf_config = json.loads(tf_config)
        except json.JSONDecodeError as e:
            raise ValueError(f"TF_CONFIG must be valid JSON. Received: {tf_config!r} "
                             f"({e.msg} at position {e.pos})") from None
    if not isinstance(tf_config, dict):
        raise TypeError(f"TF_CONFIG must be a JSON object or dict. "
                        f"Received: {type(tf_config).__name__}")
    return tf_config


def parse_tf_config(tf_config):
    """Number of workers described by a TF_CONFIG dict or JSON string.

    Counts the ``chief`` and ``worker`` tasks of ``cluster`` (TF's rule:
    the chief is a worker too).

    Raises:
        ValueError: not valid JSON, or no ``cluster`` with workers.
        TypeError: neither a str nor a dict.
    """
    tf_config = load_tf_config(tf_config)
    cluster = tf_config.get("cluster")
    if not isinstance(cluster, dict):
        raise TypeError(f"TF_CONFIG expects a 'cluster' object. Received: "
                        f"{tf_config!r}")
    count = 0
    for role in ("chief", "worker"):
        tasks = cluster.get(role, [])
        if not isinstance(tasks, (list, tuple)):
            raise TypeError(f"TF_CONFIG's cluster['{role}'] must be a list of "
                            f"addresses. Received: {tasks!r}")
        count += len(tasks)
    if count < 1:
        raise ValueError(f"TF_CONFIG's cluster lists no 'worker' or 'chief' task. "
                         f"Received: {cluster!r}")
    return count


def _resolver_workers(resolver):
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


class InputContext:
    """What an ``input_fn`` needs to shard its pipeline
    (``tf.distribute.InputContext``).

    Attributes:
        num_input_pipelines: pipelines in the job; input_pipeline_id: this one.
        num_replicas_in_sync: replicas sharing each global batch.
    """

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0,
                 num_replicas_in_sync=1):
        self.num_input_pipelines = num_input_pipelines
        self.input_pipeline_id = input_pipeline_id
        self.num_replicas_in_sync = num_replicas_in_sync

    def get_per_replica_batch_size(self, global_batch_size):
        """``global_batch_size // num_replicas_in_sync``.

        Raises:
            ValueError: the global batch does not divide evenly.
        """
        if global_batch_size % self.num_replicas_in_sync:
            raise ValueError(f"The global batch size must be divisible by "
                             f"num_replicas_in_sync={self.num_replicas_in_sync}. "
                             f"Received: global_batch_size={global_batch_size}")
        return global_batch_size // self.num_replicas_in_sync


class MultiWorkerMirroredStrategy(SyncReplicaStrategy):
    """Synchronous training with replicas on distinct nodes of a Ray cluster.

    Args:
        num_workers: nodes to use (default: TF_CONFIG, the resolver, else every
            alive node).
        replicas_per_worker: CPU replicas per node (shared-memory allreduce
            inside a node, tcp ring between nodes).
        communication_options: ``CommunicationOptions`` (deadline of every
            wait, in seconds; transport).
        cluster_resolver: a TF_CONFIG-style dict/JSON, or an object with
            ``cluster_spec()`` or ``num_workers``.
        max_failures: replica failures to recover from before giving up.

    Raises:
        ValueError: invalid TF_CONFIG JSON, counts < 1, more workers than the
            cluster has nodes (a ``PlacementError`` naming both).
        TypeError: wrong argument types.
    """

    def __init__(self, num_workers=None, replicas_per_worker=1,
                 communication_options=None, cluster_resolver=None, max_failures=3):
        for name, value in (("num_workers", num_workers),
                            ("replicas_per_worker", replicas_per_worker)):
            if value is not None and (not isinstance(value, int) or isinstance(
                    value, bool)):
                raise TypeError(f"MultiWorkerMirroredStrategy expects {name} to be an "
                                f"int. Received: {name}={value!r}")
            if value is not None and value < 1:
                raise ValueError(f"MultiWorkerMirroredStrategy expects {name} >= 1. "
                                 f"Received: {name}={value}")
        opts = communication_options or CommunicationOptions()
        if not isinstance(opts, CommunicationOptions):
            raise TypeError(f"MultiWorkerMirroredStrategy expects communication_options "
                            f"to be a CommunicationOptions. Received: {opts!r}")
        if num_workers is None and cluster_resolver is not None:
            num_workers = _resolver_workers(cluster_resolver)
        if num_workers is None and os.environ.get("TF_CONFIG"):
            num_workers = parse_tf_config(os.environ["TF_CONFIG"])
        from kerasflow.strategies.worker_group import cluster_summary, init_ray
        init_ray()
        if num_workers is None:
            num_workers = len(cluster_summary()) or 1
        self.num_workers = num_workers
        self.replicas_per_worker = replicas_per_worker
        transport = opts.implementation if opts.implementation != "nccl" else "auto"
        self._setup(num_workers * replicas_per_worker, placement="STRICT_SPREAD",
                    transport=transport, timeout=opts.timeout_seconds,
                    max_failures=max_failures, num_cpus=1.0,
                    name="MultiWorkerMirroredStrategy",
                    workers_per_bundle=replicas_per_worker)

    def node_ids(self):
        """The Ray node id of every replica, in rank order (starts the
        replicas if they are not running)."""
        return (self.worker_group or self._start_group()).node_ids()
