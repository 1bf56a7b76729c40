"""Distribution strategies (L4): the Ray strategies build on the base in
``kerasflow.distribute_lib``, re-exported here with ``DefaultStrategy``.

``MirroredStrategy``, ``MultiWorkerMirroredStrategy``,
``ParameterServerStrategy``, its partitioners (``FixedShardsPartitioner``,
``MinSizePartitioner``) and ``CommunicationOptions`` load on first use,
so ``import kerasflow`` does not import ray.
"""

from kerasflow.strategies.base import (
    BatchRef,
    DefaultStrategy,
    ReduceOp,
    Strategy,
    get_strategy,
)

__all__ = [
    "BatchRef",
    "CommunicationOptions",
    "DefaultStrategy",
    "FixedShardsPartitioner",
    "InputContext",
    "MinSizePartitioner",
    "MirroredStrategy",
    "MultiWorkerMirroredStrategy",
    "ParameterServerStrategy",
    "ReduceOp",
    "Strategy",
    "get_strategy",
]

_LAZY = {
    "MirroredStrategy": "kerasflow.strategies.mirrored",
    "MultiWorkerMirroredStrategy": "kerasflow.strategies.multi_worker",
    "CommunicationOptions": "kerasflow.strategies.sync_strategy",
    "InputContext": "kerasflow.strategies.multi_worker",
    "ParameterServerStrategy": "kerasflow.strategies.parameter_server",
    "FixedShardsPartitioner": "kerasflow.strategies.partitioners",
    "MinSizePartitioner": "kerasflow.strategies.partitioners",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'kerasflow.strategies' has no attribute {name!r}")
