"""tf.train.Checkpoint / CheckpointManager: save, restore, max_to_keep, a
restore that checks shapes, and a custom loop killed with SIGKILL that
resumes to the uninterrupted run's weights."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kerasflow as kf
import kerasflow.compat.v1 as tf

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "checkpoint_custom_loop.py"


def _model(seed):
    kf.utils.set_random_seed(seed)
    return kf.Sequential([kf.layers.Dense(3, input_shape=(4,), name="d")])


def test_save_restore_and_max_to_keep(tmp_path):
    model, opt = _model(0), kf.optimizers.Adam(0.1)
    x = np.ones((2, 4), "float32")
    with kf.GradientTape() as tape:
        loss = kf.ops.sum(model(x))
    opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                            model.trainable_variables))
    ckpt = tf.train.Checkpoint(model=model, optimizer=opt)
    manager = tf.train.CheckpointManager(ckpt, tmp_path, max_to_keep=2)
    paths = [manager.save() for _ in range(3)]
    assert [Path(p).name for p in manager.checkpoints] == ["ckpt-2", "ckpt-3"]
    assert manager.latest_checkpoint == paths[-1]
    assert not Path(paths[0]).exists()
    # A fresh model and an unbuilt optimizer take the saved values, slots too.
    model2, opt2 = _model(1), kf.optimizers.Adam(0.1)
    ck2 = tf.train.Checkpoint(model=model2, optimizer=opt2)
    ck2.restore(tf.train.latest_checkpoint(str(tmp_path))).assert_consumed()
    for a, b in zip(model.get_weights(), model2.get_weights()):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(opt.variables, opt2.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert int(ck2.save_counter.numpy()) == 3
    assert ck2.restore(None).assert_consumed().unmatched == set()
    bad = kf.Sequential([kf.layers.Dense(5, input_shape=(4,))])
    with pytest.raises(ValueError, match=r"shape \(4, 3\): expected \(4, 5\)"):
        tf.train.Checkpoint(model=bad).restore(manager.latest_checkpoint)
    with pytest.raises(TypeError, match="tracks Variables, models, optimizers"):
        tf.train.Checkpoint(thing=3)
    with pytest.raises(ValueError, match="max_to_keep >= 1"):
        tf.train.CheckpointManager(ckpt, tmp_path, max_to_keep=0)


def test_custom_loop_killed_resumes_to_the_same_weights(tmp_path):
    full = subprocess.run([sys.executable, str(EXAMPLE), f"--dir={tmp_path}/a",
                           "--steps=40", f"--out={tmp_path}/a.npz"],
                          capture_output=True, text=True, timeout=240)
    assert full.returncode == 0, full.stderr[-3000:]
    proc = subprocess.Popen([sys.executable, str(EXAMPLE), f"--dir={tmp_path}/b",
                             "--steps=40"], stdout=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:
            if line.startswith("STEP 15 "):
                break
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    again = subprocess.run([sys.executable, str(EXAMPLE), f"--dir={tmp_path}/b",
                            "--steps=40", f"--out={tmp_path}/b.npz"],
                           capture_output=True, text=True, timeout=240)
    assert again.returncode == 0, again.stderr[-3000:]
    start = int(again.stdout.split("START step ")[1].split()[0])
    assert 15 <= start < 40  # resumed from a checkpoint written before the kill
    with np.load(tmp_path / "a.npz") as a, np.load(tmp_path / "b.npz") as b:
        for k in a.files:
            np.testing.assert_array_equal(a[k], b[k])
