"""Steps traced from a model's own ``train_step`` / ``test_step`` /
``predict_step`` (keras.io, "Customizing what happens in ``fit()``").

The override is called ONCE per input signature on placeholders, as
``tf.function`` traces it: its forward pass, ``GradientTape`` gradients
(``backend.gradients``), ``optimizer.apply_gradients`` and metric updates all
become graph nodes, collected as the step's updates. The returned logs are
split: those that read the batch are fetched with the step, those that only
read Variables (``metric.result()``) are evaluated after the updates ran, so a
log reports the state after the batch, as in Keras. The step is graph data like
``TrainStep`` and runs through ``strategy.run_steps`` in the one training loop.
"""

from __future__ import annotations

import math

import numpy as np

from kerasflow import backend as K
from kerasflow import tree
from kerasflow.distribute_lib import StepResult
from kerasflow.layers.tracing import collect_updates
from kerasflow.metrics import PendingResult
from kerasflow.models.keras_steps import KerasStepsMixin
from kerasflow.models.train_step import PredictStep, _Step

__all__ = ["CustomStep", "build_custom_step", "uses_custom_step"]

_TRAIN_HOOKS = ("train_step", "compute_loss", "compute_metrics")
_EVAL_HOOKS = ("test_step", "compute_loss", "compute_metrics")


def _overridden(model, name) -> bool:
    return getattr(type(model), name) is not getattr(KerasStepsMixin, name)


def uses_custom_step(model, kind) -> bool:
    """Whether ``kind``'s step must be traced from the model's own methods."""
    hooks = {"train": _TRAIN_HOOKS, "eval": _EVAL_HOOKS,
             "predict": ("predict_step",)}[kind]
    return any(_overridden(model, h) for h in hooks)


def _flatten_logs(logs, prefix=""):
    """(name, value) pairs; nested dicts merged into the top level (Keras 3)."""
    if logs is None:
        return []
    if not isinstance(logs, dict):
        raise TypeError(f"train_step/test_step must return a dict of logs. "
                        f"Received: {type(logs).__name__} {logs!r}.")
    pairs = []
    for k, v in logs.items():
        if isinstance(v, dict):
            pairs += _flatten_logs(v)
        else:
            pairs.append((k, v))
    return list(dict(pairs).items())


def _reads_inputs(t, inputs) -> bool:
    ids = {id(p.node) for p in inputs}
    return any(id(n) in ids for n in K.walk([t]))


class CustomStep(_Step):
    """A traced ``train_step``/``test_step``: inputs -> logs, with updates.

    Args:
        kind: "train" or "eval".
        inputs: placeholders in batch-array order (inputs, targets, weights).
        log_names: names of the logs, in the order the step returned them.
        fetched: (position, tensor) of logs read with the step.
        after: (position, tensor) of logs read after the updates.
        constants: (position, float) of logs that are plain numbers.
        updates: every stateful tensor the trace built.
        pending: (position, Metric) of results computed on the host, read
            after the updates.
    """

    _GRAPH = ("inputs", "outputs", "after", "updates", "variables")

    def __init__(self, kind, inputs, log_names, fetched, after, constants,
                 updates, pending=()):
        self.kind = kind
        self.inputs = list(inputs)
        self.log_names = list(log_names)
        self.positions = ([p for p, _ in fetched], [p for p, _ in after])
        self.outputs = [t for _, t in fetched]
        self.after = [t for _, t in after]
        self.constants = list(constants)
        self.pending = list(pending)
        self.updates = list(updates)
        self.variables = K.reachable_variables(self.outputs + self.after
                                               + self.updates)
        self._fns = {}

    def run(self, arrays, global_batch_size) -> StepResult:
        """Runs the step on one batch; ``output_losses`` holds every log value,
        in ``log_names`` order (``loss`` is the "loss" log, NaN if none)."""
        del global_batch_size
        main = self._fn("run", lambda: K.Function(
            self.inputs, self.outputs, updates=self.updates,
            name=f"custom_{self.kind}_step"))
        after = self._fn("after", lambda: K.Function([], self.after,
                                                     name="custom_step_logs"))
        values = [None] * len(self.log_names)
        for pos, v in zip(self.positions[0], main(*arrays)):
            values[pos] = v
        for pos, v in zip(self.positions[1], after() if self.after else []):
            values[pos] = v
        for pos, v in self.constants:
            values[pos] = v
        for pos, metric in self.pending:
            values[pos] = metric.result()
        values = [_scalar(v) for v in values]
        logs = dict(zip(self.log_names, values))
        n = len(arrays[0]) if arrays else 0
        return StepResult(logs.get("loss", math.nan), n, None, [], values)

    def compute_gradients(self, arrays, global_batch_size):
        """Not available: the override applies its gradients itself.

        Raises:
            NotImplementedError: always (see ``__getstate__``).
        """
        raise NotImplementedError(_SINGLE_PROCESS)

    compute = compute_gradients

    def __getstate__(self):
        raise NotImplementedError(_SINGLE_PROCESS)


_SINGLE_PROCESS = (
    "A model with its own train_step/test_step (or compute_loss/compute_metrics) "
    "runs its traced step under the default strategy, in process: the step "
    "applies its gradients itself, so it is not split into compute -> all-reduce "
    "-> apply nor shipped to replicas. Received: a strategy that needs that; "
    "train under the default strategy or use the built-in step.")


def _scalar(v):
    a = K.to_numpy(v) if not isinstance(v, (int, float)) else v
    a = np.asarray(a)
    return float(a) if a.ndim == 0 else a


def build_custom_step(model, kind, x_phs, y_phs, sw, weighted):
    """Traces ``model.train_step``/``test_step``/``predict_step`` on placeholders.

    Args:
        model: the ``Model``.
        kind: "train", "eval" or "predict".
        x_phs, y_phs: input and target placeholders (model order); sw: the
            sample-weight placeholder, passed on only when ``weighted``.

    Raises:
        TypeError: a train/test step that does not return a dict.
    """
    x = model._structure_inputs(x_phs)
    if kind == "predict":
        outputs = model.predict_step(x)
        return PredictStep(x_phs, tree.flatten(outputs))
    y = None if not y_phs else (y_phs[0] if len(y_phs) == 1 else list(y_phs))
    data = x if y is None else ((x, y, sw) if weighted else (x, y))
    with collect_updates() as updates:
        step = model.train_step if kind == "train" else model.test_step
        logs = step(data)
    pairs = _flatten_logs(logs)
    inputs = list(x_phs) + list(y_phs) + [sw]
    fetched, after, constants, pending = [], [], [], []
    for pos, (_, v) in enumerate(pairs):
        if isinstance(v, PendingResult):
            pending.append((pos, v.metric))
        elif not K.is_symbolic(v):
            constants.append((pos, _scalar(v)))
        elif _reads_inputs(v, inputs):
            fetched.append((pos, v))
        else:
            after.append((pos, v))
    return CustomStep(kind, inputs, [k for k, _ in pairs], fetched, after,
                      constants, updates, pending)
