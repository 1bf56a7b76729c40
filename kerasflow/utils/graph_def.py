"""A kerasflow graph as a TensorFlow ``GraphDef`` protobuf, for TensorBoard.

TensorBoard's Graphs tab reads a ``GraphDef`` (TensorFlow's graph protobuf)
from an event file. This module walks the nodes reachable from
some tensors and writes one ``NodeDef`` per node: its name (so name scopes
become TensorBoard's collapsible groups), op name, inputs (``"node"`` for
output 0, ``"node:k"`` otherwise, TF's convention), the output dtype as attr
``T``, the static output shapes as ``_output_shapes``, and the node's plain
scalar attributes. The protobuf classes are tensorboardX's (imported on first
use, so ``import kerasflow`` does not import tensorboardX).
"""

from __future__ import annotations

import numbers

import numpy as np

from kerasflow.backend.graph import walk
from kerasflow.utils.module_utils import import_tensorboardx

__all__ = ["graph_def_from_tensors", "collect_nodes"]

# numpy dtype name -> TensorFlow's DataType enum (types.proto).
_DT = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6,
       "int64": 9, "bool": 10, "uint16": 17, "float16": 19}
_PRODUCER = 27  # a GraphDef version TensorBoard reads without warnings


def collect_nodes(roots) -> list:
    """Every node reachable from ``roots`` (tensors or nodes), by creation id."""
    return sorted(walk(roots), key=lambda n: n.id)


def _attr(pb, value):
    if isinstance(value, bool | np.bool_):
        return pb.AttrValue(b=bool(value))
    if isinstance(value, numbers.Integral):
        return pb.AttrValue(i=int(value))
    if isinstance(value, numbers.Real):
        return pb.AttrValue(f=float(value))
    if isinstance(value, str):
        return pb.AttrValue(s=value.encode())
    if (isinstance(value, (list, tuple)) and value
            and all(isinstance(v, numbers.Integral) for v in value)):
        return pb.AttrValue(list=pb.AttrValue.ListValue(i=[int(v) for v in value]))
    return None


def _shape_proto(shape_pb, shape):
    if shape is None:
        return shape_pb.TensorShapeProto(unknown_rank=True)
    return shape_pb.TensorShapeProto(dim=[
        shape_pb.TensorShapeProto.Dim(size=-1 if d is None else int(d))
        for d in shape])


def graph_def_from_tensors(roots, devices: dict | None = None):
    """The ``GraphDef`` of every node that ``roots`` depend on.

    Args:
        roots: iterable of ``SymbolicTensor`` or ``Node``.
        devices: optional ``{node id: device string}`` (e.g. "/device:GPU:0"),
            written as each ``NodeDef.device``.

    Returns:
        A ``tensorboardX.proto.graph_pb2.GraphDef``.

    Raises:
        ImportError: tensorboardX is not installed.
        TypeError: a root that is neither a tensor nor a node.
    """
    attr_value_pb2, graph_pb2, node_def_pb2, tensor_shape_pb2, versions_pb2 = (
        import_tensorboardx(f"proto.{m}") for m in (
            "attr_value_pb2", "graph_pb2", "node_def_pb2", "tensor_shape_pb2",
            "versions_pb2"))
    devices = devices or {}
    node_defs = []
    for node in collect_nodes(roots):
        inputs = [t.node.name if t.index == 0 else f"{t.node.name}:{t.index}"
                  for t in node.inputs]
        nd = node_def_pb2.NodeDef(name=node.name, op=node.op, input=inputs,
                                  device=devices.get(node.id, ""))
        if node.outputs:
            dt = _DT.get(np.dtype(node.outputs[0].dtype).name)
            if dt is not None:
                nd.attr["T"].CopyFrom(attr_value_pb2.AttrValue(type=dt))
            shapes = [_shape_proto(tensor_shape_pb2, t.shape) for t in node.outputs]
            nd.attr["_output_shapes"].CopyFrom(attr_value_pb2.AttrValue(
                list=attr_value_pb2.AttrValue.ListValue(shape=shapes)))
        for key, value in (node.attrs or {}).items():
            a = _attr(attr_value_pb2, value)
            if a is not None:
                nd.attr[key].CopyFrom(a)
        node_defs.append(nd)
    return graph_pb2.GraphDef(node=node_defs,
                              versions=versions_pb2.VersionDef(producer=_PRODUCER))
