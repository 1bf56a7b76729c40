"""TensorBoard event files: ``FileWriter`` (graph and summaries) and a reader.

``FileWriter`` is TF1's ``tf.summary.FileWriter`` on tensorboardX's event-file
writer: it creates ``events.out.tfevents.<time>.<host>`` in ``logdir`` and
writes the graph (a ``GraphDef``, which TensorBoard's Graphs tab draws) and
``Summary`` protobufs (scalars, histograms) at global steps.
``read_events`` parses such files back (TFRecord framing, CRC-checked), for
tests and tools.

The Keras ``TensorBoard`` callback, the Estimator and ``compat.v1.summary``
write through it. tensorboardX is imported on first use only, and without
torch, by ``kerasflow.utils.module_utils.import_tensorboardx`` (re-exported
here); the graph becomes a ``GraphDef`` in ``kerasflow.utils.graph_def``.

Example:
    >>> writer = FileWriter("logs/run1", graph=[train_op])
    >>> writer.add_scalar("loss", 0.25, global_step=10)
    >>> writer.close()
    >>> [e.summary.value[0].simple_value for e in read_events("logs/run1")
    ...  if e.HasField("summary")]
    [0.25]
"""

from __future__ import annotations

import glob
import itertools
import os
import struct
import warnings

from kerasflow.utils.graph_def import graph_def_from_tensors
from kerasflow.utils.module_utils import import_tensorboardx

__all__ = ["FileWriter", "histogram_summary", "import_tensorboardx",
           "merge_summaries", "open_writer", "read_events", "read_scalars",
           "scalar_summary"]

_writer_ids = itertools.count()
_warned_missing = []


def _tbx():
    tbx = import_tensorboardx()
    return (tbx, import_tensorboardx("proto.event_pb2"),
            import_tensorboardx("proto.summary_pb2"))


def scalar_summary(tag: str, value) -> bytes:
    """A serialized ``Summary`` holding one scalar (``simple_value``)."""
    tbx_summary = _tbx()[0].summary
    return tbx_summary.scalar(tag, float(value)).SerializeToString()


def histogram_summary(tag: str, values) -> bytes:
    """A serialized ``Summary`` holding a histogram of ``values`` (any shape)."""
    import numpy as np  # noqa: PLC0415

    tbx_summary = _tbx()[0].summary

    values = np.asarray(values, dtype=np.float64).reshape(-1)
    return tbx_summary.histogram(tag, values, "auto").SerializeToString()


def merge_summaries(serialized) -> bytes:
    """One serialized ``Summary`` with the values of all ``serialized`` ones."""
    _, _, summary_pb2 = _tbx()
    out = summary_pb2.Summary()
    for s in serialized:
        out.MergeFromString(s)
    return out.SerializeToString()


def _as_graph_def(graph):
    if hasattr(graph, "SerializeToString"):  # already a GraphDef
        return graph
    if hasattr(graph, "as_graph_def"):  # compat.v1 Graph
        return graph.as_graph_def()
    roots = graph if isinstance(graph, (list, tuple)) else [graph]
    return graph_def_from_tensors(roots)


class FileWriter:
    """Writes TensorBoard event files: the graph and summaries.

    Args:
        logdir: str or path of the folder (created if missing).
        graph: None; a ``GraphDef``; an object with ``as_graph_def()`` (a
            ``kerasflow.compat.v1`` ``Graph``, ``sess.graph``); or a tensor or
            list of tensors, whose graph (everything they depend on) is written.
        max_queue: events buffered before a write.
        flush_secs: seconds between automatic flushes.
        filename_suffix: appended to the event file name, after
            ``.<pid>.<n>``, unique per writer of the process: two writers
            opened in the same second never share a file (tensorboardX names
            files by time and host only).

    Raises:
        ImportError: tensorboardX is not installed.
        TypeError: a ``graph`` of another kind.

    Example:
        >>> with FileWriter("logs", graph=loss) as w:
        ...     w.add_scalar("loss", 1.5, 0)
    """

    def __init__(self, logdir, graph=None, max_queue: int = 10,
                 flush_secs: float = 120, filename_suffix: str = "", **kwargs):
        tbx, self._event_pb2, self._summary_pb2 = _tbx()
        self.logdir = os.fspath(logdir)
        os.makedirs(self.logdir, exist_ok=True)
        unique = f".{os.getpid()}.{next(_writer_ids)}{filename_suffix}"
        self._writer = tbx.FileWriter(self.logdir, max_queue=max_queue,
                                      flush_secs=flush_secs, filename_suffix=unique)
        if graph is not None:
            self.add_graph(graph)

    def get_logdir(self) -> str:
        """The folder the event file is in."""
        return self.logdir

    def add_graph(self, graph, global_step: int | None = None) -> None:
        """Writes ``graph`` (see the class docstring) as a ``graph_def`` event."""
        graph_def = _as_graph_def(graph)
        self._writer.add_event(
            self._event_pb2.Event(graph_def=graph_def.SerializeToString()),
            global_step)

    def add_summary(self, summary, global_step: int | None = None) -> None:
        """Writes a ``Summary``: a protobuf, or its serialized bytes (what
        ``sess.run(tf.summary.merge_all())`` returns).

        Raises:
            TypeError: anything else.
        """
        if isinstance(summary, (bytes, bytearray)):
            summary = self._summary_pb2.Summary.FromString(bytes(summary))
        elif not isinstance(summary, self._summary_pb2.Summary):
            raise TypeError(f"add_summary expects a Summary protobuf or its "
                            f"serialized bytes. Received: {type(summary).__name__}.")
        self._writer.add_summary(
            summary, None if global_step is None else int(global_step))

    def add_scalar(self, tag: str, value, global_step: int | None = None) -> None:
        """Writes one scalar summary ``tag`` = ``float(value)`` at ``global_step``."""
        self.add_summary(scalar_summary(tag, value), global_step)

    def add_event(self, event) -> None:
        """Writes an ``Event`` protobuf as it is."""
        self._writer.add_event(event, event.step if event.step else None,
                               event.wall_time or None)

    def flush(self) -> None:
        """Writes buffered events to disk."""
        self._writer.flush()

    def close(self) -> None:
        """Flushes and closes the event file."""
        self._writer.close()

    def reopen(self) -> None:
        """After ``close``, starts a new event file in the same folder."""
        self._writer.reopen()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class _Discard:
    """A writer that drops everything (``open_writer`` without tensorboardX)."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def open_writer(logdir, **kwargs):
    """``FileWriter(logdir, **kwargs)``, or without tensorboardX a writer that
    drops everything, after one warning: for event files that are a side
    product of training (the Estimator's, as TF's trains without TensorBoard).
    """
    try:
        return FileWriter(logdir, **kwargs)
    except ImportError:
        if not _warned_missing:
            warnings.warn("tensorboardX is not installed: no TensorBoard event "
                          "files are written (pip install tensorboardX).",
                          stacklevel=2)
            _warned_missing.append(True)
        return _Discard()


def _masked_crc(data: bytes) -> int:
    crc = import_tensorboardx("crc32c").crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_events(path) -> list:
    """Every ``Event`` protobuf in an event file, or in all of a folder's.

    Args:
        path: an event file, or a folder whose ``events.out.tfevents.*`` files
            are read in name (= creation time) order.

    Returns:
        List of ``tensorboardX.proto.event_pb2.Event``, file order.

    Raises:
        FileNotFoundError: no event file there.
        ValueError: a truncated record or a CRC mismatch (a corrupt file),
            naming the file and the byte offset.
    """
    _, event_pb2, _ = _tbx()
    path = os.fspath(path)
    files = (sorted(glob.glob(os.path.join(path, "events.out.tfevents.*")))
             if os.path.isdir(path) else [path])
    if not files or not all(os.path.exists(f) for f in files):
        raise FileNotFoundError(f"No TensorBoard event file at '{path}'.")
    events = []
    for name in files:
        with open(name, "rb") as f:
            raw = f.read()
        pos = 0
        while pos < len(raw):
            if pos + 12 > len(raw):
                raise ValueError(f"Truncated record header in '{name}' at byte "
                                 f"{pos}.")
            header = raw[pos:pos + 8]
            (length,) = struct.unpack("<Q", header)
            (hcrc,) = struct.unpack("<I", raw[pos + 8:pos + 12])
            data = raw[pos + 12:pos + 12 + length]
            end = pos + 12 + length + 4
            if end > len(raw):
                raise ValueError(f"Truncated record in '{name}' at byte {pos}.")
            (dcrc,) = struct.unpack("<I", raw[end - 4:end])
            if hcrc != _masked_crc(header) or dcrc != _masked_crc(data):
                raise ValueError(f"CRC mismatch in '{name}' at byte {pos}: the "
                                 f"event file is corrupt.")
            events.append(event_pb2.Event.FromString(data))
            pos = end
    return events


def read_scalars(path) -> dict:
    """``{tag: [(step, value), ...]}`` of the scalar summaries in ``path``.

    Args:
        path: an event file or a folder, as for ``read_events``.

    Raises:
        FileNotFoundError / ValueError: as ``read_events``.
    """
    out: dict = {}
    for ev in read_events(path):
        for v in ev.summary.value:
            if v.HasField("simple_value"):
                out.setdefault(v.tag, []).append((ev.step, v.simple_value))
    return out
