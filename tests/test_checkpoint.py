"""kerasflow.utils.checkpoint: atomic named-array checkpoints and their index."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from kerasflow.utils.checkpoint import (
    CheckpointError,
    checkpoint_exists,
    get_checkpoint_state,
    latest_checkpoint,
    load_checkpoint,
    read_npz,
    save_checkpoint,
    write_npz,
)


def test_round_trip_keeps_names_order_dtypes_and_shapes(tmp_path):
    arrays = {"dense/kernel": np.arange(6, dtype=np.float32).reshape(2, 3),
              "step": np.int64(7), "mask": np.array([True, False])}
    prefix = save_checkpoint(tmp_path / "run" / "model.ckpt-7", arrays)
    assert prefix == str(tmp_path / "run" / "model.ckpt-7")
    back = load_checkpoint(prefix)
    assert list(back) == list(arrays)
    for name, value in arrays.items():
        assert back[name].dtype == np.asarray(value).dtype
        np.testing.assert_array_equal(back[name], value)
    assert latest_checkpoint(tmp_path / "run") == prefix
    # TF1's CheckpointState text, relative to the folder.
    text = (tmp_path / "run" / "checkpoint").read_text()
    assert text.splitlines()[0] == 'model_checkpoint_path: "model.ckpt-7"'
    # No temporary files are left behind.
    assert sorted(os.listdir(tmp_path / "run")) == [
        "checkpoint", "model.ckpt-7.json", "model.ckpt-7.npz"]


def test_max_to_keep_deletes_the_oldest(tmp_path):
    for step in range(1, 5):
        save_checkpoint(tmp_path / f"m-{step}", {"w": np.full(2, step)},
                        max_to_keep=2)
    assert [os.path.basename(p) for p in get_checkpoint_state(tmp_path)] == [
        "m-3", "m-4"]
    assert not checkpoint_exists(tmp_path / "m-2")
    assert latest_checkpoint(tmp_path) == str(tmp_path / "m-4")
    np.testing.assert_array_equal(load_checkpoint(latest_checkpoint(tmp_path))["w"],
                                  [4, 4])


def test_bad_input_and_corrupt_files_raise_clearly(tmp_path):
    with pytest.raises(TypeError, match="numeric or bool"):
        save_checkpoint(tmp_path / "o", {"x": np.array(["a"], dtype=object)})
    with pytest.raises(TypeError, match="dict"):
        save_checkpoint(tmp_path / "o", [np.zeros(1)])
    with pytest.raises(FileNotFoundError, match="No checkpoint at"):
        load_checkpoint(tmp_path / "missing")
    assert latest_checkpoint(tmp_path / "nowhere") is None
    prefix = save_checkpoint(tmp_path / "c", {"w": np.zeros((2, 2))})
    index = json.loads((tmp_path / "c.json").read_text())
    index["entries"][0]["shape"] = [4]
    (tmp_path / "c.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match=r"indexed as shape \(4,\).*Received: "
                                         r"shape \(2, 2\)"):
        load_checkpoint(prefix)


def test_truncated_or_modified_data_is_refused(tmp_path):
    # The Saver's files and the Estimator's share read_npz: zip CRC, SHA-256.
    prefix = save_checkpoint(tmp_path / "t", {"w": np.arange(1000.0)})
    data = (tmp_path / "t.npz").read_bytes()
    (tmp_path / "t.npz").write_bytes(data[:len(data) // 2])
    with pytest.raises(CheckpointError, match="unreadable or incomplete"):
        load_checkpoint(prefix)
    path = write_npz(tmp_path / "x.npz", {"a": np.ones(3)})
    flipped = bytearray(open(path, "rb").read())
    flipped[60] ^= 0xFF  # inside the stored member: its CRC-32 no longer matches
    open(path, "wb").write(bytes(flipped))
    with pytest.raises(CheckpointError):
        read_npz(path)
    good = write_npz(tmp_path / "y.npz", {"a": np.ones(3)})
    np.testing.assert_array_equal(read_npz(good)["a"], np.ones(3))
    with pytest.raises(CheckpointError, match="checksum"):
        read_npz(good, sha256="0" * 64)
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".tmp-")]
