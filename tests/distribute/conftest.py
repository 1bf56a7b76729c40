"""One Ray for every ``ray`` test: a simulated 3-node cluster
(``ray.cluster_utils.Cluster``), started once per session and shut down at
its end. Node 0 (the head) has 4 logical CPUs (and the machine's GPUs, if any) so 3-replica MirroredStrategy
tests place on one node of this 2-core machine; nodes 1 and 2 have 2 CPUs each
for MultiWorkerMirroredStrategy tests."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = str(Path(__file__).resolve().parents[2])
NODE_CPUS = (4, 2, 2)
OBJECT_STORE = 256 * 1024 * 1024


def _gpus():
    """The machine's CUDA devices go to the head node (``gpu`` tests)."""
    from kerasflow import backend as K
    if not K.gpu_available():
        return 0
    import cupy
    return int(cupy.cuda.runtime.getDeviceCount())


# Watches the test process; when it is gone (even SIGKILLed) it ends every
# process whose command line names this session's Ray folder: the Ray processes
# the fixture started, and only those.
_WATCHDOG = """
import os, signal, sys, time
parent, marker = int(sys.argv[1]), sys.argv[2]
while os.path.exists(f"/proc/{parent}"):
    time.sleep(1.0)
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != os.getpid():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
"""


def _sigterm_unwinds(signum, frame):
    raise KeyboardInterrupt("SIGTERM")  # pytest unwinds: the fixture stops Ray


@pytest.fixture(scope="session")
def ray_cluster():
    """The session's Ray cluster (``cluster.address``); ray is initialised."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster
    paths = [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    if ray.is_initialized():
        ray.shutdown()
    tmp = tempfile.mkdtemp(prefix="kf-ray-test-")
    watchdog = subprocess.Popen([sys.executable, "-c", _WATCHDOG, str(os.getpid()), tmp],
                                start_new_session=True)
    previous = signal.signal(signal.SIGTERM, _sigterm_unwinds)
    # Cluster writes the head's address under /tmp/ray whatever temp_dir says.
    os.makedirs(os.path.join(tempfile.gettempdir(), "ray"), exist_ok=True)
    cluster = Cluster(initialize_head=True, head_node_args=dict(
        num_cpus=NODE_CPUS[0], num_gpus=_gpus(), object_store_memory=OBJECT_STORE,
        resources={"node0": 1}, include_dashboard=False, temp_dir=tmp))
    for i, cpus in enumerate(NODE_CPUS[1:], start=1):
        cluster.add_node(num_cpus=cpus, num_gpus=0, object_store_memory=OBJECT_STORE,
                         resources={f"node{i}": 1})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, logging_level=logging.ERROR, log_to_driver=False)
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
        signal.signal(signal.SIGTERM, previous)
        watchdog.kill()
        watchdog.wait()
