"""``MirroredStrategy``: synchronous data parallelism on the replicas of one
node (``tf.distribute.MirroredStrategy``), as Ray actors.

    strategy = kf.distribute.MirroredStrategy(num_replicas=2)
    with strategy.scope():
        model = make_model()
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        model.fit(x, y, batch_size=256, epochs=3)   # 256 = the global batch

N replicas give the same weights as one process on the global batch (up to
float rounding), for models without dropout and batch normalization: the
global batch is split contiguously in rank order, every replica's loss is
scaled by the global batch size, the gradients are summed by a deterministic
allreduce (shared memory), and every replica applies the same sum. Batch
normalization statistics are per replica (TF's ON_READ), so its moving
averages differ from a single process's; dropout masks are drawn per replica.

The weights stay on the replicas between driver calls and reach the driver's
model when something reads them (callbacks that may read the model,
evaluate/predict, the end of ``fit``); with Adam, SGD, RMSprop and other
per-variable optimizers each replica applies the optimizer to its own share
of the variables (ZeRO-1). See ``sync_strategy.py``.

``strategy.evaluate_on_replicas = True`` runs ``evaluate``, ``predict`` and
the validation inside ``fit`` on the replicas too (each on its rows of every
global batch, with the weights it holds; the results equal one process's):
see ``sync_strategy.py``. It is off by default: on two cores the driver, BLAS on
both, was faster for an MLP (``benchmarks/bench_eval_replicas.py``).
"""

from __future__ import annotations

import logging
import os
import re

from kerasflow.distribute.actor_strategy import check_count
from kerasflow.distribute.mirrored.sync_strategy import (
    CommunicationOptions,
    SyncReplicaStrategy,
)
from kerasflow.distribute.runtime.ray import cluster_summary

log = logging.getLogger(__name__)

__all__ = ["MirroredStrategy"]

_TRANSPORTS = {"auto": "auto", "shm": "shm", "tcp": "tcp", "ring": "tcp",
               "hier": "hier", "nccl": "nccl", "ncclallreduce": "nccl",
               "hierarchicalcopyallreduce": "shm", "reductiontoonedevice": "shm"}


def _transport(cross_device_ops):
    if cross_device_ops is None:
        return "auto"
    name = cross_device_ops if isinstance(cross_device_ops, str) else getattr(
        cross_device_ops, "transport", type(cross_device_ops).__name__)
    key = str(name).lower()
    if key not in _TRANSPORTS:
        raise ValueError(f"MirroredStrategy expects cross_device_ops in "
                         f"{sorted(_TRANSPORTS)} or None. Received: {cross_device_ops!r}")
    return _TRANSPORTS[key]


class MirroredStrategy(SyncReplicaStrategy):
    """Synchronous training on the replicas of one node.

    Args:
        devices: device strings, e.g. ``["/gpu:0", "/gpu:1"]`` or
            ``["/cpu:0", "/cpu:1"]``: one replica per entry.
        num_gpus: number of GPU replicas (one GPU each, cupy backend).
        num_replicas: number of CPU replicas.
        cross_device_ops: the allreduce transport: None/"auto" (NCCL for GPU
            replicas, shared memory for CPU ones), "shm", "tcp", "nccl", or
            TF's ``NcclAllReduce`` / ``HierarchicalCopyAllReduce`` names.
        communication_options: ``CommunicationOptions`` (deadline of every wait).
        max_failures: replica failures to recover from before giving up.

    With no argument: every GPU of the node, else one CPU replica per core.
    CPU replicas share the node's cores out: each reserves
    ``cores // num_replicas`` CPUs (at least 1), and Ray sets its BLAS and
    numba thread count (``OMP_NUM_THREADS``) to that.

    Raises:
        ValueError: conflicting or malformed arguments; ``num_gpus`` beyond the
            node's GPUs; more CPU replicas than the largest node has CPUs
            (``PlacementError``, a ValueError, names requested and available).
        TypeError: a non-integer replica count.
    """

    def __init__(self, devices=None, num_gpus=None, num_replicas=None,
                 cross_device_ops=None, communication_options=None, max_failures=3):
        given = [a for a, v in (("devices", devices), ("num_gpus", num_gpus),
                                ("num_replicas", num_replicas)) if v is not None]
        if len(given) > 1:
            raise ValueError(f"MirroredStrategy takes one of devices, num_gpus or "
                             f"num_replicas. Received: {', '.join(given)}")
        check_count("MirroredStrategy", "num_gpus", num_gpus, allow_none=True)
        check_count("MirroredStrategy", "num_replicas", num_replicas, allow_none=True)
        use_gpu = False
        if devices is not None:
            kinds = []
            for d in devices:
                m = re.fullmatch(r"/?(?:job:\w+/)?(?:device:)?(cpu|gpu):(\d+)",
                                 str(d).strip().lower())
                if m is None:
                    raise ValueError(f"MirroredStrategy expects devices like '/gpu:0' "
                                     f"or '/cpu:0'. Received: {d!r}")
                kinds.append(m.group(1))
            if not kinds or len(set(kinds)) != 1:
                raise ValueError(f"MirroredStrategy expects a non-empty list of all-CPU "
                                 f"or all-GPU devices. Received: devices={devices!r}")
            use_gpu, count = kinds[0] == "gpu", len(kinds)
        elif num_gpus is not None:
            use_gpu, count = True, num_gpus
        else:
            count = num_replicas
        nodes = [res for _, res in cluster_summary()]
        if use_gpu and devices is not None and not any(r.get("GPU", 0)
                                                        for r in nodes):
            # TF's soft placement (the Estimator's default session config):
            # GPU devices on a machine without GPUs run on the CPU.
            log.warning("MirroredStrategy(devices=%s): the Ray cluster has no GPU; "
                        "running %d CPU replicas instead (soft placement).",
                        list(devices), count)
            use_gpu = False
        if use_gpu:
            most = max((r.get("GPU", 0) for r in nodes), default=0)
            if count > most:
                raise ValueError(
                    f"MirroredStrategy needs {count} GPUs on one node. Received: the "
                    f"Ray cluster's largest node has {most:g} GPUs. Use num_replicas= "
                    f"for CPU replicas.")
        elif count is None:
            gpus = max((r.get("GPU", 0) for r in nodes), default=0)
            if gpus:
                use_gpu, count = True, int(gpus)
            else:
                count = int(max((r.get("CPU", 0) for r in nodes),
                                default=os.cpu_count() or 1)) or 1
        opts = CommunicationOptions.check("MirroredStrategy", communication_options)
        transport = _transport(cross_device_ops)
        if transport == "auto" and opts.implementation != "auto":
            transport = opts.implementation
        if use_gpu and transport == "auto":
            transport = "nccl"  # GPU buffers reduced on the devices
        elif transport == "nccl" and not use_gpu:
            raise ValueError("MirroredStrategy's NCCL allreduce needs GPU replicas "
                             "(devices=['/gpu:0', ...] or num_gpus=). Received: CPU "
                             "replicas; use cross_device_ops=None (shared memory).")
        cpus = 1.0
        if not use_gpu:  # the node's cores shared out (BLAS / numba threads)
            node = int(max((r.get("CPU", 0) for r in nodes), default=1))
            cpus = float(max(1, min(node, os.cpu_count() or 1) // count))
        self._setup(count, opts, transport=transport, use_gpu=use_gpu,
                    max_failures=max_failures, cpus_per_replica=cpus)
