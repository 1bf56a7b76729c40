"""``model_to_estimator``: a compiled Keras model as an ``Estimator``."""

from __future__ import annotations

from kerasflow import backend as K
from kerasflow import train as train_lib
from kerasflow.estimators import metrics as metric_pairs
from kerasflow.estimators.estimator import Estimator
from kerasflow.estimators.model_fn import EstimatorSpec, ModeKeys
from kerasflow.layers.base import training_context
from kerasflow.models import compile_utils as cu
from kerasflow.models import load_model

__all__ = ["model_to_estimator"]


def _model_fn_for(model):
    def model_fn(features, labels, mode):
        training = mode == ModeKeys.TRAIN
        with training_context(training):
            outputs = model(features, training=training)
        if isinstance(outputs, (list, tuple)):
            raise ValueError(  # noqa: TRY004  (a model, not an argument, type)
                "model_to_estimator supports single-output models. "
                             f"Received: a model with {len(outputs)} outputs.")
        predictions = {model._output_names(1)[0]: outputs}
        if mode == ModeKeys.PREDICT:
            return EstimatorSpec(mode, predictions=predictions)
        names = model._output_names(1)
        loss_fns, _ = model._compiled_losses.resolve(names, model.name)
        if labels.ndim == 1 and not cu.is_sparse_target(labels.shape,
                                                        outputs.shape):
            labels = K.reshape(labels, (-1, 1))
        ones = K.ones_like(K.sum(outputs, axis=tuple(range(1, outputs.ndim))))
        loss = cu.weighted_loss(loss_fns[0], labels, outputs, ones)
        for penalty in model.losses:
            loss = loss + penalty
        metric_objs = cu.resolve_metrics(model._metrics_spec, names, [outputs],
                                         [labels.shape])
        if mode == ModeKeys.EVAL:
            ops = {name: metric_pairs.from_keras_metric(m, labels, outputs)
                   for _, name, m in metric_objs}
            return EstimatorSpec(mode, predictions=predictions, loss=loss,
                                 eval_metric_ops=ops)
        op = model.optimizer.minimize(
            loss, global_step=train_lib.get_or_create_global_step(),
            var_list=model.trainable_weights)
        return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=op)

    return model_fn


def model_to_estimator(keras_model=None, keras_model_path=None, custom_objects=None,
                       model_dir=None, config=None):
    """An ``Estimator`` that trains, evaluates and predicts ``keras_model``.

    The model's layers, loss, optimizer and metrics (from ``compile``) are used;
    its current weights are the starting point. Predictions are keyed by the
    output layer's name.

    Args:
        keras_model: a compiled ``Model``/``Sequential``.
        keras_model_path: or a file saved with ``model.save`` (loaded without
            pickle).
        custom_objects: for loading the file.
        model_dir, config: as ``Estimator``.

    Raises:
        ValueError: neither or both model arguments, or an uncompiled model.
    """
    if (keras_model is None) == (keras_model_path is None):
        raise ValueError("model_to_estimator expects exactly one of keras_model and "
                         "keras_model_path.")
    if keras_model is None:
        keras_model = load_model(keras_model_path, custom_objects=custom_objects)
    if not getattr(keras_model, "compiled", False):
        raise ValueError(f"model_to_estimator expects a compiled model. Call "
                         f"compile() on '{keras_model.name}' first.")
    est = Estimator(_model_fn_for(keras_model), model_dir=model_dir, config=config)
    est._keras_model = keras_model
    return est
