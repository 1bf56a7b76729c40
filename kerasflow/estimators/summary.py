"""TensorBoard event files for an Estimator, on ``kerasflow.summary``.

``EventWriter`` is a ``kerasflow.summary.FileWriter`` that writes scalars and,
once, the graph (``kerasflow.utils.graph_def``: one ``NodeDef`` per node, named
as ``name_scope`` made it, so TensorBoard's Graphs tab groups nodes by scope),
and that does nothing, after one warning, when tensorboardX is not installed
(an Estimator trains without it, as TF's does without TensorBoard).
``read_events`` and ``read_scalars`` are ``kerasflow.summary``'s.
"""

from __future__ import annotations

import itertools
import os
import warnings

from kerasflow.summary import FileWriter, read_events, read_scalars

__all__ = ["EventWriter", "read_events", "read_scalars"]

_warned = []
_suffix = itertools.count()


class EventWriter:
    """Writes scalars (and once, the graph) to ``logdir``; no-op without tensorboardX.

    Args:
        logdir: folder for ``events.out.tfevents.*`` files.
    """

    def __init__(self, logdir):
        # A unique suffix: two writers opened in the same second never share a
        # file name (tensorboardX names files by time and host only).
        suffix = f".{os.getpid()}.{next(_suffix)}"
        try:
            self._w = FileWriter(logdir, flush_secs=30, filename_suffix=suffix)
        except ImportError:
            if not _warned:
                warnings.warn("tensorboardX is not installed: no TensorBoard event "
                              "files are written (pip install tensorboardX).",
                              stacklevel=2)
                _warned.append(True)
            self._w = None

    def scalar(self, tag, value, step):
        """Writes ``float(value)`` as scalar ``tag`` at global step ``step``."""
        if self._w is not None:
            self._w.add_scalar(tag, float(value), int(step))

    def graph(self, nodes):
        """Writes the GraphDef of ``nodes`` (TF's ``FileWriter(logdir, graph)``)."""
        if self._w is None:
            return
        from kerasflow.utils.graph_def import graph_def_from_tensors

        self._w.add_graph(graph_def_from_tensors(nodes))

    def flush(self):
        """Writes buffered events to disk."""
        if self._w is not None:
            self._w.flush()

    def close(self):
        """Flushes and closes the event file."""
        if self._w is not None:
            self._w.close()
            self._w = None
