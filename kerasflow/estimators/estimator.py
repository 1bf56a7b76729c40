"""``Estimator``: train, evaluate and predict a ``model_fn`` (``tf.estimator``).

Every call builds (once per process, mode and input signature) the graph of
``model_fn`` on placeholders, restores its variables from the newest valid
checkpoint in ``model_dir`` by name, runs batches from ``input_fn`` and, in
``train``, writes numbered checkpoints and TensorBoard events (TF Estimator,
Cheng et al., "TensorFlow Estimators", KDD 2017).
"""

from __future__ import annotations

import os
import tempfile
import warnings

import numpy as np

from kerasflow.distribute.distribute_lib import get_strategy
from kerasflow.estimators import _export, _graph
from kerasflow.estimators import _loops as L
from kerasflow.estimators import _running as R
from kerasflow.estimators.model_fn import ModeKeys
from kerasflow.estimators.run_config import RunConfig

__all__ = ["Estimator", "WarmStartSettings"]


class WarmStartSettings:
    """Where to warm-start trainable variables from (``tf.estimator.WarmStartSettings``).

    Args:
        ckpt_to_initialize_from: a model_dir or a checkpoint file path.
        vars_to_warm_start: regular expression; trainable variables whose name
            matches are copied (default ".*": all trainable variables).
    """

    def __init__(self, ckpt_to_initialize_from, vars_to_warm_start=".*"):
        self.ckpt_to_initialize_from = os.fspath(ckpt_to_initialize_from)
        self.vars_to_warm_start = vars_to_warm_start


class Estimator:
    """A model given by ``model_fn``, trained and served through ``model_dir``.

    Args:
        model_fn: ``model_fn(features, labels, mode, params, config)`` (``params``
            and ``config`` optional) building the graph with kerasflow layers/ops
            from symbolic ``features`` (tensor or dict of tensors of shape
            (batch, ...)) and returning an ``EstimatorSpec``.
        model_dir: folder of checkpoints and event files; default
            ``config.model_dir``, else a new temporary folder.
        config: ``RunConfig``.
        params: dict handed to ``model_fn``.
        warm_start_from: model_dir, checkpoint path or ``WarmStartSettings``:
            trainable variables start from there when model_dir has no
            checkpoint yet.

    Raises:
        TypeError: model_fn not callable, config not a RunConfig.
        ValueError: model_dir and config.model_dir disagree.

    Example:
        >>> est = Estimator(model_fn, model_dir="/tmp/m")
        >>> est.train(numpy_input_fn({"x": x}, y, shuffle=True), steps=100)
        >>> est.evaluate(numpy_input_fn({"x": x}, y, shuffle=False))["loss"]
    """

    def __init__(self, model_fn, model_dir=None, config=None, params=None,
                 warm_start_from=None):
        if not callable(model_fn):
            raise TypeError(f"Estimator expects a callable model_fn. Received: "
                            f"{model_fn!r}.")
        if config is None:
            config = RunConfig()
        if not isinstance(config, RunConfig):
            raise TypeError(f"config must be a RunConfig. Received: "
                            f"{type(config).__name__}.")
        if model_dir is not None and config.model_dir is not None and \
                os.path.abspath(model_dir) != os.path.abspath(config.model_dir):
            raise ValueError(f"model_dir ({model_dir}) and config.model_dir "
                             f"({config.model_dir}) differ; give one.")
        model_dir = model_dir or config.model_dir
        if model_dir is None:
            model_dir = tempfile.mkdtemp(prefix="kerasflow_estimator_")
            warnings.warn(f"Using temporary folder as model directory: {model_dir}",
                          stacklevel=2)
        self._model_fn = model_fn
        self._config = config.replace(model_dir=os.fspath(model_dir))
        self._params = dict(params or {})
        if warm_start_from is not None and not isinstance(warm_start_from,
                                                          WarmStartSettings):
            warm_start_from = WarmStartSettings(warm_start_from)
        self._warm_start = warm_start_from
        self._built: dict = {}
        # Canned estimators: raw features/labels -> the numeric arrays fed.
        self._feature_transform = None
        self._label_transform = None
        self._prediction_transform = None

    # -- properties ---------------------------------------------------------------
    @property
    def model_dir(self) -> str:
        return self._config.model_dir

    @property
    def config(self) -> RunConfig:
        return self._config

    @property
    def params(self) -> dict:
        return dict(self._params)

    @property
    def model_fn(self):
        return self._model_fn

    # -- checkpoints ----------------------------------------------------------------
    def latest_checkpoint(self):
        """Path of the newest readable checkpoint in model_dir, or None."""
        return self._load_latest()[0]

    def _load_latest(self):
        return R.load_latest(self.model_dir)

    def get_variable_names(self) -> list:
        """Names of the variables in the newest checkpoint.

        Raises:
            ValueError: no checkpoint in model_dir.
        """
        return list(self._checkpoint_values())

    def get_variable_value(self, name):
        """A variable's value (numpy array) in the newest checkpoint.

        Raises:
            ValueError: no checkpoint, or no such variable (listing the names).
        """
        values = self._checkpoint_values()
        if name not in values:
            raise ValueError(f"No variable '{name}' in the checkpoint of "
                             f"'{self.model_dir}'. Variables: {sorted(values)}.")
        return values[name]

    def _checkpoint_values(self):
        path, values, _ = self._load_latest()
        if path is None:
            raise ValueError(f"No checkpoint in model_dir '{self.model_dir}'. "
                             f"Train first.")
        return values

    # -- building -------------------------------------------------------------------
    def _prepare(self, features, labels, mode):
        if self._feature_transform is not None:
            features = self._feature_transform(features)
        else:
            features = R.as_arrays(features, "features")
        if labels is not None and mode != ModeKeys.PREDICT:
            labels = (self._label_transform(labels)
                      if self._label_transform is not None
                      else R.as_arrays(labels, "labels"))
        if mode == ModeKeys.PREDICT:
            labels = None
        return features, labels

    def _get_built(self, mode, features, labels):
        key = (mode, _graph.signature_of(features), _graph.signature_of(labels))
        built = self._built.get(key)
        if built is None:
            built = R.build(self._model_fn, mode, features, labels, self._params,
                            self._config)
            self._built[key] = built
        return built

    def _restore(self, built, mode, checkpoint_path=None):
        """Loads built's variables from a checkpoint; returns its global step."""
        if checkpoint_path is not None:
            values, step = R.load_checkpoint(checkpoint_path)
            path = checkpoint_path
        else:
            path, values, step = self._load_latest()
        if path is None:
            if mode == ModeKeys.TRAIN:
                R.reset_variables(built)
                if self._warm_start is not None:
                    R.warm_start(built, self._warm_start)
                return 0
            if mode == ModeKeys.EVAL:
                raise ValueError(f"Could not find a trained model in model_dir "
                                 f"'{self.model_dir}'. Train the Estimator first.")
            warnings.warn(f"No checkpoint in '{self.model_dir}': predicting with "
                          f"freshly initialized variables.", stacklevel=3)
            R.reset_variables(built)
            return 0
        R.assign_from(built, values, path)
        return step

    # -- train ----------------------------------------------------------------------
    def train(self, input_fn, hooks=None, steps=None, max_steps=None,
              saving_listeners=None):
        """Trains from the newest checkpoint on for ``steps`` more or up to ``max_steps``.

        Args:
            input_fn: returns ``(features, labels)`` arrays (one batch used at
                every step) or an iterable of such batches (training stops when
                it ends). May accept ``input_context``, ``mode``, ``params``,
                ``config``.
            hooks: objects with any of TF's ``SessionRunHook`` methods ``begin()``,
                ``after_run(run_context, run_values)`` (``run_values.results``
                holds "loss" and "global_step"; ``run_context.request_stop()``
                ends training) and ``end(session=None)``.
            steps: train this many more steps (from the restored global step).
            max_steps: train until the global step reaches this; an already
                reached max_steps trains nothing.
            saving_listeners: objects with ``after_save(session, global_step)``.

        Returns:
            self.

        Raises:
            ValueError: both or non-positive steps/max_steps, an input_fn that
                yields nothing or batches of changing structure, bad labels.
            OSError: model_dir cannot be written (nothing is trained).
            RuntimeError: a NaN or infinite loss (the checkpoints written so far
                stay valid).
        """
        if steps is not None and max_steps is not None:
            raise ValueError(f"Can not provide both steps and max_steps. Received: "
                             f"steps={steps}, max_steps={max_steps}.")
        for name, v in (("steps", steps), ("max_steps", max_steps)):
            if v is not None and (isinstance(v, bool) or not isinstance(
                    v, (int, np.integer)) or v <= 0):
                raise ValueError(f"Must specify {name} > 0. Received: {name}={v!r}.")
        R.check_writable(self.model_dir)
        if max_steps is not None:
            _, _, done = self._load_latest()
            if done is not None and done >= max_steps:
                return self
        # Actors of a train_distribute strategy outside its scope end with train.
        with (self.config.train_distribute or get_strategy()).training():
            return L.train_loop(self, input_fn, hooks, steps, max_steps,
                                saving_listeners)

    # -- evaluate ------------------------------------------------------------------
    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None,
                 name=None):
        """Evaluates the newest checkpoint on ``input_fn``'s batches.

        Args:
            input_fn: as in ``train``; evaluation runs until it is exhausted, or
                for ``steps`` batches (a single returned batch is used once).
            steps: at most this many batches.
            hooks: as in ``train`` (``run_values.results`` holds "loss").
            checkpoint_path: evaluate this checkpoint instead of the newest.
            name: evaluations with different names log to ``eval_<name>``.

        Returns:
            dict: "loss" (mean of the batch losses), "global_step" and every
            ``eval_metric_ops`` value, as Python numbers.

        Raises:
            ValueError: no checkpoint in model_dir, an input_fn without batches.
        """
        return L.evaluate_loop(self, input_fn, steps, hooks, checkpoint_path, name)

    # -- predict --------------------------------------------------------------------
    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True):
        """Yields predictions for ``input_fn``'s features, example by example.

        Args:
            input_fn: returns features (or ``(features, labels)``; labels are
                ignored) or an iterable of such batches.
            predict_keys: a key or list of keys of the predictions dict to keep.
            checkpoint_path: predict with this checkpoint instead of the newest.
            yield_single_examples: False yields one dict of arrays per batch.

        Yields:
            dict {key: array of one example} (or the array itself when
            ``predictions`` is a single tensor).

        Raises:
            ValueError: a predict key the model does not produce (listing them).
        """
        return L.predict_loop(self, input_fn, predict_keys, hooks, checkpoint_path,
                              yield_single_examples)

    # -- export ---------------------------------------------------------------------
    def export_saved_model(self, export_dir_base, serving_input_receiver_fn=None,
                           checkpoint_path=None):
        """Writes the newest checkpoint's variables to ``export_dir_base/<timestamp>``.

        The export folder holds ``variables.npz`` (a checkpoint file, read with
        ``allow_pickle=False``) and ``estimator.json`` (class, global step,
        variable names). An Estimator from ``model_to_estimator`` also writes the
        Keras model as ``model.kerasflow`` (``kerasflow.models.load_model``). A new
        Estimator with the same ``model_fn`` loads an export through
        ``warm_start_from=<export>/variables.npz``.

        Returns:
            The export folder (str).

        Raises:
            ValueError: no checkpoint to export.
        """
        return _export.export(self, export_dir_base, checkpoint_path)

    def __repr__(self):
        return f"<{type(self).__name__} model_dir='{self.model_dir}'>"
