"""The task queue of ``ParameterServerStrategy``: hands out work, nothing else
(Li et al., OSDI 2014, §3: a task scheduler assigns work to the workers,
which pull from and push to the server nodes themselves).

One chief call schedules K global batches. Global batch t is cut into
``parts`` contiguous parts; part p of every batch is queued on worker p. A
worker :meth:`PSScheduler.claim`\\ s its next task (t, p) when the bounded-delay
rule lets step t start: every part of every step <= t - tau - 1 is done
(§3.5; ``tau=None``: asynchronous, no rule). A worker whose queue is empty, or
whose own next task the rule holds back, takes instead the oldest task queued
on a worker that holds claimed tasks, when the rule lets that start (any free
worker runs a closure, as TF's ``ClusterCoordinator``): a straggler's parts
drain into the others.

This module does not import ray: a one-rank ``WorkerGroup`` hosts it, and
workers call it through their actor handles.
"""

from __future__ import annotations

import time
from collections import deque

__all__ = ["PSScheduler"]


class PSScheduler:
    """Per-call task queues, claims and results (hosted by an actor).

    Args:
        rank, world: the ``WorkerGroup`` rank (always 0 of 1).

    Attributes:
        progress: tasks done (read by the driver's stuck detection).
    """

    def __init__(self, rank=0, world=1):
        self.progress = 0
        self.call = None

    def begin(self, call, queues, steps, parts, tau):
        """Starts call ``call``: ``queues`` maps a worker rank to its list of
        ``(t, p)`` tasks; ``steps`` global batches of ``parts`` parts;
        ``tau`` the staleness (None: async)."""
        self.call, self.tau, self.parts = call, tau, parts
        self.queues = {int(r): deque(sorted(map(tuple, q))) for r, q in queues.items()}
        self.claimed = {r: {} for r in self.queues}  # rank -> {(t, p): since}
        self.done = [0] * steps
        self.completed = [0] * parts
        self.next_done = 0  # steps < next_done have every part done
        self.infos = {}
        self.trace, self.steals = [], 0
        return True

    def _gate(self, t):
        return self.tau is None or t - self.tau - 1 < self.next_done

    def _take(self, rank):
        own = self.queues[rank]
        if own and self._gate(own[0][0]):
            return own.popleft(), False
        heads = [q for q, d in self.queues.items()
                 if q != rank and d and self.claimed.get(q)]
        if heads:
            victim = min(heads, key=lambda q: self.queues[q][0])
            if self._gate(self.queues[victim][0][0]):
                return self.queues[victim].popleft(), True
        return None, False

    def claim(self, call, rank, finished=None):
        """Worker ``rank``'s next task (``finished``: ``(t, p, info)`` of a
        task it finished, reported first, as :meth:`finish`).

        Returns:
            ``("task", t, p)``, ``("wait",)``
            (tasks remain but none may start now: ask again), or
            ``("end",)`` (nothing left to claim in this call).
        """
        if finished is not None:
            self.finish(call, rank, *finished)
        if call != self.call or rank not in self.queues:
            return ("end",)
        task, stolen = self._take(rank)
        if task is None:
            if any(self.queues.values()):
                return ("wait",)
            return ("end",)
        t, p = task
        self.steals += stolen
        self.claimed[rank][task] = time.monotonic()
        self.trace.append((t, p, rank, t - min(self.completed)))
        return ("task", t, p)

    def finish(self, call, rank, t, p, info):
        """Task ``(t, p)`` is done by ``rank``: its pushes were sent."""
        if call != self.call or (t, p) in self.infos:
            return False
        self.claimed.get(rank, {}).pop((t, p), None)
        self.infos[(t, p)] = info
        self.done[t] += 1
        self.completed[p] += 1
        self.progress += 1
        while self.next_done < len(self.done) and \
                self.done[self.next_done] == self.parts:
            self.next_done += 1
        return True

    def release(self, rank):
        """Worker ``rank`` died: its claimed and queued tasks go to the others
        (computed again: at-least-once). Returns the moved tasks."""
        lost = sorted(set(self.claimed.pop(rank, {})) | set(self.queues.pop(rank, ())))
        lost = [x for x in lost if x not in self.infos]
        left = sorted(self.queues)
        for i, item in enumerate(lost):
            if left:
                self.queues[left[i % len(left)]].append(item)
        for q in left:
            self.queues[q] = deque(sorted(self.queues[q]))
        return lost

    def status(self, stale_after):
        """``(tasks done, tasks left, oldest claim older than stale_after
        seconds as (rank, t, p) or None)``."""
        now, old = time.monotonic(), None
        for r, cl in self.claimed.items():
            for (t, p), since in cl.items():
                if now - since > stale_after and (old is None or since < old[0]):
                    old = (since, r, t, p)
        left = sum(len(q) for q in self.queues.values()) + sum(
            len(c) for c in self.claimed.values())
        return len(self.infos), left, (old[1:] if old else None)

    def results(self):
        """``(infos by (t, p), clock trace rows (t, p, rank, gap), steals)``."""
        return self.infos, self.trace, self.steals
