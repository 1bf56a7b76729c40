"""A TF 1.x distributed Estimator program launched as one OS process per
TF_CONFIG task (ps, chief, worker, evaluator), as a user launches it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kerasflow.distribute.tf1.server import descendants
from tests.compat.test_tf1_cluster import _alive, _env, _free_ports, _result, _shm

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tf_config_estimator_iris.py"
TASKS = ("ps", "chief", "worker", "evaluator")


def _launch(cluster, model_dir, max_steps, tasks=TASKS):
    procs = {}
    for task in tasks:
        env = dict(_env(), TF_CONFIG=json.dumps(
            {"cluster": cluster, "task": {"type": task, "index": 0}}))
        procs[task] = subprocess.Popen(
            [sys.executable, str(EXAMPLE), f"--model_dir={model_dir}",
             f"--max_steps={max_steps}"], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
    return procs


@pytest.mark.ray  # ~30 s: a Ray head started by the ps task, 1000 async steps
def test_train_and_evaluate_chief_worker_ps_evaluator(tmp_path):
    ports = _free_ports(3)
    cluster = {"chief": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"],
               "ps": [f"127.0.0.1:{ports[2]}"]}
    max_steps = 1000
    shm_before = _shm()
    procs = _launch(cluster, tmp_path / "model", max_steps)
    started = set()
    try:
        outs = {}
        for task in ("chief", "worker", "evaluator"):
            out, _ = procs[task].communicate(timeout=300)
            assert procs[task].returncode == 0, f"{task}:\n{out[-3000:]}"
            outs[task] = _result(out)
        started = descendants(procs["ps"].pid)
        assert started, "the ps task started no Ray processes"
        procs["ps"].send_signal(signal.SIGTERM)
        ps_out, _ = procs["ps"].communicate(timeout=60)
        assert procs["ps"].returncode == 0, ps_out[-3000:]
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    ev = outs["evaluator"]
    assert ev["accuracy"] >= 0.93, outs
    # One shared global step on the ps: both tasks' steps add up to it (each
    # task may overshoot max_steps by the pushes in flight when it stops).
    chief, worker = outs["chief"]["local_steps"], outs["worker"]["local_steps"]
    assert chief > 100 and worker > 100, outs
    assert max_steps <= chief + worker <= max_steps + 2, outs
    assert max_steps <= ev["global_step"] <= max_steps + 2
    # The chief wrote the checkpoints; the evaluator evaluated them as they came.
    ckpts = sorted((tmp_path / "model").glob("model.ckpt-*"))
    assert ckpts, list((tmp_path / "model").iterdir())
    assert list((tmp_path / "model" / "eval").glob("events.out.tfevents.*"))
    time.sleep(1.0)
    assert [p for p in started if _alive(p)] == []
    assert _shm() - shm_before == set()


def test_tf_config_cluster_without_max_steps_or_ps_is_refused(tmp_path, monkeypatch):
    import kerasflow as kf

    cluster = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]}
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": cluster, "task": {"type": "chief", "index": 0}}))
    est = kf.estimator.DNNClassifier(
        feature_columns=[kf.feature_column.numeric_column("x")], hidden_units=[2],
        model_dir=str(tmp_path))
    assert est.config.is_chief and est.config.distributed
    fn = lambda: ({"x": [[1.0]]}, [0])  # noqa: E731
    with pytest.raises(ValueError, match="expects TrainSpec.max_steps"):
        kf.estimator.train_and_evaluate(est, kf.estimator.TrainSpec(fn),
                                        kf.estimator.EvalSpec(fn))
    with pytest.raises(ValueError, match=r"expected a 'ps' job in TF_CONFIG's "
                                         r"cluster. Received: jobs \['chief', 'worker'\]"):
        kf.estimator.train_and_evaluate(est, kf.estimator.TrainSpec(fn, max_steps=5),
                                        kf.estimator.EvalSpec(fn))


def test_run_config_reads_tf_config(monkeypatch):
    import kerasflow as kf

    cluster = {"chief": ["h0:1"], "worker": ["h1:1", "h2:1"], "ps": ["h3:1"]}
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": cluster, "task": {"type": "worker", "index": 1}}))
    c = kf.estimator.RunConfig()
    assert (c.task_type, c.task_id, c.num_ps_replicas, c.num_worker_replicas,
            c.is_chief, c.master) == ("worker", 1, 1, 3, False, "grpc://h2:1")
    assert c.cluster_spec.as_dict() == cluster
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": cluster, "task": {"type": "worker", "index": 5}}))
    with pytest.raises(ValueError, match="Task index 5 is not in job 'worker'"):
        kf.estimator.RunConfig()
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": cluster, "task": {"type": "evaluator", "index": 0}}))
    c = kf.estimator.RunConfig()
    assert c.task_type == "evaluator" and not c.is_chief and c.master == ""
    monkeypatch.delenv("TF_CONFIG")
    c = kf.estimator.RunConfig()
    assert c.is_chief and not c.distributed and c.num_worker_replicas == 1
