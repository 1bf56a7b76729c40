"""A cluster task's threads: its share of its host's cores.

Every process of a job started without Ray (a ``TF_CONFIG`` worker of
``MultiWorkerMirroredStrategy``, a ``tf.train.Server`` task) would otherwise
run BLAS and numba on every core of its host, as would each of the other
tasks there: two TF_CONFIG workers of a small convnet on 2 cores trained at
56 samples/s. Each task takes ``cores // tasks on this host`` threads (at
least 1), as Ray gives each actor the CPUs it reserved (``OMP_NUM_THREADS``,
``backend/jit.py``); the thread variables the user set win.
"""

from __future__ import annotations

import logging
import os

from kerasflow.backend import jit
from kerasflow.distribute.cluster_resolver import local_tasks

__all__ = ["share_host_cores"]

log = logging.getLogger("kerasflow.distribute")
_LOGGED: list = []  # the first task's line, logged once per process


def share_host_cores(addresses, task: str) -> dict:
    """Caps this process's BLAS and numba threads at its share of the host.

    Args:
        addresses: the ``"host:port"`` of every task of the cluster.
        task: this task, for the log line (e.g. ``"TF_CONFIG task 0"``).

    Returns:
        ``jit.share_threads``'s ``{"blas", "numba", "user"}`` plus ``cores``,
        ``local_tasks`` and ``share``.
    """
    cores = os.cpu_count() or 1
    local = max(1, local_tasks(addresses))
    share = max(1, cores // local)
    got = dict(jit.share_threads(share), cores=cores, local_tasks=local, share=share)
    if not _LOGGED:
        _LOGGED.append(task)
        kept = (f"; kept the user's {', '.join(got['user'])}" if got["user"] else "")
        log.info("%s: %d cores, %d tasks of the cluster on this host: BLAS threads "
                 "%s, numba threads %s%s", task, cores, local, got["blas"],
                 got["numba"], kept)
    return got
