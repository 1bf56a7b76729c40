"""Steps traced from a model's own ``train_step`` / ``test_step`` /
``predict_step`` (keras.io, "Customizing what happens in ``fit()``").

The override is called ONCE per input signature on placeholders, as
``tf.function`` traces it: its forward pass, ``GradientTape`` gradients
(``backend.gradients``), ``optimizer.apply_gradients`` and metric updates all
become graph nodes, collected as the step's updates. The returned logs are
split: those that read the batch are fetched with the step, those that only
read Variables (``metric.result()``) are evaluated after the updates ran, so a
log reports the state after the batch, as in Keras. The step is graph data like
``TrainStep`` and runs through ``strategy.run_steps`` in the one training loop;
when the override applied its gradients with ``optimizer.apply_gradients``, it
is split as ``TrainStep`` is (``CustomTrainStep``), so it also runs on replicas.

As ``tf.function`` orders a step by its automatic control dependencies, code
after an ``apply_gradients`` (a GAN's generator step reading the
discriminator) reads the updated weights (``backend.sequencing``); a step
whose gradients or logs depend on an update that way runs in process only.
"""

from __future__ import annotations

import math

import numpy as np

from kerasflow import backend as K
from kerasflow import tree
from kerasflow.backend.registry import get_op
from kerasflow.backend.sequencing import sequential_reads
from kerasflow.layers.tracing import collect_updates
from kerasflow.metrics import MetricVariable, PendingResult
from kerasflow.metrics.merge import assigned_variables
from kerasflow.optimizers.apply_log import recording_applies
from kerasflow.steps.batch import StepResult
from kerasflow.steps.step import (
    FlatLayout,
    PredictStep,
    TrainStep,
    _metric_deltas,
    _Step,
)

__all__ = ["CustomStep", "CustomTrainStep", "build_custom_step"]

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


class _CustomLogs:
    """The logs of a traced custom step: read with the step (``fetched``,
    scalars, in ``StepResult.output_losses``), or on this process after the
    step ran (``after`` tensors of Variables, host ``pending`` results)."""

    def _set_logs(self, log_names, fetched, after, constants, pending):
        self.log_names = list(log_names)
        self.fetched_positions = [p for p, _ in fetched]
        self.constants = list(constants)
        # Driver-only (not shipped to replicas): read after each call.
        self._driver = {"after": list(after), "pending": list(pending)}

    def custom_logs(self, result) -> dict:
        """``{name: value}`` after a step returned ``result``."""
        values = [None] * len(self.log_names)
        for pos, v in zip(self.fetched_positions, result.output_losses):
            values[pos] = v
        after = self._driver["after"]
        if after:
            fn = self._fn("after", lambda: K.Function(
                [], [t for _, t in after], name="custom_step_logs"))
            for (pos, _), v in zip(after, fn()):
                values[pos] = v
        for pos, v in self.constants:
            values[pos] = v
        for pos, metric in self._driver["pending"]:
            values[pos] = metric.result()
        return dict(zip(self.log_names, [_scalar(v) for v in values]))


class CustomStep(_CustomLogs, _Step):
    """A traced ``train_step``/``test_step`` run whole, in this process.

    Args:
        kind: "train" or "eval".
        inputs: placeholders in batch-array order (inputs, targets, weights).
        log_names: names of the logs, in the order the step returned them.
        fetched: (position, tensor) of logs read with the step.
        after: (position, tensor) of logs read after the updates.
        constants: (position, float) of logs that are plain numbers.
        updates: every stateful tensor the trace built.
        pending: (position, Metric) of results computed on the host.
    """

    _GRAPH = ("inputs", "outputs", "updates", "variables")

    def __init__(self, kind, inputs, log_names, fetched, after, constants,
                 updates, pending=()):
        self.kind = kind
        self.inputs = list(inputs)
        self._set_logs(log_names, fetched, after, constants, pending)
        self.outputs = [t for _, t in fetched]
        self.updates = list(updates)
        self.variables = K.reachable_variables(self.outputs + self.updates)
        self._fns = {}

    def run(self, arrays, global_batch_size) -> StepResult:
        """Runs the step on one batch (``output_losses``: the fetched logs)."""
        del global_batch_size
        main = self._fn("run", lambda: K.Function(
            self.inputs, self.outputs, updates=self.updates,
            name=f"custom_{self.kind}_step"))
        n = len(arrays[0]) if arrays else 0
        return StepResult(math.nan, n, None, [], list(main(*arrays)))

    def compute_gradients(self, arrays, global_batch_size):
        """Not available: see ``__getstate__``.

        Raises:
            NotImplementedError: always.
        """
        raise NotImplementedError(_SINGLE_PROCESS)

    compute = compute_gradients

    def __getstate__(self):
        raise NotImplementedError(_SINGLE_PROCESS)


_SINGLE_PROCESS = (
    "This custom train_step runs in process only: it applied no gradients "
    "through optimizer.apply_gradients (or applied one variable twice, or "
    "returned a non-scalar log read from the batch), so it cannot be split into "
    "compute -> all-reduce -> apply for replicas. Received: a strategy that "
    "needs that; train under the default strategy.")


class CustomTrainStep(_CustomLogs, TrainStep):
    """A traced ``train_step`` split as ``TrainStep`` is, for every strategy.

    The gradients the override handed to ``optimizer.apply_gradients`` are the
    computed half (scaled by ``n_local / global_batch_size``, so the replicas'
    sum is the gradient of the mean over the global batch, as tf.distribute
    scales a loss); each optimizer's update, rebuilt on gradient placeholders,
    is the applied half; metric assignments travel as deltas and other state
    updates (BatchNormalization) run with the compute half. In one process
    ``run`` executes the traced step as it is.

    Args:
        inputs: placeholders in batch-array order.
        log_names, fetched, after, constants, pending: as ``CustomStep``;
            fetched logs are scalars (scaled like the gradients, so replicas
            sum them to the global mean).
        updates: every stateful tensor the trace built.
        applies: the ``AppliedGradients`` of the trace.
    """

    def __init__(self, inputs, log_names, fetched, after, constants, updates,
                 applies, pending=()):
        scale = K.placeholder(K.floatx(), (), name="loss_scale")
        self.inputs = list(inputs) + [scale]
        self._set_logs(log_names, fetched, after, constants, pending)
        self.outputs = [K.multiply(scale, 0.0)] + [
            K.multiply(K.cast(t, K.floatx()), scale) for _, t in fetched]
        pairs = [p for a in applies for p in a.pairs]
        self.trainable_variables = [v for _, v in pairs]
        self.grads = [K.multiply(g, K.cast(scale, g.dtype)) for g, _ in pairs]
        self.layout = FlatLayout(self.trainable_variables)
        self.grad_phs = [K.placeholder(v.dtype, v.shape, name=f"grad_{i}")
                         for i, v in enumerate(self.trainable_variables)]
        self.apply_updates, i = [], 0
        for a in applies:
            k = len(a.pairs)
            self.apply_updates += a.optimizer.build_updates(
                zip(self.grad_phs[i:i + k], [v for _, v in a.pairs]))
            i += k
        applied = {id(u) for a in applies for u in a.updates}
        rest = [u for u in updates if id(u) not in applied]
        metric_updates = [u for u in rest if isinstance(u.node.inputs[0],
                                                        MetricVariable)]
        self.metric_variables, self.deltas = _metric_deltas(metric_updates)
        # No Metric objects here to merge by: replicas refuse assigned state.
        self.merge_refused = [v.name for v in assigned_variables(metric_updates)]
        self.state_updates = [u for u in rest if not isinstance(
            u.node.inputs[0], MetricVariable)]
        self.run_updates = list(updates)
        self.variables = K.reachable_variables(
            self.outputs + self.grads + self.apply_updates + self.run_updates)
        self.num_outputs = len(self.outputs)
        self._fns = {}

    def __getstate__(self):
        state = super().__getstate__()
        state["plain"].pop("_driver", None)
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self._driver = {"after": [], "pending": []}


def _splittable(applies, fetched) -> bool:
    variables = [id(v) for a in applies for _, v in a.pairs]
    if not variables or len(set(variables)) != len(variables) or any(
            t.shape != () for _, t in fetched):
        return False
    # Gradients or logs read after an update (sequential reads) would run
    # that update in the compute half: not splittable.
    roots = [g for a in applies for g, _ in a.pairs] + [t for _, t in fetched]
    return not any(n.op not in ("Variable", "Placeholder", "Const")
                   and get_op(n.op).stateful for n in K.walk(roots))


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

    Returns:
        A ``CustomTrainStep`` (a train step that applied its gradients through
        ``apply_gradients``, each variable once, with scalar batch logs), else
        a ``CustomStep``; a ``PredictStep`` for "predict".

    Raises:
        TypeError: a train/test step that does not return a dict.
    """
    x = model._structure_inputs(x_phs)
    if kind == "predict":
        outputs = model.predict_step(x)
        return PredictStep(x_phs, tree.flatten(outputs))
    y = None if not y_phs else (y_phs[0] if len(y_phs) == 1 else list(y_phs))
    data = x if y is None else ((x, y, sw) if weighted else (x, y))
    with collect_updates() as updates, recording_applies() as applies, \
            sequential_reads():
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
    if kind == "train" and _splittable(applies, fetched):
        return CustomTrainStep(inputs, [k for k, _ in pairs], fetched, after,
                               constants, updates, applies, pending)
    return CustomStep(kind, inputs, [k for k, _ in pairs], fetched, after,
                      constants, updates, pending)
