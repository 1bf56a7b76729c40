"""Errors of replica groups: which rank failed, and how (no ray import)."""

from __future__ import annotations

__all__ = ["PlacementError", "ReplicaDiedError", "ReplicaFailedError",
           "ReplicaTimeoutError", "WorkerGroupError"]


class WorkerGroupError(RuntimeError):
    """A replica failed; ``ranks`` lists the ranks concerned."""

    def __init__(self, message, ranks=(), cause=None):
        super().__init__(message)
        self.ranks, self.cause = list(ranks), cause


class ReplicaFailedError(WorkerGroupError):
    """A replica's method raised; ``cause`` is the replica's exception."""


class ReplicaDiedError(WorkerGroupError):
    """A replica's actor died (killed, crashed, node lost)."""


class ReplicaTimeoutError(WorkerGroupError, TimeoutError):
    """A replica did not answer within the deadline, or made no progress."""


class PlacementError(WorkerGroupError, ValueError):
    """The cluster cannot place the requested replicas."""
