"""``Model.summary()``: a table of layers, output shapes and parameter counts."""

from __future__ import annotations

import numpy as np

from kerasflow.models import functional_graph

__all__ = ["summary_text"]


def summary_text(model, line_length=80):
    widths = (int(line_length * 0.42), int(line_length * 0.33))
    rows = [("Layer (type)", "Output Shape", "Param #")]
    for label, shape, params in _entries(model):
        shape = "?" if shape is None else str(_fmt(shape))
        rows.append((label, shape, f"{params:,}"))
    rule = "=" * line_length

    def line(r):
        return f"{r[0]:<{widths[0]}}{r[1]:<{widths[1]}}{r[2]:>10}"

    trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    total = model.count_params()
    out = [f'Model: "{model.name}"', rule, line(rows[0]), rule]
    out += [line(r) for r in rows[1:]]
    out += [rule, f"Total params: {total:,}", f"Trainable params: {trainable:,}",
            f"Non-trainable params: {total - trainable:,}", rule]
    return "\n".join(out)


def _entries(model):
    """(label, output shape, params) per layer; in a functional model also per
    op between layers, in graph order (as Keras 3 lists operations)."""
    steps = getattr(model, "_graph_steps", None) if getattr(
        model, "_is_functional", False) else None
    layers = model.layers
    if steps is None:
        return [(f"{layer.name} ({type(layer).__name__})",
                 layer._last_output_shape, layer.count_params())
                for layer in layers]
    names = functional_graph.op_names(steps, {layer.name for layer in layers})
    out, seen = [], set()
    inputs = [layer for layer in layers
              if not any(s.layer is layer for s in steps)]
    for layer in inputs:
        out.append((f"{layer.name} ({type(layer).__name__})",
                    layer._last_output_shape, 0))
    for step in steps:
        if step.node is not None:
            shapes = [t.shape for t in step.node.outputs]
            out.append((f"{names[id(step.node)]} ({step.node.op})",
                        shapes[0] if len(shapes) == 1 else shapes, 0))
        elif id(step.layer) not in seen:
            seen.add(id(step.layer))
            out.append((f"{step.layer.name} ({type(step.layer).__name__})",
                        step.layer._last_output_shape, step.layer.count_params()))
    return out


def _fmt(shape):
    if isinstance(shape, (list, tuple)) and shape and isinstance(shape[0],
                                                                 (list, tuple)):
        return [tuple(s) for s in shape]
    return tuple(shape)
