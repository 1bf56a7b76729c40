"""``tf.summary``: summary ops, ``merge_all`` and ``FileWriter`` (TF1).

Exposed as ``kerasflow.compat.v1.summary`` (``tf.summary``); the file is named
for what it holds, apart from ``kerasflow.summary`` (the event-file writer).

A summary op records which tensor to report under which tag; fetching it in a
``Session`` (alone or merged) computes those tensors in the same run and
returns one serialized ``Summary`` protobuf (bytes), which
``FileWriter.add_summary(summary, step)`` writes, exactly the TF1 flow::

    tf.summary.scalar("loss", loss)
    merged = tf.summary.merge_all()
    writer = tf.summary.FileWriter(logdir, sess.graph)
    summary, _ = sess.run([merged, train_op], feed_dict)
    writer.add_summary(summary, step)

The writer is ``kerasflow.summary.FileWriter`` (tensorboardX event files);
TensorBoard shows the graph and the scalars/histograms.
"""

from __future__ import annotations

from kerasflow import backend as K
from kerasflow import summary as _kf_summary
from kerasflow.backend.default_session import get_default_session
from kerasflow.compat.v1 import graph as G
from kerasflow.compat.v1._missing import missing_attribute

__all__ = ["scalar", "histogram", "merge_all", "merge", "FileWriter",
           "SummaryOp", "expand_fetches"]


class SummaryOp:
    """A fetchable summary: (kind, tag, tensor) items, serialized when run."""

    def __init__(self, items):
        self.items = list(items)

    @property
    def name(self):
        return ",".join(tag for _, tag, _ in self.items)

    def serialize(self, values) -> bytes:
        parts = []
        for (kind, tag, _), value in zip(self.items, values):
            if kind == "scalar":
                parts.append(_kf_summary.scalar_summary(tag, value))
            else:
                parts.append(_kf_summary.histogram_summary(tag, value))
        return _kf_summary.merge_summaries(parts)

    def eval(self, feed_dict=None, session=None):
        session = session or get_default_session()
        if session is None:
            raise ValueError("Cannot evaluate a summary op: no default session. "
                             "Use `with tf.Session() as sess:` or "
                             "eval(session=sess).")
        return session.run(self, feed_dict)

    def __repr__(self):
        return f"<SummaryOp {self.name}>"


def _summary(kind, name, tensor, collections):
    op = SummaryOp([(kind, name, G.as_tensor(tensor))])
    for c in (collections if collections is not None
              else [G.GraphKeys.SUMMARIES]):
        G.add_to_collection(c, op)
    return op


def scalar(name, tensor, collections=None, family=None):
    """Reports the scalar ``tensor`` under tag ``name`` when fetched."""
    return _summary("scalar", name, tensor, collections)


def histogram(name, values, collections=None, family=None):
    """Reports a histogram of ``values`` (any shape) under tag ``name``."""
    return _summary("histogram", name, values, collections)


def merge(inputs, collections=None, name=None):
    """One summary op reporting every op of ``inputs``."""
    items = [item for op in inputs if op is not None for item in op.items]
    op = SummaryOp(items)
    for c in collections or []:
        G.add_to_collection(c, op)
    return op


def merge_all(key=G.GraphKeys.SUMMARIES, scope=None, name=None):
    """All summary ops of collection ``key`` merged; None if there is none."""
    ops = [op for op in G.get_collection(key) if isinstance(op, SummaryOp)]
    return merge(ops) if ops else None


class FileWriter(_kf_summary.FileWriter):
    """``tf.summary.FileWriter(logdir, graph=None, max_queue=10,
    flush_secs=120, graph_def=None, filename_suffix=None)``: writes the graph
    (``sess.graph``) and summaries for TensorBoard."""

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120,
                 graph_def=None, filename_suffix=None, session=None):
        super().__init__(logdir, graph if graph is not None else graph_def,
                         max_queue=max_queue, flush_secs=flush_secs,
                         filename_suffix=filename_suffix or "")


def expand_fetches(fetches):
    """(fetches with summary ops replaced by their tensors, rebuild function)."""
    found = []

    def sub(x):
        if isinstance(x, SummaryOp):
            found.append(x)
            return [t for _, _, t in x.items]
        if isinstance(x, dict):
            return {k: sub(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)) and not isinstance(x, K.SymbolicTensor):
            return type(x)(sub(v) for v in x)
        return x

    plain = sub(fetches)
    if not found:
        return fetches, lambda values: values

    def rebuild(orig, value):
        if isinstance(orig, SummaryOp):
            return orig.serialize(value)
        if isinstance(orig, dict):
            return {k: rebuild(orig[k], value[k]) for k in orig}
        if isinstance(orig, (list, tuple)):
            return type(orig)(rebuild(o, v) for o, v in zip(orig, value))
        return value

    return plain, lambda values: rebuild(fetches, values)


__getattr__ = missing_attribute("tf.summary", globals())
