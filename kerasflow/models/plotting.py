"""``plot_model`` / ``model_to_dot``: a model's graph as Graphviz DOT through
pydot (Keras 3's ``keras.utils.plot_model``).

Nodes are the model's input layers, layer calls and, in a functional model,
the raw ops between layers; edges follow the tensors. pydot is an optional
dependency (``pip install pydot``); writing an image format needs Graphviz's
``dot`` program, a ``.dot`` file does not.
"""

from __future__ import annotations

import os

from kerasflow import backend as K
from kerasflow import tree
from kerasflow.models import functional_graph

__all__ = ["model_to_dot", "plot_model"]

_NEEDS_PYDOT = ("You must install pydot (`pip install pydot`) for `plot_model` "
                "to work; image formats other than .dot also need Graphviz's "
                "`dot` program (e.g. `apt-get install graphviz`).")


def _pydot():
    try:
        import pydot  # noqa: PLC0415  (optional dependency)
    except ImportError:
        raise ImportError(_NEEDS_PYDOT) from None
    return pydot


def _label(name, kind, shape=None, dtype=None, activation=None, trainable=None):
    parts = [f"{name} ({kind})" if name else kind]
    if shape is not None:
        parts.append(f"output: {shape}")
    if dtype is not None:
        parts.append(f"dtype: {dtype}")
    if activation is not None:
        parts.append(f"activation: {activation}")
    if trainable is not None:
        parts.append(f"trainable: {'T' if trainable else 'F'}")
    return "\n".join(parts)


def _layer_label(layer, show_shapes, show_dtype, show_names, show_activations,
                 show_trainable):
    act = getattr(layer, "activation", None)
    return _label(layer.name if show_names else "", type(layer).__name__,
                  layer._last_output_shape if show_shapes else None,
                  getattr(layer, "dtype", None) if show_dtype else None,
                  getattr(act, "__name__", act) if show_activations and act
                  else None,
                  layer.trainable if show_trainable else None)


def model_to_dot(model, show_shapes=False, show_dtype=False, show_layer_names=True,
                 rankdir="TB", expand_nested=False, dpi=200, subgraph=False,
                 show_layer_activations=False, show_trainable=False, **kwargs):
    """The model's graph as a ``pydot.Dot`` (Keras 3's ``model_to_dot``).

    Args:
        model: a Sequential or functional ``Model`` (built).
        show_shapes, show_dtype, show_layer_names, show_layer_activations,
            show_trainable: what each node's label shows.
        rankdir: Graphviz direction, "TB" (top to bottom) or "LR".
        dpi: image resolution. expand_nested, subgraph: accepted; nested
            models are drawn as one node.

    Raises:
        ImportError: pydot is not installed (naming how to install it).
        ValueError: the model is not built, or ``rankdir`` is not TB/LR/BT/RL.
    """
    pydot = _pydot()
    if rankdir not in ("TB", "LR", "BT", "RL"):
        raise ValueError(f"rankdir must be 'TB', 'LR', 'BT' or 'RL'. Received: "
                         f"rankdir={rankdir!r}.")
    if not model.built:
        raise ValueError(f"plot_model needs a built model; '{model.name}' has "
                         f"not been built (call it on data or give it an Input).")
    dot = pydot.Dot(graph_type="digraph", rankdir=rankdir, dpi=dpi)
    dot.set_node_defaults(shape="record")
    label = {"show_shapes": show_shapes, "show_dtype": show_dtype,
             "show_names": show_layer_names, "show_activations":
             show_layer_activations, "show_trainable": show_trainable}
    steps = getattr(model, "_graph_steps", None) \
        if getattr(model, "_is_functional", False) else None
    if steps is None:  # Sequential: a chain
        prev = None
        for i, layer in enumerate(model.layers):
            node = f"n{i}"
            dot.add_node(pydot.Node(node, label=_layer_label(layer, **label)))
            if prev is not None:
                dot.add_edge(pydot.Edge(prev, node))
            prev = node
        return dot
    producer = {}
    for i, t in enumerate(tree.flatten(model.inputs)):
        layer = next((candidate for candidate in model.layers
                      if not any(s.layer is candidate for s in steps)
                      and any(o is t for o in tree.flatten(candidate.output))),
                     None)
        node = f"in{i}"
        text = (_layer_label(layer, **label) if layer is not None
                else _label(t.name, "Input", t.shape if show_shapes else None))
        dot.add_node(pydot.Node(node, label=text))
        producer[id(t)] = node
    names = functional_graph.op_names(steps, {layer.name for layer in model.layers})
    for i, step in enumerate(steps):
        node = f"s{i}"
        if step.node is not None:
            shape = step.node.outputs[0].shape if show_shapes else None
            text = _label(names[id(step.node)] if show_layer_names else "",
                          step.node.op, shape)
            sources = step.node.inputs
        else:
            text = _layer_label(step.layer, **label)
            sources = tree.flatten([step.record.inputs, step.record.kwargs])
        dot.add_node(pydot.Node(node, label=text))
        for t in sources:
            if K.is_symbolic(t) and id(t) in producer:
                dot.add_edge(pydot.Edge(producer[id(t)], node))
        for t in step.outputs:
            producer[id(t)] = node
    return dot


def plot_model(model, to_file="model.png", show_shapes=False, show_dtype=False,
               show_layer_names=True, rankdir="TB", expand_nested=False, dpi=200,
               show_layer_activations=False, show_trainable=False, **kwargs):
    """Writes the model's graph to ``to_file`` (Keras 3's ``plot_model``).

    The format comes from the extension: ``.dot`` is written by pydot alone;
    ``.png``, ``.svg``, ``.pdf`` ... are rendered by Graphviz.

    Returns:
        The ``pydot.Dot`` written.

    Raises:
        ImportError: pydot is missing, or Graphviz for an image format (naming
            what to install).
        ValueError: as ``model_to_dot``.
    """
    dot = model_to_dot(model, show_shapes, show_dtype, show_layer_names, rankdir,
                       expand_nested, dpi, False, show_layer_activations,
                       show_trainable)
    ext = os.path.splitext(str(to_file))[1][1:].lower() or "png"
    if ext == "dot":
        dot.write_raw(str(to_file))
        return dot
    try:
        dot.write(str(to_file), format=ext)
    except FileNotFoundError:
        raise ImportError(_NEEDS_PYDOT) from None
    return dot
