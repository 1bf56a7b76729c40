"""Pickling graphs without recursion: a graph travels as one flat node table.

Python's pickle follows object references recursively, so a chain of a few
hundred ops exceeds the recursion limit. Here a graph is packed into a table of
plain records in topological order (inputs as indices into the table), found by
an iterative walk, so depth costs nothing. Each Variable's value is stored once
per table (as numpy, so a graph moves between numpy and cupy).

Identity: every node has a ``uid`` unique across processes, and an unpacked copy
keeps it. Unpickling builds a copy with its own Variables, never touching the
original; within a process there is at most one live copy per original node, so
tensors pickled separately (``pickle.dumps((x, loss, train_op))``) come back
wired to the same copied nodes and Variables. A placeholder is recognised by its
``uid``: the original placeholder feeds a pickled copy of its graph (``Function``
matches fed placeholders by uid).
(A graph is data, TensorFlow, Abadi et al., OSDI 2016, §3: the GraphDef.)
"""

from __future__ import annotations

import weakref

from kerasflow.backend import array as _array
from kerasflow.backend.graph import Node, SymbolicTensor, TensorSpec, _node_ids, walk
from kerasflow.backend.variables import Variable

__all__ = ["GraphPack", "pack", "unpack"]

# uid -> the live copy made in this process (originals are never in it).
_COPIES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

class GraphPack:
    """The graph behind ``roots`` as a flat, picklable table.

    Args:
        roots: list of ``SymbolicTensor`` (Variables included) to carry.

    ``unpack()`` returns tensors corresponding to ``roots``, in order.
    """

    __slots__ = ("records", "roots")

    def __init__(self, roots=None, records=None, root_refs=None):
        if records is not None:
            self.records, self.roots = records, root_refs
            return
        roots = list(roots)
        order = walk(roots)
        index = {id(n): i for i, n in enumerate(order)}
        records = []
        for node in order:
            inputs = tuple((index[id(t.node)], t.index) for t in node.inputs)
            outputs = tuple((t.shape, t.dtype.str) for t in node.outputs)
            if node.op == "Variable":
                var = node.attrs["variable"]
                attrs = {"value": _array.to_numpy(var.value),
                         "trainable": var.trainable, "constraint": var.constraint}
            else:
                attrs = node.attrs
            records.append((node.uid, node.op, node.name, attrs, inputs, outputs))
        self.records = records
        self.roots = [(index[id(t.node)], t.index) for t in roots]

    def __reduce__(self):
        return (GraphPack, (None, self.records, self.roots))

    def unpack(self) -> list:
        """The root tensors, rebuilt as a copy of the graph (shared, see above)."""
        nodes = []
        for record in self.records:
            node = _COPIES.get(record[0])
            if node is None:
                node = _COPIES[record[0]] = _rebuild(*record, nodes)
            nodes.append(node)
        return [nodes[i].outputs[k] for i, k in self.roots]


def _rebuild(uid, op, name, attrs, inputs, outputs, nodes):
    node = Node.__new__(Node)
    node.id = next(_node_ids)  # ids are per process; topological order is kept
    node.uid = uid
    node.op = op
    node.name = name
    node.inputs = tuple(nodes[i].outputs[k] for i, k in inputs)
    if op == "Variable":
        (shape, dtype), = outputs
        var = Variable.__new__(Variable)
        SymbolicTensor.__init__(var, node, 0, shape, dtype)
        value = _array.to_device(attrs["value"])
        # ray.get hands out read-only shared memory; updates need a private copy.
        if not getattr(getattr(value, "flags", None), "writeable", True):
            value = value.copy()
        var.value = value
        var.trainable = attrs["trainable"]
        var.constraint = attrs["constraint"]
        node.attrs = {"variable": var}
        node.outputs = (var,)
    else:
        node.attrs = attrs
        node.outputs = tuple(SymbolicTensor(node, i, shape, dtype)
                             for i, (shape, dtype) in enumerate(outputs))
    return node


def pack(tensors) -> GraphPack:
    """``GraphPack(tensors)``: one table for all of them (each Variable once)."""
    return GraphPack(tensors)


def unpack(graph_pack: GraphPack) -> list:
    """``graph_pack.unpack()``."""
    return graph_pack.unpack()


def _unpack_one(graph_pack):
    return graph_pack.unpack()[0]


def _reduce_tensor(self):
    return (_unpack_one, (GraphPack([self]),))


def _reduce_node(self):
    return (_node_of, (GraphPack([self.outputs[0]]),))


def _node_of(graph_pack):
    return graph_pack.unpack()[0].node


def _reduce_spec(self):
    return (TensorSpec, (self.shape, self.dtype.str))


SymbolicTensor.__reduce__ = _reduce_tensor
Node.__reduce__ = _reduce_node
TensorSpec.__reduce__ = _reduce_spec
