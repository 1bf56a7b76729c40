"""Safe file writing and reading for model files: atomic writes, zip caps.

``atomic_write`` writes to a temporary file in the target's folder and renames
it into place, so a crash never leaves a half-written file, and:

- a symlink is followed: its target is replaced, the link stays (as ``open(path,
  "w")`` would do);
- the file keeps the mode of the file it replaces, else gets ``0o666 & ~umask``
  (as a plain ``open`` would), not ``mkstemp``'s 0600;
- the temporary file cannot outlive the process where Linux allows it
  (``O_TMPFILE``: an unnamed inode, named only once complete); elsewhere it is
  named ``.tmp-<pid>-<random>.part`` and later writes into the same folder
  remove such files left by dead processes (``remove_stale_temp_files``);
- the data is fsynced before the rename and the folder after it, so the new
  file survives a power loss once ``atomic_write`` returns;
- errors name the target path, not the temporary one.

``read_zip_member`` reads one member of a zip archive after checking its
declared size against a cap, and counts the bytes while inflating, so a zip
bomb (a small archive whose member inflates to gigabytes) is refused before
the memory is spent. The caps are module attributes, documented and
overridable: ``MAX_CONFIG_BYTES`` (64 MiB) and ``MAX_WEIGHTS_BYTES`` (16 GiB),
or the environment variables ``KERASFLOW_MAX_CONFIG_BYTES`` and
``KERASFLOW_MAX_WEIGHTS_BYTES``.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import time
import zipfile
import zlib

__all__ = ["MAX_CONFIG_BYTES", "MAX_WEIGHTS_BYTES", "STALE_AFTER_S", "atomic_write",
           "config_cap", "read_zip_member", "remove_stale_temp_files",
           "resolve_target", "too_big", "weights_cap"]

#: Largest model-config (JSON) member read from a model zip, in bytes.
MAX_CONFIG_BYTES = 64 * 2**20
#: Largest weights member read from a model zip, in bytes.
MAX_WEIGHTS_BYTES = 16 * 2**30
#: Age (seconds since last modification) after which a temporary file of a
#: dead process counts as stale.
STALE_AFTER_S = 300.0

_TEMP_RE = re.compile(r"^\.tmp-(\d+)-[A-Za-z0-9_]+\.part$")
_CHUNK = 1 << 20


def config_cap() -> int:
    """The config-member cap: ``$KERASFLOW_MAX_CONFIG_BYTES`` or the default."""
    return _env_int("KERASFLOW_MAX_CONFIG_BYTES", MAX_CONFIG_BYTES)


def weights_cap() -> int:
    """The weights-member cap: ``$KERASFLOW_MAX_WEIGHTS_BYTES`` or the default."""
    return _env_int("KERASFLOW_MAX_WEIGHTS_BYTES", MAX_WEIGHTS_BYTES)


def _env_int(name, default):
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value <= 0:
        raise ValueError(f"${name} expects a positive number of bytes. Received: "
                         f"{name}={raw!r}.")
    return value


def resolve_target(path) -> str:
    """The file a write to ``path`` lands in: symlinks followed, made absolute."""
    return os.path.realpath(os.fspath(path))


def _umask() -> int:
    try:  # Linux: read it without changing it (os.umask is process-global).
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _target_mode(target) -> int:
    try:
        return os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        return 0o666 & ~_umask()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except OSError:
        return True
    return True


def remove_stale_temp_files(folder, older_than_s: float | None = None) -> list[str]:
    """Deletes ``.tmp-<pid>-*.part`` files of dead processes in ``folder``.

    A file counts as stale when its writer's pid is not alive on this machine
    and it has not been modified for ``older_than_s`` seconds (default
    ``STALE_AFTER_S``), so a live writer elsewhere on a shared file system,
    which keeps touching its file, is left alone.

    Returns:
        The paths removed.
    """
    limit = STALE_AFTER_S if older_than_s is None else older_than_s
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    now = time.time()
    for name in names:
        m = _TEMP_RE.match(name)
        if m is None or int(m.group(1)) == os.getpid():
            continue
        path = os.path.join(folder, name)
        try:
            if now - os.lstat(path).st_mtime < limit or _pid_alive(int(m.group(1))):
                continue
            os.remove(path)
            removed.append(path)
        except OSError:  # gone already, or not ours to delete
            continue
    return removed


def _open_unnamed(folder):
    """An fd to an unnamed file in ``folder`` (Linux O_TMPFILE), or None."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None:
        return None
    try:
        return os.open(folder, flag | os.O_WRONLY, 0o600)
    except OSError as e:
        if e.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return None  # a file system without O_TMPFILE: use a named file
        raise


def _link_unnamed(fd, folder, tmp):
    # linkat(AT_SYMLINK_FOLLOW) on /proc/self/fd/N: os.link only calls linkat
    # (rather than link, which fails on the magic link) given a dir fd.
    dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.link(f"/proc/self/fd/{fd}", tmp, src_dir_fd=dir_fd, follow_symlinks=True)
    finally:
        os.close(dir_fd)


def _temp_name(folder):
    return os.path.join(folder, f".tmp-{os.getpid()}-{secrets.token_hex(6)}.part")


def atomic_write(path, data: bytes, overwrite: bool = True) -> str:
    """Writes ``data`` to ``path`` so it is either complete or untouched.

    Args:
        path: target file; a symlink is followed (its target is written).
        data: the bytes to write.
        overwrite: False raises when the file exists.

    Returns:
        The path actually written (symlinks resolved).

    Raises:
        FileExistsError: ``overwrite`` is False and the file exists.
        PermissionError / OSError: the folder cannot be written, naming the
            target path (never the temporary file).
    """
    path = os.fspath(path)
    target = resolve_target(path)
    if not overwrite and os.path.exists(target):
        raise FileExistsError(f"'{path}' exists and overwrite=False.")
    folder = os.path.dirname(target)
    tmp = _temp_name(folder)
    try:
        os.makedirs(folder, exist_ok=True)
        remove_stale_temp_files(folder)
        mode = _target_mode(target)
        if not _write_unnamed(folder, tmp, data, mode):
            _write_named(tmp, data, mode)
        os.replace(tmp, target)
        _fsync_dir(folder)
    except OSError as e:
        _remove_quietly(tmp)
        raise type(e)(e.errno, f"Cannot save to '{path}': {e.strerror}",
                      folder if e.filename == tmp else e.filename) from None
    except BaseException:
        _remove_quietly(tmp)
        raise
    return target


def _fsync_dir(folder):
    """Makes a rename in ``folder`` durable (where folders can be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # some platforms cannot open folders
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_unnamed(folder, tmp, data, mode) -> bool:
    """Writes ``data`` to an unnamed file, then names it ``tmp``; False if the
    file system cannot (no O_TMPFILE or no /proc)."""
    fd = _open_unnamed(folder)
    if fd is None:
        return False
    with os.fdopen(fd, "wb") as f:
        _fill(f, data, mode)
        try:
            # Named only now, complete: a kill before this leaves nothing.
            _link_unnamed(f.fileno(), folder, tmp)
        except OSError as e:
            if e.errno in (errno.EACCES, errno.ENOSPC, errno.EDQUOT, errno.EROFS):
                raise
            return False
    return True


def _write_named(tmp, data, mode):
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        _fill(f, data, mode)


def _fill(f, data, mode):
    f.write(data)
    f.flush()
    os.fchmod(f.fileno(), mode)
    os.fsync(f.fileno())


def _remove_quietly(path):
    try:
        os.remove(path)
    except OSError:
        pass


def read_zip_member(archive: zipfile.ZipFile, name: str, cap: int, source) -> bytes:
    """Reads member ``name`` of ``archive`` if it inflates to at most ``cap`` bytes.

    The declared size is checked before inflating, and the bytes are counted
    while inflating (a forged header cannot get more through).

    Raises:
        ValueError: the member is larger than ``cap``, naming the file, the
            member, its size and the cap (and how to raise it); or it is
            corrupt (bad CRC, a size that differs from its header).
        KeyError: no such member.
    """
    info = archive.getinfo(name)
    if info.file_size > cap:
        raise ValueError(too_big(source, name, info.file_size, cap))
    out, total = [], 0
    try:
        with archive.open(info) as f:
            while True:
                chunk = f.read(min(_CHUNK, cap + 1 - total))
                if not chunk:
                    break
                total += len(chunk)
                if total > cap:
                    raise ValueError(too_big(source, name, f"more than {cap}", cap))
                out.append(chunk)
    except (zipfile.BadZipFile, EOFError, zlib.error) as e:
        # zipfile stops at the declared size and checks the CRC: a forged
        # header ends here.
        raise ValueError(f"'{source}': member '{name}' is corrupt or its header "
                         f"is forged ({e}).") from None
    return b"".join(out)


def too_big(source, name, size, cap) -> str:
    """The error message for a zip member past its cap, saying how to raise it."""
    return (f"'{source}': member '{name}' expects at most {cap} bytes when "
            f"inflated. Received: {size} bytes. A genuine file this large can be "
            f"loaded after raising the cap (kerasflow.utils.file_io."
            f"MAX_CONFIG_BYTES / MAX_WEIGHTS_BYTES, or $KERASFLOW_MAX_CONFIG_BYTES "
            f"/ $KERASFLOW_MAX_WEIGHTS_BYTES).")
