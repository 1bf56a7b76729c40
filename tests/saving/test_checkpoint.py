"""kerasflow.utils.checkpoint: one file of named arrays, and TF's text index."""

from __future__ import annotations

import io
import json
import os
import zipfile

import numpy as np
import pytest

from kerasflow.utils.checkpoint import (
    CheckpointError,
    checkpoint_exists,
    decode_arrays,
    encode_arrays,
    get_checkpoint_state,
    latest_checkpoint,
    load_checkpoint,
    save_checkpoint,
)


def test_round_trip_keeps_names_order_dtypes_shapes_and_metadata(tmp_path):
    arrays = {"dense/kernel": np.arange(6, dtype=np.float32).reshape(2, 3),
              "step": np.int64(7), "mask": np.array([True, False])}
    path = save_checkpoint(tmp_path / "run" / "model.ckpt-7", arrays,
                           metadata={"note": "hi"})
    assert path == str(tmp_path / "run" / "model.ckpt-7")
    back, meta = load_checkpoint(path, with_metadata=True)
    assert list(back) == list(arrays) and meta == {"note": "hi"}
    for name, value in arrays.items():
        assert back[name].dtype == np.asarray(value).dtype
        np.testing.assert_array_equal(back[name], value)
    assert latest_checkpoint(tmp_path / "run") == path
    # TF's CheckpointState text, relative to the folder.
    assert (tmp_path / "run" / "checkpoint").read_text().splitlines() == [
        'model_checkpoint_path: "model.ckpt-7"',
        'all_model_checkpoint_paths: "model.ckpt-7"']
    # One file per checkpoint; no temporary files are left behind.
    assert sorted(os.listdir(tmp_path / "run")) == ["checkpoint", "model.ckpt-7"]


def test_max_to_keep_deletes_the_oldest_and_survives_a_restart(tmp_path):
    for step in range(1, 5):
        save_checkpoint(tmp_path / f"m-{step}", {"w": np.full(2, step)},
                        max_to_keep=2)
    state = get_checkpoint_state(tmp_path)
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
        "m-3", "m-4"]
    assert state.model_checkpoint_path == str(tmp_path / "m-4")
    assert not checkpoint_exists(tmp_path / "m-2")
    np.testing.assert_array_equal(load_checkpoint(latest_checkpoint(tmp_path))["w"],
                                  [4, 4])
    # A crash left m-5 unindexed: the next save (a "restarted" saver, whose
    # only memory is the index) removes it and keeps two files.
    (tmp_path / "m-5").write_bytes(encode_arrays({"w": np.zeros(2)}))
    save_checkpoint(tmp_path / "m-6", {"w": np.full(2, 6)}, max_to_keep=2)
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m-4", "m-6"]


def test_saving_an_older_step_drops_the_newer_ones_of_an_abandoned_run(tmp_path):
    for step in (10, 20, 30):
        save_checkpoint(tmp_path / f"model.ckpt-{step}", {"w": np.ones(1)})
    # Without max_to_keep the index manages no files: nothing is deleted.
    save_checkpoint(tmp_path / "model.ckpt-5", {"w": np.ones(1)})
    assert len(os.listdir(tmp_path)) == 5
    save_checkpoint(tmp_path / "model.ckpt-25", {"w": np.ones(1)}, max_to_keep=5)
    assert sorted(os.listdir(tmp_path)) == [
        "checkpoint", "model.ckpt-10", "model.ckpt-20", "model.ckpt-25",
        "model.ckpt-5"]
    assert latest_checkpoint(tmp_path) == str(tmp_path / "model.ckpt-25")
    assert [os.path.basename(p) for p in get_checkpoint_state(
        tmp_path).all_model_checkpoint_paths] == [
        "model.ckpt-10", "model.ckpt-20", "model.ckpt-5", "model.ckpt-25"]


def test_bad_input_and_missing_files_raise_clearly(tmp_path):
    with pytest.raises(TypeError, match="numeric or bool"):
        save_checkpoint(tmp_path / "o", {"x": np.array(["a"], dtype=object)})
    with pytest.raises(TypeError, match="dict"):
        save_checkpoint(tmp_path / "o", [np.zeros(1)])
    with pytest.raises(ValueError, match="max_to_keep"):
        save_checkpoint(tmp_path / "o", {}, max_to_keep=-1)
    assert not os.path.exists(tmp_path / "o")  # nothing written on bad input
    save_checkpoint(tmp_path / "c-1", {"w": np.zeros(1)})
    with pytest.raises(FileNotFoundError, match=r"No checkpoint at .*missing'\. "
                                                r"The folder's latest .*c-1"):
        load_checkpoint(tmp_path / "missing")
    assert latest_checkpoint(tmp_path / "nowhere") is None


def test_truncated_flipped_foreign_and_pickled_files_are_refused(tmp_path):
    path = save_checkpoint(tmp_path / "t", {"w": np.arange(1000.0)})
    data = (tmp_path / "t").read_bytes()
    (tmp_path / "t").write_bytes(data[:len(data) // 2])
    with pytest.raises(CheckpointError, match="unreadable or incomplete"):
        load_checkpoint(path)
    flipped = bytearray(data)
    flipped[len(data) // 3] ^= 0xFF  # inside the array: its CRC-32 fails
    with pytest.raises(CheckpointError, match="unreadable"):
        decode_arrays(bytes(flipped), "f")
    buf = io.BytesIO()
    np.savez(buf, w=np.ones(2))
    with pytest.raises(CheckpointError, match="not a kerasflow checkpoint"):
        decode_arrays(buf.getvalue(), "plain.npz")
    buf = io.BytesIO()
    np.savez(buf, a0=np.array([{"evil": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(CheckpointError, match="pickled"):
        decode_arrays(buf.getvalue(), "evil.npz")


def test_an_array_that_differs_from_its_metadata_is_refused():
    with zipfile.ZipFile(io.BytesIO(encode_arrays({"w": np.zeros((2, 2))}))) as z:
        members = {n: z.read(n) for n in z.namelist()}
    meta = json.loads(np.load(io.BytesIO(members["__meta__.npy"])).tobytes())
    meta["shapes"][0] = [4]
    buf = io.BytesIO()
    np.save(buf, np.frombuffer(json.dumps(meta).encode(), np.uint8))
    members["__meta__.npy"] = buf.getvalue()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for n, raw in members.items():
            z.writestr(n, raw)
    with pytest.raises(CheckpointError, match=r"recorded as shape \(4,\).*"
                                              r"Received: shape \(2, 2\)"):
        decode_arrays(out.getvalue(), "x")


def test_a_member_past_the_weights_cap_is_refused(tmp_path, monkeypatch):
    path = save_checkpoint(tmp_path / "big", {"w": np.zeros(100)})
    monkeypatch.setenv("KERASFLOW_MAX_WEIGHTS_BYTES", "100")
    with pytest.raises(CheckpointError, match=r"'a0\.npy' expects at most 100 "
                                              r"bytes.*Received: 928 bytes"):
        load_checkpoint(path)
