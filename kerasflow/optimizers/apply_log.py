"""Which ``apply_gradients`` calls a traced ``train_step`` made.

A custom ``train_step`` applies its gradients itself; to run it under a
multi-replica strategy the step is split into compute -> all-reduce -> apply,
which needs to know which gradients went to which optimizer. While
``recording_applies()`` is active, each symbolic ``apply_gradients`` adds an
``AppliedGradients`` record.
"""

from __future__ import annotations

import contextlib
import threading
from typing import NamedTuple

from kerasflow.backend.sequencing import rebind as sequential_reads_rebind

__all__ = ["AppliedGradients", "log_apply", "recording_applies"]

_log = threading.local()


class AppliedGradients(NamedTuple):
    """One symbolic ``apply_gradients`` call: the optimizer, its
    ``(gradient, Variable)`` pairs (None gradients dropped) and the update
    tensors it built."""

    optimizer: object
    pairs: list
    updates: list


@contextlib.contextmanager
def recording_applies():
    """Collects the ``AppliedGradients`` of the calls made inside the block."""
    stack = _log.__dict__.setdefault("stack", [])
    found: list = []
    stack.append(found)
    try:
        yield found
    finally:
        stack.pop()


def log_apply(optimizer, pairs, updates) -> None:
    """Notes one symbolic ``apply_gradients`` call (when recording); later
    reads of its variables in the trace see the updates (``sequencing``)."""
    pairs = [(g, v) for g, v in pairs if g is not None]
    for (_, var), update in zip(pairs, updates):  # one update per variable first
        sequential_reads_rebind(var, update)
    stack = getattr(_log, "stack", None)
    if stack:
        stack[-1].append(AppliedGradients(optimizer, pairs, list(updates)))
