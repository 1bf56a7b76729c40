"""One allreduce interface, several transports: ``base`` (the interface,
checks and reductions every transport shares), ``plan`` (which transport
serves which ranks: shared memory on a node, a TCP ring across nodes, NCCL
between GPUs), ``shm`` and ``shm_wait`` (shared-memory segment), ``tcp``
(TCP ring), ``nccl``, ``netaddr`` (addresses and ports), ``probe`` (a
diagnostic that validates and times a group). No ray import. Internal."""

from __future__ import annotations

__all__: list[str] = []
