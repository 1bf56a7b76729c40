"""Imports of optional dependencies, on first use (``import kerasflow`` imports
none of them).

``import_tensorboardx`` is the one place tensorboardX is imported (by
``kerasflow.summary`` and ``kerasflow.utils.graph_def`` for their protobufs),
and without torch: tensorboardX's package ``__init__`` imports its ``writer``,
which tries ``import torch`` only to accept torch tensors; with torch installed
that costs seconds (and a GB of address space) for writing numpy scalars. While
torch is not loaded yet, tensorboardX is imported with ``torch`` marked absent
(its ``ImportError`` branch is the supported no-torch path), then the mark is
lifted, so a later ``import torch`` by the user works as usual.
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["import_tensorboardx", "import_optional"]


def import_tensorboardx(submodule: str = ""):
    """``tensorboardX`` (or ``tensorboardX.<submodule>``), without torch.

    Raises:
        ImportError: tensorboardX is not installed, saying how to install it.
    """
    name = "tensorboardX" + (f".{submodule}" if submodule else "")
    block = "torch" not in sys.modules and "tensorboardX" not in sys.modules
    if block:
        sys.modules["torch"] = None  # makes `import torch` raise ImportError
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise ImportError("TensorBoard event files need tensorboardX: pip install "
                          "'kerasflow[tensorboard]'.") from e
    finally:
        if block and sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]


def import_optional(name: str, purpose: str, extra: str):
    """The optional package ``name`` (e.g. "onnx"), imported on first use.

    Raises:
        ImportError: it is not installed, naming ``purpose`` and the extra that
            installs it.
    """
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise ImportError(f"{purpose} needs the '{name}' package: pip install "
                          f"'kerasflow[{extra}]'.") from e
