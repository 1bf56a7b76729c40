"""A training process killed with SIGKILL at random points leaves a model_dir
that a new ``train`` resumes from, with the same global_step arithmetic."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from kerasflow.estimators import Estimator, RunConfig, checkpoints
from tests.estimators._models import data, model_fn, train_input

ROOT = Path(__file__).resolve().parents[2]
TRAINER = """
import sys
sys.path.insert(0, {root!r})
from kerasflow.estimators import Estimator, RunConfig
from tests.estimators._models import data, model_fn, train_input
x, y = data()
est = Estimator(model_fn, model_dir={model_dir!r},
                config=RunConfig(save_checkpoints_steps=3, keep_checkpoint_max=4))
print("ready", flush=True)
est.train(train_input(x, y, batch_size=16), steps=100000)
"""


def _wait_for_checkpoint(model_dir, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (Path(model_dir) / "checkpoint").exists():
            return
        if proc.poll() is not None:
            raise AssertionError(f"trainer exited: {proc.stderr.read()}")
        time.sleep(0.05)
    raise AssertionError("no checkpoint written in time")


def test_sigkill_at_random_points_then_resume(tmp_path):
    model_dir = str(tmp_path / "m")
    rng = np.random.default_rng(0)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, "-c",
                                 TRAINER.format(root=str(ROOT), model_dir=model_dir)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env, text=True)
        try:
            _wait_for_checkpoint(model_dir, proc)
            time.sleep(float(rng.uniform(0.05, 1.0)))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        # Every checkpoint the index names reads back, without any warning.
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            entries = checkpoints.list_checkpoints(model_dir)
            assert entries and len(entries) <= 4
            for e in entries:
                _, step = checkpoints.load_checkpoint(e["path"], e["sha256"])
                assert step == e["step"]
            path, _, latest = checkpoints.latest_checkpoint(model_dir, load=True)
        assert path.endswith(f"model.ckpt-{latest}.npz")
        x, y = data()
        est = Estimator(model_fn, model_dir=model_dir,
                        config=RunConfig(save_checkpoints_steps=3,
                                         keep_checkpoint_max=4))
        est.train(train_input(x, y, batch_size=16), steps=4)
        assert est.get_variable_value("global_step") == latest + 4
