"""``kf.distribute``: distribution strategies under tf.distribute's names.

The one public home of the distribution API::

    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    with strategy.scope():
        model = make_model()
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        model.fit(x, y, batch_size=256)

``Strategy``, ``DefaultStrategy``, ``get_strategy``, ``ReduceOp``,
``InputContext`` and ``BatchRef`` come from ``kerasflow.distribute_lib`` (the
base below ``models/``), ``DistributedDataset``,
``DistributedDatasetsFromFunction``, ``PerReplica`` and ``InputOptions`` from
``kerasflow.distribute_input`` (beside it); ``MirroredStrategy``,
``MultiWorkerMirroredStrategy``, ``ParameterServerStrategy``,
``CommunicationOptions`` and the variable partitioners from
``kerasflow.strategies`` (the Ray implementation). All of those are internal:
import from here. The Ray strategies load on first use,
so ``import kerasflow`` does not import ray.
"""

from __future__ import annotations

import importlib

from kerasflow.distribute_input import (
    DistributedDataset,
    DistributedDatasetsFromFunction,
    InputOptions,
    PerReplica,
)
from kerasflow.distribute_lib import (
    BatchRef,
    DefaultStrategy,
    InputContext,
    ReduceOp,
    Strategy,
    get_strategy,
    has_strategy,
)
from kerasflow.distribute_names import (
    CollectiveCommunication,
    InputReplicationMode,
    OneDeviceStrategy,
    cluster_resolver,
    experimental,
)
from kerasflow.replica_fn import ReplicaContext, compute_average_loss, get_replica_context


def in_cross_replica_context() -> bool:
    """True under a strategy's scope outside ``strategy.run`` (TF's rule)."""
    return has_strategy() and get_replica_context() is None

__all__ = ["BatchRef", "CommunicationOptions", "DefaultStrategy", "DistributedDataset",
           "DistributedDatasetsFromFunction", "InputOptions", "PerReplica",
           "FixedShardsPartitioner", "InputContext", "MinSizePartitioner",
           "MirroredStrategy", "MultiWorkerMirroredStrategy", "ParameterServerStrategy",
           "ReduceOp", "ReplicaContext", "Strategy", "compute_average_loss",
           "CollectiveCommunication", "InputReplicationMode", "OneDeviceStrategy",
           "cluster_resolver", "experimental",
           "get_replica_context", "get_strategy", "has_strategy",
           "in_cross_replica_context"]

_LAZY = {
    "MirroredStrategy": "kerasflow.strategies.mirrored",
    "MultiWorkerMirroredStrategy": "kerasflow.strategies.multi_worker",
    "CommunicationOptions": "kerasflow.strategies.sync_strategy",
    "ParameterServerStrategy": "kerasflow.strategies.parameter_server",
    "FixedShardsPartitioner": "kerasflow.strategies.partitioners",
    "MinSizePartitioner": "kerasflow.strategies.partitioners",
}


def __getattr__(name):  # the Ray strategies load on first use
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'kerasflow.distribute' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
