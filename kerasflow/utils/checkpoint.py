"""Checkpoints: one file of named arrays each, and one index per folder.

This is the one checkpoint module: ``compat.v1.train.Saver``, the Estimator,
the ``ModelCheckpoint`` callback (through ``model.save_weights``) and
``model.save`` / ``load_weights`` all read and write through it.

A checkpoint is ONE file, and its path is what the index lists and what
``latest_checkpoint`` returns (``/tmp/run/model.ckpt-100``, TF1's names). The
file is a numpy ``.npz`` archive (a zip of ``.npy`` members) holding:

- ``a0, a1, ...``: the arrays, in save order;
- ``__meta__``: a uint8 array of UTF-8 JSON ``{"format": "kerasflow.checkpoint",
  "version": 2, "names": [...], "shapes": [...], "dtypes": [...],
  "metadata": {...}}``: the name of each array (any string, e.g.
  ``"dense/kernel"``), its shape and dtype, and free-form JSON metadata of the
  writer (``model.save_weights`` puts its layer paths there).

Reading opens regular files only (a FIFO or a device is refused, without
blocking), never runs pickle (``allow_pickle=False``), checks zip's per-member
CRC-32 (a flipped bit or a truncated file fails), caps each member's declared
size (``file_io.weights_cap()``; zipfile never inflates past it: no zip
bombs), checks each member's ``.npy`` header against the bytes the member
holds before allocating its array, and checks every array against its
``__meta__`` entry.

Names are how the writers' checkpoints line up: the Estimator saves each
variable under its name (``"dense/kernel"``, ``"global_step"``, optimizer
slots), ``Saver`` under its var_list's names (``{name: Variable}`` picks
them), ``model.save_weights`` under ``"<layer>/<weight>"`` names, so a Keras
layer named ``"dense"`` and the same layer in a ``model_fn`` share keys. Each
reader loads the names it needs and ignores or reports the rest.

The folder's ``checkpoint`` file is TF's ``CheckpointState`` in the text form
TF writes (``tf.train.get_checkpoint_state`` reads it)::

    model_checkpoint_path: "model.ckpt-60"
    all_model_checkpoint_paths: "model.ckpt-40"
    all_model_checkpoint_paths: "model.ckpt-50"
    all_model_checkpoint_paths: "model.ckpt-60"

Paths inside the folder are stored relative to it. The index is read as
confined to its folder: an entry that is absolute outside it, climbs out with
``..`` or is a symlink leading out is ignored with a warning, so an index
written by someone else can neither load nor delete another file (a path the
user names explicitly, e.g. ``load_checkpoint("/elsewhere/ckpt-3")``, is
read). Every file is written with
``file_io.atomic_write`` (temporary file, fsync, rename, folder fsync), the
payload before the index, so an index only ever names complete files.

``save_checkpoint(..., max_to_keep=k)`` recovers the kept list from the index
(TF's ``Saver.recover_last_checkpoints``), so retention survives a restart. It
makes room *before* writing: the index drops the oldest entries, their files
are deleted, then the new file is written and the index updated. A process
killed at any point therefore leaves at most ``k`` numbered checkpoints on
disk (``k + 1`` for ``k == 1``: the only checkpoint is kept until the new one
is durable). With ``max_to_keep`` set, the numbered files are the index's
to manage: for a path ``<base>-<N>``, files ``<base>-<M>`` in the folder that
the index does not list (left by a kill between payload and index) and listed
ones with ``M > N`` (from a run abandoned when training resumed from an older
checkpoint) are deleted too. Only files provably the rotation's own are
deleted: regular files (no symlinks) of the folder named ``<base>`` or
``<base>-<N>``; another listed file drops out of the index and stays on disk.
Without ``max_to_keep``, no file is ever deleted.

Example:
    >>> save_checkpoint("/tmp/run/model.ckpt-1", {"w": np.ones(3)})
    '/tmp/run/model.ckpt-1'
    >>> latest_checkpoint("/tmp/run")
    '/tmp/run/model.ckpt-1'
    >>> load_checkpoint("/tmp/run/model.ckpt-1")["w"]
    array([1., 1., 1.])
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
import warnings
import zipfile
from typing import NamedTuple

import numpy as np

from kerasflow.utils import file_io

__all__ = [
    "CheckpointError",
    "CheckpointState",
    "checkpoint_exists",
    "decode_arrays",
    "encode_arrays",
    "get_checkpoint_state",
    "latest_checkpoint",
    "load_checkpoint",
    "remove_checkpoint",
    "save_checkpoint",
    "update_checkpoint_state",
]

FORMAT = "kerasflow.checkpoint"
VERSION = 2
STATE_FILE = "checkpoint"
_META = "__meta__"
_STATE_LINE = re.compile(r'^\s*(\w+)\s*:\s*"((?:[^"\\]|\\.)*)"\s*$')
_NUMBERED = re.compile(r"^(.*)-(\d+)$")


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read back completely."""


class CheckpointState(NamedTuple):
    """TF's ``CheckpointState``: the newest path and every kept one, oldest first.

    Paths are the index's entries joined to the folder; entries that lead
    outside the folder are left out (see ``get_checkpoint_state``).
    """

    model_checkpoint_path: str
    all_model_checkpoint_paths: list


# -- one file ----------------------------------------------------------------------
def encode_arrays(arrays: dict, metadata: dict | None = None) -> bytes:
    """The checkpoint file's bytes for ``{name: array}`` plus JSON ``metadata``.

    Args:
        arrays: ``{str: array-like}``, numeric or bool, any shape; order kept.
        metadata: JSON-serialisable dict stored alongside (default ``{}``).

    Raises:
        TypeError: ``arrays`` is not a dict of str names, or a value has an
            object/string dtype (it could only be stored with pickle).
    """
    if not isinstance(arrays, dict):
        raise TypeError(f"A checkpoint holds a dict {{name: array}}. Received: "
                        f"{type(arrays).__name__}.")
    meta = {"format": FORMAT, "version": VERSION, "names": [], "shapes": [],
            "dtypes": [], "metadata": metadata or {}}
    data = {}
    for i, (name, value) in enumerate(arrays.items()):
        if not isinstance(name, str):
            raise TypeError(f"Checkpoint names are str. Received: {name!r}.")
        value = np.asarray(value)
        if value.dtype.kind not in "biuf":
            raise TypeError(f"Checkpoint values are numeric or bool arrays. "
                            f"Received for '{name}': dtype {value.dtype}.")
        data[f"a{i}"] = value
        meta["names"].append(name)
        meta["shapes"].append(list(value.shape))
        meta["dtypes"].append(value.dtype.str)
    data[_META] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **data)
    return buf.getvalue()


def decode_arrays(data: bytes, source) -> tuple[dict, dict]:
    """Reads ``encode_arrays`` bytes back as ``({name: array}, metadata)``.

    Args:
        data: the file's bytes.
        source: the file name, for error messages.

    Raises:
        CheckpointError: a truncated or corrupt archive (zip CRC-32), a
            pickled (object) member (never unpickled), a member past
            ``file_io.weights_cap()`` bytes, no kerasflow ``__meta__``, or an
            array whose shape or dtype differs from its ``__meta__`` entry.
    """
    members = {}
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            for info in z.infolist():
                if info.file_size > file_io.weights_cap():
                    raise ValueError(file_io.too_big(source, info.filename,
                                                     info.file_size,
                                                     file_io.weights_cap()))
                _check_member(z, info, source, len(data))
                # zipfile stops at the declared size and checks the CRC-32
                # when the member's end is read.
                with z.open(info) as f:
                    members[info.filename.removesuffix(".npy")] = (
                        np.lib.format.read_array(f, allow_pickle=False))
                    if f.read(1):
                        raise ValueError(f"member '{info.filename}' has trailing "
                                         f"bytes")
    except CheckpointError:
        raise
    except ValueError as e:
        if "allow_pickle" in str(e) or "Object arrays" in str(e):
            raise CheckpointError(
                f"'{source}' holds a pickled (object) array; kerasflow never "
                f"unpickles checkpoints. Save numeric arrays instead.") from None
        raise CheckpointError(f"'{source}' is unreadable or incomplete: {e}") from None
    except (OSError, EOFError, zipfile.BadZipFile) as e:
        raise CheckpointError(f"'{source}' is unreadable or incomplete "
                              f"(corrupt or truncated: {e}).") from None
    try:
        meta = json.loads(members.pop(_META).tobytes().decode())
        if meta["format"] != FORMAT:
            raise KeyError("format")
        entries = list(zip(meta["names"], meta["shapes"], meta["dtypes"],
                           strict=True))
    except (KeyError, ValueError, TypeError, AttributeError, UnicodeDecodeError):
        raise CheckpointError(f"'{source}' is unreadable: not a kerasflow "
                              f"checkpoint (expected a '{_META}' member of format "
                              f"{FORMAT!r}).") from None
    out = {}
    for i, (name, shape, dtype) in enumerate(entries):
        value = members.get(f"a{i}")
        if value is None or list(value.shape) != shape or value.dtype.str != dtype:
            got = ("nothing" if value is None
                   else f"shape {value.shape} dtype {value.dtype}")
            raise CheckpointError(f"'{source}': '{name}' is recorded as shape "
                                  f"{tuple(shape)} dtype {np.dtype(dtype)}. "
                                  f"Received: {got}.")
        out[name] = value
    return out, meta.get("metadata") or {}


# DEFLATE inflates at most ~1032:1, so a member's declared size is checked
# against the bytes the archive holds before any array is allocated.
_MAX_INFLATE = 1032


def _check_member(z, info, source, archive_bytes) -> None:
    """Refuses a member whose ``.npy`` header declares more data than it holds."""
    if info.compress_size > archive_bytes or (
            info.compress_type == zipfile.ZIP_STORED
            and info.file_size != info.compress_size) or (
            info.compress_type == zipfile.ZIP_DEFLATED
            and info.file_size > _MAX_INFLATE * info.compress_size + 64):
        raise CheckpointError(
            f"'{source}': member '{info.filename}' declares {info.file_size} "
            f"bytes. Received: {info.compress_size} stored bytes in a file of "
            f"{archive_bytes} bytes (corrupt or truncated).")
    with z.open(info) as f:
        version = np.lib.format.read_magic(f)
        read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                       else np.lib.format.read_array_header_2_0)
        shape, _, dtype = read_header(f)
        header = f.tell()
    if dtype.hasobject:
        raise ValueError("Object arrays cannot be loaded when allow_pickle=False")
    declared = dtype.itemsize
    for n in shape:
        declared *= int(n)
    if declared > info.file_size - header:
        raise CheckpointError(
            f"'{source}': member '{info.filename}' declares shape {tuple(shape)} "
            f"dtype {dtype}, expected to hold {declared} bytes. Received: "
            f"{info.file_size - header} bytes of data (a file of {archive_bytes} "
            f"bytes).")


def _check_path(path) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"A checkpoint path is a str or path. Received: "
                        f"path={path!r}.")
    path = os.fspath(path)
    if not os.path.basename(path):
        raise ValueError(f"A checkpoint path names a file, not a folder. "
                         f"Received: path={path!r}.")
    return path


def checkpoint_exists(path) -> bool:
    """True when the checkpoint file ``path`` exists."""
    return os.path.isfile(_check_path(path))


def remove_checkpoint(path) -> None:
    """Deletes the checkpoint file ``path`` (a missing file is ignored)."""
    try:
        os.remove(_check_path(path))
    except FileNotFoundError:
        pass


_KINDS = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket",
          stat.S_IFDIR: "a folder"}


def _read_regular(path) -> bytes:
    """The bytes of the regular file ``path``; a FIFO or device is refused."""
    # O_NONBLOCK: opening a FIFO with no writer returns at once instead of
    # waiting; fstat on the open fd leaves no window to swap the file.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                 | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
            raise CheckpointError(f"A checkpoint is a regular file. Received: "
                                  f"'{path}' is {kind}.")
        return f.read()


def load_checkpoint(path, with_metadata: bool = False):
    """Reads the checkpoint ``path``: ``{name: array}`` (and its metadata).

    Args:
        path: str or path of the checkpoint file.
        with_metadata: also return the writer's metadata dict.

    Returns:
        ``{name: numpy array}`` in save order, or ``(arrays, metadata)``.

    Raises:
        FileNotFoundError: no such file, naming the folder's latest checkpoint
            when there is one.
        CheckpointError: see ``decode_arrays``.
    """
    path = _check_path(path)
    try:
        data = _read_regular(path)
    except FileNotFoundError:
        latest = latest_checkpoint(os.path.dirname(path) or ".")
        hint = f" The folder's latest checkpoint is '{latest}'." if latest else ""
        raise FileNotFoundError(f"No checkpoint at '{path}'.{hint}") from None
    arrays, metadata = decode_arrays(data, path)
    return (arrays, metadata) if with_metadata else arrays


# -- the index ---------------------------------------------------------------------
def _inside(folder_real, path) -> bool:
    """True when ``path``, ``..`` and symlinks resolved, lies under ``folder_real``."""
    real = os.path.realpath(path)
    return real != folder_real and os.path.commonpath([folder_real, real]) == folder_real


def _read_state(checkpoint_dir, latest_filename=None):
    """``(CheckpointState or None, readable)``: the index, entries confined."""
    checkpoint_dir = os.fspath(checkpoint_dir)
    path = os.path.join(checkpoint_dir, latest_filename or STATE_FILE)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except (FileNotFoundError, NotADirectoryError):
        return None, True
    try:
        lines = raw.decode("utf-8").splitlines()
    except UnicodeDecodeError as e:
        # TF's get_checkpoint_state: an unparsable index is ignored, with a warning.
        warnings.warn(f"The checkpoint index '{path}' is ignored: expected UTF-8 "
                      f"text. Received: {e.reason} at byte {e.start}.", stacklevel=3)
        return None, False
    folder_real = os.path.realpath(checkpoint_dir or ".")
    latest, listed, outside = None, [], []
    for line in lines:
        m = _STATE_LINE.match(line)
        if not m:
            continue
        entry = m.group(2).replace('\\"', '"').replace("\\\\", "\\")
        value = os.path.join(checkpoint_dir, entry)  # an absolute entry stays
        # An index names files of its own folder: an entry that leaves it
        # (absolute, "..", or a symlink out) is never loaded nor deleted.
        if not _inside(folder_real, value):
            if entry not in outside:
                outside.append(entry)
            continue
        if m.group(1) == "model_checkpoint_path":
            latest = value
        elif m.group(1) == "all_model_checkpoint_paths" and value not in listed:
            listed.append(value)
    if outside:
        warnings.warn(f"The checkpoint index '{path}' lists paths outside its "
                      f"folder; they are ignored (never loaded or deleted through "
                      f"the index). Expected paths inside '{folder_real}'. "
                      f"Received: {outside}.", stacklevel=3)
    if latest is None:
        latest = listed[-1] if listed else None
    if latest is None:
        return None, True
    return CheckpointState(latest, [p for p in listed if p != latest] + [latest]), True


def get_checkpoint_state(checkpoint_dir,
                         latest_filename=None) -> CheckpointState | None:
    """Parses ``checkpoint_dir/checkpoint`` (TF's function), or None if absent.

    Relative entries are resolved against ``checkpoint_dir``; the newest path
    is last in ``all_model_checkpoint_paths``. Only files inside the folder
    count: an entry that is absolute outside it, climbs out with ``..`` or is
    a symlink leading out is ignored with a warning, so the index can neither
    load nor delete another file. An index that is not UTF-8 text is ignored
    with a warning (None), as TF ignores an index it cannot parse.
    """
    return _read_state(checkpoint_dir, latest_filename)[0]


def update_checkpoint_state(checkpoint_dir, model_checkpoint_path,
                            all_model_checkpoint_paths=None) -> None:
    """Atomically writes the folder's ``checkpoint`` index (TF's function).

    Args:
        checkpoint_dir: the folder.
        model_checkpoint_path: the newest checkpoint path.
        all_model_checkpoint_paths: every kept path, oldest first (default:
            the newest alone); the newest is moved last.
    """
    folder = os.fspath(checkpoint_dir) or "."
    paths = [os.fspath(p) for p in all_model_checkpoint_paths or []]
    latest = os.fspath(model_checkpoint_path)
    paths = [p for p in paths if p != latest] + [latest]

    def entry(p):
        rel = os.path.relpath(p, folder)
        rel = p if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel
        return '"' + rel.replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = [f"model_checkpoint_path: {entry(latest)}"]
    lines += [f"all_model_checkpoint_paths: {entry(p)}" for p in paths]
    file_io.atomic_write(os.path.join(folder, STATE_FILE),
                         ("\n".join(lines) + "\n").encode())


def latest_checkpoint(checkpoint_dir, latest_filename=None) -> str | None:
    """The newest checkpoint path of ``checkpoint_dir`` (TF1's function).

    Returns:
        The index's newest path whose file exists (an older listed one when a
        crash or a user removed it), or None when there is none.
    """
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    for path in reversed(state.all_model_checkpoint_paths if state else []):
        if os.path.isfile(path):
            return path
    return None


def _same(a, b) -> bool:
    return os.path.abspath(a) == os.path.abspath(b)


def _own(path) -> re.Pattern:
    """The names of the checkpoints ``path`` rotates with: ``<base>`` or
    ``<base>-<N>``, ``<base>`` being its name without a ``-<N>`` step."""
    name = os.path.basename(path)
    m = _NUMBERED.match(name)
    return re.compile(re.escape(m.group(1) if m else name) + r"(-\d+)?$")


def _removable(old, folder_real, own) -> bool:
    """True for a regular file (no symlink) of the folder named like ``own``."""
    try:
        is_file = stat.S_ISREG(os.lstat(old).st_mode)
    except OSError:
        return False
    return (is_file and own.match(os.path.basename(old)) is not None
            and os.path.realpath(os.path.dirname(old) or ".") == folder_real)


def _leftovers(path, listed) -> list:
    """Numbered siblings of ``path`` that the index does not keep (see above)."""
    m = _NUMBERED.match(os.path.basename(path))
    if m is None:
        return []
    folder = os.path.dirname(path) or "."
    step, sibling = int(m.group(2)), re.compile(re.escape(m.group(1)) + r"-(\d+)$")
    out = []
    for name in os.listdir(folder):
        s = sibling.match(name)
        other = os.path.join(folder, name)
        if s and not _same(other, path) and (
                int(s.group(1)) > step or not any(_same(other, p) for p in listed)):
            out.append(other)
    return out


def save_checkpoint(path, arrays: dict, metadata: dict | None = None,
                    max_to_keep: int | None = None, update_state: bool = True) -> str:
    """Writes ``arrays`` as the checkpoint file ``path``, then the index.

    Args:
        path: str or path, e.g. ``"run/model.ckpt-100"``; its folder is created.
        arrays: ``{name: array-like}`` (see ``encode_arrays``).
        metadata: JSON-serialisable dict stored in the file.
        max_to_keep: None or 0 keeps every file; k >= 1 keeps the newest k
            the index lists and deletes the others' files, and the unlisted
            or newer numbered siblings of ``path`` (TF1
            ``Saver(max_to_keep=...)``; see the module docstring).
        update_state: record ``path`` as the newest in the folder's index.

    Returns:
        ``path`` as a str.

    Raises:
        TypeError: see ``encode_arrays``.
        ValueError: a bad path or ``max_to_keep``.
        OSError: the folder cannot be written (the previous state is intact).
    """
    path = _check_path(path)
    if max_to_keep is not None and (not isinstance(max_to_keep, int)
                                    or max_to_keep < 0):
        raise ValueError(f"max_to_keep must be None or an int >= 0. Received: "
                         f"max_to_keep={max_to_keep!r}.")
    data = encode_arrays(arrays, metadata)  # fails before touching the disk
    if not update_state:
        file_io.atomic_write(path, data)
        return path
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    state, readable = _read_state(folder)  # TF's recover_last_checkpoints
    listed = state.all_model_checkpoint_paths if state else []
    # An unreadable index lists nothing: its files are not leftovers.
    leftovers = _leftovers(path, listed) if max_to_keep and readable else []
    kept = [p for p in listed if os.path.isfile(p)
            and not any(_same(p, o) for o in [path, *leftovers])]
    if max_to_keep:
        # Make room before writing, keeping the newest until the new one is safe.
        keep = kept[-(max_to_keep - 1):] if max_to_keep > 1 else kept[-1:]
        if len(keep) < len(kept):
            update_checkpoint_state(folder, keep[-1], keep)
            leftovers += kept[:len(kept) - len(keep)]
        kept = keep
    # Only files provably this rotation's are deleted: regular files of the
    # folder named like ``path`` (an index may list anything).
    folder_real, own = os.path.realpath(folder), _own(path)
    for old in leftovers:
        if _removable(old, folder_real, own):
            remove_checkpoint(old)
    file_io.atomic_write(path, data)
    final = kept + [path]
    if max_to_keep:
        final = final[-max_to_keep:]
    update_checkpoint_state(folder, path, final)
    for old in kept[:len(kept) + 1 - len(final)]:
        if _removable(old, folder_real, own):
            remove_checkpoint(old)
    return path
