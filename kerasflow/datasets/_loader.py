"""Shared machinery of the datasets: their files on disk and by download.

Finds a dataset's files (``path``, ``$KERASFLOW_DATA_DIR``, the cache
``~/.kerasflow/datasets/``), downloads the missing ones, and verifies local
and downloaded files alike against their SHA-256; also reads the IDX format
of MNIST and Fashion-MNIST. Every problem with a file is reported as a
``ValueError`` naming the file, the expected value and the received value.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
import urllib.parse
import urllib.request
import warnings
import zlib
from pathlib import Path
from typing import Mapping

import numpy as np

IMAGES_MAGIC = 2051
LABELS_MAGIC = 2049

TRAIN_IMAGES = "train-images-idx3-ubyte.gz"
TRAIN_LABELS = "train-labels-idx1-ubyte.gz"
TEST_IMAGES = "t10k-images-idx3-ubyte.gz"
TEST_LABELS = "t10k-labels-idx1-ubyte.gz"
FILES = (TRAIN_IMAGES, TRAIN_LABELS, TEST_IMAGES, TEST_LABELS)

DATA_DIR_ENV = "KERASFLOW_DATA_DIR"
ORIGIN_ENV = "KERASFLOW_DATASETS_ORIGIN"
DOWNLOAD_TIMEOUT = 30.0  # seconds, per connection attempt / read
_CHUNK = 1 << 20
_SCHEMES = ("http", "https", "file")


class DownloadError(OSError):
    """A dataset is not on disk and could not be downloaded."""


def _read_gz(path: Path) -> bytes:
    try:
        with gzip.open(path, "rb") as f:
            return f.read()
    except EOFError as e:
        raise ValueError(
            f"{path}: truncated gzip file (the compressed stream ended early: {e}); "
            "delete it and download it again"
        ) from None
    except (gzip.BadGzipFile, zlib.error) as e:
        raise ValueError(
            f"{path}: not a valid gzip file ({e}); delete it and download it again"
        ) from None


def _parse_idx(data: bytes, path: Path, magic: int, ndim: int) -> np.ndarray:
    header_len = 4 * (1 + ndim)
    what = "images" if magic == IMAGES_MAGIC else "labels"
    if len(data) < header_len:
        raise ValueError(
            f"{path}: IDX {what} header too short: expected {header_len} bytes, "
            f"received {len(data)}"
        )
    header = np.frombuffer(data, dtype=">u4", count=1 + ndim)
    got_magic = int(header[0])
    if got_magic != magic:
        raise ValueError(
            f"{path}: bad IDX magic number for {what}: expected {magic}, "
            f"received {got_magic}"
        )
    dims = tuple(int(d) for d in header[1:])
    expected = int(np.prod(dims, dtype=np.int64))
    received = len(data) - header_len
    if received != expected:
        raise ValueError(
            f"{path}: IDX {what} data length does not match the header "
            f"dimensions {dims}: expected {expected} bytes, received {received}"
        )
    return np.frombuffer(data, dtype=np.uint8, offset=header_len).reshape(dims).copy()


_KINDS = {"images": (IMAGES_MAGIC, 3), "labels": (LABELS_MAGIC, 1)}


def read_idx(path: str | os.PathLike[str], kind: str) -> np.ndarray:
    """Reads a gzip-compressed IDX file of ``kind`` "images" (IDX3) or "labels".

    Args:
        path: Path of a ``*-images-idx3-ubyte.gz`` or ``*-labels-idx1-ubyte.gz``
            file.
        kind: ``"images"`` or ``"labels"``.

    Returns:
        A writable ``uint8`` array of shape ``(n, rows, cols)`` (images) or
        ``(n,)`` (labels).

    Raises:
        FileNotFoundError: If the file does not exist.
        ValueError: If the file is not valid gzip, is truncated, has a magic
            number other than 2051 (images) or 2049 (labels), or its length
            disagrees with its header.
    """
    p = Path(path)
    return _parse_idx(_read_gz(p), p, *_KINDS[kind])


def load_split(
    directory: Path, images: str, labels: str, n: int, num_classes: int = 10
) -> tuple[np.ndarray, np.ndarray]:
    """Loads one split and checks it has ``n`` 28x28 images with valid labels."""
    x = read_idx(directory / images, "images")
    y = read_idx(directory / labels, "labels")
    if x.shape != (n, 28, 28):
        raise ValueError(
            f"{directory / images}: expected images of shape {(n, 28, 28)}, "
            f"received {x.shape}"
        )
    if y.shape != (n,):
        raise ValueError(
            f"{directory / labels}: expected {n} labels, received {y.shape[0]}"
        )
    if y.size and int(y.max()) >= num_classes:
        raise ValueError(
            f"{directory / labels}: expected labels in [0, {num_classes - 1}], "
            f"received a label {int(y.max())}"
        )
    return x, y


def default_cache_dir(name: str) -> Path:
    """Returns ``~/.kerasflow/datasets/<name>``."""
    return Path(os.path.expanduser("~")) / ".kerasflow" / "datasets" / name


def candidate_dirs(
    name: str,
    path: str | os.PathLike[str] | None,
    cache_dir: str | os.PathLike[str] | None,
) -> list[Path]:
    """Directories searched, in order: ``path``, ``$KERASFLOW_DATA_DIR/<name>``,
    then the cache directory (``~/.kerasflow/datasets/<name>`` by default)."""
    dirs = []
    if path is not None:
        dirs.append(Path(path).expanduser())
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        dirs.append(Path(env).expanduser() / name)
    dirs.append(Path(cache_dir).expanduser() if cache_dir else default_cache_dir(name))
    return dirs


def resolve_origin(name: str, origin: str | None, base_url: str) -> str:
    """Picks the download base URL: ``origin``, else ``$KERASFLOW_DATASETS_ORIGIN``
    + ``<name>/``, else ``base_url``. Always returned with a trailing slash."""
    if origin is None:
        env = os.environ.get(ORIGIN_ENV)
        origin = env.rstrip("/") + "/" + name + "/" if env else base_url
    scheme = urllib.parse.urlsplit(origin).scheme
    if scheme not in _SCHEMES:
        raise ValueError(
            f"Invalid dataset origin {origin!r}: expected a URL with scheme in "
            f"{_SCHEMES}, received scheme {scheme!r}"
        )
    return origin if origin.endswith("/") else origin + "/"


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Returns the hex SHA-256 digest of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def download_file(url: str, dest: Path, sha256: str) -> None:
    """Downloads ``url`` to ``dest``, atomically, only if its SHA-256 matches.

    The data goes to a temporary file next to ``dest``, which is renamed onto
    ``dest`` only once its hash equals ``sha256``; otherwise it is deleted.

    Raises:
        ValueError: If the downloaded file's SHA-256 differs from ``sha256``.
        urllib.error.URLError, OSError: On network or file-system errors.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part",
                                    dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        h = hashlib.sha256()
        # A fresh opener per call picks up the current proxy environment.
        opener = urllib.request.build_opener()
        with os.fdopen(fd, "wb") as out, opener.open(
            url, timeout=DOWNLOAD_TIMEOUT
        ) as resp:
            for chunk in iter(lambda: resp.read(_CHUNK), b""):
                h.update(chunk)
                out.write(chunk)
        received = h.hexdigest()
        if received != sha256:
            raise ValueError(
                f"SHA-256 mismatch for {dest.name} downloaded from {url}: "
                f"expected {sha256}, received {received}; the file was discarded. "
                f"Download it again (call load_data() again), or check the origin "
                f"serves the original file."
            )
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


_VERIFIED: dict = {}  # (path, size, mtime_ns, inode) -> digest, per process


def verify_local_files(directory: Path, sha256: Mapping[str, str]) -> None:
    """Checks the SHA-256 of each file named in ``sha256`` (name -> digest).

    A local copy is trusted no more than a download (as Keras'
    ``get_file(file_hash=...)`` checks cached files): an edited file, even a
    valid gzip with altered labels, is refused. Digests are remembered per
    process for a file whose size, mtime and inode are unchanged.

    Raises:
        ValueError: a digest differs, naming the file and both digests.
    """
    for fname in sha256:
        path = directory / fname
        st = path.stat()
        key = (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
        digest = _VERIFIED.get(key) or sha256_file(path)
        if digest != sha256[fname]:
            raise ValueError(
                f"{path}: SHA-256 mismatch: expected {sha256[fname]}, received "
                f"{digest}; the file was altered or is not the original "
                f"distribution file. Delete it and download it again (load_data() "
                f"downloads a missing file), or replace it with the original."
            )
        _VERIFIED[key] = digest


def _all_present(directory: Path, files) -> bool:
    return all((directory / f).is_file() for f in files)


def locate_or_download(
    name: str,
    title: str,
    sha256: Mapping[str, str],
    base_url: str,
    path: str | os.PathLike[str] | None = None,
    origin: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Path:
    """Returns a directory holding a dataset's files, downloading them if needed.

    Searches :func:`candidate_dirs` for a directory holding every file named
    in ``sha256`` (file name -> hex SHA-256); if none does, downloads the
    missing files from ``base_url`` (or ``origin``) into the cache directory
    (the last candidate).

    Raises:
        ValueError: On a SHA-256 mismatch of a local or downloaded file, or a
            bad origin.
        DownloadError: If the files are absent and cannot be downloaded.
    """
    files = tuple(sha256)
    dirs = candidate_dirs(name, path, cache_dir)
    if path is not None and not _all_present(dirs[0], files):
        missing = [f for f in files if not (dirs[0] / f).is_file()]
        warnings.warn(
            f"{title}: path={str(path)!r} lacks {', '.join(missing)}; "
            "searching the other locations",
            stacklevel=3,
        )
    for d in dirs:
        if _all_present(d, files):
            verify_local_files(d, sha256)
            return d
    target = dirs[-1]
    base = resolve_origin(name, origin, base_url)
    for fname in files:
        dest = target / fname
        if dest.is_file():
            continue
        url = base + fname
        try:
            download_file(url, dest, sha256[fname])
        except OSError as e:  # URLError, timeouts, refused connections
            reason = getattr(e, "reason", None) or e
            searched = "\n".join(f"  - {d}" for d in dirs)
            env_note = (
                f"(${DATA_DIR_ENV} is set)"
                if os.environ.get(DATA_DIR_ENV)
                else f"(${DATA_DIR_ENV} is not set)"
            )
            raise DownloadError(
                f"{title} is not available offline and downloading {url} failed: "
                f"{reason}.\nSearched these directories for "
                f"{', '.join(files)}:\n{searched}\n"
                f"Put the files in one of them (e.g. {target}), or pass "
                f"load_data(path=DIR), or set ${DATA_DIR_ENV} to a directory "
                f"with a '{name}/' subdirectory holding them {env_note}."
            ) from e
    return target


#: The docstring of every ``load_data`` of an IDX dataset (``str.format`` fields:
#: summary, content, module, name).
LOAD_DATA_DOC = """{summary}

    60,000 training and 10,000 test 28x28 grayscale images of {content},
    returned as in Keras' ``keras.datasets.{module}.load_data``.

    The four IDX files (``train-images-idx3-ubyte.gz``,
    ``train-labels-idx1-ubyte.gz``, ``t10k-images-idx3-ubyte.gz``,
    ``t10k-labels-idx1-ubyte.gz``) are looked for, in order, in:

    1. ``path``, if given;
    2. ``$KERASFLOW_DATA_DIR/{name}/``, if the variable is set;
    3. ``cache_dir``, by default ``~/.kerasflow/datasets/{name}/``.

    Missing files are downloaded into the last of these and kept only if
    their SHA-256 matches the published value.

    Args:
        path: Directory holding the four files. If it lacks some of them a
            warning is issued and the other locations are searched.
        origin: Base URL to download the files from. Defaults to
            ``$KERASFLOW_DATASETS_ORIGIN`` + ``{name}/`` when that variable is
            set, else :data:`BASE_URL`.
        cache_dir: Download/cache directory, replacing
            ``~/.kerasflow/datasets/{name}/``.

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: ``uint8`` arrays of shapes
        ``(60000, 28, 28)``, ``(60000,)``, ``(10000, 28, 28)``, ``(10000,)``.
        Pixels are in [0, 255] and labels in [0, 9].

    Raises:
        ValueError: If a file is corrupt or truncated (bad gzip data, bad IDX
            magic number, length or shape), or a downloaded file's SHA-256
            does not match; the message names the file and the expected and
            received values.
        kerasflow.datasets._loader.DownloadError: An ``OSError`` raised when
            the files are not on disk and cannot be downloaded; the message
            lists the directories searched and the environment variable.
    """


def load_idx_dataset(name: str, title: str, sha256: Mapping[str, str],
                     base_url: str, path=None, origin=None, cache_dir=None):
    """Finds or downloads, then loads, an IDX dataset (see ``LOAD_DATA_DOC``)."""
    directory = locate_or_download(name, title, sha256, base_url, path=path,
                                   origin=origin, cache_dir=cache_dir)
    return (load_split(directory, TRAIN_IMAGES, TRAIN_LABELS, 60000),
            load_split(directory, TEST_IMAGES, TEST_LABELS, 10000))


def pickle_only_error(module: str, fname: str) -> NotImplementedError:
    """The error of a Keras dataset whose only distribution is pickled."""
    return NotImplementedError(
        f"kerasflow.datasets.{module} is not provided: Keras distributes it as "
        f"{fname}, an .npz of object arrays that only pickle can read, and "
        "unpickling a downloaded file can run arbitrary code, so kerasflow never "
        "does. Load the data with Keras or another trusted tool, save it as "
        "plain arrays, and read those."
    )
