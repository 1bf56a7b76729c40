"""TensorBoard event files for an Estimator: scalars, the graph, a reader.

Scalars are written with tensorboardX's ``SummaryWriter``; the graph is a
``GraphDef`` protobuf (tensorboardX's copy of TF's schema) with one ``NodeDef``
per graph node, named as ``name_scope`` made it, so TensorBoard's Graphs tab
groups nodes by scope. ``read_events`` parses event files back (TFRecord
framing: length, CRC, payload, CRC) for tests and tools.
"""

from __future__ import annotations

import glob
import itertools
import os
import struct
import warnings

__all__ = ["EventWriter", "graph_def", "read_events", "read_scalars"]

_warned = []
_suffix = itertools.count()


def _tbx():
    try:
        import tensorboardX
    except ImportError:
        if not _warned:
            warnings.warn("tensorboardX is not installed: no TensorBoard event "
                          "files are written (pip install tensorboardX).",
                          stacklevel=3)
            _warned.append(True)
        return None
    return tensorboardX


def graph_def(nodes):
    """A ``GraphDef`` protobuf of kerasflow ``Node`` s (name, op, inputs, shape)."""
    from tensorboardX.proto import (
        attr_value_pb2,
        graph_pb2,
        node_def_pb2,
    )

    gd = graph_pb2.GraphDef()
    for node in nodes:
        nd = node_def_pb2.NodeDef(name=node.name, op=node.op)
        for t in node.inputs:
            nd.input.append(t.node.name if t.index == 0
                            else f"{t.node.name}:{t.index}")
        if node.outputs:
            out = node.outputs[0]
            nd.attr["dtype"].CopyFrom(attr_value_pb2.AttrValue(
                s=out.dtype.name.encode()))
            nd.attr["shape"].CopyFrom(attr_value_pb2.AttrValue(
                s=str(out.shape).encode()))
        gd.node.append(nd)
    return gd


class EventWriter:
    """Writes scalars (and once, the graph) to ``logdir``; no-op without tensorboardX.

    Args:
        logdir: folder for ``events.out.tfevents.*`` files.
    """

    def __init__(self, logdir):
        tbx = _tbx()
        # A unique suffix: two writers opened in the same second never share a
        # file name (tensorboardX names files by time and host only).
        suffix = f".{os.getpid()}.{next(_suffix)}"
        self._w = None if tbx is None else tbx.SummaryWriter(
            logdir, flush_secs=30, filename_suffix=suffix)

    def scalar(self, tag, value, step):
        if self._w is not None:
            self._w.add_scalar(tag, float(value), int(step))

    def graph(self, nodes):
        """Writes the GraphDef of ``nodes`` (TF's ``FileWriter(logdir, graph)``)."""
        if self._w is None:
            return
        from tensorboardX.proto import event_pb2

        gd = graph_def(nodes)
        self._w._get_file_writer().add_event(
            event_pb2.Event(graph_def=gd.SerializeToString()))

    def flush(self):
        if self._w is not None:
            self._w.flush()

    def close(self):
        if self._w is not None:
            self._w.close()
            self._w = None


def _records(path):
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack("<Q", data[pos:pos + 8])
        start = pos + 12
        if start + length + 4 > len(data):
            return  # a record still being written
        yield data[start:start + length]
        pos = start + length + 4


def read_events(logdir):
    """Every ``Event`` protobuf in ``logdir``'s event files, in file order."""
    from tensorboardX.proto import event_pb2

    out = []
    pattern = os.path.join(glob.escape(os.fspath(logdir)), "events.out.tfevents.*")
    for path in sorted(glob.glob(pattern)):
        for rec in _records(path):
            ev = event_pb2.Event()
            ev.ParseFromString(rec)
            out.append(ev)
    return out


def read_scalars(logdir) -> dict:
    """``{tag: [(step, value), ...]}`` from ``logdir``'s event files."""
    out: dict = {}
    for ev in read_events(logdir):
        for v in ev.summary.value:
            out.setdefault(v.tag, []).append((ev.step, v.simple_value))
    return out
