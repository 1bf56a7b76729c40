"""Shared-memory allreduce for replicas on one node.

One ``multiprocessing.shared_memory`` segment per group holds a control
block, three int32 signal words per rank (``attach``, ``arrive``, ``done``,
each on its own 64-byte line), one rank-owned slot per rank
(``slots[world, n]``), a double-buffered result (``result[2, n]``) and a
double-buffered parameter array (``params[2, n]``: ZeRO-1's replicas keep
their weights there, each rank writing the new values of the ranges it owns
into ``params[seq % 2]`` between the two barriers of
:meth:`ShmAllreduce.reduce_apply`, while the weights of call ``seq - 1`` stay
readable in the other half). An allreduce of call number ``seq``:

1. the rank copies its buffer into its slot (skipped when the caller already
   wrote into ``slot``) and stores ``seq`` in its ``arrive`` word;
2. once every rank's ``arrive`` word reads ``seq``, each rank reduces its own
   contiguous slice of the n elements across all slots, in rank order, into
   ``result[seq % 2]`` (reduce-scatter by slices), and stores ``seq`` in its
   ``done`` word;
3. once every ``done`` word reads ``seq``, each copies ``result[seq % 2]`` out.

Each rank writes only its own words and every waiter only reads, so no
atomic read-modify-write is needed and nothing queues: the state of the
barrier is the words themselves (a counter barrier in the style of
Mellor-Crummey & Scott, "Algorithms for scalable synchronization on
shared-memory multiprocessors", TOCS 1991, with one flag per rank instead of
a shared counter), and its correctness does not depend on any queue length
or on the number of ranks. A rank cannot run ahead by more than one call
(step 3 of ``seq`` waits for everyone's step 2), so waiters test words for
equality with ``seq``. Double buffering lets a fast rank start call
``seq + 1`` while a slow one still reads call ``seq``'s result.

A waiting rank sleeps in the kernel on the word it waits for (a futex, see
:mod:`kerasflow.distribute.collective.shm_wait`) and the writer wakes it with one system
call per signal, whatever the world size: it neither burns a core (spinning
measured 4-10 ms per call on a loaded 2-core machine) nor sleeps past the
wake-up. Every sleep is bounded by the deadline and by a short slice, so an
abort or a dead peer is noticed; a timeout names the missing ranks, the step
and the stage.

The segment's name is unlinked as soon as every rank has attached (local
rank 0 waits for that in its constructor), so from then on the memory goes
with the last process that maps it, even if every process is killed. Before
that, :func:`unlink_segment` lets the group's owner remove the name.
"""

from __future__ import annotations

import time
from multiprocessing import resource_tracker, shared_memory

import numpy as np

from kerasflow.distribute.collective.base import (
    Collective,
    CollectivePeerError,
    CollectiveTimeoutError,
    check_buffer,
    check_op,
    finish_op,
    reduce_into,
)
from kerasflow.distribute.collective.shm_wait import fence, wait_word, wake_word

__all__ = ["ShmAllreduce", "unlink_segment"]

_MAGIC = 0x6B66_7368_6D32  # "kfshm2"
_ALIGN = 4096
_CTRL = 16            # int64 words: magic, world, n, itemsize, abort (rank + 1)
_ABORT = 4
_LINE = 16            # int32 words per signal word (one 64-byte cache line)
_ATTACH, _ARRIVE, _DONE = 0, 1, 2
_SLICE = 0.05         # longest single sleep, seconds (abort / deadline checks)
_SEQ_MASK = 0x7FFF_FFFF
_CREATED_HERE = set()  # segments this process created (it alone unregisters)


def _round_up(n, a=_ALIGN):
    return (n + a - 1) // a * a


def _attach_untracked(name):
    """Attaches to an existing segment without registering it with this
    process's resource tracker: only the creator may unlink the name (or a
    departing rank would destroy the group), and a tracker shared with the
    creator (multiprocessing children) must not see it unregistered twice."""
    try:
        return shared_memory.SharedMemory(name, track=False)  # Python >= 3.13
    except TypeError:
        pass
    register = resource_tracker.register
    resource_tracker.register = lambda *args, **kwargs: None
    try:
        return shared_memory.SharedMemory(name)
    finally:
        resource_tracker.register = register


def unlink_segment(name) -> bool:
    """Removes the shared-memory name ``name`` from ``/dev/shm`` if it is still
    there (a group torn down before every rank attached). Processes that map
    it keep their memory. Returns True when a name was removed."""
    try:
        shm = _attach_untracked(name)
    except (FileNotFoundError, ValueError):
        return False
    shm.close()
    import _posixshmem  # POSIX only, like the abstract sockets before

    try:
        # The POSIX call itself: SharedMemory.unlink() would also unregister
        # a name this process's tracker never saw.
        _posixshmem.shm_unlink("/" + name.lstrip("/"))
    except FileNotFoundError:
        return False
    if name in _CREATED_HERE:  # created in this process: its tracker knows it
        _CREATED_HERE.discard(name)
        resource_tracker.unregister("/" + name.lstrip("/"), "shared_memory")
    return True


class ShmAllreduce(Collective):
    """Allreduce through one shared-memory segment (ranks on one node).

    Local rank 0 creates and pre-touches the segment (first-touch page faults
    cost about 110 ms per 64 MB on the measured VM), waits until every rank
    has attached, then unlinks its name; the others attach by name, retrying
    until ``timeout``. Construct all ranks concurrently.

    Args:
        name: segment name, unique per group (e.g. ``"kf-<uuid>-0"``).
        rank: this rank's index within the node group, 0..world_size-1.
        world_size: ranks in the group (>= 1).
        size: elements in the flat buffer.
        dtype: ``float32`` or ``float64`` (any numpy numeric dtype works).
        timeout: deadline of every wait, in seconds.
        global_rank: the rank named in error messages (default ``rank``).

    Raises:
        CollectiveTimeoutError: the segment did not appear, or (rank 0) some
            ranks did not attach, within ``timeout``; the segment is released.
        ValueError: an existing segment has another layout, or the name is
            taken.

    Example:
        >>> # in each of two processes, r = 0 or 1:
        >>> coll = ShmAllreduce("kf-demo", r, 2, 4, "float64", timeout=10)
        >>> coll.allreduce(np.full(4, r + 1.0))     # -> [3., 3., 3., 3.]
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
        self._named = rank == 0  # rank 0 unlinks the name once all attached
        self._shm = None
        ctr_bytes, slot_bytes = self._layout(world_size, self.size, self.dtype)
        self._nbytes = self.segment_bytes(world_size, self.size, self.dtype)
        self._shm = self._open(rank == 0)
        try:
            self._map(ctr_bytes, slot_bytes)
            if rank == 0:
                self._wait(_ATTACH, 1, range(world_size), "attach")
                self._unlink_name()
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _layout(world_size, size, dtype):
        # (control block bytes, bytes per slot), page-aligned
        return (_round_up(_CTRL * 8 + 3 * world_size * _LINE * 4),
                _round_up(int(size) * np.dtype(dtype).itemsize))

    @classmethod
    def segment_bytes(cls, world_size, size, dtype) -> int:
        """Bytes of the segment a group of ``world_size`` ranks reducing
        ``size`` elements of ``dtype`` maps: a ``/dev/shm`` too small for it
        (Docker's default is 64 MiB) would kill rank 0 with SIGBUS when it
        pre-touches the pages."""
        ctr_bytes, slot_bytes = cls._layout(world_size, size, dtype)
        return ctr_bytes + (world_size + 4) * slot_bytes

    def _map(self, ctr_bytes, slot_bytes):
        n, world, buf = self.size, self.world_size, self._shm.buf
        self._ctrl = np.ndarray((_CTRL,), np.int64, buf)
        flags = np.ndarray((3, world, _LINE), np.int32, buf, _CTRL * 8)
        self._words = [flags[k, :, 0] for k in range(3)]
        base = flags.ctypes.data
        self._addrs = [[base + ((k * world + r) * _LINE) * 4 for r in range(world)]
                       for k in range(3)]
        self._slots = [np.ndarray((n,), self.dtype, buf, ctr_bytes + i * slot_bytes)
                       for i in range(world)]
        base = ctr_bytes + world * slot_bytes
        halves = [np.ndarray((n,), self.dtype, buf, base + i * slot_bytes)
                  for i in range(4)]
        self._result, self._params = halves[:2], halves[2:]
        bounds = [n * i // world for i in range(world + 1)]
        self._slices = [slice(bounds[i], bounds[i + 1]) for i in range(world)]
        if self.rank == 0:
            # Every page is touched once here, so no step pays the fault.
            np.frombuffer(buf, np.uint8)[_CTRL * 8:].fill(0)
            self._ctrl[1:5] = (world, n, self.dtype.itemsize, 0)
            fence()
            self._ctrl[0] = _MAGIC
        else:
            self._wait_header()
            # Map the pages into this process now (minor faults), not in step 1.
            self._slots[self.rank].fill(0)
            for res in self._result:
                res[self._slices[self.rank]] = 0
            int(np.frombuffer(buf, np.uint8)[::_ALIGN].sum())
        self._post(_ATTACH, 1)

    @property
    def slot(self):
        """This rank's slot: a caller that writes its gradients here saves
        one copy in :meth:`allreduce` (pass the slot itself as ``buf``)."""
        return self._slots[self.rank]

    @property
    def params(self):
        """The two shared ``(size,)`` parameter arrays: :meth:`reduce_apply`
        call ``seq`` hands ``params[seq % 2]`` to ``apply`` and ``gather``."""
        return tuple(self._params)

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
                shm = _attach_untracked(self.name)
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
        return shm

    def _wait_header(self):
        deadline = time.monotonic() + self.timeout
        while self._ctrl[0] != _MAGIC:
            if time.monotonic() > deadline:
                raise CollectiveTimeoutError(
                    f"Rank {self.global_rank}: shared memory {self.name!r} was never "
                    f"initialised by local rank 0 within {self.timeout:g} s.")
            time.sleep(0.001)
        fence()
        got = tuple(int(v) for v in self._ctrl[1:4])
        want = (self.world_size, self.size, self.dtype.itemsize)
        if got != want:
            raise ValueError(f"Shared memory {self.name!r} was created for (world, size, "
                             f"itemsize)={got}. Received: {want}")

    def _post(self, kind, value):
        fence()  # this rank's slot / result writes land before its signal
        self._words[kind][self.rank] = value
        wake_word(self._addrs[kind][self.rank])

    def _wait(self, kind, target, ranks, stage, step=None):
        words, addrs, ctrl = self._words[kind], self._addrs[kind], self._ctrl
        deadline = time.monotonic() + self.timeout
        for r in ranks:
            while True:
                v = int(words[r])
                if v == target:
                    break
                if ctrl[_ABORT]:
                    raise CollectivePeerError(
                        f"Rank {self.global_rank}: local rank {int(ctrl[_ABORT]) - 1} "
                        f"aborted the group while this rank waited for ranks to "
                        f"{stage} at step {self._step(step)}.")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._timeout_error(words, target, ranks, stage, step)
                wait_word(addrs[r], v, min(left, _SLICE))
        fence()  # the peers' writes are read after their signals

    def _timeout_error(self, words, target, ranks, stage, step):
        missing = [i for i in ranks if int(words[i]) != target]
        where = ("while the group formed" if stage == "attach"
                 else f"at step {self._step(step)}")
        return CollectiveTimeoutError(
            f"Rank {self.global_rank} timed out after {self.timeout:g} s {where} "
            f"waiting for local rank(s) {missing} to {stage} (shared-memory "
            f"allreduce {self.name!r}, {self.world_size} local ranks).")

    def _step(self, step):
        return f"{step} (collective call {self._seq + 1})" if step is not None \
            else f"{self._seq + 1} (collective call)"

    def allreduce(self, buf, op="SUM", step=None):
        """Reduces ``buf`` over the group in place; see ``Collective.allreduce``.

        Args:
            buf: 1-D contiguous array of ``size`` elements of ``dtype`` (or
                :attr:`slot` itself, which saves a copy).
            op: ``"SUM"``, ``"MEAN"``, ``"MAX"`` or ``"MIN"``.
            step: the caller's step, for error messages.

        Returns:
            ``buf``, bitwise identical on every rank (slots reduced in rank
            order).

        Raises:
            CollectiveTimeoutError: ranks missing at the deadline (named).
            CollectivePeerError: a peer called :meth:`abort`.
        """
        op = check_op(op)
        check_buffer(buf, self.size, self.dtype, "ShmAllreduce.allreduce")
        if self.world_size == 1:
            return buf
        seq, target, everyone = self._arrive(buf, step)
        sl = self._slices[self.rank]
        result = self._result[seq % 2]
        reduce_into(result[sl], [s[sl] for s in self._slots], op)
        self._post(_DONE, target)
        self._wait(_DONE, target, everyone, "reduce its slice", step)
        np.copyto(buf, result)
        self._seq = seq
        return finish_op(buf, op, self.world_size)

    def _arrive(self, buf, step):
        """Writes ``buf`` into this rank's slot (unless it is the slot) and
        waits until every rank has: ``(seq, target word, ranks)``."""
        seq = self._seq + 1
        target = seq & _SEQ_MASK
        mine = self._slots[self.rank]
        if not np.shares_memory(buf, mine):
            np.copyto(mine, buf)
        everyone = range(self.world_size)
        self._post(_ARRIVE, target)
        self._wait(_ARRIVE, target, everyone, "write its buffer", step)
        return seq, target, everyone

    def reduce_apply(self, buf, ranges, apply, step=None, gather=None):
        """ZeRO-1's step in one round (see ``zero.py``): sums the slots over
        this rank's ``ranges`` only (a reduce-scatter), calls
        ``apply(result)`` -- which reads the summed ranges of the shared
        result and writes the new values over them -- then, once every rank
        has, copies the whole result into ``buf`` (an allgather).

        Args:
            buf: as :meth:`allreduce` (usually :attr:`slot`).
            ranges: ``(lo, hi)`` element ranges this rank reduces; the ranks'
                ranges must cover the buffer without overlapping.
            apply: ``apply(result, params)``: the (size,) shared result and
                this call's half of :attr:`params` (unread until the second
                barrier; the previous call's half stays as it is).
            step: the caller's step, for error messages.
            gather: optional ``gather(result, params)`` after the second
                barrier, instead of copying ``result`` into ``buf`` (the
                result stays valid until the call after next).

        Returns:
            ``buf``.

        Raises:
            as :meth:`allreduce`; whatever ``apply`` raises (the group is
            aborted first, so the peers raise ``CollectivePeerError``).
        """
        check_buffer(buf, self.size, self.dtype, "ShmAllreduce.reduce_apply")
        seq, target, everyone = self._arrive(buf, step)
        result, params = self._result[seq % 2], self._params[seq % 2]
        try:
            for lo, hi in ranges:
                reduce_into(result[lo:hi], [s[lo:hi] for s in self._slots], "SUM")
            apply(result, params)
        except BaseException:
            self.abort()  # the peers raise at once instead of timing out
            raise
        self._post(_DONE, target)
        self._wait(_DONE, target, everyone, "apply its shard", step)
        if gather is None:
            np.copyto(buf, result)
        else:
            gather(result, params)
        self._seq = seq
        return buf

    def broadcast(self, buf, root=0, step=None):
        """Copies ``root``'s ``buf`` into every rank's ``buf``, in place."""
        check_buffer(buf, self.size, self.dtype, "ShmAllreduce.broadcast")
        if self.world_size == 1:
            return buf
        seq = self._seq + 1
        target = seq & _SEQ_MASK
        if self.rank == root:
            np.copyto(self._slots[root], buf)
            self._post(_ARRIVE, target)
        else:
            self._wait(_ARRIVE, target, [root], "write the broadcast", step)
            np.copyto(buf, self._slots[root])
        self._post(_DONE, target)
        self._wait(_DONE, target, range(self.world_size), "read the broadcast", step)
        self._seq = seq
        return buf

    def _unlink_name(self):
        # Every rank has mapped the segment: drop its name now, and the memory
        # goes with the last mapping even if the processes are killed.
        if self._named:
            self._named = False
            _CREATED_HERE.discard(self.name)
            try:
                self._shm.unlink()
            except FileNotFoundError:
                pass

    def abort(self):
        """Marks the group failed and wakes every waiting peer, which raises
        :class:`CollectivePeerError` naming this rank."""
        if self._shm is None:
            return
        self._ctrl[_ABORT] = self.rank + 1
        for addrs in self._addrs:
            for a in addrs:
                wake_word(a)

    def close(self):
        """Unmaps the segment (and, on rank 0 before everyone attached,
        unlinks its name); idempotent."""
        if self._shm is None:
            return
        self._ctrl = self._slots = self._result = self._words = self._params = None
        shm, self._shm = self._shm, None
        try:
            shm.close()
        except BufferError:  # a caller still holds a view; the mapping dies with it
            pass
        if self._named:
            self._named = False
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
