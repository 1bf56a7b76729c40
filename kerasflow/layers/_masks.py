"""Keras masks (``Embedding(mask_zero=True)``, ``Masking``) carried beside tensors.

A mask is a boolean tensor (batch, steps) telling which time steps are real.
Graph tensors have fixed slots, so the mask of a layer's output lives in a weak
table keyed by the tensor; layers that consume masks (recurrent layers,
GlobalAveragePooling1D, TimeDistributed, Bidirectional) read it with
``get_mask`` when no ``mask=`` argument is given, and layers that keep the time
axis pass it on.
"""

from __future__ import annotations

import weakref

__all__ = ["get_mask", "set_mask"]

_MASKS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def set_mask(tensor, mask):
    """Attaches ``mask`` (or None: removes it) to symbolic ``tensor``."""
    try:
        if mask is None:
            _MASKS.pop(tensor, None)
        else:
            _MASKS[tensor] = mask
    except TypeError:  # arrays (eager results) carry no mask
        pass
    return tensor


def get_mask(tensor):
    """The mask attached to ``tensor``, or None."""
    try:
        return _MASKS.get(tensor)
    except TypeError:
        return None
