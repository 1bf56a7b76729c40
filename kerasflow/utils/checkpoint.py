"""Checkpoint files: named arrays written atomically, and a per-folder index.

A checkpoint is a *path prefix* (``/tmp/model/model.ckpt-100``), as in TF1's
``tf.train.Saver``. It consists of two files:

- ``<prefix>.npz``: the arrays (``numpy.savez``, entries ``a0, a1, ...``), read
  back with ``allow_pickle=False``, so loading never runs pickle;
- ``<prefix>.json``: the index: format version and, per name in save order, the
  npz entry, shape and dtype. It is written after the data, so an index always
  describes a complete data file.

Each file is written with ``kerasflow.utils.file_io.atomic_write`` (a
temporary file in the same folder, fsynced, renamed over its final name, then
the folder fsynced), so a crash leaves either the old file or the new one,
never half a file. Data files are read with ``read_npz`` (no pickle, zip CRC
checked, optional SHA-256); ``kerasflow.estimators.checkpoints`` uses the same
two primitives for its ``model.ckpt-<step>.npz`` files.

The folder's ``checkpoint`` file, TF1's ``CheckpointState`` in its text form
(``model_checkpoint_path: "model.ckpt-100"`` then one
``all_model_checkpoint_paths:`` line per kept checkpoint, oldest first), is
updated last; ``latest_checkpoint(folder)`` reads it.

Example:
    >>> save_checkpoint("/tmp/run/model.ckpt-1", {"w": np.ones(3)})
    '/tmp/run/model.ckpt-1'
    >>> latest_checkpoint("/tmp/run")
    '/tmp/run/model.ckpt-1'
    >>> load_checkpoint("/tmp/run/model.ckpt-1")["w"]
    array([1., 1., 1.])
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import zipfile
import zlib

import numpy as np

from kerasflow.utils.file_io import atomic_write

__all__ = [
    "CheckpointError",
    "read_npz",
    "write_npz",
    "save_checkpoint",
    "load_checkpoint",
    "latest_checkpoint",
    "checkpoint_exists",
    "get_checkpoint_state",
    "remove_checkpoint",
]

FORMAT = "kerasflow.checkpoint"
VERSION = 1
STATE_FILE = "checkpoint"
_STATE_LINE = re.compile(r'^\s*(\w+)\s*:\s*"((?:[^"\\]|\\.)*)"\s*$')


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read back completely."""


def write_npz(path, arrays: dict) -> str:
    """Writes ``arrays`` (``{key: numeric array}``) as the npz file ``path``.

    Atomic (``file_io.atomic_write``: temp file, fsync, rename, folder fsync),
    so a crash leaves the old file or the new one, never half a file.

    Returns:
        The path written (symlinks resolved).
    """
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return atomic_write(path, buf.getvalue())


def read_npz(path, sha256: str | None = None) -> dict:
    """Reads the npz file ``path`` as ``{key: array}``, never unpickling.

    Zip's per-member CRC-32 is checked on read, so a flipped bit or a truncated
    file fails here; ``sha256``, when given, is checked on the whole file.

    Raises:
        CheckpointError: a missing, truncated or corrupt file, a checksum
            mismatch, or a pickled (object) member.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise CheckpointError(f"Checkpoint '{path}' cannot be read: {e}") from None
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise CheckpointError(f"Checkpoint '{path}' does not match the checksum in "
                              f"its index (truncated or modified).")
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except (ValueError, KeyError, OSError, EOFError, zipfile.BadZipFile,
            zlib.error) as e:
        raise CheckpointError(f"Checkpoint '{path}' is unreadable or incomplete: "
                              f"{e}") from None


def _check_prefix(path_prefix) -> str:
    if not isinstance(path_prefix, (str, os.PathLike)):
        raise TypeError(f"A checkpoint path prefix is a str or path. Received: "
                        f"path_prefix={path_prefix!r}.")
    path_prefix = os.fspath(path_prefix)
    if not os.path.basename(path_prefix):
        raise ValueError(f"A checkpoint path prefix names a file prefix, not a "
                         f"folder. Received: path_prefix={path_prefix!r}.")
    return path_prefix


def save_checkpoint(path_prefix, arrays: dict, max_to_keep: int | None = None,
                    update_state: bool = True) -> str:
    """Writes ``arrays`` as the checkpoint ``path_prefix`` (atomically).

    Args:
        path_prefix: str or path, e.g. ``"run/model.ckpt-100"``; its folder is
            created if missing.
        arrays: ``{name: array-like}``; names are any strings ("dense/kernel"),
            values numeric or bool arrays of any shape. Order is kept.
        max_to_keep: when set (>= 1), only the newest that many checkpoints
            listed in the folder's ``checkpoint`` file are kept; the files of
            older ones are deleted (TF1 ``Saver(max_to_keep=...)``).
        update_state: record the checkpoint in the folder's ``checkpoint`` file
            as the latest one.

    Returns:
        ``path_prefix`` as a str.

    Raises:
        TypeError: ``arrays`` is not a dict of str names, or a value has an
            object/string dtype (it could only be stored with pickle).
        ValueError: a bad prefix or ``max_to_keep``.
    """
    path_prefix = _check_prefix(path_prefix)
    if not isinstance(arrays, dict):
        raise TypeError(f"save_checkpoint expects a dict {{name: array}}. "
                        f"Received: {type(arrays).__name__}.")
    if max_to_keep is not None and (not isinstance(max_to_keep, int)
                                    or max_to_keep < 1):
        raise ValueError(f"max_to_keep must be None or an int >= 1. Received: "
                         f"max_to_keep={max_to_keep!r}.")
    entries, data = [], {}
    for i, (name, value) in enumerate(arrays.items()):
        if not isinstance(name, str):
            raise TypeError(f"Checkpoint names are str. Received: {name!r}.")
        value = np.asarray(value)
        if value.dtype.kind not in "biuf":
            raise TypeError(f"Checkpoint values are numeric or bool arrays. "
                            f"Received for '{name}': dtype {value.dtype}.")
        key = f"a{i}"
        data[key] = value
        entries.append({"name": name, "key": key, "shape": list(value.shape),
                        "dtype": value.dtype.str})
    folder = os.path.dirname(path_prefix)
    if folder:
        os.makedirs(folder, exist_ok=True)
    write_npz(path_prefix + ".npz", data)
    index = {"format": FORMAT, "version": VERSION, "entries": entries}
    atomic_write(path_prefix + ".json", json.dumps(index, indent=1).encode())
    if update_state:
        _update_state(path_prefix, max_to_keep)
    return path_prefix


def load_checkpoint(path_prefix) -> dict:
    """Reads the checkpoint ``path_prefix`` back as ``{name: numpy array}``.

    Raises:
        FileNotFoundError: no index or data file for that prefix, naming both
            paths and the folder's latest checkpoint when there is one.
        ValueError: an index of another format, or data that does not match
            its index (a missing entry, another shape or dtype).
    """
    path_prefix = _check_prefix(path_prefix)
    index_path, data_path = path_prefix + ".json", path_prefix + ".npz"
    if not (os.path.exists(index_path) and os.path.exists(data_path)):
        latest = latest_checkpoint(os.path.dirname(path_prefix) or ".")
        hint = f" The folder's latest checkpoint is '{latest}'." if latest else ""
        raise FileNotFoundError(
            f"No checkpoint at '{path_prefix}': expected '{index_path}' and "
            f"'{data_path}'.{hint}"
        )
    with open(index_path, encoding="utf-8") as f:
        index = json.load(f)
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        raise ValueError(f"'{index_path}' is not a kerasflow checkpoint index "
                         f"(format {FORMAT!r}).")
    out = {}
    data = read_npz(data_path)
    for e in index["entries"]:
        if e["key"] not in data:
            raise ValueError(f"Checkpoint '{path_prefix}' is missing the data "
                             f"of '{e['name']}' (entry {e['key']}).")
        value = data[e["key"]]
        if (list(value.shape) != e["shape"]
                or value.dtype != np.dtype(e["dtype"])):
            raise ValueError(
                f"Checkpoint '{path_prefix}': '{e['name']}' is indexed as "
                f"shape {tuple(e['shape'])} dtype {np.dtype(e['dtype'])}. "
                f"Received: shape {value.shape} dtype {value.dtype}."
            )
        out[e["name"]] = value
    return out


def checkpoint_exists(path_prefix) -> bool:
    """True when both files of the checkpoint ``path_prefix`` exist."""
    path_prefix = _check_prefix(path_prefix)
    return (os.path.exists(path_prefix + ".json")
            and os.path.exists(path_prefix + ".npz"))


def remove_checkpoint(path_prefix) -> None:
    """Deletes the files of ``path_prefix`` (missing files are ignored)."""
    path_prefix = _check_prefix(path_prefix)
    for ext in (".json", ".npz"):
        try:
            os.remove(path_prefix + ext)
        except FileNotFoundError:
            pass


def get_checkpoint_state(checkpoint_dir) -> list:
    """Checkpoint prefixes listed in ``checkpoint_dir/checkpoint``, oldest first.

    Relative entries are resolved against ``checkpoint_dir``. Returns [] when the
    folder or its ``checkpoint`` file does not exist.
    """
    checkpoint_dir = os.fspath(checkpoint_dir)
    path = os.path.join(checkpoint_dir, STATE_FILE)
    if not os.path.exists(path):
        return []
    latest, listed = None, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = _STATE_LINE.match(line)
            if not m:
                continue
            value = m.group(2).replace('\\"', '"').replace("\\\\", "\\")
            if not os.path.isabs(value):
                value = os.path.join(checkpoint_dir, value)
            if m.group(1) == "model_checkpoint_path":
                latest = value
            elif m.group(1) == "all_model_checkpoint_paths":
                listed.append(value)
    if latest is not None and latest not in listed:
        listed.append(latest)
    elif latest is not None:
        listed.remove(latest)
        listed.append(latest)
    return listed


def latest_checkpoint(checkpoint_dir) -> str | None:
    """The newest checkpoint prefix of ``checkpoint_dir`` (TF1's function).

    Returns:
        The prefix recorded last in the folder's ``checkpoint`` file whose files
        exist, or None when there is none.
    """
    for prefix in reversed(get_checkpoint_state(checkpoint_dir)):
        if checkpoint_exists(prefix):
            return prefix
    return None


def _quote(path: str) -> str:
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _update_state(path_prefix: str, max_to_keep: int | None) -> None:
    folder = os.path.dirname(path_prefix) or "."
    listed = [p for p in get_checkpoint_state(folder)
              if os.path.abspath(p) != os.path.abspath(path_prefix)]
    listed.append(path_prefix)
    if max_to_keep is not None:
        for old in listed[:-max_to_keep]:
            remove_checkpoint(old)
        listed = listed[-max_to_keep:]

    def rel(p):
        return (os.path.basename(p)
                if os.path.abspath(os.path.dirname(p) or ".") == os.path.abspath(folder)
                else p)

    lines = [f"model_checkpoint_path: {_quote(rel(path_prefix))}"]
    lines += [f"all_model_checkpoint_paths: {_quote(rel(p))}" for p in listed]
    text = "\n".join(lines) + "\n"
    atomic_write(os.path.join(folder, STATE_FILE), text.encode())
