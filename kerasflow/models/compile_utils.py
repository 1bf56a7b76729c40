"""Per-output losses and metrics of a compiled model (Keras' ``compile_utils``).

``compile(loss=..., metrics=..., loss_weights=...)`` names what to compute per
model output; this module resolves those names against the output and target
**shapes** (as Keras 3 does): "accuracy" becomes binary, categorical or sparse
categorical accuracy from the shapes, 1-D targets of a one-unit output become a
column, and sparse labels are range-checked once per call, never by guessing
from a loss's name.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow import losses, tree
from kerasflow import metrics as metrics_mod

__all__ = ["CompileLoss", "CompileMetrics", "CompiledLosses", "resolve_metrics",
           "prepare_targets", "check_sparse_labels", "is_sparse_target",
           "weighted_loss"]

_ACC_NAMES = ("accuracy", "acc")


def _last(shape):
    return None if shape is None or not shape else shape[-1]


def is_sparse_target(target_shape, output_shape) -> bool:
    """True when targets are class indices for a multi-class output (Keras' rule).

    Args:
        target_shape: shape of the targets (batch axis first).
        output_shape: static shape of the model output.
    """
    if output_shape is None or len(output_shape) < 2:
        return False
    d = output_shape[-1]
    if d == 1:
        return False
    return len(target_shape) < len(output_shape) or (
        len(target_shape) == len(output_shape) and target_shape[-1] == 1)


def prepare_targets(ys, output_shapes):
    """1-D targets of an output with one unit become (n, 1) columns (Keras 2).

    Args:
        ys: list of target arrays, one per output.
        output_shapes: static shapes of the outputs.

    Returns:
        The list of target arrays, reshaped where needed (views, no copies).
    """
    out = []
    for a, shape in zip(ys, output_shapes):
        if a.ndim == 1 and shape is not None and len(shape) == 2 and (
                shape[-1] == 1 or shape[-1] is None):
            a = a.reshape(-1, 1)
        out.append(a)
    return out


def check_sparse_labels(y, num_classes, name):
    """Sparse labels must be whole numbers in ``[0, num_classes)``.

    Raises:
        ValueError: a label that is not a whole number, or one out of range,
            naming the output, the offending value and the valid range.
    """
    if not y.size or num_classes is None:
        return
    if y.dtype.kind == "f":
        frac = y != np.round(y)
        if frac.any():
            bad = y[frac].flat[0]
            raise ValueError(
                f"Sparse labels of output '{name}' must be whole class indices. "
                f"Received: a label of {bad!r}.")
    lo, hi = y.min(), y.max()
    if lo < 0 or hi >= num_classes:
        raise ValueError(
            f"Sparse labels of output '{name}' must lie in [0, {num_classes}) for "
            f"{num_classes} classes. Received: labels from {lo} to {hi}.")


def _per_output(spec, names, what):
    if isinstance(spec, dict):
        unknown = set(spec) - set(names)
        if unknown:
            raise ValueError(f"{what} has keys {sorted(unknown)} that match no "
                             f"output. Outputs: {names}.")
        return [spec.get(n) for n in names]
    if isinstance(spec, (list, tuple)) and len(names) > 1 and what in (
            "loss", "loss_weights"):
        if len(spec) != len(names):
            raise ValueError(f"{what} has {len(spec)} entries for {len(names)} "
                             f"outputs {names}.")
        return list(spec)
    return [spec] * len(names)


def weighted_loss(loss_fn, y, out, sw):
    """The mean over the batch of ``loss_fn(y, out)`` weighted by ``sw`` (n,)."""
    if isinstance(loss_fn, losses.Loss):
        return loss_fn(y, out, sample_weight=sw)
    per_sample = loss_fn(y, out)
    if per_sample.ndim is not None and per_sample.ndim > 1:
        per_sample = K.mean(per_sample, axis=tuple(range(1, per_sample.ndim)))
    return K.mean(per_sample * sw)


class CompiledLosses:
    """Losses and loss weights per output, resolved once at ``compile``.

    Args:
        loss: a name, Loss or function; per output a list, or a dict keyed by
            output name.
        loss_weights: list or dict of floats per output, or None.

    Raises:
        ValueError: unknown loss names (from the registry), naming them.
    """

    def __init__(self, loss, loss_weights=None):
        self.spec, self.weights_spec = loss, loss_weights
        items = (loss.values() if isinstance(loss, dict) else
                 loss if isinstance(loss, (list, tuple)) else [loss])
        for item in items:  # unknown names fail at compile, not at fit
            if item is not None:
                losses.get(item)

    @property
    def empty(self) -> bool:
        """True when compile() named no loss at all (add_loss-only models)."""
        spec = self.spec
        items = spec.values() if isinstance(spec, dict) else spec if isinstance(
            spec, (list, tuple)) else [spec]
        return all(item is None for item in items)

    def resolve(self, names, model_name, has_added_losses=False):
        """(loss functions, weights) per output name; None where no loss.

        Raises:
            ValueError: no loss at all and no ``add_loss`` term.
        """
        fns = [None if spec is None else losses.get(spec)
               for spec in _per_output(self.spec, names, "loss")]
        if all(f is None for f in fns) and not has_added_losses:
            raise ValueError(f"Model '{model_name}' was compiled without a loss "
                             f"and has no add_loss() term. Pass loss= to "
                             f"compile().")
        w = self.weights_spec
        weights = ([1.0] * len(names) if w is None else
                   _per_output(w, names, "loss_weights"))
        return fns, [1.0 if x is None else float(x) for x in weights]


def resolve_metrics(spec, names, outputs, target_shapes, existing=None):
    """(output index, log name, Metric) triples for ``compile(metrics=spec)``.

    "accuracy"/"acc" picks ``BinaryAccuracy`` for a one-unit output,
    ``SparseCategoricalAccuracy`` for class-index targets and
    ``CategoricalAccuracy`` otherwise, from the shapes (Keras 3's rule).
    ``existing`` (a previous result of the same length) is reused so that the
    train and eval steps of one model share metric state.
    """
    spec = spec or []
    if isinstance(spec, dict):
        per = [list(spec.get(n) or []) for n in names]
    elif len(names) > 1 and spec and all(isinstance(m, (list, tuple))
                                         for m in spec):
        per = [list(m) for m in spec]
    else:
        per = [list(spec)] * len(names)
    triples = []
    for i, (ms, out, tshape) in enumerate(zip(per, outputs, target_shapes)):
        prefix = f"{names[i]}_" if len(names) > 1 else ""
        for m in ms:
            if isinstance(m, str) and m in _ACC_NAMES:
                if _last(out.shape) == 1:
                    cls = metrics_mod.BinaryAccuracy
                elif is_sparse_target(tshape, out.shape):
                    cls = metrics_mod.SparseCategoricalAccuracy
                else:
                    cls = metrics_mod.CategoricalAccuracy
                metric = cls(name=m)
            else:
                metric = metrics_mod.get(m)
            triples.append((i, prefix + metric.name, metric))
    if existing is not None and len(existing) == len(triples):
        return existing
    return triples


class CompileLoss:
    """The loss given to ``compile`` as one callable (``model.compiled_loss``).

    ``compiled_loss(y_true, y_pred, sample_weight=None)`` returns the weighted
    sum of the per-output losses (a scalar tensor), or None without a loss.
    """

    def __init__(self, model):
        self._model = model

    def __call__(self, y_true, y_pred, sample_weight=None,
                 regularization_losses=None):
        model = self._model
        losses = model._compiled_losses
        if losses is None or losses.empty:
            return None
        outs, ys = tree.flatten(y_pred), tree.flatten(y_true)
        fns, weights = losses.resolve(model._output_names(len(outs)), model.name)
        total = None
        for y, out, fn, w in zip(ys, outs, fns, weights):
            if fn is None:
                continue
            term = weighted_loss(fn, y, out, 1.0 if sample_weight is None
                                    else sample_weight)
            term = term if w == 1.0 else term * w
            total = term if total is None else total + term
        for penalty in regularization_losses or ():
            total = penalty if total is None else total + penalty
        return total

    @property
    def metrics(self) -> list:
        """Per-output loss trackers (none: Keras 3 logs them in evaluate)."""
        return []


class CompileMetrics:
    """The metrics given to ``compile`` as one metric (Keras 3's
    ``model.compiled_metrics``, named "compile_metrics" in ``model.metrics``).

    ``update_state(y_true, y_pred, sample_weight=None)`` updates each compiled
    metric of each output; ``result()`` is a dict of their results by log name.
    """

    name = "compile_metrics"

    def __init__(self, model):
        self._model = model

    @property
    def metrics(self) -> list:
        return [m for _, _, m in self._model._metric_objs or []]

    def update_state(self, y_true, y_pred, sample_weight=None):
        model = self._model
        ys, outs = tree.flatten(y_true), tree.flatten(y_pred)
        model._metric_objs = resolve_metrics(
            model._metrics_spec, model._output_names(len(outs)), outs,
            [y.shape for y in ys], model._metric_objs)
        ops = []
        for i, _, metric in model._metric_objs:
            ops += list(metric.update_state(ys[i], outs[i],
                                            sample_weight=sample_weight) or [])
        return ops

    def result(self) -> dict:
        return {name: m.result() for _, name, m in self._model._metric_objs or []}

    def reset_state(self) -> None:
        for m in self.metrics:
            m.reset_state()
