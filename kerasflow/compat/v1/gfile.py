"""``tf.gfile`` / ``tf.io.gfile`` (TF 1.x): file access on the local filesystem.

Both spellings are offered: TF1's ``Exists``/``Open``/``MakeDirs``... and
``tf.io.gfile``'s ``exists``/``GFile``/``makedirs``...; missing paths raise
``tf.errors.NotFoundError`` as TF does.
"""

from __future__ import annotations

import glob as _glob
import os
import shutil

from kerasflow.errors import NotFoundError

__all__ = ["GFile", "copy", "exists", "glob", "isdir", "listdir", "makedirs",
           "mkdir", "remove", "rename", "rmtree", "stat"]


def _path(path) -> str:
    return os.fsdecode(os.fspath(path))


def _not_found(path, what):
    return NotFoundError(f"{what}: {path}: No such file or directory")


class GFile:
    """A file object (TF 1.x ``tf.gfile.Open``/``GFile``); text unless the
    mode holds 'b'.

    Raises:
        NotFoundError: reading a path that does not exist.
    """

    def __init__(self, name, mode="r"):
        self.name = _path(name)
        try:
            # Kept open for the caller, closed by close() or the with block.
            self._f = open(self.name, mode)  # noqa: SIM115
        except FileNotFoundError:
            raise _not_found(self.name, "GFile") from None

    def __getattr__(self, attr):
        return getattr(self._f, attr)

    def __iter__(self):
        return iter(self._f)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()

    def size(self) -> int:
        """The file's size in bytes."""
        return os.path.getsize(self.name)


def exists(path) -> bool:
    """Whether ``path`` exists."""
    return os.path.exists(_path(path))


def isdir(path) -> bool:
    """Whether ``path`` is a directory."""
    return os.path.isdir(_path(path))


def glob(pattern) -> list:
    """Sorted paths matching ``pattern`` (a string or a list of them)."""
    patterns = [pattern] if isinstance(pattern, (str, bytes, os.PathLike)) \
        else pattern
    return sorted({p for pat in patterns for p in _glob.glob(_path(pat))})


def listdir(path) -> list:
    """Names in a directory (TF's order is unspecified; sorted here).

    Raises:
        NotFoundError: ``path`` is not a directory.
    """
    if not os.path.isdir(_path(path)):
        raise _not_found(_path(path), "ListDirectory")
    return sorted(os.listdir(_path(path)))


def makedirs(path) -> None:
    """Creates ``path`` and its parents; no error if it exists."""
    os.makedirs(_path(path), exist_ok=True)


def mkdir(path) -> None:
    """Creates one directory (its parent must exist).

    Raises:
        NotFoundError: the parent does not exist.
    """
    try:
        os.mkdir(_path(path))
    except FileNotFoundError:
        raise _not_found(_path(path), "MkDir") from None


def remove(path) -> None:
    """Deletes a file.

    Raises:
        NotFoundError: ``path`` does not exist.
    """
    try:
        os.remove(_path(path))
    except FileNotFoundError:
        raise _not_found(_path(path), "Remove") from None


def rmtree(path) -> None:
    """Deletes a directory and everything under it.

    Raises:
        NotFoundError: ``path`` does not exist.
    """
    if not os.path.exists(_path(path)):
        raise _not_found(_path(path), "DeleteRecursively")
    shutil.rmtree(_path(path))


def rename(src, dst, overwrite=False) -> None:
    """Renames ``src`` to ``dst``.

    Raises:
        NotFoundError: ``src`` does not exist.
        FileExistsError: ``dst`` exists and ``overwrite`` is False.
    """
    if not os.path.exists(_path(src)):
        raise _not_found(_path(src), "Rename")
    if os.path.exists(_path(dst)) and not overwrite:
        raise FileExistsError(f"Rename: {_path(dst)} exists; pass overwrite=True.")
    os.replace(_path(src), _path(dst))


def copy(src, dst, overwrite=False) -> None:
    """Copies a file (``tf.gfile.Copy``); same errors as ``rename``."""
    if not os.path.exists(_path(src)):
        raise _not_found(_path(src), "Copy")
    if os.path.exists(_path(dst)) and not overwrite:
        raise FileExistsError(f"Copy: {_path(dst)} exists; pass overwrite=True.")
    shutil.copyfile(_path(src), _path(dst))


def stat(path):
    """``os.stat`` of ``path`` (``length`` is ``st_size``).

    Raises:
        NotFoundError: ``path`` does not exist.
    """
    try:
        return os.stat(_path(path))
    except FileNotFoundError:
        raise _not_found(_path(path), "Stat") from None
