"""GPU allreduce through NCCL, called from cupy (``cupy.cuda.nccl``).

Torch is not needed: rank 0 makes the unique id with :func:`nccl_unique_id`,
the driver hands it to every rank, and each builds
``NcclAllreduce(rank, world, uid)`` (every rank's constructor must be
submitted before waiting on any: ``ncclCommInitRank`` is collective). The
allreduce runs on a dedicated stream; completion is polled through an event
against the deadline, and a timeout aborts the communicator
(``ncclCommAbort``) and raises :class:`CollectiveTimeoutError` instead of
hanging (the complaint of ray#25130 and OpenRLHF#876).

NCCL refuses two ranks on one GPU, so on a single-GPU machine only world
size 1 runs here (still through NCCL, which tests the path).

``MirroredStrategy`` on GPU replicas uses this transport by default: the
replica keeps its flat ``[gradients | metrics | loss | count]`` buffer on the
device (``on_device``), so the gradients never cross PCIe.
"""

from __future__ import annotations

import time

from kerasflow.distribute.collective.base import (
    Collective,
    CollectiveError,
    CollectiveTimeoutError,
    check_op,
)

__all__ = ["NcclAllreduce", "nccl_unique_id"]


def _nccl():
    try:
        import cupy
        from cupy.cuda import nccl
    except ImportError as e:
        raise ImportError("The nccl transport needs cupy with NCCL "
                          "(pip install 'kerasflow[gpu]').") from e
    return cupy, nccl


def nccl_unique_id():
    """A fresh NCCL unique id (a picklable tuple) for a new group."""
    return _nccl()[1].get_unique_id()


class NcclAllreduce(Collective):
    """One rank of an NCCL communicator over cupy buffers.

    Args:
        rank: this rank, 0..world_size-1 (one GPU per rank).
        world_size: ranks in the group.
        uid: the group's id from :func:`nccl_unique_id` on rank 0.
        timeout: deadline of every operation, in seconds.
    """

    on_device = True  # reduces device (cupy) buffers in place

    def __init__(self, rank, world_size, uid, timeout=300.0):
        self.cupy, nccl = _nccl()
        self._nccl = nccl
        self.rank, self.world_size = rank, world_size
        self.timeout = float(timeout)
        self._comm = nccl.NcclCommunicator(world_size, uid, rank)
        self._stream = self.cupy.cuda.Stream(non_blocking=True)
        self._seq = 0

    def _dtype(self, arr):
        nccl = self._nccl
        table = {"float32": nccl.NCCL_FLOAT32, "float64": nccl.NCCL_FLOAT64,
                 "float16": nccl.NCCL_FLOAT16}
        if arr.dtype.name not in table:
            raise TypeError(f"NcclAllreduce expects float16/32/64 buffers. "
                            f"Received: dtype={arr.dtype}")
        return table[arr.dtype.name]

    def _wait(self, what, step):
        event = self.cupy.cuda.Event(disable_timing=True)
        event.record(self._stream)
        deadline = time.monotonic() + self.timeout
        while not event.done:
            try:
                self._comm.check_async_error()
            except Exception as e:
                raise CollectiveError(f"Rank {self.rank}: NCCL error during {what} at "
                                      f"step {step}: {e}") from e
            if time.monotonic() > deadline:
                self._comm.abort()
                self._comm = None
                raise CollectiveTimeoutError(
                    f"Rank {self.rank} timed out after {self.timeout:g} s at step "
                    f"{step} waiting for the other ranks' NCCL {what}; communicator "
                    f"aborted.")
            time.sleep(5e-5)

    def allreduce(self, buf, op="SUM", step=None):
        """Reduces a contiguous cupy array in place (numpy arrays are staged
        through the device and copied back)."""
        op = check_op(op)
        host = not isinstance(buf, self.cupy.ndarray)
        dev = self.cupy.asarray(buf) if host else buf
        if not dev.flags.c_contiguous:
            raise ValueError("NcclAllreduce expects a contiguous buffer.")
        # The NCCL stream does not synchronize with the default stream by
        # itself: make it wait for the writes that filled the buffer.
        self._stream.wait_event(self.cupy.cuda.get_current_stream().record())
        nccl = self._nccl
        code = {"SUM": nccl.NCCL_SUM, "MEAN": nccl.NCCL_SUM, "MAX": nccl.NCCL_MAX,
                "MIN": nccl.NCCL_MIN}[op]
        self._seq += 1
        step = self._seq if step is None else step
        # World size 1 still goes through NCCL, so one GPU tests the path.
        self._comm.allReduce(dev.data.ptr, dev.data.ptr, dev.size, self._dtype(dev),
                             code, self._stream.ptr)
        self._wait("allreduce", step)
        if op == "MEAN":
            dev /= self.world_size
        if host:
            dev.get(out=buf)
            return buf
        return dev

    def broadcast(self, buf, root=0, step=None):
        host = not isinstance(buf, self.cupy.ndarray)
        dev = self.cupy.asarray(buf) if host else buf
        self._stream.wait_event(self.cupy.cuda.get_current_stream().record())
        self._comm.bcast(dev.data.ptr, dev.size, self._dtype(dev), root,
                         self._stream.ptr)
        self._wait("broadcast", step)
        if host:
            dev.get(out=buf)
        return buf

    def close(self):
        if self._comm is not None:
            self._comm.destroy()
            self._comm = None
