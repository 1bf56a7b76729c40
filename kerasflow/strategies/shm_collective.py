"""Shared-memory allreduce for replicas on one node.

One ``multiprocessing.shared_memory`` segment per group holds a control
block, one rank-owned slot per rank (``slots[world, n]``), a double-buffered
result (``result[2, n]``) and two sequence counters per rank. An allreduce:

1. the rank copies its buffer into its slot (skipped when the caller already
   wrote into ``slot``) and publishes ``arrive[rank] = seq``;
2. once every rank arrived, each rank reduces its own contiguous slice of the
   n elements across all slots, in rank order, into ``result[seq % 2]``
   (reduce-scatter by slices), and publishes ``done[rank] = seq``;
3. once every rank is done, each copies ``result[seq % 2]`` out.

Double buffering lets a fast rank start step ``seq + 1`` while a slow one
still reads step ``seq``'s result. Waits spin with ``sched_yield``, then sleep
20 microseconds, against a deadline; a timeout names the missing ranks, the
step and the stage. Measured 2.2-5x faster than gloo at 1-16 MB on a 2-core
VM (../shared/notes/DISTRIBUTED.md, design ``d2_shm_spin``).

Ordering: counters are written after the data with plain aligned 8-byte
stores, which x86-64's total store order makes visible in program order.
"""

from __future__ import annotations

import os
import time
from multiprocessing import resource_tracker, shared_memory

import numpy as np

from kerasflow.strategies.collective import (
    Collective, CollectivePeerError, CollectiveTimeoutError, check_buffer, check_op,
    finish_op, reduce_into)

__all__ = ["ShmAllreduce"]

_MAGIC = 0x6B66_7368_6D31  # "kfshm1"
_ALIGN = 4096
_CTRL = 16          # int64 words of control block
_LINE = 8           # int64 words per counter (one cache line each: no false sharing)
_SPINS = 200        # sched_yield spins before sleeping
_CREATED_HERE = set()  # segments this process created (it alone unregisters)


def _round_up(n, a=_ALIGN):
    return (n + a - 1) // a * a


class ShmAllreduce(Collective):
    """Allreduce through one shared-memory segment (ranks on one node).

    Local rank 0 creates and pre-touches the segment (first-touch page faults
    cost about 110 ms per 64 MB on the measured VM); the others attach by name,
    retrying until ``timeout``.

    Args:
        name: segment name, unique per group (e.g. ``"kf-<uuid>-0"``).
        rank: this rank's index within the node group, 0..world_size-1.
        world_size: ranks in the group (>= 1).
        size: elements in the flat buffer.
        dtype: ``float32`` or ``float64`` (any numpy numeric dtype works).
        timeout: deadline of every wait, in seconds.
        global_rank: the rank named in error messages (default ``rank``).

    Raises:
        CollectiveTimeoutError: the segment did not appear within ``timeout``.
        ValueError: an existing segment has another layout.
    """

    def __init__(self, name, rank, world_size, size, dtype="float32", timeout=300.0,
                 global_rank=None):
        if not 0 <= rank < world_size:
            raise ValueError(f"ShmAllreduce expects 0 <= rank < world_size. "
                             f"Received: rank={rank}, world_size={world_size}")
        self.name, self.rank, self.world_size = name, rank, world_size
        self.size, self.dtype = int(size), np.dtype(dtype)
        self.timeout = float(timeout)
        self.global_rank = rank if global_rank is None else global_rank
        self._seq = 0
        n, item = self.size, self.dtype.itemsize
        ctr_bytes = _round_up((_CTRL + 2 * world_size * _LINE) * 8)
        slot_bytes = _round_up(n * item)
        self._nbytes = ctr_bytes + (world_size + 2) * slot_bytes
        self._shm = self._open(rank == 0)
        buf = self._shm.buf
        ctr = np.ndarray((_CTRL + 2 * world_size * _LINE,), np.int64, buf)
        self._ctrl = ctr[:_CTRL]
        counters = ctr[_CTRL:].reshape(2, world_size, _LINE)
        self._arrive, self._done = counters[0, :, 0], counters[1, :, 0]
        self._slots = [np.ndarray((n,), self.dtype, buf, ctr_bytes + i * slot_bytes)
                       for i in range(world_size)]
        base = ctr_bytes + world_size * slot_bytes
        self._result = [np.ndarray((n,), self.dtype, buf, base + i * slot_bytes)
                        for i in range(2)]
        bounds = [n * i // world_size for i in range(world_size + 1)]
        self._slices = [slice(bounds[i], bounds[i + 1]) for i in range(world_size)]
        if rank == 0:
            # Every page is touched once here, so no step pays the fault.
            np.frombuffer(buf, np.uint8)[ctr_bytes:].fill(0)
            self._ctrl[1:4] = (world_size, n, item)
            self._ctrl[0] = _MAGIC
        else:
            self._wait_header()
            # Map the pages into this process now (minor faults), not in step 1.
            self._slots[rank].fill(0)
            for res in self._result:
                res[self._slices[rank]] = 0
            int(np.frombuffer(buf, np.uint8)[::_ALIGN].sum())

    @property
    def slot(self):
        """This rank's slot: a caller that writes its gradients here saves
        one copy in :meth:`allreduce` (pass the slot itself as ``buf``)."""
        return self._slots[self.rank]

    def _open(self, create):
        if create:
            try:
                shm = shared_memory.SharedMemory(self.name, create=True,
                                                 size=self._nbytes)
                _CREATED_HERE.add(self.name)
                return shm
            except FileExistsError:
                raise ValueError(f"A shared-memory segment named {self.name!r} already "
                                 f"exists; group names must be unique.") from None
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                shm = shared_memory.SharedMemory(self.name)
                if shm.size >= self._nbytes:
                    break
                shm.close()  # created but not sized yet
            except (FileNotFoundError, ValueError):  # ValueError: empty file
                pass
            if time.monotonic() > deadline:
                raise CollectiveTimeoutError(
                    f"Rank {self.global_rank} waited {self.timeout:g} s for local "
                    f"rank 0 to create shared memory {self.name!r} of "
                    f"{self._nbytes} bytes.")
            time.sleep(0.001)
        # Python < 3.13 registers attached segments for unlinking at exit; only
        # the creator may unlink, or a departing rank destroys the group.
        if self.name not in _CREATED_HERE:
            resource_tracker.unregister(shm._name, "shared_memory")
        return shm

    def _wait_header(self):
        deadline = time.monotonic() + self.timeout
        while self._ctrl[0] != _MAGIC:
            if time.monotonic() > deadline:
                raise CollectiveTimeoutError(
                    f"Rank {self.global_rank}: shared memory {self.name!r} was never "
                    f"initialised by local rank 0 within {self.timeout:g} s.")
            time.sleep(0.001)
        got = tuple(int(v) for v in self._ctrl[1:4])
        want = (self.world_size, self.size, self.dtype.itemsize)
        if got != want:
            raise ValueError(f"Shared memory {self.name!r} was created for (world, size, "
                             f"itemsize)={got}. Received: {want}")

    def _wait(self, counters, seq, stage, step):
        if counters.min() >= seq:
            return
        deadline = time.monotonic() + self.timeout
        spins = 0
        while counters.min() < seq:
            if self._ctrl[4]:
                who = int(self._ctrl[4]) - 1
                raise CollectivePeerError(
                    f"Rank {self.global_rank}: local rank {who} aborted the group "
                    f"while this rank waited for '{stage}' at step {self._step(step)}.")
            spins += 1
            if spins < _SPINS:
                os.sched_yield()
                continue
            if time.monotonic() > deadline:
                missing = [int(i) for i in np.flatnonzero(counters < seq)]
                raise CollectiveTimeoutError(
                    f"Rank {self.global_rank} timed out after {self.timeout:g} s at "
                    f"step {self._step(step)} waiting for local rank(s) {missing} to "
                    f"finish '{stage}' (shared-memory allreduce {self.name!r}).")
            time.sleep(2e-5)

    def _step(self, step):
        return f"{step} (collective call {self._seq + 1})" if step is not None \
            else f"{self._seq + 1} (collective call)"

    def allreduce(self, buf, op="SUM", step=None):
        op = check_op(op)
        check_buffer(buf, self.size, self.dtype, "ShmAllreduce.allreduce")
        if self.world_size == 1:
            return buf
        seq = self._seq + 1
        mine = self._slots[self.rank]
        if not np.shares_memory(buf, mine):
            np.copyto(mine, buf)
        self._arrive[self.rank] = seq
        self._wait(self._arrive, seq, "write its buffer", step)
        sl = self._slices[self.rank]
        result = self._result[seq % 2]
        reduce_into(result[sl], [s[sl] for s in self._slots], op)
        self._done[self.rank] = seq
        self._wait(self._done, seq, "reduce its slice", step)
        np.copyto(buf, result)
        self._seq = seq
        return finish_op(buf, op, self.world_size)

    def broadcast(self, buf, root=0, step=None):
        check_buffer(buf, self.size, self.dtype, "ShmAllreduce.broadcast")
        if self.world_size == 1:
            return buf
        seq = self._seq + 1
        if self.rank == root:
            np.copyto(self._slots[root], buf)
        self._arrive[self.rank] = seq
        self._wait(self._arrive[root:root + 1], seq, "write the broadcast", step)
        if self.rank != root:
            np.copyto(buf, self._slots[root])
        self._done[self.rank] = seq
        self._wait(self._done, seq, "read the broadcast", step)
        self._seq = seq
        return buf

    def abort(self):
        """Marks the group failed so peers stop waiting at once."""
        if self._shm is not None and not self._ctrl[4]:
            self._ctrl[4] = self.rank + 1

    def close(self):
        if self._shm is None:
            return
        self._ctrl = self._arrive = self._done = None
        self._slots = self._result = None
        shm, self._shm = self._shm, None
        try:
            shm.close()
        except BufferError:  # a caller still holds a view; the mapping dies with it
            pass
        if self.rank == 0:
            _CREATED_HERE.discard(self.name)
            try:
                shm.unlink()
            except FileNotFoundError:
                pass

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
