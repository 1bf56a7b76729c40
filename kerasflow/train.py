"""``kf.train``: TF1's global step helpers, and TF 2's object-based
``Checkpoint`` / ``CheckpointManager`` (``kerasflow/train_checkpoint.py``).

There is no global default graph in kerasflow, so "the" global step belongs to
the innermost ``global_step_scope`` (an ``Estimator`` opens one around each
``model_fn`` call); outside any scope a process-wide one is used.
"""

from __future__ import annotations

import contextlib
import threading

from kerasflow import backend as K
from kerasflow.train_checkpoint import Checkpoint, CheckpointManager

__all__ = [
    "Checkpoint",
    "CheckpointManager",
    "create_global_step",
    "get_global_step",
    "get_or_create_global_step",
    "global_step_scope",
]

_local = threading.local()
GLOBAL_STEP_NAME = "global_step"


def _stack():
    if not hasattr(_local, "stack"):
        _local.stack = [{"step": None}]
    return _local.stack


@contextlib.contextmanager
def global_step_scope(variable=None):
    """A context with its own global step (``variable``, or created on demand).

    Yields:
        A dict whose "step" entry holds the scope's global step Variable (or
        None until ``get_or_create_global_step`` creates it).
    """
    entry = {"step": variable}
    _stack().append(entry)
    try:
        yield entry
    finally:
        _stack().pop()


def create_global_step():
    """Creates the global step of the current scope: an int64 scalar Variable.

    Raises:
        ValueError: the scope already has one.
    """
    entry = _stack()[-1]
    if entry["step"] is not None:
        raise ValueError("A global step already exists in this scope: "
                         f"{entry['step']!r}. Use get_or_create_global_step().")
    entry["step"] = K.Variable(0, trainable=False, dtype="int64",
                               name=GLOBAL_STEP_NAME)
    return entry["step"]


def get_global_step():
    """The current scope's global step Variable, or None (TF1's name)."""
    return _stack()[-1]["step"]


def get_or_create_global_step():
    """The current scope's global step, created (value 0, int64) if needed.

    Returns:
        A non-trainable int64 scalar ``Variable`` named "global_step". Pass it to
        ``optimizer.minimize(loss, global_step=...)`` to count training steps.

    Example:
        >>> step = get_or_create_global_step()
        >>> train_op = opt.minimize(loss, global_step=step)
    """
    step = get_global_step()
    return create_global_step() if step is None else step
