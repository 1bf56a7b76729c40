"""Program order for Variable reads in a traced step (``tf.function``'s
automatic control dependencies, for the one case a custom step needs).

A compiled plan runs assignments after everything they do not feed. Inside
``sequential_reads()``, once ``rebind(var, update)`` notes that ``update``
(an optimizer's update node, which evaluates to the new value) assigned
``var``, every op built later reads ``update`` instead of ``var``: code after
``optimizer.apply_gradients`` (a GAN's generator step reading the
discriminator) sees the updated weights and is ordered after the update, as
in TensorFlow.
"""

from __future__ import annotations

import contextlib
import threading

__all__ = ["latest", "rebind", "sequential_reads"]

_state = threading.local()


@contextlib.contextmanager
def sequential_reads():
    """Reads of rebound Variables inside the block see their updates."""
    stack = _state.__dict__.setdefault("stack", [])
    stack.append({})
    try:
        yield
    finally:
        stack.pop()


def rebind(var, tensor) -> None:
    """Later reads of ``var`` (inside ``sequential_reads``) use ``tensor``."""
    stack = getattr(_state, "stack", None)
    if stack:
        stack[-1][id(var)] = (var, tensor)


def latest(inputs, stateful: bool) -> list:
    """``inputs`` with rebound Variables replaced by their last update (a
    stateful op's own target, its first input, is kept)."""
    stack = getattr(_state, "stack", None)
    if not stack or not stack[-1]:
        return inputs
    table = stack[-1]
    out = list(inputs)
    for i, x in enumerate(out):
        if (i or not stateful) and id(x) in table and table[id(x)][0] is x:
            out[i] = table[id(x)][1]
    return out
