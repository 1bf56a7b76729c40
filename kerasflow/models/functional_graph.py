"""The graph of a functional model: its layer calls and the raw ops between them.

``Model(inputs, outputs)`` keeps everything between its inputs and outputs, as
Keras 3's functional API does (each op on a ``KerasTensor`` is an operation
of the graph): layer calls (recorded by ``Layer.__call__``) and backend ops
applied directly to symbolic tensors (``a + b``, ``ops.concatenate``,
``x[:, 0]``). Both are found with the one graph walk (``backend.walk``),
which steps over a layer call straight to that call's inputs, so the ops
inside a layer stay the layer's business. Replaying the steps on new tensors
is how the model is called (with the ``training`` flag of the call).
"""

from __future__ import annotations

from kerasflow import backend as K
from kerasflow import tree
from kerasflow.layers.base import get_history
from kerasflow.layers.core import InputLayer
from kerasflow.utils.serialization import to_snake_case

__all__ = ["Step", "trace", "replay", "is_leaf", "op_names"]

# Ops whose outputs are graph leaves between layers: kept as they are on replay.
_LEAF_OPS = ("Const", "Variable")


class Step:
    """One step of a functional model: a layer call or an op application.

    Attributes:
        layer: the ``Layer`` called, or None for an op.
        record: the layer's ``CallRecord`` (None for an op).
        node: the backend ``Node`` of the op (None for a layer call).
    """

    __slots__ = ("layer", "record", "node")

    def __init__(self, layer=None, record=None, node=None):
        self.layer, self.record, self.node = layer, record, node

    @property
    def outputs(self):
        """The step's output tensors, flat."""
        if self.node is not None:
            return list(self.node.outputs)
        return tree.flatten(self.record.outputs)


def op_names(steps, taken) -> dict:
    """``{id(node): name}`` for the op steps: the op in snake case, made unique
    against ``taken`` (a set of names, extended here) as Keras names
    operations ("add", "add_1")."""
    names = {}
    for step in steps:
        if step.node is not None:
            base, k = to_snake_case(step.node.op), 1
            name = base
            while name in taken:
                name, k = f"{base}_{k}", k + 1
            taken.add(name)
            names[id(step.node)] = name
    return names


def is_leaf(t) -> bool:
    """True for a constant, a Variable or another op without inputs (other
    than a placeholder): kept unchanged when a graph is replayed."""
    return K.is_symbolic(t) and _is_leaf_node(t.node)


def _is_leaf_node(node):
    return node.op in _LEAF_OPS or (not node.inputs and node.op != "Placeholder")


def _call_of(node):
    for t in node.outputs:
        hist = get_history(t)
        if hist is not None:
            return hist
    return None


def trace(inputs, outputs, input_names):
    """The steps from ``inputs`` (flat list) to ``outputs`` (flat list), in order.

    Args:
        inputs: the model's input tensors.
        outputs: the model's output tensors.
        input_names: names of the inputs, for error messages.

    Returns:
        list of ``Step``, each after the steps producing its inputs.

    Raises:
        ValueError: an output depends on a tensor that is none of the inputs, no
            constant and not computed from them ("graph disconnected"), naming it.
    """
    input_nodes = {id(t.node) for t in inputs}

    def inputs_of(node):
        if id(node) in input_nodes or _is_leaf_node(node):
            return ()
        hist = _call_of(node)
        if hist is not None:
            layer, record = hist[0], hist[1]
            if isinstance(layer, InputLayer):
                raise ValueError(
                    f"Graph disconnected: the outputs depend on input "
                    f"'{layer.name}', which is not among the model's inputs. "
                    f"Received: inputs={input_names}.")
            return [t for t in tree.flatten([record.inputs, record.kwargs])
                    if K.is_symbolic(t)]
        if node.op == "Placeholder":
            raise ValueError(
                f"Graph disconnected: cannot reach tensor '{node.name}' "
                f"(op {node.op}) from the model inputs {input_names}. Every "
                f"output must be computed from the inputs by layers or ops.")
        return node.inputs

    steps, seen = [], set()
    for node in K.walk(outputs, inputs_of=inputs_of):
        if id(node) in input_nodes or _is_leaf_node(node):
            continue
        hist = _call_of(node)
        if hist is None:
            steps.append(Step(node=node))
        elif id(hist[1]) not in seen:  # a call with several outputs, once
            seen.add(id(hist[1]))
            steps.append(Step(hist[0], hist[1]))
    return steps


def replay(steps, old_inputs, new_inputs, outputs_struct, training):
    """Runs ``steps`` on ``new_inputs`` in place of ``old_inputs``.

    Args:
        steps: from ``trace``.
        old_inputs, new_inputs: flat lists of tensors, matched by position.
        outputs_struct: the model's outputs (any nesting) to return anew.
        training: the ``training`` flag for layer calls that did not fix one.

    Returns:
        ``outputs_struct`` with each tensor replaced by its replayed value.
    """
    mapping = {id(o): n for o, n in zip(old_inputs, new_inputs)}

    def new(t):
        return mapping.get(id(t), t) if K.is_symbolic(t) else t

    for step in steps:
        if step.node is not None:
            out = K.apply(step.node.op, *[new(t) for t in step.node.inputs],
                          **step.node.attrs)
            out = out if isinstance(out, tuple) else (out,)
            for o, n in zip(step.node.outputs, out):
                mapping[id(o)] = n
                # softmax(logits) keeps its logits for the fused cross-entropy.
                logits = getattr(o, "_keras_logits", None)
                if logits is not None and id(logits) in mapping and \
                        K.is_symbolic(n):
                    n._keras_logits = mapping[id(logits)]
            continue
        record = step.record
        new_in = tree.map_structure(new, record.inputs)
        kwargs = tree.map_structure(new, dict(record.kwargs))
        if "training" in kwargs and kwargs["training"] is None:
            kwargs["training"] = training
        out = (step.layer(*new_in, **kwargs) if record.nargs
               else step.layer(new_in, **kwargs))
        for o, n in zip(tree.flatten(record.outputs), tree.flatten(out)):
            mapping[id(o)] = n
    return tree.map_structure(new, outputs_struct)
