"""``WorkerGroup``: N replica actors in one placement group (Ray Train's
``WorkerGroup``): it creates them (fractional CPUs or one GPU each), waits
for placement with a timeout and names what was requested against what
exists (the arithmetic is in ``placement``), calls a method on every rank
with a deadline, maps unfinished calls back to ranks, turns Ray's failures
(``RayActorError`` incl. ``ActorUnavailableError``, ``RayTaskError``-wrapped
ones) into ``errors.WorkerGroupError`` subclasses naming the rank, and polls
a separate ``ctl`` concurrency group (``ping``) so a replica that answers but
makes no progress is reported as stuck. Actors run with ``max_restarts=0``:
a restarted actor has lost its state, so recovery rebuilds the group (as Ray
Train and Horovod elastic do).

Ray itself is reached through ``runtime/ray.py`` (the one module importing it).
"""

from __future__ import annotations

import time

from kerasflow.distribute.collective.plan import make_plan
from kerasflow.distribute.collective.shm import unlink_segment
from kerasflow.distribute.runtime.errors import (
    PlacementError,
    ReplicaDiedError,
    ReplicaFailedError,
    ReplicaTimeoutError,
)
from kerasflow.distribute.runtime.placement import bundle_for, describe_nodes
from kerasflow.distribute.runtime.ray import (
    LIVE_GROUPS,
    actor_class,
    actor_runtime_env,
    check_placement,
    cluster_summary,
    in_bundle,
    init_ray,
    placement_group,
    ray_module,
    remove_placement_group,
)

__all__ = ["WorkerGroup"]

_ray = ray_module
_LIVE = LIVE_GROUPS
_actor_class = actor_class
_actor_runtime_env = actor_runtime_env

class WorkerGroup:
    """N actors, one per placement-group bundle, each hosting
    ``factory(rank, world, *args)``.

    Args:
        factory: a picklable callable (usually a class) building the worker
            object in the actor; its methods are called with :meth:`execute`;
            an integer ``progress`` attribute, if any, feeds stuck detection.
        num_workers: number of actors (ranks 0..N-1).
        args: extra constructor arguments (shipped once).
        num_cpus: CPUs reserved per worker (fractions allowed).
        num_gpus: GPUs per worker (0 or 1).
        strategy: placement-group strategy: ``"PACK"``, ``"STRICT_PACK"``
            (one node), ``"SPREAD"`` or ``"STRICT_SPREAD"`` (distinct nodes).
        placement_timeout: seconds to wait for the placement.
        timeout: default deadline of :meth:`execute`, in seconds.
        poll_interval: seconds between liveness/progress pings while waiting.
        stall_timeout: seconds without progress after which a pinging replica
            counts as stuck (None: only the deadline applies).
        bundle_resources: extra custom resources per bundle (e.g. node tags).
        workers_per_bundle: actors sharing one bundle (and so one node); the
            bundle reserves their resources together.

    Raises:
        PlacementError: the bundles could not be placed in time (the message
            names what was requested and the cluster's nodes).
        ReplicaTimeoutError / ReplicaDiedError: an actor failed to start.
    """

    def __init__(self, factory, num_workers, args=(), num_cpus=0.5, num_gpus=0,
                 strategy="PACK", placement_timeout=30.0, timeout=300.0,
                 poll_interval=5.0, stall_timeout=None, bundle_resources=None,
                 name="replica", workers_per_bundle=1):
        ray = _ray()
        init_ray()
        if not isinstance(num_workers, int) or num_workers < 1:
            raise ValueError(f"WorkerGroup expects num_workers >= 1. "
                             f"Received: num_workers={num_workers!r}")
        per = int(workers_per_bundle)
        if per < 1 or num_workers % per:
            raise ValueError(f"WorkerGroup expects num_workers to be a multiple of "
                             f"workers_per_bundle. Received: {num_workers}, {per}")
        self.num_workers, self.name = num_workers, name
        self.timeout, self.poll_interval = float(timeout), float(poll_interval)
        self.stall_timeout = stall_timeout
        self.actors, self.pg = [], None
        self.shm_names = set()  # shared-memory names of the groups it formed
        self.bundle = bundle = bundle_for(num_cpus, num_gpus, bundle_resources)
        big = check_placement(num_workers, num_cpus, num_gpus, strategy, per, name,
                              bundle_resources)
        _LIVE.add(self)
        self.pg = placement_group([dict(big)] * (num_workers // per), strategy=strategy)
        try:
            ray.get(self.pg.ready(), timeout=placement_timeout)
        except ray.exceptions.GetTimeoutError:
            self.shutdown(graceful=False)
            raise PlacementError(
                f"Cannot place {num_workers} {name}s with {bundle} each "
                f"({num_workers // per} bundles of {big}, {strategy}) within "
                f"{placement_timeout:g} s. The cluster has "
                f"{describe_nodes(cluster_summary())}.") from None
        cls = _actor_class()
        for rank in range(num_workers):
            opts = dict(num_cpus=bundle.get("CPU", 0), num_gpus=bundle.get("GPU", 0),
                        max_restarts=0, max_task_retries=0,
                        scheduling_strategy=in_bundle(self.pg, rank // per))
            if bundle_resources:
                opts["resources"] = dict(bundle_resources)
            env = _actor_runtime_env()
            if env is not None:
                opts["runtime_env"] = env
            self.actors.append(cls.options(**opts).remote(
                factory, rank, num_workers, tuple(args)))
        try:
            self.infos = self.wait([a.info.remote() for a in self.actors],
                                   timeout=max(60.0, placement_timeout),
                                   what="actor start")
        except BaseException:
            self.shutdown(graceful=False)
            raise

    # -- calls -----------------------------------------------------------------
    def submit(self, method, *args, per_rank=None, ranks=None):
        """Starts ``method`` on the given ranks (default all); returns refs.
        ``per_rank``: a list of argument tuples, one per rank, instead of args."""
        ranks = range(self.num_workers) if ranks is None else ranks
        return [self.actors[r].call.remote(
            method, *(per_rank[r] if per_rank is not None else args)) for r in ranks]

    def call(self, rank, method, *args, num_returns=1):
        """Starts ``method`` on one rank; returns its ref (a list of refs when
        ``num_returns`` > 1). Refs among ``args`` are resolved by Ray before
        the call runs (actor to actor, not through the driver)."""
        return self.actors[rank].call.options(num_returns=num_returns).remote(
            method, *args)

    def is_alive(self, rank, timeout=5.0):
        """False when rank's actor is dead (a hung actor counts as alive)."""
        ray = _ray()
        ref = self.actors[rank].ping.remote()
        try:
            ray.get(ref, timeout=timeout)
            return True
        except ray.exceptions.GetTimeoutError:
            return True
        except ray.exceptions.RayActorError:
            return False

    def put(self, obj):
        """Puts ``obj`` in the object store once; pass the ref as a top-level
        argument and every rank receives the object (zero-copy for arrays)."""
        return _ray().put(obj)

    def execute(self, method, *args, per_rank=None, timeout=None):
        """Runs ``method`` on every rank and returns the results in rank order.

        Raises:
            ReplicaFailedError: a rank's method raised (first failure, fail fast).
            ReplicaDiedError: a rank's actor died.
            ReplicaTimeoutError: ranks unfinished at the deadline, or stuck.
        """
        refs = self.submit(method, *args, per_rank=per_rank)
        return self.wait(refs, timeout=timeout, what=method)

    def wait(self, refs, timeout=None, what="call", ranks=None):
        """Waits for one ref per rank with a deadline; see :meth:`execute`."""
        ray = _ray()
        ranks = list(range(len(refs))) if ranks is None else list(ranks)
        timeout = self.timeout if timeout is None else float(timeout)
        deadline = time.monotonic() + timeout
        rank_of = {ref: r for ref, r in zip(refs, ranks)}
        results, pending = {}, list(refs)
        seen = {}  # rank -> (progress, since)
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                late = sorted(rank_of[p] for p in pending)
                raise ReplicaTimeoutError(
                    f"{self.name.capitalize()}(s) {late} did not finish '{what}' within "
                    f"{timeout:g} s{self._describe(late)}.", late)
            # One at a time: a failed rank is reported at once (fail fast).
            ready, pending = ray.wait(pending, num_returns=1,
                                      timeout=min(self.poll_interval, left))
            for ref in ready:
                results[rank_of[ref]] = self.result(ref, rank_of[ref], what)
            if pending and self.stall_timeout is not None:
                self._check_alive([rank_of[p] for p in pending], seen, what)
        return [results[r] for r in ranks]

    def result(self, ref, rank, what="call"):
        """``ray.get`` of a finished ref, with Ray's failures mapped as in
        :meth:`execute` (naming this group's role and ``rank``)."""
        ray = _ray()
        exc = ray.exceptions
        try:
            return ray.get(ref)
        except exc.RayActorError as e:
            raise ReplicaDiedError(
                f"{self.name.capitalize()} {rank} died during '{what}': "
                f"{type(e).__name__}.", [rank], e) from e
        except exc.RayTaskError as e:
            cause = getattr(e, "cause", None)
            if isinstance(cause, exc.RayActorError):
                raise ReplicaDiedError(
                    f"{self.name.capitalize()} {rank}: an input of '{what}' came from "
                    f"a {self.name} that died.", [rank], cause) from e
            msg = str(cause) if cause is not None else str(e)
            raise ReplicaFailedError(
                f"{self.name.capitalize()} {rank} raised {type(cause).__name__} in "
                f"'{what}': {msg}", [rank], cause) from e

    def _check_alive(self, ranks, seen, what):
        ray = _ray()
        now = time.monotonic()
        refs = [self.actors[r].ping.remote() for r in ranks]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=self.poll_interval)
        for r, ref in zip(ranks, refs):
            if ref not in ready:
                continue
            try:
                info = ray.get(ref)
            except ray.exceptions.RayActorError as e:
                raise ReplicaDiedError(f"{self.name.capitalize()} {r} died during "
                                       f"'{what}'.", [r], e) from e
            prog = info.get("progress")
            old = seen.get(r)
            if old is None or old[0] != prog:
                seen[r] = (prog, now)
            elif now - old[1] > self.stall_timeout:
                raise ReplicaTimeoutError(
                    f"{self.name.capitalize()} {r} is stuck: it answers pings but its "
                    f"progress stayed at {prog} for {now - old[1]:.0f} s during "
                    f"'{what}'.", [r])

    def _describe(self, ranks):
        try:
            pings = [self.actors[r].ping.remote() for r in ranks]
            ray = _ray()
            ready, _ = ray.wait(pings, num_returns=len(pings), timeout=2.0)
            parts = []
            for r, p in zip(ranks, pings):
                if p in ready:
                    info = ray.get(p)
                    parts.append(f"{r}: progress {info['progress']}, in "
                                 f"{(info['current'] or ('idle',))[0]}")
                else:
                    parts.append(f"{r}: no answer to ping")
            return " (" + "; ".join(parts) + ")"
        except Exception:
            return ""

    # -- collectives -------------------------------------------------------------
    def node_ids(self):
        """The Ray node id of every rank, in rank order."""
        return [i["node_id"] for i in self.infos]

    def plan_collective(self, size, dtype="float32", transport="auto", timeout=300.0,
                        **net):
        """``make_plan`` for where the ranks run (``net``: ``port_range``,
        ``interface``); the group remembers the plans' shared-memory names
        and unlinks any left at :meth:`shutdown`."""
        plans = make_plan(self.node_ids(), size, dtype, transport,
                          hosts=[i["ip"] for i in self.infos], timeout=timeout, **net)
        self.shm_names.update(p["shm_name"] for p in plans if p["local_world"] > 1)
        return plans

    def setup_collective(self, size, dtype="float32", transport="auto", timeout=300.0,
                         **net):
        """Forms the replicas' collective group: plans it from where they run,
        has each rank open its endpoint (``open_collective(plan)`` returns a
        tcp address or None), then hands every rank the ring's addresses
        (``connect_collective(addresses)``). Returns the plans."""
        plans = self.plan_collective(size, dtype, transport, timeout, **net)
        addrs = self.execute("open_collective", per_rank=[(p,) for p in plans],
                             timeout=timeout)
        ring = sorted((p["ring_index"], a) for p, a in zip(plans, addrs) if a is not None)
        self.execute("connect_collective", [a for _, a in ring], timeout=timeout)
        return plans

    # -- lifecycle ---------------------------------------------------------------
    def kill(self, rank):
        """Kills one actor (failure injection in tests)."""
        _ray().kill(self.actors[rank], no_restart=True)

    def shutdown(self, graceful=True, grace=1.0):
        """Closes and kills every actor, removes the placement group and any
        shared-memory name a group of this one left behind; idempotent.

        Args:
            graceful: first ask every idle actor to ``close()`` its worker
                object (collectives, sockets), waiting at most ``grace``
                seconds; busy or dead actors are simply killed.
            grace: seconds, see ``graceful``.
        """
        _LIVE.discard(self)
        ray = _ray()
        if not ray.is_initialized():
            self._unlink_shm()
            return
        if graceful and self.actors:
            try:
                refs = [a.release.remote() for a in self.actors]
                ray.wait(refs, num_returns=len(refs), timeout=grace)
            except Exception:  # noqa: BLE001 - a dead actor: killed below
                pass
        for a in self.actors:
            try:
                ray.kill(a, no_restart=True)
            except Exception:
                pass
        self.actors = []
        if self.pg is not None:
            try:
                remove_placement_group(self.pg)
            except Exception:
                pass
            self.pg = None
        self._unlink_shm()

    def _unlink_shm(self):
        # A rank 0 killed before every rank attached leaves the name behind;
        # the actors are dead now, so nobody will attach any more. (Names on
        # other nodes go with their creator's resource tracker.)
        for name in self.shm_names:
            unlink_segment(name)
        self.shm_names = set()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()
