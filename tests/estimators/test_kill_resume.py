"""A training process killed with SIGKILL at random points leaves a model_dir
with at most ``keep_checkpoint_max`` numbered checkpoints, whose latest loads
and from which a new ``train`` resumes with the same global_step arithmetic."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from kerasflow.estimators import Estimator, RunConfig
from kerasflow.utils import checkpoint as ckpt
from tests.estimators._models import data, model_fn, train_input

ROOT = Path(__file__).resolve().parents[2]
KEEP = 2
TRAINER = """
import sys
sys.path.insert(0, {root!r})
from kerasflow.estimators import Estimator, RunConfig
from tests.estimators._models import data, model_fn, train_input
x, y = data()
est = Estimator(model_fn, model_dir={model_dir!r},
                config=RunConfig(save_checkpoints_steps=2, keep_checkpoint_max={keep}))
print("ready", flush=True)
est.train(train_input(x, y, batch_size=16), steps=100000)
"""


def _numbered(model_dir):
    return sorted(f for f in os.listdir(model_dir)
                  if re.fullmatch(r"model\.ckpt-\d+", f))


def _start(model_dir):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = TRAINER.format(root=str(ROOT), model_dir=model_dir, keep=KEEP)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, text=True)
    if proc.stdout.readline().strip() != "ready":
        proc.wait(timeout=30)
        raise AssertionError(f"trainer exited: {proc.stderr.read()}")
    return proc


def _wait_for_index(model_dir, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (Path(model_dir) / "checkpoint").exists():
            return
        if proc.poll() is not None:
            raise AssertionError(f"trainer exited: {proc.stderr.read()}")
        time.sleep(0.02)
    raise AssertionError("no checkpoint written in time")


def test_sigkill_at_random_points_keeps_at_most_max_and_resumes(tmp_path):
    model_dir = str(tmp_path / "m")
    rng = np.random.default_rng(0)
    x, y = data()
    for _ in range(5):
        proc = _start(model_dir)
        try:
            _wait_for_index(model_dir, proc)
            time.sleep(float(rng.uniform(0.0, 0.8)))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        assert 1 <= len(_numbered(model_dir)) <= KEEP, _numbered(model_dir)
        # The one latest_checkpoint names a file that loads, without warnings.
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            path = ckpt.latest_checkpoint(model_dir)
            latest = int(ckpt.load_checkpoint(path)["global_step"])
        assert path == os.path.join(model_dir, f"model.ckpt-{latest}")
        est = Estimator(model_fn, model_dir=model_dir,
                        config=RunConfig(save_checkpoints_steps=2,
                                         keep_checkpoint_max=KEEP))
        est.train(train_input(x, y, batch_size=16), steps=3)
        assert est.get_variable_value("global_step") == latest + 3
        assert len(_numbered(model_dir)) <= KEEP
        state = ckpt.get_checkpoint_state(model_dir)
        assert state.model_checkpoint_path.endswith(f"model.ckpt-{latest + 3}")
