"""``kf.distribute``: distribution strategies under tf.distribute's names.

The one public home of the distribution API::

    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    with strategy.scope():
        model = make_model()
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        model.fit(x, y, batch_size=256)

The package sits below ``models/`` (as TensorFlow's ``python/distribute/``
sits below Keras) and receives picklable steps from ``kerasflow/steps/``.
Its modules, by job: ``distribute_lib`` (``Strategy``, ``DefaultStrategy``,
``OneDeviceStrategy``), ``context`` (the current strategy and replica),
``values`` (``ReduceOp``, ``PerReplica``, splitting a global batch),
``input_lib`` (``InputContext``, distributed datasets), ``sharding`` and
``ray_data`` (input read on the replicas), ``custom_loop`` (``strategy.run``
/ ``reduce``), ``graph_loop`` (TF 1.15's ``experimental_run_v2``),
``cluster_resolver`` (``ClusterSpec``, ``TF_CONFIG``), ``task_threads`` (a
task's share of its host's cores), ``driver_state``,
``actor_strategy`` (what the Ray strategies share); sub-packages by role:
``runtime/`` (Ray: the only importer of ray), ``collective/`` (one allreduce
interface over shared memory, a TCP ring and NCCL), ``mirrored/``,
``parameter_server/`` and ``tf1/`` (TF1 between-graph tasks). The Ray
strategies load on first use, so ``import kerasflow`` does not import ray.
"""

from __future__ import annotations

import enum
import importlib
import types

from kerasflow.distribute import cluster_resolver
from kerasflow.distribute.custom_loop import (
    ReplicaContext,
    compute_average_loss,
    get_replica_context,
)
from kerasflow.distribute.distribute_lib import (
    DefaultStrategy,
    OneDeviceStrategy,
    Strategy,
    get_strategy,
    has_strategy,
)
from kerasflow.distribute.input_lib import (
    DistributedDataset,
    DistributedDatasetsFromFunction,
    InputContext,
    InputOptions,
)
from kerasflow.distribute.values import PerReplica, ReduceOp
from kerasflow.steps.batch import BatchRef

__all__ = ["BatchRef", "CollectiveCommunication", "CommunicationOptions",
           "DefaultStrategy", "DistributedDataset", "DistributedDatasetsFromFunction",
           "FixedShardsPartitioner", "InputContext", "InputOptions",
           "InputReplicationMode", "MinSizePartitioner", "MirroredStrategy",
           "MultiWorkerMirroredStrategy", "OneDeviceStrategy", "ParameterServerStrategy",
           "PerReplica", "ReduceOp", "ReplicaContext", "Strategy", "cluster_resolver",
           "compute_average_loss", "experimental", "get_replica_context",
           "get_strategy", "has_strategy", "in_cross_replica_context"]


def in_cross_replica_context() -> bool:
    """True under a strategy's scope outside ``strategy.run`` (TF's rule)."""
    return has_strategy() and get_replica_context() is None


class InputReplicationMode(enum.Enum):
    """How input pipelines map to replicas (TF's enum; kerasflow's
    distributed datasets are PER_WORKER)."""

    PER_WORKER = "PER_WORKER"
    PER_REPLICA = "PER_REPLICA"


class CollectiveCommunication(enum.Enum):
    """TF 2.0-2.3's ``experimental.CollectiveCommunication``: the allreduce
    transport (AUTO: shared memory on a node and a ring across nodes)."""

    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


_LAZY = {
    "MirroredStrategy": "kerasflow.distribute.mirrored.mirrored",
    "MultiWorkerMirroredStrategy": "kerasflow.distribute.mirrored.multi_worker",
    "CommunicationOptions": "kerasflow.distribute.mirrored.sync_strategy",
    "ParameterServerStrategy": "kerasflow.distribute.parameter_server.strategy",
    "FixedShardsPartitioner": "kerasflow.distribute.parameter_server.partitioners",
    "MinSizePartitioner": "kerasflow.distribute.parameter_server.partitioners",
}


def __getattr__(name):  # the Ray strategies load on first use
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'kerasflow.distribute' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)


def _mwms(communication=CollectiveCommunication.AUTO, cluster_resolver=None, **kwargs):
    """TF 2.0-2.3's ``experimental.MultiWorkerMirroredStrategy(communication,
    cluster_resolver)``: the one ``MultiWorkerMirroredStrategy``."""
    if not isinstance(communication, CollectiveCommunication):
        raise TypeError(f"communication expects a CollectiveCommunication. "
                        f"Received: {communication!r}")
    if communication is not CollectiveCommunication.AUTO:
        kwargs.setdefault("communication_options", __getattr__("CommunicationOptions")(
            implementation=communication.value))
    return __getattr__("MultiWorkerMirroredStrategy")(
        cluster_resolver=cluster_resolver, **kwargs)


def _ps(*args, **kwargs):
    return __getattr__("ParameterServerStrategy")(*args, **kwargs)


def _comm_options(*args, **kwargs):
    """``tf.distribute.experimental.CommunicationOptions`` (kerasflow's, with
    its ``port_range`` and ``interface`` additions)."""
    return __getattr__("CommunicationOptions")(*args, **kwargs)


experimental = types.SimpleNamespace(
    MultiWorkerMirroredStrategy=_mwms, ParameterServerStrategy=_ps,
    CollectiveCommunication=CollectiveCommunication,
    CommunicationImplementation=CollectiveCommunication,
    CommunicationOptions=_comm_options)
