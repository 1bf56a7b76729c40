"""Numbered checkpoints in a ``model_dir``: atomic, pruned, never unpickled.

Layout (TF Estimator's, with numpy files in place of TF's tensor bundles)::

    model_dir/
        model.ckpt-<global_step>.npz   one array per Variable, keyed "v<i>", plus
                                       "__meta__": JSON (names, dtypes, shapes,
                                       global_step) stored as a uint8 array
        checkpoint                     JSON index: latest path, every kept path
                                       and its step

Files are written and read with the primitives of ``kerasflow.utils.checkpoint``
(``write_npz`` / ``read_npz``, on ``kerasflow.utils.file_io.atomic_write``):
each is a temporary file in ``model_dir``, fsynced and renamed into place, and
the index is replaced last, so a process killed at any point leaves either the
old or the new index, each naming only complete checkpoint files. Reading uses
``allow_pickle=False`` and zip's per-member CRC-32 (a flipped bit or a
truncated file fails to load; an index entry may also carry a SHA-256 that is
then checked). A newest checkpoint that
is truncated, corrupt or missing is reported with a warning and the previous
valid one is used (TF's ``tf.train.latest_checkpoint`` trusts its index alone).
"""

from __future__ import annotations

import glob
import json
import os
import re
import warnings

import numpy as np

from kerasflow.backend import to_numpy
from kerasflow.utils.checkpoint import CheckpointError, read_npz, write_npz
from kerasflow.utils.file_io import atomic_write

__all__ = [
    "CheckpointError",
    "latest_checkpoint",
    "list_checkpoints",
    "load_checkpoint",
    "save_checkpoint",
]

INDEX = "checkpoint"
_PATTERN = re.compile(r"^model\.ckpt-(\d+)\.npz$")


def _read_index(model_dir):
    path = os.path.join(model_dir, INDEX)
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            index = json.load(f)
        entries = index["all_model_checkpoint_paths"]
        if not isinstance(entries, list):
            raise TypeError("all_model_checkpoint_paths is not a list")
        return index
    except (OSError, ValueError, KeyError, TypeError) as e:
        warnings.warn(f"Checkpoint index '{path}' is unreadable ({e}); falling back "
                      f"to the checkpoint files found in '{model_dir}'.", stacklevel=3)
        return None


def list_checkpoints(model_dir) -> list[dict]:
    """Kept checkpoints, oldest first: dicts with 'path', 'step', 'sha256'.

    Uses the index; without a readable one, the ``model.ckpt-*.npz`` files
    present (sha256 None).
    """
    model_dir = os.fspath(model_dir)
    index = _read_index(model_dir)
    if index is not None:
        out = []
        for e in index["all_model_checkpoint_paths"]:
            if isinstance(e, dict) and "path" in e:
                out.append({"path": os.path.join(model_dir, e["path"]),
                            "step": int(e.get("step", -1)),
                            "sha256": e.get("sha256")})
        return out
    found = []
    for p in glob.glob(os.path.join(glob.escape(model_dir), "model.ckpt-*.npz")):
        m = _PATTERN.match(os.path.basename(p))
        if m:
            found.append({"path": p, "step": int(m.group(1)), "sha256": None})
    return sorted(found, key=lambda e: e["step"])


def save_checkpoint(model_dir, variables, global_step: int, keep_max: int | None = 5):
    """Writes ``model.ckpt-<global_step>.npz`` atomically and updates the index.

    Args:
        model_dir: folder (created if needed).
        variables: list of ``Variable``; their ``name`` keys the checkpoint and
            must be unique.
        global_step: int, the step number in the file name.
        keep_max: keep at most this many checkpoints (None or 0: keep all);
            older files are deleted after the new index is in place.

    Returns:
        The path of the new checkpoint.

    Raises:
        ValueError: duplicate variable names.
        OSError: ``model_dir`` cannot be written (nothing in it is changed).
    """
    model_dir = os.fspath(model_dir)
    os.makedirs(model_dir, exist_ok=True)
    names = [v.name for v in variables]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"Checkpoint variables need unique names. Received "
                         f"duplicates: {dup}.")
    # No copy on the host: the file is written before any step runs again, and
    # steps replace (or update in place) values only while they run.
    arrays = [np.asarray(to_numpy(v.value)) for v in variables]
    meta = {"format": "kerasflow-ckpt-v1", "global_step": int(global_step),
            "names": names, "dtypes": [a.dtype.str for a in arrays],
            "shapes": [list(a.shape) for a in arrays]}
    payload = {f"v{i}": a for i, a in enumerate(arrays)}
    payload["__meta__"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    base = f"model.ckpt-{int(global_step)}.npz"
    path = os.path.join(model_dir, base)
    write_npz(path, payload)
    # Entries at or after this step are from an abandoned run (training resumed
    # from an older checkpoint because they were unreadable): drop them.
    previous = list_checkpoints(model_dir)
    stale = [e for e in previous if e["step"] > int(global_step)]
    kept = [e for e in previous if e["step"] < int(global_step)
            and os.path.exists(e["path"])]
    kept.append({"path": path, "step": int(global_step), "sha256": None})
    dropped = list(stale)
    if keep_max:
        dropped, kept = dropped + kept[:-keep_max], kept[-keep_max:]
    index = {"model_checkpoint_path": base,
             "all_model_checkpoint_paths": [
                 {"path": os.path.basename(e["path"]), "step": e["step"],
                  "sha256": e["sha256"]} for e in kept]}
    atomic_write(os.path.join(model_dir, INDEX), json.dumps(index, indent=1).encode())
    for e in dropped:
        try:
            os.remove(e["path"])
        except FileNotFoundError:
            pass
    return path


def load_checkpoint(path, sha256: str | None = None) -> tuple[dict, int]:
    """Reads a checkpoint: ``({name: array}, global_step)``.

    Raises:
        CheckpointError: missing, truncated or corrupt file, a checksum
            mismatch, or a pickled payload (never unpickled).
    """
    path = os.fspath(path)
    npz = read_npz(path, sha256)
    try:
        meta = json.loads(bytes(npz["__meta__"]).decode())
        values = {n: npz[f"v{i}"] for i, n in enumerate(meta["names"])}
        step = int(meta["global_step"])
    except (ValueError, KeyError, UnicodeDecodeError, TypeError) as e:
        raise CheckpointError(f"Checkpoint '{path}' is unreadable or incomplete: "
                              f"{e}") from None
    for n, dt, shape in zip(meta["names"], meta["dtypes"], meta["shapes"]):
        a = values[n]
        if a.dtype.str != dt or list(a.shape) != list(shape):
            raise CheckpointError(f"Checkpoint '{path}': variable '{n}' is stored as "
                                  f"{a.dtype.str}{list(a.shape)}, its metadata says "
                                  f"{dt}{list(shape)}.")
    return values, step


def latest_checkpoint(model_dir, load: bool = False):
    """The newest readable checkpoint in ``model_dir`` (TF's name).

    Checkpoints that fail to read are skipped with a warning naming them, so a
    corrupt newest file falls back to the previous one.

    Args:
        model_dir: folder.
        load: also return its contents.

    Returns:
        The path (or ``(path, values, step)`` with ``load``), or None (``(None,
        None, None)``) when there is no readable checkpoint.
    """
    model_dir = os.fspath(model_dir)
    if not os.path.isdir(model_dir):
        return (None, None, None) if load else None
    for e in reversed(list_checkpoints(model_dir)):
        try:
            values, step = load_checkpoint(e["path"], e["sha256"])
        except CheckpointError as err:
            warnings.warn(f"{err} Falling back to the previous checkpoint.",
                          stacklevel=2)
            continue
        return (e["path"], values, step) if load else e["path"]
    return (None, None, None) if load else None
