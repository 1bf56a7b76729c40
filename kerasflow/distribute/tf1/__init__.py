"""TF1 between-graph tasks on Ray: ``server`` (``tf.train.Server`` for a
``ClusterSpec`` task), ``ps_task`` (a ps task's variables), ``ray_process``
(the processes a task starts). Internal: the public names are in
``kerasflow.compat.v1.train``."""

from __future__ import annotations

__all__: list[str] = []
