"""Placement arithmetic: the bundle a group of actors reserves, and whether a
cluster's nodes can ever hold it (Ray placement-group strategies ``PACK``,
``STRICT_PACK``, ``SPREAD``, ``STRICT_SPREAD``).

Pure functions of resource dicts (``{"CPU": 4.0, "GPU": 0.0}`` per node), so
they run without ray; ``worker_group`` feeds them the alive nodes. Checking
the cluster's *total* resources first turns an impossible request into an
error at once, instead of a placement timeout.
"""

from __future__ import annotations

from kerasflow.strategies.errors import PlacementError

__all__ = ["bundle_for", "check_fits", "describe_nodes"]

_COUNTED = ("CPU", "GPU")  # custom resources are not compared here


def bundle_for(num_cpus=0.5, num_gpus=0, extra=None) -> dict:
    """One actor's reservation: CPUs (fractions allowed), GPUs and custom
    resources; ``{"CPU": 0.01}`` when nothing is asked (a bundle must
    reserve something)."""
    bundle = {"CPU": float(num_cpus)} if num_cpus else {}
    if num_gpus:
        bundle["GPU"] = float(num_gpus)
    bundle.update(extra or {})
    return bundle or {"CPU": 0.01}


def check_fits(nodes, bundle, count, strategy, num_workers, name):
    """Raises :class:`PlacementError` when ``count`` bundles (each holding
    ``num_workers // count`` actors named ``name``) cannot fit on ``nodes``
    (resource dicts of the alive nodes) under ``strategy``, whatever else
    runs there."""
    counted = {k: v for k, v in bundle.items() if k in _COUNTED and v}

    def holds(res, k):
        return all(res.get(key, 0) + 1e-9 >= v * k for key, v in counted.items())

    def fit(res):  # how many bundles one node can hold
        if not counted:
            return count
        return int(min((res.get(k, 0) + 1e-9) // v for k, v in counted.items()))

    if strategy == "STRICT_SPREAD":
        ok = sum(holds(r, 1) for r in nodes) >= count
    elif strategy == "STRICT_PACK":
        ok = any(holds(r, count) for r in nodes)
    else:
        ok = sum(fit(r) for r in nodes) >= count
    if not ok:
        raise PlacementError(
            f"Cannot place {num_workers} {name}s: requested {count} bundle(s) of "
            f"{bundle} ({strategy}). The cluster has {describe_nodes(nodes)}.")


def describe_nodes(nodes) -> str:
    """``"2 node(s): [CPU=4]; [CPU=2, GPU=1]"`` for error messages."""
    if not nodes:
        return "no alive nodes"
    parts = [", ".join(f"{k}={v:g}" for k, v in sorted(res.items())) or "no CPU/GPU"
             for res in nodes]
    return f"{len(nodes)} node(s): " + "; ".join(f"[{p}]" for p in parts)
