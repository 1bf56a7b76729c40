"""``Model.summary()``: a table of layers, output shapes and parameter counts."""

from __future__ import annotations

import numpy as np

__all__ = ["summary_text"]


def summary_text(model, line_length=80):
    widths = (int(line_length * 0.42), int(line_length * 0.33))
    rows = [("Layer (type)", "Output Shape", "Param #")]
    layers = model.layers
    for layer in layers:
        shape = layer._last_output_shape
        shape = "?" if shape is None else str(_fmt(shape))
        rows.append((f"{layer.name} ({type(layer).__name__})", shape,
                     f"{layer.count_params():,}"))
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


def _fmt(shape):
    if isinstance(shape, (list, tuple)) and shape and isinstance(shape[0],
                                                                 (list, tuple)):
        return [tuple(s) for s in shape]
    return tuple(shape)
