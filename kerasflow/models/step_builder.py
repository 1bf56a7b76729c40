"""Building a model's steps: placeholders -> traced model -> losses -> step.

``StepBuilder`` is the part of ``Model`` that turns one input signature into a
``TrainStep``, ``EvalStep`` or ``PredictStep`` (``train_step.py``), cached per
signature: per-output losses weighted as compiled, ``add_loss`` terms, metric
updates (sample-weighted only when the caller gave weights, as Keras), and the
layer-state updates collected while tracing (BatchNormalization).
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow import tree
from kerasflow.layers.base import collect_updates
from kerasflow.metrics import Mean
from kerasflow.models import compile_utils as cu
from kerasflow.models.keras_steps import KerasStepsMixin
from kerasflow.steps.custom import build_custom_step
from kerasflow.steps.step import EvalStep, PredictStep, TrainStep

__all__ = ["uses_custom_step", "StepBuilder"]


_TRAIN_HOOKS = ("train_step", "compute_loss", "compute_metrics")
_EVAL_HOOKS = ("test_step", "compute_loss", "compute_metrics")


def _overridden(model, name) -> bool:
    return getattr(type(model), name) is not getattr(KerasStepsMixin, name)


def uses_custom_step(model, kind) -> bool:
    """Whether ``kind``'s step must be traced from the model's own methods."""
    hooks = {"train": _TRAIN_HOOKS, "eval": _EVAL_HOOKS,
             "predict": ("predict_step",)}[kind]
    return any(_overridden(model, h) for h in hooks)


class StepBuilder:
    """Mixin of ``Trainer``: steps per input signature (see module docstring)."""

    def _input_placeholders(self, xs):
        specs = self._default_input_specs()
        phs = []
        for i, a in enumerate(xs):
            if specs is not None and i < len(specs):
                shape, dtype = specs[i]
                expected = tuple(shape[1:]) if shape is not None else None
                if expected is not None and (len(expected) != a.ndim - 1 or any(
                        d is not None and d != s for d, s in zip(expected, a.shape[1:]))):
                    raise ValueError(
                        f"Input {i} of model '{self.name}' expects data of shape "
                        f"(None, {', '.join(str(d) for d in expected)}). Received: "
                        f"data of shape {a.shape}."
                    )
            else:
                shape = (None,) + a.shape[1:]
                dtype = a.dtype if a.dtype.kind in "iu" and a.dtype != np.uint8 \
                    else K.floatx()
            phs.append(K.placeholder(dtype, shape, name=f"input_{i + 1}"))
        return phs

    def _structure_inputs(self, phs):
        if isinstance(self._inputs_struct, dict):
            return tree.pack_sequence_as(self._inputs_struct, phs)
        return phs[0] if len(phs) == 1 else phs

    def _get_step(self, kind, xs, ys=(), weighted=False):
        """The step for this signature; ``weighted``: the sample weights came
        from the user, so metrics are weighted too (Keras)."""
        key = (kind, tuple((a.shape[1:], a.dtype.kind) for a in xs),
               tuple((a.shape[1:], a.dtype.kind) for a in ys), weighted)
        step = self._steps.get(key)
        if step is None:
            step = self._steps[key] = self._build_step(kind, xs, ys, weighted)
        return step

    def _static_losses(self):
        return [loss for layer in self._flatten_layers()
                for loss in layer.__dict__.get("_added_losses", ())]

    def _trace(self, xs, training):
        if self._is_functional and any(K.is_symbolic(l)
                                       for l in self._static_losses()):
            # add_loss(f(inputs)) on the functional graph: feed its own Inputs.
            self._input_placeholders(xs)  # shape checks only
            x_phs = list(self.inputs)
        else:
            x_phs = self._input_placeholders(xs)
        with collect_updates() as state_updates:
            outputs = self(self._structure_inputs(x_phs), training=training)
        outs = tree.flatten(outputs)
        return x_phs, outs, state_updates

    def _build_step(self, kind, xs, ys, weighted=False):
        if uses_custom_step(self, kind):  # the model's own train_step & co.
            x_phs = self._input_placeholders(xs)
            y_phs = [K.placeholder(np.int64 if a.dtype.kind in "iu" else K.floatx(),
                                   (None,) + a.shape[1:], name=f"target_{i + 1}")
                     for i, a in enumerate(ys)]
            sw = K.placeholder(K.floatx(), (None,), name="sample_weight")
            return build_custom_step(self, kind, x_phs, y_phs, sw, weighted)
        x_phs, outs, state_updates = self._trace(xs, kind == "train")
        if kind == "predict":
            return PredictStep(x_phs, outs, state_updates)
        names = self._output_names(len(outs))
        added = state_updates.losses + self.losses
        if self._compiled_losses.empty and not ys:
            loss_fns, weights = [None] * len(outs), [1.0] * len(outs)
            if not added:
                self._compiled_losses.resolve(names, self.name)  # raises
        else:
            if len(ys) != len(outs):
                raise ValueError(
                    f"Model '{self.name}' has {len(outs)} output(s) {names} and "
                    f"expects one target array per output. Received: {len(ys)} "
                    f"target array(s).")
            loss_fns, weights = self._compiled_losses.resolve(names, self.name,
                                                              bool(added))
        self._metric_objs = cu.resolve_metrics(
            self._metrics_spec if ys else None, names, outs,
            [a.shape for a in ys], self._metric_objs)
        y_phs = [K.placeholder(np.int64 if a.dtype.kind in "iu" else K.floatx(),
                               (None,) + a.shape[1:], name=f"{names[i]}_target")
                 for i, a in enumerate(ys)]
        sw = K.placeholder(K.floatx(), (None,), name="sample_weight")
        per_output, total = [], None
        for y, out, loss_fn, w in zip(y_phs, outs, loss_fns, weights):
            if loss_fn is None:
                continue
            value = cu.weighted_loss(loss_fn, y, out, sw)
            per_output.append(value)
            term = value if w == 1.0 else value * w
            total = term if total is None else total + term
        for penalty in added:
            total = penalty if total is None else total + penalty
        metric_updates = []
        added_metrics = self._added_metrics
        for name, value in state_updates.metrics:
            metric = added_metrics.setdefault(name, Mean(name=name))
            metric_updates += list(metric.update_state(value) or [])
        for i, _, metric in self._metric_objs:
            metric_updates += list(
                # Keras passes no sample weights to metrics unless given some.
                metric.update_state(y_phs[i], outs[i],
                                    sample_weight=sw if weighted else None) or [])
        inputs = x_phs + y_phs + [sw]
        out_losses = per_output if len(per_output) > 1 else []
        metrics = list(added_metrics.values()) + [m for *_, m in self._metric_objs]
        if kind == "train":
            return TrainStep(inputs, total, self.optimizer, self.weights_to_train(),
                             out_losses, metric_updates, state_updates,
                             metrics=metrics)
        return EvalStep(inputs, total, out_losses, metric_updates, state_updates,
                        metrics=metrics)
