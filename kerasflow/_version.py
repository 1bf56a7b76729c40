"""kerasflow's version: ``__version__`` and Keras 3's ``version()``.

A module of its own (re-exported by ``kerasflow``) so that code below the root,
such as the model file writer, reads it without importing the root package.
"""

from __future__ import annotations

__all__ = ["__version__", "version"]

__version__ = "0.1.0"


def version() -> str:
    """kerasflow's version string (Keras 3's ``keras.version()``)."""
    return __version__
