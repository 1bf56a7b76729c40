"""Allreduce of one flat buffer among replicas, behind one interface.

Transports (chosen per group by :func:`make_plan`, swappable):

* ``shm`` -- replicas on one node share a ``multiprocessing.shared_memory``
  segment (:mod:`kerasflow.distribute.collective.shm`);
* ``tcp`` -- a ring over TCP sockets between nodes, reduce-scatter then
  allgather (:mod:`kerasflow.distribute.collective.tcp`);
* ``hier`` -- both: shm inside each node, a tcp ring between the node
  leaders, then a shm broadcast back (:class:`Hierarchical`);
* ``nccl`` -- GPU buffers through ``cupy.cuda.nccl``
  (:mod:`kerasflow.distribute.collective.nccl`): rank 0 makes the group's
  unique id in its first phase and the driver hands it to every rank, so the
  buffers never leave the devices.

Every wait has a deadline; a timeout raises :class:`CollectiveTimeoutError`
naming the rank(s) that did not arrive, the step and the stage awaited. The
reduction order is fixed (rank order for shm, ring order for tcp), so results
are bitwise reproducible for a given world size. This module does not import
ray: the worker group hands every rank its plan and the peers' addresses.

Design after ChainerMN's communicators and Horovod's hierarchical allreduce;
ring allreduce as in Baidu's ``allreduce`` (reduce-scatter + allgather). The
interface, its errors and the shared checks are in
:mod:`kerasflow.distribute.collective.base`, which the transports import.
"""

from __future__ import annotations

import uuid

import numpy as np

from kerasflow.distribute.collective.base import (
    Collective,
    LocalCollective,
    check_op,
    finish_op,
)
from kerasflow.distribute.collective.nccl import NcclAllreduce, nccl_unique_id
from kerasflow.distribute.collective.netaddr import interface_address
from kerasflow.distribute.collective.shm import ShmAllreduce
from kerasflow.distribute.collective.tcp import TcpRing
from kerasflow.distribute.job_secret import new_secret

__all__ = ["TRANSPORTS", "CollectiveEndpoint", "CollectiveMember", "Hierarchical",
           "make_plan"]

TRANSPORTS = ("auto", "shm", "tcp", "hier", "nccl")


class Hierarchical(Collective):
    """shm allreduce inside each node, a tcp ring among node leaders (local
    rank 0), then a shm broadcast from each leader (Horovod's hierarchical
    allreduce). Deterministic: each stage has a fixed order."""

    def __init__(self, rank, world_size, local, ring=None):
        self.rank, self.world_size = rank, world_size
        self.local, self.ring = local, ring

    def allreduce(self, buf, op="SUM", step=None):
        op = check_op(op)
        inner = "SUM" if op == "MEAN" else op
        self.local.allreduce(buf, inner, step=step)
        if self.ring is not None:
            self.ring.allreduce(buf, inner, step=step)
        self.local.broadcast(buf, 0, step=step)
        return finish_op(buf, op, self.world_size)

    def broadcast(self, buf, root=0, step=None):
        if root != 0:
            raise ValueError(f"Hierarchical.broadcast supports root=0. Received: {root}")
        if self.ring is not None:
            self.ring.broadcast(buf, 0, step=step)
        return self.local.broadcast(buf, 0, step=step)

    def close(self):
        self.local.close()
        if self.ring is not None:
            self.ring.close()


def make_plan(nodes, size, dtype="float32", transport="auto", hosts=None,
              timeout=300.0, group_id=None, port_range=None, interface=None):
    """Builds each rank's collective plan from where the ranks run.

    Args:
        nodes: one hashable node key per rank (e.g. Ray node ids), rank order.
        size: number of elements in the flat buffer (int >= 1).
        dtype: the buffer's dtype (``float32`` or ``float64``).
        transport: ``"auto"`` (shm on one node, tcp with one rank per node,
            else hierarchical), ``"shm"``, ``"tcp"``, ``"hier"`` or ``"nccl"``.
        hosts: one IP address per rank for tcp listeners (default loopback).
        timeout: deadline of every collective wait, in seconds.
        group_id: unique name stem for shared-memory segments.
        port_range: ``(low, high)`` the tcp listeners bind in (default any
            free port); see :mod:`kerasflow.distribute.collective.netaddr`.
        interface: interface name or IP address the tcp listeners bind on,
            resolved on each rank's node (default: ``hosts``).

    Returns:
        A list of plan dicts, one per rank, for :class:`CollectiveEndpoint`;
        they carry the group's fresh secret (``job_secret.new_secret``), so
        hand them to the ranks only through an authenticated channel.

    Raises:
        ValueError: unknown transport, ``shm`` across nodes, bad size.
    """
    world = len(nodes)
    if world < 1:
        raise ValueError("make_plan expects at least one rank. Received: nodes=[]")
    if transport not in TRANSPORTS:
        raise ValueError(f"make_plan expects transport in {TRANSPORTS}. "
                         f"Received: transport={transport!r}")
    if not isinstance(size, (int, np.integer)) or size < 1:
        raise ValueError(f"make_plan expects size >= 1. Received: size={size!r}")
    order = list(dict.fromkeys(nodes))
    by_node = {k: [r for r in range(world) if nodes[r] == k] for k in order}
    if transport == "auto":
        if len(order) == 1:
            transport = "shm" if world > 1 else "local"
        elif all(len(v) == 1 for v in by_node.values()):
            transport = "tcp"
        else:
            transport = "hier"
    if transport == "shm" and len(order) > 1:
        raise ValueError(f"The shm transport needs every rank on one node. "
                         f"Received: ranks on {len(order)} nodes")
    hosts = list(hosts) if hosts is not None else ["127.0.0.1"] * world
    gid = group_id or uuid.uuid4().hex[:12]
    # One fresh secret per group, reaching the ranks through the driver's
    # (token-authenticated) Ray: no stranger can join their ring.
    secret = new_secret()
    plans = []
    for r in range(world):
        local = by_node[nodes[r]]
        node_index = order.index(nodes[r])
        if transport == "tcp":
            ring_index, ring_size = r, world
        elif transport == "nccl":  # rank 0's "address" is the NCCL unique id
            ring_index, ring_size = (0 if r == 0 else None), 0
        elif transport == "hier":
            ring_index = node_index if local[0] == r else None
            ring_size = len(order)
        else:
            ring_index, ring_size = None, 0
        plans.append(dict(
            rank=r, world=world, transport=transport, size=int(size),
            dtype=np.dtype(dtype).name, timeout=float(timeout),
            shm_name=f"kf-{gid}-{node_index}", local_rank=local.index(r),
            local_world=len(local), host=hosts[r], ring_index=ring_index,
            ring_size=ring_size, token=gid, port_range=port_range,
            interface=interface, secret=secret))
    return plans


class CollectiveEndpoint:
    """One rank's side of a group, built in two phases because tcp listeners
    must exchange addresses: ``ep = CollectiveEndpoint(plan)`` (creates or
    attaches shared memory, opens a listener if this rank is on a ring), the
    driver gathers every ``ep.address``, then ``ep.connect(addresses)``
    returns the :class:`Collective`.

    Attributes:
        address: ``(host, port)`` of this rank's tcp listener, or ``None``.
        ring_index: this rank's position in the tcp ring, or ``None``.
    """

    def __init__(self, plan):
        self.plan = dict(plan)
        p = self.plan
        self.transport = p["transport"]
        self.ring_index = p["ring_index"]
        self._local = None
        self._ring = None
        try:
            if self.transport in ("shm", "hier") and p["local_world"] > 1:
                self._local = ShmAllreduce(
                    p["shm_name"], p["local_rank"], p["local_world"], p["size"],
                    p["dtype"], timeout=p["timeout"], global_rank=p["rank"])
            if self.ring_index is not None and p["ring_size"] > 1:
                host = p["host"]
                if p.get("interface"):
                    host = interface_address(p["interface"])
                self._ring = TcpRing(self.ring_index, p["ring_size"], host=host,
                                     timeout=p["timeout"], token=p["token"],
                                     port=p.get("port_range") or 0,
                                     secret=p.get("secret"))
        except BaseException:
            self.close()  # half a group holds no shared memory or socket
            raise
        self.address = self._ring.address if self._ring is not None else None
        if self.transport == "nccl" and p["rank"] == 0:
            self.address = nccl_unique_id()

    def connect(self, addresses=None):
        """Connects the ring (``addresses`` in ring order) and returns the
        rank's :class:`Collective`."""
        p = self.plan
        if self._ring is not None:
            try:
                self._ring.connect(addresses)
            except BaseException:
                self.close()
                raise
        if self.transport == "nccl":
            if not addresses:
                raise ValueError("An nccl group's ranks connect with rank 0's unique id. "
                                 "Received: no addresses")
            # World size 1 goes through NCCL too, so one GPU tests the path.
            return NcclAllreduce(p["rank"], p["world"], addresses[0], timeout=p["timeout"])
        if p["world"] == 1:
            return LocalCollective(p["size"], p["dtype"])
        if self.transport == "shm":
            return self._local
        if self.transport == "tcp":
            return self._ring
        local = self._local or LocalCollective(p["size"], p["dtype"])
        return Hierarchical(p["rank"], p["world"], local, self._ring)

    def close(self):
        """Releases whatever was opened (used when a group fails to form);
        idempotent."""
        for part in (self._local, self._ring):
            if part is not None:
                part.close()


class CollectiveMember:
    """Mixin for a ``WorkerGroup`` worker object in a collective group: the
    two phases :meth:`WorkerGroup.setup_collective` calls, then ``self.coll``
    (a :class:`Collective`) reduces; forming a new group closes the old one,
    and :meth:`close` (called by ``WorkerGroup.shutdown``) releases both the
    formed group and one that never finished forming."""

    endpoint = coll = None

    def open_collective(self, plan):
        self.close()
        self.endpoint = CollectiveEndpoint(plan)
        return self.endpoint.address

    def connect_collective(self, addresses):
        self.coll = self.endpoint.connect(addresses)
        return True

    def close(self):
        """Closes the collective and its endpoint's shared memory and
        sockets; idempotent."""
        if self.coll is not None:
            self.coll.close()
            self.coll = None
        if self.endpoint is not None:
            self.endpoint.close()
            self.endpoint = None
        return True
