"""The collective interface every transport implements, and what they share.

:class:`Collective` is one rank's handle on a group that reduces flat
buffers; the shared-memory (:mod:`kerasflow.distribute.collective.shm`), TCP
ring (:mod:`kerasflow.distribute.collective.tcp`) and NCCL
(:mod:`kerasflow.distribute.collective.nccl`) transports subclass it and use
the checks and reductions below; :mod:`kerasflow.distribute.collective.plan`
composes them. The interface follows ChainerMN's communicators: one
allreduce of one flat buffer, swappable implementations. No ray, no sockets.
"""

from __future__ import annotations

import numpy as np

__all__ = ["REDUCE_OPS", "Collective", "CollectiveError", "CollectivePeerError",
           "CollectiveTimeoutError", "LocalCollective", "check_buffer", "check_op",
           "finish_op", "reduce_into"]

REDUCE_OPS = ("SUM", "MEAN", "MAX", "MIN")


class CollectiveError(RuntimeError):
    """A collective operation failed (peer gone, protocol mismatch)."""


class CollectiveTimeoutError(CollectiveError, TimeoutError):
    """A collective wait passed its deadline; the message names the missing
    rank(s), the step and the stage that was awaited."""


class CollectivePeerError(CollectiveError, ConnectionError):
    """A peer closed its connection or aborted the group."""


def check_op(op) -> str:
    """Normalizes a reduce op (``"SUM"``, ``ReduceOp.SUM``...) to its name."""
    name = getattr(op, "value", op)
    if not isinstance(name, str) or name.upper() not in REDUCE_OPS:
        raise ValueError(f"allreduce expects op in {REDUCE_OPS}. Received: op={op!r}")
    return name.upper()


def check_buffer(buf, size, dtype, who):
    """Raises unless ``buf`` is a contiguous 1-D array of ``size`` ``dtype``."""
    if not isinstance(buf, np.ndarray):
        raise TypeError(f"{who} expects a numpy.ndarray. "
                        f"Received: {type(buf).__name__}")
    if buf.ndim != 1 or buf.size != size or buf.dtype != dtype:
        raise ValueError(
            f"{who} expects a 1-D buffer of {size} {np.dtype(dtype).name} values. "
            f"Received: shape={buf.shape}, dtype={buf.dtype}")
    if not buf.flags.c_contiguous or not buf.flags.writeable:
        raise ValueError(f"{who} expects a contiguous writeable buffer.")


def finish_op(buf, op, world_size):
    """Turns a SUM into a MEAN in place (MAX/MIN were reduced directly)."""
    if op == "MEAN":
        np.divide(buf, world_size, out=buf, casting="unsafe")
    return buf


def reduce_into(out, parts, op):
    """Reduces ``parts`` into ``out`` in list order (the fixed order that makes
    results reproducible). SUM and MEAN both sum here."""
    if len(parts) == 1:
        np.copyto(out, parts[0])
        return out
    fn = {"MAX": np.maximum, "MIN": np.minimum}.get(op, np.add)
    fn(parts[0], parts[1], out=out)
    for p in parts[2:]:
        fn(out, p, out=out)
    return out


class Collective:
    """One rank's handle on a group that reduces flat buffers.

    Attributes:
        rank: this replica's rank, 0..world_size-1.
        world_size: number of ranks in the group.
        on_device: True when the transport reduces device (cupy) buffers in
            place, so a GPU replica keeps its buffer on the device.
    """

    rank = 0
    world_size = 1
    on_device = False

    def allreduce(self, buf, op="SUM", step=None):
        """Reduces ``buf`` over all ranks, in place.

        Args:
            buf: contiguous 1-D array of the group's size and dtype.
            op: ``"SUM"``, ``"MEAN"``, ``"MAX"`` or ``"MIN"`` (or a ``ReduceOp``).
            step: the caller's training step, used in error messages only.

        Returns:
            ``buf``, holding the reduction (identical on every rank).

        Raises:
            CollectiveTimeoutError: a peer did not arrive within the deadline.
            CollectivePeerError: a peer disconnected or aborted.
        """
        raise NotImplementedError

    def broadcast(self, buf, root=0, step=None):
        """Copies ``root``'s ``buf`` into every rank's ``buf``, in place."""
        raise NotImplementedError

    def close(self):
        """Releases sockets and shared memory; idempotent."""


class LocalCollective(Collective):
    """World size 1: every operation is the identity."""

    def __init__(self, size=None, dtype=None):
        self.size, self.dtype = size, dtype

    def allreduce(self, buf, op="SUM", step=None):
        check_op(op)
        return buf

    def broadcast(self, buf, root=0, step=None):
        return buf
