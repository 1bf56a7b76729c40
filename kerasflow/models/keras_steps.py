"""Keras 3's overridable training API: ``train_step``, ``test_step``,
``predict_step``, ``compute_loss``, ``compute_metrics`` and ``metrics``.

These run while a step is traced (``custom_step.py``): ``data`` holds
placeholders, everything returned is graph tensors, and the optimizer's and
the metrics' assignments join the traced step. The defaults do what the
built-in step does, so a subclass may override one method and call
``super()`` for the rest, as in keras.io's "Customizing what happens in
``fit()``". Source: Keras 3 ``keras.src.trainers.trainer.Trainer`` and its
TensorFlow trainer.
"""

from __future__ import annotations

import inspect

from kerasflow import backend as K
from kerasflow import tree
from kerasflow.layers.tracing import trace_losses
from kerasflow.metrics import Metric
from kerasflow.models import compile_utils as cu

__all__ = ["CompileLoss", "CompileMetrics", "KerasStepsMixin", "unpack_data"]


def unpack_data(data):
    """``(x, y, sample_weight)`` from a batch as ``train_step`` receives it
    (Keras' ``unpack_x_y_sample_weight``)."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data
    raise ValueError(f"Data is expected to be in format `x`, `(x,)`, `(x, y)`, "
                     f"or `(x, y, sample_weight)`. Received: data={data!r}.")


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
            term = cu.weighted_loss(fn, y, out, 1.0 if sample_weight is None
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
        model._metric_objs = cu.resolve_metrics(
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


class KerasStepsMixin:
    """Mixin of ``Trainer``: Keras 3's overridable step methods."""

    def _init_keras_steps(self):
        self._loss_tracker = None

    @property
    def compiled_loss(self) -> CompileLoss:
        """The compiled loss as a callable (Keras 2's ``compiled_loss``)."""
        return CompileLoss(self)

    @property
    def compiled_metrics(self) -> CompileMetrics:
        """The compiled metrics as one metric (``update_state``/``result``)."""
        return CompileMetrics(self)

    @property
    def metrics(self) -> list:
        """Keras 3's order: the loss tracker, the compiled metrics, then Metric
        attributes of the model (a subclass may override this property)."""
        out = []
        if getattr(self, "compiled", False):
            if self._loss_tracker is not None:
                out.append(self._loss_tracker)
            if self._metrics_spec:
                out.append(self.compiled_metrics)
        out += [v for k, v in vars(self).items()
                if isinstance(v, Metric) and k != "_loss_tracker"]
        return out

    @property
    def metrics_names(self) -> list:
        """Names of ``metrics``."""
        return [m.name for m in self.metrics]

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                     training=True):
        """The compiled loss plus the model's added losses (Keras 3).

        Args:
            x: the inputs (unused by default).
            y, y_pred: targets and predictions, like the model's outputs.
            sample_weight: (batch,) weights or None.
            training: whether a training step is being traced.

        Returns:
            A scalar tensor.

        Raises:
            ValueError: no compiled loss and no added loss.
        """
        del x, training
        total = self.compiled_loss(y, y_pred, sample_weight)
        for penalty in trace_losses() + self.losses:
            total = penalty if total is None else total + penalty
        if total is None:
            raise ValueError("No loss to compute. Provide a `loss` argument in "
                             "`compile()`.")
        return total

    def _compute_loss(self, x, y, y_pred, sample_weight, training):
        if "training" in inspect.signature(self.compute_loss).parameters:
            return self.compute_loss(x, y, y_pred, sample_weight, training=training)
        return self.compute_loss(x, y, y_pred, sample_weight)

    def compute_metrics(self, x, y, y_pred, sample_weight=None) -> dict:
        """Updates the compiled metrics; returns ``get_metrics_result()``."""
        del x
        if self._metrics_spec and y is not None:
            self.compiled_metrics.update_state(y, y_pred, sample_weight)
        return self.get_metrics_result()

    def get_metrics_result(self) -> dict:
        """``{name: result}`` of ``metrics``, dict results merged (Keras 3)."""
        logs = {}
        for metric in self.metrics:
            result = metric.result()
            if isinstance(result, dict):
                logs.update(result)
            else:
                logs[metric.name] = result
        return logs

    def train_step(self, data) -> dict:
        """One traced training step (Keras 3's default).

        Args:
            data: ``x``, ``(x, y)`` or ``(x, y, sample_weight)`` of placeholders.

        Returns:
            The logs: ``{metric name: result tensor}``.
        """
        x, y, sample_weight = unpack_data(data)
        with K.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self._compute_loss(x, y, y_pred, sample_weight, True)
        self._loss_tracker.update_state(loss, sample_weight=_batch_size(x))
        variables = self.trainable_weights
        grads = tape.gradient(loss, variables)
        self.optimizer.apply_gradients(zip(grads, variables))
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def test_step(self, data) -> dict:
        """One traced evaluation step (Keras 3's default)."""
        x, y, sample_weight = unpack_data(data)
        y_pred = self(x, training=False)
        loss = self._compute_loss(x, y, y_pred, sample_weight, False)
        self._loss_tracker.update_state(loss, sample_weight=_batch_size(x))
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def predict_step(self, data):
        """The model's outputs for one batch (Keras 3's default)."""
        x, _, _ = unpack_data(data)
        return self(x, training=False)


def _batch_size(x):
    """The batch size of ``x`` as a float tensor (the loss tracker's weight)."""
    first = tree.flatten(x)[0]
    return K.cast(K.shape_of(first)[0], K.floatx())
