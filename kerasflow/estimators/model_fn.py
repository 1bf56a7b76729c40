"""``ModeKeys`` and ``EstimatorSpec``: what a ``model_fn`` returns (TF names)."""

from __future__ import annotations

import collections

from kerasflow import backend as K

__all__ = ["EstimatorSpec", "ModeKeys"]


class ModeKeys:
    """The three modes a ``model_fn`` is called in (``tf.estimator.ModeKeys``)."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"

    @classmethod
    def all(cls):
        return (cls.TRAIN, cls.EVAL, cls.PREDICT)


_SPEC_FIELDS = ["mode", "predictions", "loss", "train_op", "eval_metric_ops",
                "export_outputs", "training_hooks", "evaluation_hooks"]


class EstimatorSpec(collections.namedtuple("EstimatorSpec", _SPEC_FIELDS)):
    """The graph a ``model_fn`` built for one mode (``tf.estimator.EstimatorSpec``).

    Attributes:
        mode: a ``ModeKeys`` value.
        predictions: tensor or dict of tensors, each of shape (batch, ...);
            required in PREDICT.
        loss: scalar float tensor; required in TRAIN and EVAL.
        train_op: the op ``optimizer.minimize(loss, global_step=...)`` returned
            (or a ``group`` of such ops); required in TRAIN.
        eval_metric_ops: ``{name: (value_tensor, update_op)}`` as TF1's
            ``tf.metrics`` functions return (see ``kerasflow.estimators.metrics``);
            a value may also be a callable returning a float.
        export_outputs: kept for TF compatibility; ``export_saved_model`` writes
            the predictions.
        training_hooks, evaluation_hooks: objects with TF's ``SessionRunHook``
            methods (``begin``, ``after_run(run_context, run_values)``, ``end``).

    Raises:
        ValueError: a mode outside ``ModeKeys``, or a missing field the mode
            requires, naming it.
        TypeError: a loss that is not a scalar tensor.
    """

    __slots__ = ()

    def __new__(cls, mode, predictions=None, loss=None, train_op=None,
                eval_metric_ops=None, export_outputs=None, training_hooks=(),
                evaluation_hooks=()):
        if mode not in ModeKeys.all():
            raise ValueError(f"EstimatorSpec expects mode in {ModeKeys.all()}. "
                             f"Received: mode={mode!r}.")
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL) and loss is None:
            raise ValueError(f"EstimatorSpec in mode '{mode}' needs a loss. "
                             f"Received: loss=None.")
        if mode == ModeKeys.TRAIN and train_op is None:
            raise ValueError("EstimatorSpec in mode 'train' needs a train_op "
                             "(optimizer.minimize(loss, global_step=...)). "
                             "Received: train_op=None.")
        if mode == ModeKeys.PREDICT and predictions is None:
            raise ValueError("EstimatorSpec in mode 'infer' needs predictions. "
                             "Received: predictions=None.")
        if loss is not None:
            if not K.is_symbolic(loss):
                raise TypeError(f"EstimatorSpec expects loss to be a symbolic "
                                f"tensor. Received: {type(loss).__name__}.")
            if loss.shape not in ((), None) and any(d != 1 for d in loss.shape):
                raise ValueError(f"EstimatorSpec expects a scalar loss. Received: "
                                 f"loss.shape={loss.shape}.")
        if eval_metric_ops is not None and not isinstance(eval_metric_ops, dict):
            raise TypeError(f"eval_metric_ops must be a dict {{name: (value, "
                            f"update_op)}}. Received: {type(eval_metric_ops)}.")
        return super().__new__(cls, mode, predictions, loss, train_op,
                               eval_metric_ops or {}, export_outputs,
                               tuple(training_hooks or ()),
                               tuple(evaluation_hooks or ()))
