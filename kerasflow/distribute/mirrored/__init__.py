"""Synchronous data parallelism: ``mirrored`` (``MirroredStrategy``),
``multi_worker`` (``MultiWorkerMirroredStrategy``), ``spmd`` (a TF_CONFIG
worker process as a replica), ``sync_strategy`` (the driver side both share:
``SyncReplicaStrategy``, its evaluation and the replicas' state), ``replica``
(the replica actor's body), ``zero`` and ``zero_piece`` (ZeRO-1 optimizer
sharding). Internal: the public names are in ``kf.distribute``."""

from __future__ import annotations

__all__: list[str] = []
