"""Reads the binary version of CIFAR-10/100 from its ``.tar.gz`` with numpy.

The binary archives (``cifar-10-binary.tar.gz``, ``cifar-100-binary.tar.gz``)
hold fixed-size records: label bytes, then 3072 pixel bytes (1024 red, 1024
green, 1024 blue, each 32x32 row-major); see
https://www.cs.toronto.edu/~kriz/cifar.html. Members are read in memory, never
extracted, and nothing is unpickled (the "python version" archives would be).
"""

from __future__ import annotations

import tarfile
import zlib
from pathlib import Path
from typing import Sequence

import numpy as np

from kerasflow.backend.keras_ops import image_data_format

PIXELS = 3 * 32 * 32


def read_records(
    archive: Path, members: Sequence[str], label_bytes: int
) -> tuple[np.ndarray, np.ndarray]:
    """Reads and concatenates ``members`` of ``archive``.

    Returns:
        ``(images, labels)``: ``uint8`` arrays of shapes ``(n, 32, 32, 3)``
        (``(n, 3, 32, 32)`` when ``image_data_format()`` is
        ``'channels_first'``, as Keras) and ``(n, label_bytes)``.

    Raises:
        ValueError: The archive is not a valid ``.tar.gz``, lacks a member, or
            a member is not a whole number of records.
    """
    record = label_bytes + PIXELS
    chunks = []
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for name in members:
                try:
                    f = tar.extractfile(name)
                except KeyError:
                    f = None
                if f is None:
                    raise ValueError(
                        f"{archive}: expected a member {name!r}, received an "
                        "archive without it; delete the file and download it again"
                    )
                data = f.read()
                if len(data) == 0 or len(data) % record:
                    raise ValueError(
                        f"{archive}:{name}: expected a whole number of "
                        f"{record}-byte records, received {len(data)} bytes; "
                        "delete the file and download it again"
                    )
                chunks.append(np.frombuffer(data, np.uint8).reshape(-1, record))
    except (tarfile.TarError, EOFError, OSError, zlib.error) as e:
        raise ValueError(
            f"{archive}: not a valid .tar.gz archive ({e}); delete the file and "
            "download it again"
        ) from None
    rows = np.concatenate(chunks)
    images = rows[:, label_bytes:].reshape(-1, 3, 32, 32)
    if image_data_format() == "channels_last":
        images = images.transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), rows[:, :label_bytes].copy()
