"""Ray, in one place: the only kerasflow module that imports ray (lazily).

It connects to or starts Ray (:func:`init_ray`: with no cluster to join, a
quiet local Ray -- no dashboard, logs under a temp folder, listening on
loopback only, Ray's token authentication on (:func:`secure_ray_env`) --
stopped at exit), hosts replica objects in actors (``_Host``, used by
``worker_group.WorkerGroup``), starts and finds the named actors through
which TF1 cluster tasks meet (``tf1/server.py``), and waits on remote results
with deadlines. Other modules reach Ray only through the functions exported
here (``ray_module()`` for ``worker_group``).
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import sys
import tempfile
import time
import weakref

from kerasflow.distribute.job_secret import insecure_allowed, new_secret, ray_token
from kerasflow.distribute.runtime.placement import bundle_for, check_fits

__all__ = ["LIVE_GROUPS", "actor_class", "actor_runtime_env", "check_placement", "cluster_summary",
           "create_named_actor", "disconnect_ray", "find_named_actor", "get_all",
           "in_bundle", "init_ray", "kill_actor", "placement_group", "ray_module",
           "remote_call", "remove_placement_group", "secure_ray_env", "shutdown_ray",
           "wait_any"]

_STARTED = {"by_us": False, "job_env": False}
_LIVE = LIVE_GROUPS = weakref.WeakSet()  # groups to shut down at exit


_TOKEN_SOURCES = ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


def _configured_token() -> bool:
    return any(os.environ.get(k) for k in _TOKEN_SOURCES) or os.path.exists(
        os.path.expanduser("~/.ray/auth_token"))


def secure_ray_env(token=None, local=False):
    """Ray's token authentication for this process and every Ray process it
    starts (Ray >= 2.52: ``RAY_AUTH_MODE=token``; Ray reads it when imported,
    so this runs before the first ``import ray``).

    Args:
        token: the cluster's token (e.g. ``job_secret.ray_token(secret)`` for
            a TF1 cluster's tasks); None keeps a token already configured
            (``$RAY_AUTH_TOKEN``, ``$RAY_AUTH_TOKEN_PATH``,
            ``~/.ray/auth_token``), else makes a fresh one for a local cluster
            this process starts.
        local: the cluster will live on this host only: its servers then
            listen on loopback (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, Ray's
            single-host mode).

    Raises:
        RuntimeError: ``RAY_AUTH_MODE=disabled``, or ray imported before
            token auth was set, without ``KERASFLOW_ALLOW_INSECURE=1``.
    """
    insecure = insecure_allowed()
    mode = os.environ.get("RAY_AUTH_MODE")
    if mode == "disabled":
        if insecure:
            return
        raise RuntimeError(
            "kerasflow runs Ray with token authentication: expected RAY_AUTH_MODE "
            "unset or 'token'. Received: RAY_AUTH_MODE=disabled (set "
            "KERASFLOW_ALLOW_INSECURE=1 to run Ray without authentication on a "
            "closed network).")
    if token is not None:
        os.environ["RAY_AUTH_TOKEN"] = token
    if "ray" in sys.modules:
        if mode != "token" and not insecure:
            raise RuntimeError(
                "ray was imported before kerasflow could turn on its token "
                "authentication: expected RAY_AUTH_MODE=token when ray is first "
                "imported. Received: ray already imported with RAY_AUTH_MODE "
                f"{mode!r}. Import ray after starting the strategy, or export "
                "RAY_AUTH_MODE=token (and RAY_AUTH_TOKEN) before Python starts; "
                "KERASFLOW_ALLOW_INSECURE=1 runs without authentication.")
        return
    os.environ["RAY_AUTH_MODE"] = "token"
    if token is None and local and not _configured_token():
        os.environ["RAY_AUTH_TOKEN"] = ray_token(new_secret())
    if local:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


def _ray():
    try:
        import ray
        import ray.util.scheduling_strategies  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("Distributed strategies need Ray: "
                          "pip install 'kerasflow[distributed]'.") from e
    return ray


# The folder holding this copy of the kerasflow package.
_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def _pythonpath():
    return [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]


def _runtime_env(ship="pythonpath"):
    """Lets workers import this process's copy of kerasflow: on this machine
    through ``PYTHONPATH`` (workers start from Ray's pool, no upload); on a
    cluster by shipping the package (``py_modules``: Ray uploads it once per
    job and unpacks it on every node, whatever is installed there)."""
    if ship == "py_modules":  # the driver's other paths, not its kerasflow
        env = {"py_modules": [os.path.join(_ROOT, "kerasflow")],
               "excludes": ["__pycache__", "*.pyc"]}
        paths = [p for p in _pythonpath() if os.path.abspath(p) != _ROOT]
        if paths:
            env["env_vars"] = {"PYTHONPATH": os.pathsep.join(paths)}
        return env
    paths = dict.fromkeys([_ROOT] + _pythonpath())
    return {"env_vars": {"PYTHONPATH": os.pathsep.join(paths)}}


def actor_runtime_env():
    """None when workers already import this kerasflow (PYTHONPATH or the job's
    runtime env): an actor-level env would stop Ray reusing pooled workers."""
    return None if _STARTED["job_env"] or _ROOT in _pythonpath() else _runtime_env()


def init_ray(address=None, ship_code="auto", **kwargs):
    """Connects to a Ray cluster, or starts a quiet local one.

    Args:
        address: cluster address; default ``$RAY_ADDRESS``; ``"local"`` or
            neither: a new local Ray (no dashboard, logging at ERROR, logs
            under a fresh temp folder, listening on loopback only, token
            authentication with a fresh token), shut down at interpreter exit.
        ship_code: how the workers get this kerasflow: ``"py_modules"`` (the
            package is uploaded with the job's runtime environment, Ray's
            ``py_modules``, and every node imports that copy), ``"pythonpath"``
            (this process's path, for workers on this machine), or
            ``"auto"`` (``$KERASFLOW_SHIP_CODE``, else ``py_modules`` when
            joining a cluster by address and ``pythonpath`` for a local Ray).
            Ignored when ``runtime_env`` is given.
        **kwargs: passed to ``ray.init`` (e.g. ``num_cpus``, ``runtime_env``).

    Returns:
        True when this call started Ray, False when it was already running.

    Raises:
        ValueError: an unknown ``ship_code``.
        RuntimeError: Ray cannot run with token authentication here (see
            :func:`secure_ray_env`).
    """
    address = address or os.environ.get("RAY_ADDRESS")
    if address == "local":  # Ray's name for "start a new local cluster"
        address = None
    if "ray" not in sys.modules or not _ray().is_initialized():
        secure_ray_env(local=not address)
    ray = _ray()
    if ray.is_initialized():
        return False
    ship = os.environ.get("KERASFLOW_SHIP_CODE", "auto") if ship_code == "auto" \
        else ship_code
    if ship == "auto":
        ship = "py_modules" if address else "pythonpath"
    if ship not in ("py_modules", "pythonpath"):
        raise ValueError(f"init_ray expects ship_code in ('auto', 'py_modules', "
                         f"'pythonpath'). Received: {ship!r}")
    opts = dict(logging_level=logging.ERROR, log_to_driver=False,
                runtime_env=_runtime_env(ship))
    opts.update(kwargs)
    _STARTED["job_env"] = "runtime_env" not in kwargs
    if address:
        ray.init(address=address, **opts)
        return False
    opts.setdefault("include_dashboard", False)
    opts.setdefault("_temp_dir", tempfile.mkdtemp(prefix="kf-ray-"))
    ray.init(address="local", **opts)  # never a stranger's cluster found on disk
    _STARTED["by_us"] = True
    atexit.register(shutdown_ray)
    return True


def _shutdown_groups():
    for group in list(_LIVE):
        group.shutdown()


atexit.register(_shutdown_groups)


def shutdown_ray():
    """Stops Ray if :func:`init_ray` started it (no-op otherwise)."""
    _shutdown_groups()
    if _STARTED["by_us"]:
        _STARTED["by_us"] = False
        ray = _ray()
        if ray.is_initialized():
            ray.shutdown()


def disconnect_ray():
    """Disconnects this process from Ray (stopping it only if
    :func:`init_ray` started it here)."""
    _shutdown_groups()
    _STARTED["by_us"] = False
    ray = _ray()
    if ray.is_initialized():
        ray.shutdown()


def cluster_summary():
    """``[(node_id, {"CPU": .., "GPU": ..}), ...]`` of the alive nodes (Ray
    started or joined by :func:`init_ray` first)."""
    init_ray()
    ray = _ray()
    return [(n["NodeID"], {k: v for k, v in n["Resources"].items()
                           if k in ("CPU", "GPU")})
            for n in ray.nodes() if n.get("Alive")]


class _Host:
    """Actor body: builds the worker object and runs its methods; ``ping``
    runs in the ``ctl`` concurrency group, beside a possibly stuck call."""

    def __init__(self, factory, rank, world, args):
        self.rank, self.started = rank, time.time()
        self.current = None
        self.obj = factory(rank, world, *args)

    def info(self):
        ray = _ray()
        return dict(rank=self.rank, pid=os.getpid(),
                    node_id=ray.get_runtime_context().get_node_id(),
                    ip=ray.util.get_node_ip_address(), gpu_ids=ray.get_gpu_ids())

    def call(self, method, *args):
        self.current = (method, time.time())
        try:
            return getattr(self.obj, method)(*args)
        finally:
            self.current = None

    def ping(self):
        return dict(progress=getattr(self.obj, "progress", None), current=self.current)

    def release(self):
        """Calls the worker object's ``close()`` (collectives, shared memory),
        if it has one, before the actor is killed."""
        close = getattr(self.obj, "close", None)
        if close is not None:
            close()
        return True


def ray_module():
    """The ray module (imported on first use)."""
    return _ray()


def placement_group(bundles, strategy):
    """``ray.util.placement_group(bundles, strategy=strategy)``."""
    _ray()
    from ray.util.placement_group import placement_group as make

    return make(bundles, strategy=strategy)


def remove_placement_group(pg):
    _ray()
    from ray.util.placement_group import remove_placement_group as remove

    remove(pg)


def in_bundle(pg, index):
    """The scheduling strategy placing an actor in bundle ``index`` of ``pg``."""
    return _ray().util.scheduling_strategies.PlacementGroupSchedulingStrategy(
        pg, placement_group_bundle_index=index)


@functools.cache
def actor_class():
    ray = _ray()
    cls = type("KerasflowReplica", (_Host,), {
        "ping": ray.method(concurrency_group="ctl")(_Host.ping)})
    return ray.remote(concurrency_groups={"ctl": 1})(cls)


def wait_any(refs, timeout):
    """``(ready, pending)``: the refs among ``refs`` finished within
    ``timeout`` seconds (at least one when any finishes in time)."""
    return _ray().wait(list(refs), num_returns=1, timeout=max(0.0, timeout))


def check_placement(num_workers, num_cpus=0.5, num_gpus=0, strategy="PACK",
                    workers_per_bundle=1, name="replica", extra=None):
    """The bundle of ``workers_per_bundle`` actors that :class:`WorkerGroup`
    asks for; raises :class:`PlacementError` at once when the cluster's total
    resources cannot hold the group (no actor is started; the placement
    timeout covers busy clusters)."""
    per = int(workers_per_bundle)
    big = {k: v * per for k, v in bundle_for(num_cpus, num_gpus, extra).items()}
    check_fits(cluster_summary(), big, num_workers // per, strategy, num_workers,
               name)
    return big


# -- named actors (TF1 cluster tasks meeting in one Ray namespace) -------------
def create_named_actor(cls, name, namespace, args=(), num_cpus=0.0):
    """Starts ``cls(*args)`` as the named actor ``name`` in ``namespace`` on
    this process's node, owned by this process (it dies with it).

    Raises:
        ValueError: another live actor already has that name.
    """
    ray = _ray()
    here = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(
        ray.get_runtime_context().get_node_id(), soft=False)
    opts = dict(name=name, namespace=namespace, num_cpus=num_cpus, max_restarts=0,
                scheduling_strategy=here)
    if actor_runtime_env() is not None:
        opts["runtime_env"] = actor_runtime_env()
    return ray.remote(cls).options(**opts).remote(*args)


def find_named_actor(name, namespace):
    """The handle of the live named actor, or None."""
    try:
        return _ray().get_actor(name, namespace=namespace)
    except ValueError:
        return None


def remote_call(handle, method, *args):
    """Starts ``handle.method(*args)``; returns its ref."""
    return getattr(handle, method).remote(*args)


def get_all(refs, timeout, names):
    """Results of ``refs`` within ``timeout`` seconds (``names[i]`` says
    whose ``refs[i]`` is, for errors).

    Raises:
        TimeoutError: naming the unfinished ones. RuntimeError: one died
            (naming it); its own exception when its method raised.
    """
    ray = _ray()
    refs = list(refs)
    ready, pending = ray.wait(refs, num_returns=len(refs), timeout=max(0.0, timeout))
    if pending:
        late = [names[refs.index(p)] for p in pending]
        raise TimeoutError(f"{', '.join(late)} did not answer within {timeout:g} s.")
    out = []
    for ref, who in zip(refs, names):
        try:
            out.append(ray.get(ref))
        except ray.exceptions.RayActorError as e:
            raise RuntimeError(f"{who} died ({type(e).__name__}).") from e
        except ray.exceptions.RayTaskError as e:
            raise (e.cause if getattr(e, "cause", None) is not None else e) from None
    return out


def kill_actor(handle):
    """Kills an actor; a dead one is ignored."""
    try:
        _ray().kill(handle, no_restart=True)
    except Exception:
        pass
