"""``get_file`` (Keras 3's ``keras.utils.get_file``): fetch a file by URL into
a cache, check its hash, optionally extract a tar or zip archive.

The cache is ``$KERAS_HOME`` or ``~/.keras`` (``/tmp/.keras`` when that is
not writable), subdirectory ``cache_subdir``. Any URL ``urllib`` opens works,
``file://`` included; a cached file whose hash matches is not fetched again.
Archive members that would land outside the target directory are skipped.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import warnings
import zipfile

from kerasflow.utils.io_utils import print_msg

__all__ = ["extract_archive", "get_file", "hash_file", "validate_file"]


def _hasher(algorithm, file_hash=None):
    if algorithm == "sha256" or (algorithm == "auto" and file_hash is not None
                                 and len(file_hash) == 64):
        return hashlib.sha256()
    return hashlib.md5()


def hash_file(fpath, algorithm="sha256", chunk_size=65535) -> str:
    """The hex digest of a file ("sha256", "md5" or a hashlib object)."""
    hasher = _hasher(algorithm) if isinstance(algorithm, str) else algorithm
    with open(fpath, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            hasher.update(chunk)
    return hasher.hexdigest()


def validate_file(fpath, file_hash, algorithm="auto", chunk_size=65535) -> bool:
    """Whether the file's hash is ``file_hash`` ("auto": sha256 for 64 hex
    digits, else md5)."""
    return hash_file(fpath, _hasher(algorithm, file_hash), chunk_size) == str(file_hash)


def _inside(base, name):
    base = os.path.realpath(base)
    return os.path.realpath(os.path.join(base, name)).startswith(base + os.sep)


def extract_archive(file_path, path=".", archive_format="auto") -> bool:
    """Extracts a tar or zip archive into ``path``; False when it is neither.

    Raises:
        NotImplementedError: an archive format other than "tar" or "zip".
    """
    if archive_format is None:
        return False
    formats = ["tar", "zip"] if archive_format == "auto" else (
        [archive_format] if isinstance(archive_format, str) else archive_format)
    for kind in formats:
        if kind not in ("tar", "zip"):
            raise NotImplementedError(kind)
        is_kind = tarfile.is_tarfile if kind == "tar" else zipfile.is_zipfile
        if not is_kind(file_path):
            continue
        opener = tarfile.open if kind == "tar" else zipfile.ZipFile
        with opener(file_path) as archive:
            try:
                if kind == "zip":
                    archive.extractall(path, members=[
                        m for m in archive.infolist() if _inside(path, m.filename)])
                else:
                    members = [m for m in archive.getmembers()
                               if _inside(path, m.name) and not m.issym()
                               and not m.islnk()]
                    archive.extractall(path, members=members, filter="data")
            except (tarfile.TarError, RuntimeError, KeyboardInterrupt):
                if os.path.isfile(path):
                    os.remove(path)
                elif os.path.exists(path):
                    shutil.rmtree(path)
                raise
        return True
    return False


def get_file(fname=None, origin=None, untar=False, md5_hash=None, file_hash=None,
             cache_subdir="datasets", hash_algorithm="auto", extract=False,
             archive_format="auto", cache_dir=None, force_download=False) -> str:
    """The local path of ``origin``'s file, fetched into the cache if needed.

    Args:
        fname: the file's name in the cache (default: the URL's last part).
        origin: the URL.
        untar, extract: extract the archive (untar: as tar) and return the
            extraction directory instead.
        md5_hash, file_hash, hash_algorithm: the expected digest ("auto":
            sha256 for 64 hex digits, else md5).
        cache_subdir, cache_dir: where the cache lives.
        force_download: fetch even when cached.

    Returns:
        The path of the file, or of the extraction directory.

    Raises:
        ValueError: no origin, a path as ``fname``, no file name in the URL,
            or a downloaded file whose hash differs.
        Exception: "URL fetch failure on ..." when the fetch fails.
    """
    if origin is None:
        raise ValueError('Please specify the "origin" argument (URL of the file to '
                         'download).')
    if cache_dir is None:
        cache_dir = os.environ.get("KERAS_HOME", os.path.join("~", ".keras"))
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    base = os.path.expanduser(cache_dir)
    try:
        os.makedirs(base, exist_ok=True)
    except OSError:
        pass  # read-only: fall back below
    if not os.access(base, os.W_OK):
        base = os.path.join(tempfile.gettempdir(), ".keras")
    datadir = os.path.join(base, cache_subdir)
    os.makedirs(datadir, exist_ok=True)
    provided = fname = os.fspath(fname) if fname is not None else None
    if not fname:
        fname = os.path.basename(urllib.parse.urlsplit(origin).path)
        if not fname:
            raise ValueError(f"Can't parse the file name from the origin provided: "
                             f"'{origin}'.Please specify the `fname` argument.")
    elif os.sep in fname:
        raise ValueError(f"Paths are no longer accepted as the `fname` argument. To "
                         f"specify the file's parent directory, use the `cache_dir`"
                         f" argument. Received: fname={fname}")
    if extract or untar:
        if provided and "." in fname:
            target = os.path.join(datadir, fname)
            extraction_dir = os.path.join(datadir, f"{fname[:fname.find('.')]}"
                                                   f"_extracted")
        else:
            extraction_dir = os.path.join(datadir, fname)
            target = os.path.join(datadir, f"{fname}_archive")
    else:
        target = os.path.join(datadir, fname)
    download = force_download or not os.path.exists(target) or (
        file_hash is not None and not validate_file(target, file_hash,
                                                    hash_algorithm))
    if download:
        print_msg(f"Downloading data from {origin}")
        try:
            urllib.request.urlretrieve(origin, target)
        except (urllib.error.URLError, OSError) as e:
            if os.path.exists(target):
                os.remove(target)
            reason = getattr(e, "reason", e)
            raise Exception(f"URL fetch failure on {origin}: "
                            f"{getattr(e, 'errno', None)} -- {reason}") from e
        if file_hash is not None and not validate_file(target, file_hash,
                                                       hash_algorithm):
            raise ValueError(f"Incomplete or corrupted file detected. The "
                             f"{hash_algorithm} file hash does not match the "
                             f"provided value of {file_hash}.")
    if extract or untar:
        if not extract_archive(target, extraction_dir,
                               "tar" if untar else archive_format):
            warnings.warn("Could not extract archive.", stacklevel=2)
        return extraction_dir
    return target
