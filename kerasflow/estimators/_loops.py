"""The Estimator's train, evaluate and predict loops."""

from __future__ import annotations

import os
import tempfile
import time
from typing import NamedTuple

import numpy as np

from kerasflow.estimators import _graph
from kerasflow.estimators import _running as R
from kerasflow.estimators.model_fn import ModeKeys
from kerasflow.summary import open_writer
from kerasflow.utils import checkpoint as ckpt

__all__ = ["SessionRunValues", "evaluate_loop", "predict_loop", "train_loop"]


class SessionRunValues(NamedTuple):
    """What a hook's ``after_run`` receives (TF's ``SessionRunValues``)."""

    results: dict


class _RunContext:
    """TF's ``SessionRunContext``: hooks call ``request_stop()`` to end a loop."""

    def __init__(self):
        self.stop_requested = False

    def request_stop(self):
        self.stop_requested = True


def _call_hooks(hooks, method, *args):
    for h in hooks:
        fn = getattr(h, method, None)
        if fn is not None:
            fn(*args)


def _progress(total, initial, desc):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=desc, unit="step",
                dynamic_ncols=True, leave=False, disable=None)


def _next_batch(it, built, est, mode):
    """The next batch, checked against built's input signature; None at the end."""
    batch = next(it, None)
    if batch is not None:
        R.check_signature(built, batch[0], batch[1], est, mode)
    return batch


# A call's batches stop growing at this many bytes (an input_fn returning the
# whole dataset as one batch is repeated: K copies would be shipped at once).
GROUP_BYTES = 64 << 20


def _flat(batch):
    return _graph.flatten_batch(batch[0]) + _graph.flatten_batch(batch[1])


def _nbytes(arrays):
    return sum(int(getattr(a, "nbytes", 0)) for a in arrays)


def train_loop(est, input_fn, hooks, steps, max_steps, saving_listeners):
    hooks = list(hooks or [])
    cfg = est.config
    it = R.batches(est, input_fn, ModeKeys.TRAIN, repeat_single=True)
    features, labels = R.first_batch(it, input_fn)
    if labels is None:
        raise ValueError("Estimator.train needs labels: input_fn returned features "
                         "only. Return (features, labels).")
    built = est._get_built(ModeKeys.TRAIN, features, labels)
    gs_var = built.global_step
    step = est._restore(built, ModeKeys.TRAIN)
    gs_var.assign(step)
    target = max_steps if max_steps is not None else (
        step + steps if steps is not None else None)
    if target is not None and step >= target:
        return est
    # A non-chief worker's events go to a folder of its own (TF's rule).
    writer = open_writer(est.model_dir if R.writes_model_dir(est) else
                         tempfile.mkdtemp(prefix="kf-worker-events-"), flush_secs=30)
    writer.add_graph(_graph.graph_nodes(built.spec.loss, built.spec.train_op))
    _call_hooks(hooks, "begin")
    bar = _progress(target, step, "train")
    ctx = _RunContext()
    last_save_step, last_save_time = step, time.monotonic()
    log_every = max(int(cfg.log_step_count_steps or 0), 1)
    summary_every = int(cfg.save_summary_steps or 0)
    ckpt_steps, ckpt_secs = cfg.save_checkpoints_steps, cfg.save_checkpoints_secs
    t_log, s_log = time.monotonic(), step
    loss = None
    # K batches per strategy call (the strategy's default_steps_per_execution:
    # 1 in process, 64 for replicas): a group ends at the target and at every
    # step-based checkpoint; hooks see every step, so with hooks K = 1.
    per_call = 1 if hooks else R.steps_per_call(est, built)
    try:
        pending = (features, labels)
        while pending is not None:
            if target is not None and step >= target:
                break
            k = per_call if target is None else min(per_call, target - step)
            if ckpt_steps:
                k = min(k, max(ckpt_steps - (step - last_save_step), 1))
            group = [_flat(pending)]
            size = _nbytes(group[0])
            exhausted = False
            while len(group) < k and size < GROUP_BYTES:
                nxt = _next_batch(it, built, est, ModeKeys.TRAIN)
                if nxt is None:
                    exhausted = True
                    break
                group.append(_flat(nxt))
                size += _nbytes(group[-1])
            losses = R.run_train_steps(est, built, group)
            before = step
            if int(gs_var.value) == before:  # train_op did not count: the Estimator does
                gs_var.assign(before + len(losses))
            for loss in map(float, losses):
                if not np.isfinite(loss):
                    raise RuntimeError(
                        f"Model diverged with loss = {loss} at global step {step + 1} "
                        f"(NaN or infinite loss during training). The checkpoints in "
                        f"'{est.model_dir}' up to step {last_save_step} are intact.")
                step += 1
                if summary_every and step % summary_every == 0:
                    writer.add_scalar("loss", loss, step)
                if step % log_every == 0:
                    now = time.monotonic()
                    rate = (step - s_log) / max(now - t_log, 1e-9)
                    writer.add_scalar("global_step/sec", rate, step)
                    bar.update(step - bar.n)
                    bar.set_postfix(loss=f"{loss:.4g}", steps_per_sec=f"{rate:.1f}")
                    t_log, s_log = now, step
                if hooks:
                    _call_hooks(hooks, "after_run", ctx, SessionRunValues(
                        {"loss": loss, "global_step": step}))
            step = max(step, int(gs_var.value))  # a train_op counting more than one
            # The weights now are those after the group's last step.
            if (ckpt_steps and step - last_save_step >= ckpt_steps) or (
                    ckpt_secs and time.monotonic() - last_save_time >= ckpt_secs):
                R.save_checkpoint(est, built, step)
                _call_hooks(saving_listeners or [], "after_save", None, step)
                last_save_step, last_save_time = step, time.monotonic()
            if ctx.stop_requested or exhausted:
                break
            pending = _next_batch(it, built, est, ModeKeys.TRAIN)
        if step != last_save_step or ckpt.latest_checkpoint(
                est.model_dir) is None:
            R.save_checkpoint(est, built, step)
            _call_hooks(saving_listeners or [], "after_save", None, step)
        if loss is not None:
            writer.add_scalar("loss", loss, step)
    finally:
        bar.close()
        writer.close()
    _call_hooks(hooks, "end", None)
    return est


def evaluate_loop(est, input_fn, steps, hooks, checkpoint_path, name):
    hooks = list(hooks or [])
    if steps is not None and (not isinstance(steps, (int, np.integer)) or steps <= 0):
        raise ValueError(f"Must specify steps > 0 or None. Received: steps={steps!r}.")
    it = R.batches(est, input_fn, ModeKeys.EVAL, repeat_single=False)
    features, labels = R.first_batch(it, input_fn)
    built = est._get_built(ModeKeys.EVAL, features, labels)
    step = est._restore(built, ModeKeys.EVAL, checkpoint_path)
    built.reset_metrics()
    _call_hooks(hooks, "begin")
    ctx = _RunContext()
    losses, n = [], 0
    batch = (features, labels)
    while True:
        arrays = _graph.flatten_batch(batch[0]) + _graph.flatten_batch(batch[1])
        losses.append(float(built.eval_fn(*arrays)[0]))
        n += 1
        if hooks:
            _call_hooks(hooks, "after_run", ctx,
                        SessionRunValues({"loss": losses[-1]}))
        if ctx.stop_requested or (steps is not None and n >= steps):
            break
        batch = _next_batch(it, built, est, ModeKeys.EVAL)
        if batch is None:
            break
    results = {"loss": float(np.mean(losses))}
    for key, value in built.metric_values.items():
        v = np.asarray(value())
        results[key] = float(v) if v.ndim == 0 else v
    results["global_step"] = int(step)
    logdir = os.path.join(est.model_dir, "eval" if not name else f"eval_{name}")
    writer = open_writer(logdir, flush_secs=30)
    try:
        for key, v in results.items():
            if key != "global_step" and np.ndim(v) == 0:
                writer.add_scalar(key, v, step)
    finally:
        writer.close()
    _call_hooks(hooks, "end", None)
    return results


def _select(built, predict_keys):
    keys = built.predict_keys
    if predict_keys is None:
        return None
    if isinstance(predict_keys, str):
        predict_keys = [predict_keys]
    if keys is None:
        raise ValueError(f"predict_keys={predict_keys} given, but model_fn returns "
                         f"a single predictions tensor, not a dict.")
    keys = keys + (["classes"] if "class_ids" in keys else [])
    unknown = [k for k in predict_keys if k not in keys]
    if unknown:
        raise ValueError(f"predict_keys {unknown} are not among the predictions. "
                         f"Available keys: {keys}.")
    return list(predict_keys)


def predict_loop(est, input_fn, predict_keys, hooks, checkpoint_path,
                 yield_single_examples):
    hooks = list(hooks or [])
    it = R.batches(est, input_fn, ModeKeys.PREDICT, repeat_single=False)
    features, _ = R.first_batch(it, input_fn)
    built = est._get_built(ModeKeys.PREDICT, features, None)
    est._restore(built, ModeKeys.PREDICT, checkpoint_path)
    wanted = _select(built, predict_keys)
    _call_hooks(hooks, "begin")
    batch = features
    while True:
        outs = [np.asarray(o) for o in
                built.predict_fn(*_graph.flatten_batch(batch))]
        n = len(outs[0]) if outs and outs[0].ndim else 0
        if built.predict_keys is None:
            if yield_single_examples:
                yield from outs[0]
            else:
                yield outs[0]
        else:
            d = dict(zip(built.predict_keys, outs))
            if est._prediction_transform is not None:
                d = est._prediction_transform(d)
            if wanted is not None:
                d = {k: d[k] for k in wanted}
            if yield_single_examples:
                for i in range(n):
                    yield {k: v[i] for k, v in d.items()}
            else:
                yield d
        try:
            batch, _ = next(it)
        except StopIteration:
            break
        R.check_signature(built, batch, None, est, ModeKeys.PREDICT)
    _call_hooks(hooks, "end", None)
