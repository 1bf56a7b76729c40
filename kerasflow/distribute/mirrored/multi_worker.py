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

import os
import warnings

from kerasflow.distribute.actor_strategy import check_count
from kerasflow.distribute.cluster_resolver import parse_tf_config, resolver_workers
from kerasflow.distribute.mirrored.spmd import SpmdStrategy, spmd_task
from kerasflow.distribute.mirrored.sync_strategy import (
    CommunicationOptions,
    SyncReplicaStrategy,
)
from kerasflow.distribute.runtime.errors import PlacementError
from kerasflow.distribute.runtime.ray import cluster_summary
from kerasflow.distribute.sharding import DatasetShardSource

__all__ = ["MultiWorkerMirroredStrategy"]


class MultiWorkerMirroredStrategy(SyncReplicaStrategy):
    """Synchronous training with replicas on distinct nodes of a Ray cluster.

    ``experimental_distribute_dataset(ds)`` makes every replica read its own
    copy of ``ds``'s pipeline, auto-sharded by
    ``ds.options().experimental_distribute.auto_shard_policy`` (as TF's
    workers do: by file for ``TextLineDataset``/``CsvDataset`` sources, else
    by data; see ``kerasflow/distribute/sharding.py``).

    With ``TF_CONFIG`` naming this process's ``task`` (one process started
    per worker, as TF launches multi-worker jobs), the constructor returns a
    ``SpmdStrategy`` instead: this process is one replica
    (``kerasflow/distribute/mirrored/spmd.py``); its gradients are summed in
    shared memory when every task is on this host, else over a TCP ring
    (``CommunicationOptions(implementation="ring")`` keeps the ring).

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
            cluster has nodes (a ``PlacementError`` naming both and how to
            join a cluster).
        TypeError: wrong argument types.

    Warns:
        UserWarning: no worker count was given and Ray has one node (no
            cluster was joined), so one worker runs.
    """

    dataset_source = DatasetShardSource

    def __new__(cls, *args, **kwargs):
        # TF_CONFIG naming this process's task: one process per worker (SPMD),
        # each process one replica (kerasflow/distribute/mirrored/spmd.py).
        if cls is MultiWorkerMirroredStrategy and kwargs.get("cluster_resolver") is None \
                and spmd_task() is not None:
            opts = kwargs.get("communication_options")
            return SpmdStrategy(timeout=getattr(opts, "timeout_seconds", None),
                                bind_address=getattr(opts, "bind_address", None),
                                allow_insecure=getattr(opts, "allow_insecure", False),
                                implementation=getattr(opts, "implementation", "auto"))
        return super().__new__(cls)

    def __init__(self, num_workers=None, replicas_per_worker=1,
                 communication_options=None, cluster_resolver=None, max_failures=3):
        name = "MultiWorkerMirroredStrategy"
        check_count(name, "num_workers", num_workers, allow_none=True)
        check_count(name, "replicas_per_worker", replicas_per_worker)
        opts = CommunicationOptions.check(name, communication_options)
        if num_workers is None and cluster_resolver is not None:
            num_workers = resolver_workers(cluster_resolver)
        if num_workers is None and os.environ.get("TF_CONFIG"):
            num_workers = parse_tf_config(os.environ["TF_CONFIG"])
        nodes = cluster_summary()
        if num_workers is None:
            num_workers = len(nodes) or 1
            if num_workers == 1:
                warnings.warn(
                    f"{name} found no cluster to join (no RAY_ADDRESS, TF_CONFIG or "
                    f"cluster_resolver, and Ray has one node): it runs 1 worker with "
                    f"{replicas_per_worker} replica(s). Connect first with "
                    f"ray.init(address=...) or set RAY_ADDRESS; on one machine use "
                    f"MirroredStrategy(num_replicas=N).", UserWarning, stacklevel=2)
        self.num_workers = num_workers
        self.replicas_per_worker = replicas_per_worker
        transport = opts.implementation if opts.implementation != "nccl" else "auto"
        try:
            self._setup(num_workers * replicas_per_worker, opts, transport=transport,
                        placement="STRICT_SPREAD", max_failures=max_failures,
                        workers_per_bundle=replicas_per_worker)
        except PlacementError as e:
            raise PlacementError(
                f"{e} {name}(num_workers={num_workers}) places one worker per node "
                f"and Ray has {len(nodes)} alive node(s): join a larger cluster "
                f"(ray.init(address=...) or RAY_ADDRESS), ask for at most "
                f"{len(nodes)} workers, or use MirroredStrategy(num_replicas=N) on "
                f"one machine.") from None
