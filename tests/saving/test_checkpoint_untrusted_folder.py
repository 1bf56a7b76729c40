"""A checkpoint folder written by someone else: its ``checkpoint`` index can
neither delete nor load a file outside the folder (absolute entries, ``..``,
symlinks leading out), a manager deletes only its own numbered files, and
hostile files (a FIFO, a device, a member declaring more data than the file
holds, a non-UTF-8 index) are refused with errors naming them."""

from __future__ import annotations

import io
import os
import threading
import zipfile

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow.train_checkpoint import Checkpoint, CheckpointManager
from kerasflow.utils import checkpoint as ckpt
from kerasflow.utils.checkpoint import (
    CheckpointError,
    get_checkpoint_state,
    latest_checkpoint,
    load_checkpoint,
    save_checkpoint,
)


def _manager(folder, max_to_keep=1):
    ckpt_obj = Checkpoint(v=K.Variable(np.ones(3, "float32")))
    return CheckpointManager(ckpt_obj, folder, max_to_keep=max_to_keep)


def _victim(path):
    path.write_text("not yours")
    return path


def _index(folder, *entries):
    lines = [f'model_checkpoint_path: "{entries[-1]}"']
    lines += [f'all_model_checkpoint_paths: "{e}"' for e in entries]
    (folder / "checkpoint").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("entry", ["absolute", "../victim", "sub/../../victim"])
def test_an_index_entry_outside_the_folder_is_never_deleted(tmp_path, entry):
    folder = tmp_path / "ckpts"
    (folder / "sub").mkdir(parents=True)
    victim = _victim(tmp_path / "victim")
    _index(folder, str(victim) if entry == "absolute" else entry)
    with pytest.warns(UserWarning, match="outside its folder.*Received: \\['"):
        path = _manager(folder).save()
    assert victim.read_text() == "not yours"
    assert path == str(folder / "ckpt-1")
    assert get_checkpoint_state(folder).all_model_checkpoint_paths == [path]


def test_a_symlink_in_the_folder_leading_out_is_neither_loaded_nor_deleted(tmp_path):
    folder = tmp_path / "ckpts"
    folder.mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    # A real checkpoint outside, linked in under a name the manager rotates.
    save_checkpoint(outside / "ckpt-7", {"v/0": np.zeros(3)}, update_state=False)
    (folder / "ckpt-1").symlink_to(outside / "ckpt-7")
    _index(folder, "ckpt-1")
    with pytest.warns(UserWarning, match="outside its folder"):
        assert latest_checkpoint(folder) is None  # never loaded through the index
    with pytest.warns(UserWarning, match="outside its folder"):
        path = _manager(folder).save(checkpoint_number=2)
    assert os.path.isfile(outside / "ckpt-7")
    assert np.array_equal(load_checkpoint(outside / "ckpt-7")["v/0"], np.zeros(3))
    assert os.path.islink(folder / "ckpt-1")  # not the manager's file: kept
    assert latest_checkpoint(folder) == path


def test_a_listed_file_of_another_name_is_dropped_from_the_index_not_deleted(tmp_path):
    keep = _victim(tmp_path / "notes.txt")
    _index(tmp_path, "notes.txt")
    manager = _manager(tmp_path)
    manager.save()
    manager.save()
    assert keep.read_text() == "not yours"
    assert manager.checkpoints == [str(tmp_path / "ckpt-2")]


def test_normal_rotation_still_deletes_the_old_checkpoints(tmp_path):
    manager = _manager(tmp_path, max_to_keep=2)
    paths = [manager.save() for _ in range(4)]
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "ckpt-3", "ckpt-4"]
    assert manager.checkpoints == paths[2:]
    # An absolute entry inside the folder (TF writes absolute paths) counts.
    _index(tmp_path, str(tmp_path / "ckpt-3"), str(tmp_path / "ckpt-4"))
    manager.save()
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "ckpt-4", "ckpt-5"]


def test_a_non_utf8_index_is_ignored_with_a_warning_and_nothing_deleted(tmp_path):
    manager = _manager(tmp_path, max_to_keep=1)
    first = manager.save()
    (tmp_path / "checkpoint").write_bytes(b'model_checkpoint_path: "\xff\xfe"\n')
    with pytest.warns(UserWarning, match="is ignored: expected UTF-8 text"):
        assert latest_checkpoint(tmp_path) is None
    with pytest.warns(UserWarning, match="expected UTF-8"):
        second = manager.save()
    # An unreadable index lists nothing, so nothing counts as a leftover.
    assert os.path.isfile(first) and os.path.isfile(second)
    assert latest_checkpoint(tmp_path) == second


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "ckpt-1"
    os.mkfifo(fifo)
    result = {}

    def restore():
        try:
            load_checkpoint(fifo)
        except CheckpointError as e:
            result["error"] = str(e)

    reader = threading.Thread(target=restore, daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "load_checkpoint blocked on a FIFO"
    assert "regular file" in result["error"] and "FIFO" in result["error"]


def test_a_symlink_to_a_device_is_refused(tmp_path):
    # /dev/null, not /dev/zero: reading the latter would never end.
    (tmp_path / "ckpt-1").symlink_to("/dev/null")
    with pytest.raises(CheckpointError, match="A checkpoint is a regular file. "
                                              "Received: '.*ckpt-1' is a character "
                                              "device"):
        Checkpoint(v=K.Variable(np.ones(3, "float32"))).restore(tmp_path / "ckpt-1")


def _archive(members: dict) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def test_a_member_declaring_more_data_than_the_file_holds_is_refused(tmp_path):
    good = ckpt.encode_arrays({"w": np.ones(3)})
    with zipfile.ZipFile(io.BytesIO(good)) as z:
        meta = z.read("__meta__.npy")
    header = io.BytesIO()
    # 2**40 float64s (8 TiB) declared; 24 bytes present.
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (2**40,)})
    path = tmp_path / "ckpt-1"
    path.write_bytes(_archive({"a0.npy": header.getvalue() + np.ones(3).tobytes(),
                               "__meta__.npy": meta}))
    size = os.path.getsize(path)
    with pytest.raises(CheckpointError, match=(
            f"ckpt-1'.*'a0.npy' declares shape \\(1099511627776,\\) dtype float64, "
            f"expected to hold 8796093022208 bytes. Received: 24 bytes of data "
            f"\\(a file of {size} bytes\\)")):
        load_checkpoint(path)


def test_a_zip_entry_claiming_more_bytes_than_stored_is_refused(tmp_path):
    data = bytearray(ckpt.encode_arrays({"w": np.ones(3)}))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as z:
        info = z.getinfo("a0.npy")
    # The central directory's uncompressed size of a0.npy, raised to 1 GiB.
    central = bytes(data).index(b"PK\x01\x02")  # a0.npy is written first
    assert data[central + 46:central + 52] == b"a0.npy"
    data[central + 24:central + 28] = (2**30).to_bytes(4, "little")
    path = tmp_path / "ckpt-1"
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=(
            f"'a0.npy' declares 1073741824 bytes. Received: {info.compress_size} "
            f"stored bytes")):
        load_checkpoint(path)
