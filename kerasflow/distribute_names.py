"""The rest of tf.distribute's names for programs written against TF 1.14+:
``OneDeviceStrategy``, ``InputReplicationMode``, ``experimental``
(``MultiWorkerMirroredStrategy``, ``ParameterServerStrategy``,
``CollectiveCommunication``) and ``cluster_resolver.TFConfigClusterResolver``.
Each is the one kerasflow object under TF's name, or a thin adapter of
TF's arguments onto it; the Ray strategies load on first use.
"""

from __future__ import annotations

import enum
import importlib
import json
import os
import re
import types

from kerasflow.distribute_lib import DefaultStrategy

__all__ = ["CollectiveCommunication", "InputReplicationMode", "OneDeviceStrategy",
           "TFConfigClusterResolver", "cluster_resolver", "experimental"]


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


class OneDeviceStrategy(DefaultStrategy):
    """``tf.distribute.OneDeviceStrategy(device)``: one replica in this
    process (``run`` is eager, ``reduce`` of a plain value is itself).

    Args:
        device: ``"/cpu:0"`` or ``"/gpu:0"`` (the backend's device is set
            with ``kerasflow.backend.set_device``; this records the name).

    Raises:
        ValueError: a device string that is not ``/cpu:N`` or ``/gpu:N``.
    """

    def __init__(self, device):
        if not re.fullmatch(r"/?(?:job:\w+/)?(?:device:)?(cpu|gpu):\d+",
                            str(device).strip().lower()):
            raise ValueError(f"OneDeviceStrategy expects a device like '/cpu:0' or "
                             f"'/gpu:0'. Received: {device!r}")
        self.device = device


def _mwms(communication=CollectiveCommunication.AUTO, cluster_resolver=None, **kwargs):
    """TF 2.0-2.3's ``experimental.MultiWorkerMirroredStrategy(communication,
    cluster_resolver)``: the one ``MultiWorkerMirroredStrategy``."""
    strategies = importlib.import_module("kerasflow.strategies.sync_strategy")
    multi = importlib.import_module("kerasflow.strategies.multi_worker")
    if not isinstance(communication, CollectiveCommunication):
        raise TypeError(f"communication expects a CollectiveCommunication. "
                        f"Received: {communication!r}")
    if communication is not CollectiveCommunication.AUTO:
        kwargs.setdefault("communication_options", strategies.CommunicationOptions(
            implementation=communication.value))
    return multi.MultiWorkerMirroredStrategy(cluster_resolver=cluster_resolver, **kwargs)


def _ps(*args, **kwargs):
    return importlib.import_module(
        "kerasflow.strategies.parameter_server").ParameterServerStrategy(*args, **kwargs)


def _comm_options(*args, **kwargs):
    """``tf.distribute.experimental.CommunicationOptions`` (kerasflow's, with
    its ``port_range`` and ``interface`` additions)."""
    return importlib.import_module(
        "kerasflow.strategies.sync_strategy").CommunicationOptions(*args, **kwargs)


experimental = types.SimpleNamespace(
    MultiWorkerMirroredStrategy=_mwms, ParameterServerStrategy=_ps,
    CollectiveCommunication=CollectiveCommunication,
    CommunicationImplementation=CollectiveCommunication,
    CommunicationOptions=_comm_options)


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
        from kerasflow.strategies.cluster import ClusterSpec, load_tf_config

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


cluster_resolver = types.SimpleNamespace(TFConfigClusterResolver=TFConfigClusterResolver)
