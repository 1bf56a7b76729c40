"""``train_and_evaluate`` with ``TrainSpec`` / ``EvalSpec`` (TF's local mode).

Training runs to ``TrainSpec.max_steps``; after a checkpoint is saved, the
model is evaluated on ``EvalSpec.input_fn`` if at least ``throttle_secs`` have
passed since the previous evaluation, and once more at the end (TF's
``_TrainingExecutor.run_local``).
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

__all__ = ["EvalSpec", "TrainSpec", "train_and_evaluate"]


class TrainSpec(NamedTuple):
    """What to train on: ``input_fn``, up to ``max_steps`` (None: until the
    input ends), with ``hooks``."""

    input_fn: Any
    max_steps: int | None = None
    hooks: tuple = ()


class EvalSpec(NamedTuple):
    """How to evaluate: ``input_fn`` for ``steps`` batches (None: all), named
    ``name``; at most once per ``throttle_secs``."""

    input_fn: Any
    steps: int | None = 100
    name: str | None = None
    hooks: tuple = ()
    exporters: tuple = ()
    start_delay_secs: float = 120
    throttle_secs: float = 600


class _EvalAfterSave:
    def __init__(self, estimator, eval_spec):
        self.est, self.spec = estimator, eval_spec
        self.last_time = time.monotonic()
        self.last_step = None
        self.results = None

    def evaluate(self, step):
        self.results = self.est.evaluate(self.spec.input_fn, steps=self.spec.steps,
                                         hooks=self.spec.hooks, name=self.spec.name)
        self.last_time, self.last_step = time.monotonic(), step
        return self.results

    def after_save(self, session, global_step):
        if time.monotonic() - self.last_time >= self.spec.throttle_secs:
            self.evaluate(global_step)


def train_and_evaluate(estimator, train_spec, eval_spec):
    """Trains ``estimator`` per ``train_spec``, evaluating per ``eval_spec``.

    With ``TF_CONFIG`` naming a cluster (``RunConfig.distributed``), runs
    this process's task of it instead: ps, chief, worker or evaluator
    (:mod:`kerasflow.estimators.cluster_training`).

    Returns:
        ``(eval_result, export_results)``: the final evaluation's dict and []
        (exporters are not run); on a cluster, the evaluator's last
        evaluation and None on the other tasks.

    Raises:
        TypeError: specs of the wrong type.
    """
    if not isinstance(train_spec, TrainSpec):
        raise TypeError(f"train_spec must be a TrainSpec. Received: "
                        f"{type(train_spec).__name__}.")
    if not isinstance(eval_spec, EvalSpec):
        raise TypeError(f"eval_spec must be an EvalSpec. Received: "
                        f"{type(eval_spec).__name__}.")
    cfg = estimator.config
    if cfg.distributed and cfg.train_distribute is None:  # TF_CONFIG: this task
        from kerasflow.estimators.cluster_training import run_task

        return run_task(estimator, train_spec, eval_spec)
    from kerasflow.estimators._running import writes_model_dir

    if not writes_model_dir(estimator):  # a non-chief worker trains, the chief evaluates
        estimator.train(train_spec.input_fn, hooks=list(train_spec.hooks),
                        max_steps=train_spec.max_steps)
        return None, []
    listener = _EvalAfterSave(estimator, eval_spec)
    estimator.train(train_spec.input_fn, hooks=list(train_spec.hooks),
                    max_steps=train_spec.max_steps, saving_listeners=[listener])
    _, _, step = estimator._load_latest()
    if listener.results is None or listener.last_step != step:
        listener.evaluate(step)
    return listener.results, []
