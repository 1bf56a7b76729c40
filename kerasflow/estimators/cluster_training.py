"""``train_and_evaluate`` on a ``TF_CONFIG`` cluster (TF 1.x's distributed
Estimator: one process per task, the same program in each).

``RunConfig`` reads ``TF_CONFIG`` (``cluster`` with ``chief``, ``worker``,
``ps`` jobs; ``task`` with ``type`` and ``index``); ``train_and_evaluate``
then runs this process's task:

* **ps**: ``tf.train.Server(cluster, "ps", i).join()``: hosts the variables
  until SIGTERM or SIGINT (TF's ps tasks never return either).
* **chief** and **worker**: between-graph replication, as TF 1.x's
  ``replica_device_setter`` did for Estimators: the ``model_fn``'s variables
  (model, ``global_step``) are placed round-robin on the ps tasks in creation
  order, keyed by name (the same in every process); every step pulls them,
  computes the gradient on the task's own batch and pushes it, and the ps
  applies it with the optimizer (asynchronous updates, Li et al., OSDI 2014).
  The chief initializes the variables, or restores the newest checkpoint of
  ``model_dir`` (a restarted chief resumes), publishes them to the ps, and
  writes checkpoints every ``save_checkpoints_steps`` / ``_secs`` and at the
  end; the other workers wait (bounded) until it has. Training ends when the
  shared ``global_step`` reaches ``TrainSpec.max_steps``.
* **evaluator** (not in the cluster, as in TF): evaluates every new
  checkpoint of ``model_dir`` on ``EvalSpec.input_fn``, at most once per
  ``throttle_secs``, after ``start_delay_secs``, until one at ``max_steps``;
  it returns that evaluation.

The chief's checkpoints hold the model variables and ``global_step``; the
optimizer's slots live on the ps tasks and are not in them (a chief
restarted with fresh ps tasks restarts the slots).

Every wait has a deadline (``$KERASFLOW_CLUSTER_TIMEOUT``, default 60 s) and
an error naming the task waited for.
"""

from __future__ import annotations

import os
import time

import numpy as np

from kerasflow.estimators import _graph
from kerasflow.estimators import _running as R
from kerasflow.estimators._loops import SessionRunValues, _call_hooks, _RunContext
from kerasflow.estimators.model_fn import ModeKeys
from kerasflow.optimizers import train_op_info
from kerasflow.utils import checkpoint as ckpt

__all__ = ["run_task"]


def _timeout():
    return float(os.environ.get("KERASFLOW_CLUSTER_TIMEOUT", "60"))


def run_task(estimator, train_spec, eval_spec):
    """Runs this process's task of the TF_CONFIG cluster (see the module
    docstring).

    Returns:
        ``(eval_result, [])``: the last evaluation on the evaluator, None on
        the other tasks.

    Raises:
        ValueError: no ``TrainSpec.max_steps``; no ps task in the cluster; a
            model_fn whose train op is not one optimizer's ``minimize``.
        TimeoutError: a task waited for did not come within the deadline.
    """
    cfg = estimator.config
    if train_spec.max_steps is None:
        raise ValueError("train_and_evaluate on a TF_CONFIG cluster expects "
                         "TrainSpec.max_steps (every task stops at that global "
                         "step). Received: max_steps=None")
    if cfg.task_type == "evaluator":
        return _evaluate_checkpoints(estimator, train_spec, eval_spec), []
    if cfg.num_ps_replicas == 0:
        raise ValueError(
            f"train_and_evaluate on a TF_CONFIG cluster places the variables on "
            f"ps tasks: expected a 'ps' job in TF_CONFIG's cluster. Received: "
            f"jobs {cfg.cluster_spec.jobs}. For all-reduce training without ps "
            f"use RunConfig(train_distribute=MultiWorkerMirroredStrategy()).")
    from kerasflow.distribute.tf1.server import Server

    server = Server(cfg.cluster_spec, job_name=cfg.task_type, task_index=cfg.task_id,
                    timeout=_timeout())
    if cfg.task_type == "ps":
        server.join()
        return None, []
    try:
        _train(estimator, train_spec, server, cfg.is_chief)
    finally:
        server.stop()
    return None, []


def _train(est, spec, server, is_chief):
    from kerasflow.compat.v1.cluster_session import ClusterSession
    from kerasflow.compat.v1.graph import Graph

    cfg = est.config
    if is_chief:
        R.check_writable(est.model_dir)
    it = R.batches(est, spec.input_fn, ModeKeys.TRAIN, repeat_single=True)
    features, labels = R.first_batch(it, spec.input_fn)
    built = est._get_built(ModeKeys.TRAIN, features, labels)
    if train_op_info(built.spec.train_op) is None:
        raise ValueError("train_and_evaluate on a TF_CONFIG cluster expects the "
                         "model_fn's train_op from one optimizer's minimize(). "
                         "Received: a grouped train op (several optimizers).")
    graph = Graph()
    for i, var in enumerate(built.variables):  # TF's round-robin ps placement
        graph.ps_vars[var] = (i % server.num_ps, var.name)
    sess = ClusterSession(server.target, graph=graph)
    gs = built.global_step
    if is_chief:
        gs.assign(est._restore(built, ModeKeys.TRAIN))
        sess.publish(built.variables)
    else:
        _wait_for_chief(sess, server)
    hooks = list(spec.hooks)
    _call_hooks(hooks, "begin")
    ctx = _RunContext()
    fetches = [built.spec.train_op, built.spec.loss, gs]
    every_steps, every_secs = cfg.save_checkpoints_steps, cfg.save_checkpoints_secs
    last_step, last_time = None, time.monotonic()
    batch = (features, labels)
    while True:
        arrays = _graph.flatten_batch(batch[0]) + _graph.flatten_batch(batch[1])
        _, loss, step = sess.run(fetches, dict(zip(built.placeholders, arrays)))
        step = int(step) + 1  # this push's increment (read before it)
        if not np.isfinite(loss):
            raise RuntimeError(f"Model diverged with loss = {loss} at global step "
                               f"{step} on {server.task}.")
        _call_hooks(hooks, "after_run", ctx, SessionRunValues(
            {"loss": float(loss), "global_step": step}))
        if is_chief and ((every_steps and step - (last_step or 0) >= every_steps) or (
                every_secs and time.monotonic() - last_time >= every_secs)):
            last_step, last_time = _save(sess, est, built), time.monotonic()
        if step >= spec.max_steps or ctx.stop_requested:
            break
        batch = next(it, None)
        if batch is None:
            break
        R.check_signature(built, batch[0], batch[1], est, ModeKeys.TRAIN)
    if is_chief:
        _save(sess, est, built)
    _call_hooks(hooks, "end", None)


def _save(sess, est, built):
    """Pulls every ps variable, then writes the chief's checkpoint; returns
    its global step."""
    sess.pull(built.variables)
    step = int(built.global_step.numpy())
    R.save_checkpoint(est, built, step)
    return step


def _wait_for_chief(sess, server):
    deadline = time.monotonic() + server.timeout
    while (missing := sess.missing()):
        if time.monotonic() > deadline:
            desc = "; ".join(f"/job:ps/task:{k}: {m[:5]}" for k, m in sorted(missing.items()))
            raise TimeoutError(
                f"{server.task} waited {server.timeout:g} s for the chief "
                f"(/job:chief/task:0) to initialize the model: expected every ps "
                f"variable set. Received still missing: {desc}.")
        time.sleep(0.2)


def _evaluate_checkpoints(est, train_spec, eval_spec):
    """TF's continuous evaluation: each new checkpoint, once, until one at
    ``max_steps``; raises TimeoutError when none comes within the deadline
    (plus the chief's checkpoint interval)."""
    cfg = est.config
    wait = _timeout() + float(cfg.save_checkpoints_secs or 0)
    time.sleep(max(0.0, float(eval_spec.start_delay_secs or 0)))
    last_path, results, idle_since, last_eval = None, None, time.monotonic(), None
    while True:
        path = ckpt.latest_checkpoint(est.model_dir)
        if path is not None and path != last_path:
            if last_eval is not None:
                time.sleep(max(0.0, float(eval_spec.throttle_secs or 0)
                               - (time.monotonic() - last_eval)))
                path = ckpt.latest_checkpoint(est.model_dir) or path
            try:
                results = est.evaluate(eval_spec.input_fn, steps=eval_spec.steps,
                                       hooks=eval_spec.hooks, checkpoint_path=path,
                                       name=eval_spec.name)
            except FileNotFoundError:  # removed by keep_checkpoint_max meanwhile
                continue
            last_path, last_eval = path, time.monotonic()
            idle_since = last_eval
            if results["global_step"] >= train_spec.max_steps:
                return results
        elif time.monotonic() - idle_since > wait:
            raise TimeoutError(
                f"The evaluator waited {wait:g} s for a new checkpoint in "
                f"'{est.model_dir}' from the chief (/job:chief/task:0): expected "
                f"one up to global step {train_spec.max_steps}. Received: newest "
                f"{last_path!r}.")
        else:
            time.sleep(0.2)

