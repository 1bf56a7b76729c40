"""One mode's compiled graph (``Built``), its checkpoints and input batches.

Checkpoints are ``model_dir/model.ckpt-<global_step>`` files of
``kerasflow.utils.checkpoint`` (the one format and index that ``Saver`` and
``model.save_weights`` use too), holding every variable under its name,
``global_step`` included, which is where a restore reads the step from.
"""

from __future__ import annotations

import inspect
import os
import re
import tempfile
import warnings

import numpy as np

from kerasflow import backend as K
from kerasflow.data import iterator as iterator_lib
from kerasflow.distribute.distribute_lib import DefaultStrategy, get_strategy
from kerasflow.estimators import _graph
from kerasflow.estimators.inputs import InputContext
from kerasflow.estimators.model_fn import ModeKeys
from kerasflow.layers.base import training_context
from kerasflow.models.batches import local_input
from kerasflow.optimizers import train_op_info
from kerasflow.steps.batch import BatchRef
from kerasflow.steps.step import TrainStep
from kerasflow.utils import checkpoint as ckpt

__all__ = [
    "Built",
    "as_arrays",
    "assign_from",
    "batches",
    "build",
    "check_writable",
    "load_checkpoint",
    "load_latest",
    "reset_variables",
    "run_train_steps",
    "steps_per_call",
    "save_checkpoint",
    "warm_start",
    "writes_model_dir",
]


class Built:
    """A mode's graph: placeholders, spec, variables and compiled Functions."""

    def __init__(self, mode, features, labels, spec, global_step, local_vars):
        self.mode = mode
        self.features, self.labels = features, labels
        self.spec = spec
        self.global_step = global_step
        self.placeholders = (_graph.flatten_batch(features)
                             + _graph.flatten_batch(labels))
        local_ids = {id(v) for v in local_vars}
        roots = [spec.loss, spec.train_op, spec.predictions]
        model_vars = _graph.collect_variables(*[r for r in roots if r is not None])
        if all(v is not global_step for v in model_vars):
            model_vars.append(global_step)
        # Saved and restored: everything but metric state.
        self.variables = [v for v in model_vars if id(v) not in local_ids]
        names = [v.name for v in self.variables]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"model_fn created several variables named {dup}; "
                             f"checkpoints need unique names.")
        self.initial = [v.numpy() for v in self.variables]
        self.metric_vars, self.metric_initial = [], []
        self.metric_values = {}
        self.train_fn = self.eval_fn = self.predict_fn = None
        self.predict_keys = None
        self.train_step = None

    def reset_metrics(self):
        for v, value in zip(self.metric_vars, self.metric_initial):
            v.assign(value)


def build(model_fn, mode, features, labels, params, config):
    """Builds and compiles ``model_fn``'s graph for one mode and input signature."""
    with _graph.fresh_names(config.tf_random_seed), \
            _graph.local_variable_scope() as local_vars, \
            training_context(mode == ModeKeys.TRAIN):
        f_ph = _graph.make_placeholders(features, "features")
        l_ph = _graph.make_placeholders(labels, "labels")
        spec, gs = _graph.call_model_fn(model_fn, f_ph, l_ph, mode, params, config)
        if mode == ModeKeys.EVAL:
            known = {id(v) for v in local_vars}
            for _, update in spec.eval_metric_ops.values():
                for v in _graph.collect_variables(update):
                    if not v.trainable and id(v) not in known:
                        known.add(id(v))
                        local_vars.append(v)
    built = Built(mode, f_ph, l_ph, spec, gs, local_vars)
    phs = built.placeholders
    if mode == ModeKeys.TRAIN:
        if not K.is_symbolic(spec.train_op):
            raise TypeError(f"EstimatorSpec.train_op must be a graph op (e.g. "
                            f"optimizer.minimize(loss)). Received: "
                            f"{type(spec.train_op).__name__}.")
        if train_op_info(spec.train_op) is not None:
            built.train_step = TrainStep.from_train_op(spec.train_op, phs)
        else:
            built.train_fn = K.Function(phs, [spec.loss], updates=[spec.train_op],
                                        name="estimator_train")
    elif mode == ModeKeys.EVAL:
        updates, tensors = [], {}
        for name, pair in spec.eval_metric_ops.items():
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                raise TypeError(f"eval_metric_ops['{name}'] must be a (value, "
                                f"update_op) pair. Received: {pair!r}.")
            value, update = pair
            if update is not None:
                updates.append(update)
            if K.is_symbolic(value):
                tensors[name] = value
            elif callable(value):
                built.metric_values[name] = value
            else:
                raise TypeError(f"The value of eval_metric_ops['{name}'] must be a "
                                f"tensor or a callable. Received: {value!r}.")
        model_ids = {id(v) for v in built.variables}
        built.metric_vars = [v for v in local_vars if id(v) not in model_ids]
        built.metric_initial = [v.numpy() for v in built.metric_vars]
        if tensors:
            fn = K.Function([], tensors, name="estimator_metric_values")
            for name in tensors:
                built.metric_values[name] = (lambda fn=fn, n=name:
                                             np.asarray(fn()[n]))
        built.eval_fn = K.Function(phs, [spec.loss], updates=updates,
                                   name="estimator_eval")
    else:
        preds = spec.predictions
        fph = _graph.flatten_batch(f_ph)
        if isinstance(preds, dict):
            built.predict_keys = list(preds)
            built.predict_fn = K.Function(fph, [preds[k] for k in preds],
                                          name="estimator_predict")
        else:
            built.predict_fn = K.Function(fph, [preds], name="estimator_predict")
    return built


# -- variables -------------------------------------------------------------------
def reset_variables(built):
    """Back to the values model_fn initialized them with (a fresh model)."""
    K.assign_all(built.variables, built.initial, "Estimator graph")


def assign_from(built, values, source):
    """Sets built's variables from checkpoint ``values`` {name: array}, all or none.

    Raises:
        ValueError: a trainable variable missing from the checkpoint, or a
            shape that differs, naming both.
    """
    targets, arrays = [], []
    for v, init in zip(built.variables, built.initial):
        if v.name in values:
            targets.append(v)
            arrays.append(values[v.name])
        elif v.trainable:
            raise ValueError(
                f"Checkpoint '{source}' has no variable '{v.name}' that model_fn "
                f"creates; it holds {sorted(values)}. Use a new model_dir for a "
                f"different model.")
        else:  # e.g. slots of a new optimizer: start fresh
            targets.append(v)
            arrays.append(init)
    K.assign_all(targets, arrays, f"Checkpoint '{source}'")


def warm_start(built, settings):
    """Copies matching trainable variables from settings' checkpoint."""
    src = settings.ckpt_to_initialize_from
    if os.path.isdir(src):
        path, values, _ = load_latest(src)
        if path is None:
            raise ValueError(f"warm_start_from '{src}' holds no readable "
                             f"checkpoint.")
    else:
        values, _ = load_checkpoint(src)
    pattern = re.compile(settings.vars_to_warm_start)
    targets, arrays = [], []
    for v in built.variables:
        if v.trainable and pattern.search(v.name) and v.name in values:
            targets.append(v)
            arrays.append(values[v.name])
    if not targets:
        warnings.warn(f"warm_start_from '{src}': no trainable variable matching "
                      f"'{settings.vars_to_warm_start}' was found there.",
                      stacklevel=4)
    K.assign_all(targets, arrays, f"Warm-start checkpoint '{src}'")


# -- checkpoints -----------------------------------------------------------------
def writes_model_dir(est) -> bool:
    """False for a non-chief worker of a one-process-per-worker job (its
    ``train_distribute`` strategy says ``is_chief=False``): as in TF's
    multi-worker training, only the chief writes checkpoints and events."""
    return bool(getattr(est.config.train_distribute, "is_chief", True))


def save_checkpoint(est, built, step):
    """Writes ``model_dir/model.ckpt-<step>``, keeping ``keep_checkpoint_max``
    (nothing on a non-chief worker: ``writes_model_dir``)."""
    if not writes_model_dir(est):
        return None
    # No copy on the host: the file is written before any step runs again.
    arrays = {v.name: np.asarray(K.to_numpy(v.value)) for v in built.variables}
    path = os.path.join(est.model_dir, f"model.ckpt-{int(step)}")
    return ckpt.save_checkpoint(path, arrays,
                                max_to_keep=est.config.keep_checkpoint_max or None)


def load_checkpoint(path):
    """``({name: array}, global_step)`` of a checkpoint (step 0 without one).

    Raises:
        FileNotFoundError, CheckpointError: see ``utils.checkpoint``.
    """
    values = ckpt.load_checkpoint(path)
    return values, int(values["global_step"]) if "global_step" in values else 0


def load_latest(model_dir):
    """``(path, values, step)`` of the newest readable checkpoint, or Nones.

    Unlike TF, which trusts its index alone, a newest checkpoint that fails to
    read is reported with a warning and the previous one listed is used.
    """
    state = ckpt.get_checkpoint_state(model_dir)
    for path in reversed(state.all_model_checkpoint_paths if state else []):
        try:
            return (path, *load_checkpoint(path))
        except (FileNotFoundError, ckpt.CheckpointError) as err:
            warnings.warn(f"{err} Falling back to the previous checkpoint.",
                          stacklevel=3)
    return None, None, None


# -- inputs ----------------------------------------------------------------------
def as_arrays(struct, what):
    """A batch struct (array or dict of arrays) as numpy arrays."""
    if isinstance(struct, dict):
        return {k: np.asarray(v) for k, v in struct.items()}
    if isinstance(struct, (list, tuple)):
        raise TypeError(f"{what} must be an array or a dict of arrays. Received: "
                        f"a {type(struct).__name__} of {len(struct)} items.")
    return np.asarray(struct)


def check_writable(model_dir):
    """Raises OSError naming model_dir unless a file can be created in it."""
    try:
        os.makedirs(model_dir, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=model_dir, prefix=".tmp-", suffix=".part")
        os.close(fd)
        os.remove(probe)
    except OSError as e:
        raise type(e)(e.errno, f"Estimator cannot write checkpoints to model_dir "
                               f"'{model_dir}': {e.strerror or e}") from None


def _call_input_fn(input_fn, mode, est):
    if not callable(input_fn):
        raise TypeError(f"input_fn must be callable. Received: {input_fn!r}.")
    try:
        names = set(inspect.signature(input_fn).parameters)
    except (TypeError, ValueError):
        names = set()
    kwargs = {}
    if "input_context" in names:
        kwargs["input_context"] = InputContext(
            num_replicas_in_sync=est.config.num_replicas_in_sync)
    for key, value in (("mode", mode), ("params", est.params),
                       ("config", est.config)):
        if key in names:
            kwargs[key] = value
    # TF calls input_fn in a graph seeded with tf_random_seed: an unseeded
    # shuffle there takes the same order on every call and in every worker
    # (which MultiWorkerMirroredStrategy's global batches rely on).
    with _graph.seeded(est.config.tf_random_seed):
        return input_fn(**kwargs)


def _split(item):
    if isinstance(item, tuple) and len(item) == 2:
        return item
    if isinstance(item, tuple) and len(item) == 1:
        return item[0], None
    return item, None


def batches(est, input_fn, mode, repeat_single):
    """(features, labels) batches of input_fn, prepared for feeding."""
    result = local_input(_call_input_fn(input_fn, mode, est))  # Ray Data: from_ray
    if isinstance(result, (tuple, dict)):  # TF1: iterator.get_next() tensors
        result = iterator_lib.elements_of(result) or result
    if isinstance(result, (tuple, dict, np.ndarray)):
        first = est._prepare(*_split(result), mode)
        while True:
            yield first
            if not repeat_single:
                return
    if not hasattr(result, "__iter__"):
        raise TypeError(f"input_fn must return (features, labels), features, or an "
                        f"iterable of batches. Received: {type(result).__name__}.")
    for item in result:
        yield est._prepare(*_split(item), mode)


def first_batch(it, input_fn):
    try:
        return next(it)
    except StopIteration:
        raise ValueError(f"input_fn {getattr(input_fn, '__name__', input_fn)} "
                         f"yielded no batch.") from None


def check_signature(built, features, labels, est, mode):
    key = (mode, _graph.signature_of(features), _graph.signature_of(labels))
    if est._built.get(key) is not built:
        raise ValueError(
            f"input_fn changed its batch structure mid-run: expected features/"
            f"labels {key[1:]} like the first batch; received a different one.")


def _train_strategy(est):
    strategy = est.config.train_distribute
    return get_strategy() if strategy is None else strategy


def steps_per_call(est, built):
    """Batches per strategy call in ``train``: the strategy's
    ``default_steps_per_execution`` (Keras' ``steps_per_execution``; 1 in
    process) for a ``minimize`` train op, else 1."""
    if built.train_step is None:
        return 1
    return max(int(getattr(_train_strategy(est), "default_steps_per_execution", 1)), 1)


def run_train_steps(est, built, arrays_list):
    """Training steps, one per entry of ``arrays_list`` (each a batch's flat
    feature and label arrays), in one strategy call; returns their losses
    (the one swap point).

    A ``minimize`` train op runs as a ``TrainStep`` through the strategy of
    ``config.train_distribute`` (``DefaultStrategy`` when None), the path
    ``fit`` takes, K batches per call as ``fit``'s ``steps_per_execution``:
    replicas ship the batches and return the state once per call, not per step.
    A grouped train op (several optimizers, e.g. wide & deep) runs its compiled
    Function in process, one batch at a time.

    Raises:
        ValueError: a grouped train op under a non-default strategy.
    """
    strategy = est.config.train_distribute
    if built.train_step is not None:
        results = _train_strategy(est).run_steps(
            built.train_step, [BatchRef(arrays, None) for arrays in arrays_list])
        return [r.loss for r in results]
    if strategy is not None and not isinstance(strategy, DefaultStrategy):
        raise ValueError(
            f"{type(strategy).__name__} runs train ops that one optimizer's "
            f"minimize() returned; this model_fn returned a grouped op (several "
            f"optimizers). Train it without train_distribute.")
    return [built.train_fn(*arrays)[0] for arrays in arrays_list]
