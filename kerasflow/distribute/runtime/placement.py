"""Placement arithmetic: the bundle a group of actors reserves, and whether a
cluster's nodes can ever hold it (Ray placement-group strategies ``PACK``,
``STRICT_PACK``, ``SPREAD``, ``STRICT_SPREAD``).

Pure functions of the alive nodes as ``worker_group.cluster_summary`` lists
them (``[(node_id, {"CPU": 4.0, "GPU": 0.0}), ...]``), so they run without
ray. Checking
the cluster's *total* resources first turns an impossible request into an
error at once, instead of a placement timeout.
"""

from __future__ import annotations

from kerasflow.distribute.runtime.errors import PlacementError

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
    (``(node_id, resources)`` pairs) under ``strategy``, whatever else runs
    there."""
    totals = [res for _, res in nodes]
    counted = {k: v for k, v in bundle.items() if k in _COUNTED and v}

    def holds(res, k):
        return all(res.get(key, 0) + 1e-9 >= v * k for key, v in counted.items())

    def fit(res):  # how many bundles one node can hold
        if not counted:
            return count
        return int(min((res.get(k, 0) + 1e-9) // v for k, v in counted.items()))

    if strategy == "STRICT_SPREAD":
        ok = sum(holds(r, 1) for r in totals) >= count
    elif strategy == "STRICT_PACK":
        ok = any(holds(r, count) for r in totals)
    else:
        ok = sum(fit(r) for r in totals) >= count
    if not ok:
        raise PlacementError(
            f"Cannot place {num_workers} {name}s: requested {count} bundle(s) of "
            f"{bundle} ({strategy}). The cluster has {describe_nodes(nodes)}.")


def describe_nodes(nodes) -> str:
    """``"2 node(s): [CPU=4]; [CPU=2, GPU=1]"`` for error messages."""
    if not nodes:
        return "no alive nodes"
    parts = [", ".join(f"{k}={v:g}" for k, v in sorted(res.items())) or "no CPU/GPU"
             for _, res in nodes]
    return f"{len(nodes)} node(s): " + "; ".join(f"[{p}]" for p in parts)
