"""TensorFlow's run-time errors (``tf.errors``): ``OpError`` and the
subclasses kerasflow raises.

They sit at the ground of the package so every layer can raise them: the
distributed iterator of ``kerasflow/distribute/graph_loop.py`` raises
``OutOfRangeError`` at the end of its data, as TF's iterators do, and
``compat.v1`` (``tf.errors``) re-exports them. Each also subclasses the
Python exception a caller would catch without knowing TF (``ValueError``,
``KeyError``, ``IndexError``).
"""

from __future__ import annotations

__all__ = ["InvalidArgumentError", "NotFoundError", "OpError", "OutOfRangeError"]


class OpError(Exception):
    """Base of TF1's run-time errors (``tf.errors.OpError``)."""


class InvalidArgumentError(OpError, ValueError):
    """An op received an argument it cannot use (e.g. an absent device)."""


class NotFoundError(OpError, KeyError):
    """Something looked up (a checkpoint key, a file) does not exist."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


class OutOfRangeError(OpError, IndexError):
    """An input is exhausted."""
