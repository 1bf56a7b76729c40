"""Keras 3's top-level scopes: ``device``, ``SymbolicScope``, ``RematScope``
and ``remat``.

``device("gpu:0")`` runs what is built and computed inside on that device
(kerasflow has one device per process: CPU via numpy or GPU 0 via cupy).
``SymbolicScope`` marks graph building: inside it kerasflow ops only trace,
even under a recording ``GradientTape``. ``RematScope`` and ``remat`` are
Keras' gradient checkpointing (recompute activations in the backward pass to
save memory): rematerialization changes memory, never values, and kerasflow's
compiled plans keep the activations they need, so ``remat(f)`` is ``f``'s
values exactly and the scope records its mode for ``get_current_remat_mode``.
"""

from __future__ import annotations

import contextlib
import functools
import threading

from kerasflow.backend import get_device, set_device
from kerasflow.backend.graph import in_tracing, tracing

__all__ = ["RematScope", "SymbolicScope", "device", "get_current_remat_mode",
           "in_symbolic_scope", "remat"]

_local = threading.local()


@contextlib.contextmanager
def device(device_name: str):
    """Runs the block on ``device_name`` (Keras 3's ``keras.device``).

    Args:
        device_name: "cpu", "gpu" or "cuda", optionally with ":0".

    Raises:
        ValueError: another device kind or an index other than 0.
        RuntimeError: "gpu" without cupy and a CUDA device.
    """
    if not isinstance(device_name, str):
        raise TypeError(f"device_name must be a string such as 'cpu:0'. Received: "
                        f"{device_name!r}.")
    kind, _, index = device_name.lower().partition(":")
    kind = "gpu" if kind == "cuda" else kind
    if kind not in ("cpu", "gpu") or index not in ("", "0"):
        raise ValueError(f"kerasflow runs on 'cpu' or 'gpu' (device 0 of this "
                         f"process). Received: device_name={device_name!r}.")
    previous = get_device()
    set_device(kind)
    try:
        yield
    finally:
        set_device(previous)


class SymbolicScope:
    """Inside it, kerasflow ops build graph only (Keras 3's
    ``keras.SymbolicScope``); ``in_symbolic_scope()`` reports it."""

    def __enter__(self):
        self._tracing = tracing()
        self._tracing.__enter__()
        return self

    def __exit__(self, *exc):
        return self._tracing.__exit__(*exc)


def in_symbolic_scope() -> bool:
    """Whether a ``SymbolicScope`` (or another trace) is active."""
    return in_tracing()


class RematScope:
    """Keras 3's rematerialization scope; kerasflow records it (values are the
    same with or without rematerialization).

    Args:
        mode: "full", "activations", "larger_than", "list_of_layers" or None.
        output_size_threshold: for "larger_than" (elements).
        layer_names: for "list_of_layers".

    Raises:
        ValueError: an unknown mode.
    """

    _MODES = (None, "full", "activations", "larger_than", "list_of_layers")

    def __init__(self, mode="full", output_size_threshold=1024, layer_names=None):
        if mode not in self._MODES:
            raise ValueError(f"Invalid mode '{mode}'. Supported modes are: "
                             f"{self._MODES}")
        self.mode, self.output_size_threshold = mode, output_size_threshold
        self.layer_names = list(layer_names or [])

    def __enter__(self):
        stack = getattr(_local, "remat", None)
        if stack is None:
            stack = _local.remat = []
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _local.remat.pop()


def get_current_remat_mode():
    """The innermost ``RematScope``, or None."""
    stack = getattr(_local, "remat", None)
    return stack[-1] if stack else None


def remat(f):
    """``f`` marked for rematerialization (Keras 3's ``keras.remat``): the
    same values; kerasflow keeps activations rather than recomputing them."""

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        return f(*args, **kwargs)

    return wrapped
