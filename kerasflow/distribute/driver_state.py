"""Weights that live on replicas: the driver pulls them only when asked.

A strategy whose replicas keep training state between driver calls (the
weights and optimizer slots stay on the Ray actors, as Horovod's and PyTorch
DDP's workers keep theirs) registers itself here with :func:`mark_behind`
after a call; code that is about to read the driver's copy -- a callback
hook, evaluation, saving -- calls :func:`sync_driver_state`, which has every
registered strategy pull the replicas' values into the driver's variables
(its ``sync_to_driver()``) and forget the mark.

No imports of the framework here: callbacks and strategies both use it.
"""

from __future__ import annotations

import weakref

__all__ = ["mark_behind", "is_behind", "sync_driver_state"]

_BEHIND = weakref.WeakSet()


def mark_behind(owner) -> None:
    """Records that ``owner`` (an object with ``sync_to_driver()``) holds
    newer values than the driver's variables."""
    _BEHIND.add(owner)


def is_behind(owner) -> bool:
    """True while ``owner`` is marked (see :func:`mark_behind`)."""
    return owner in _BEHIND


def sync_driver_state() -> None:
    """Has every marked owner update the driver's variables, then unmarks it.

    Raises:
        whatever an owner's ``sync_to_driver()`` raises (the owner stays
        marked, so a later call tries again).
    """
    for owner in list(_BEHIND):
        owner.sync_to_driver()
        _BEHIND.discard(owner)
