"""Cluster descriptions: how many workers and parameter servers a
``TF_CONFIG`` (``{"cluster": {"chief": [...], "worker": [...], "ps": [...]},
"task": {...}}``, TF's multi-worker convention) or a cluster resolver names.

Only the counts are used: Ray places the actors, so the addresses are not.
No ray import.
"""

from __future__ import annotations

import json

__all__ = ["load_tf_config", "parse_ps_tf_config", "parse_tf_config",
           "resolver_workers"]


def load_tf_config(tf_config) -> dict:
    """A ``TF_CONFIG`` given as a JSON string or a dict, as a dict.

    Raises:
        ValueError: not valid JSON (naming the position).
        TypeError: neither a str nor a dict.
    """
    if isinstance(tf_config, str):
        try:
            tf_config = json.loads(tf_config)
        except json.JSONDecodeError as e:
            raise ValueError(f"TF_CONFIG must be valid JSON. Received: {tf_config!r} "
                             f"({e.msg} at position {e.pos})") from None
    if not isinstance(tf_config, dict):
        raise TypeError(f"TF_CONFIG must be a JSON object or dict. "
                        f"Received: {type(tf_config).__name__}")
    return tf_config


def _job_counts(tf_config, roles):
    """``({role: number of tasks}, cluster dict)`` of a TF_CONFIG."""
    tf_config = load_tf_config(tf_config)
    cluster = tf_config.get("cluster")
    if cluster is None:
        raise ValueError(f"TF_CONFIG expects a 'cluster' object. "
                         f"Received: {tf_config!r}")
    if not isinstance(cluster, dict):
        raise TypeError(f"TF_CONFIG expects a 'cluster' object. "
                        f"Received: {tf_config!r}")
    counts = {}
    for role in roles:
        tasks = cluster.get(role, [])
        if not isinstance(tasks, (list, tuple)):
            raise TypeError(f"TF_CONFIG's cluster['{role}'] must be a list of "
                            f"addresses. Received: {tasks!r}")
        counts[role] = len(tasks)
    return counts, cluster


def parse_tf_config(tf_config) -> int:
    """Number of workers of a TF_CONFIG dict or JSON string: its ``chief`` and
    ``worker`` tasks (TF's rule: the chief is a worker too).

    Raises:
        ValueError: not valid JSON, no ``cluster``, or no worker/chief task.
        TypeError: neither a str nor a dict, or a job that is not a list.
    """
    counts, cluster = _job_counts(tf_config, ("chief", "worker"))
    if sum(counts.values()) < 1:
        raise ValueError(f"TF_CONFIG's cluster lists no 'worker' or 'chief' task. "
                         f"Received: {cluster!r}")
    return sum(counts.values())


def parse_ps_tf_config(tf_config):
    """``(num_ps, num_workers, cluster)`` of a TF_CONFIG dict or JSON string
    with ``ps``, ``worker`` and optional ``chief`` jobs (the chief is the
    driver: it is not a worker actor).

    Raises:
        ValueError: malformed JSON, no ``cluster``, no ``ps`` or no ``worker``
            task.
        TypeError: not a str/dict, or a job that is not a list of addresses.
    """
    counts, cluster = _job_counts(tf_config, ("ps", "worker", "chief"))
    for role in ("ps", "worker"):
        if counts[role] < 1:
            raise ValueError(f"ParameterServerStrategy expects TF_CONFIG's cluster to "
                             f"list at least one '{role}' task. Received: {cluster!r}")
    return counts["ps"], counts["worker"], cluster


def resolver_workers(resolver) -> int:
    """Number of workers of a cluster resolver: a TF_CONFIG dict/JSON, or an
    object with ``num_workers`` or ``cluster_spec()``.

    Raises:
        TypeError: none of those.
    """
    if isinstance(resolver, (dict, str)):
        return parse_tf_config(resolver)
    if hasattr(resolver, "num_workers"):
        return int(resolver.num_workers)
    if hasattr(resolver, "cluster_spec"):
        spec = resolver.cluster_spec()
        spec = spec.as_dict() if hasattr(spec, "as_dict") else spec
        return parse_tf_config({"cluster": dict(spec)})
    raise TypeError(f"cluster_resolver must be a TF_CONFIG dict/JSON or have "
                    f"cluster_spec()/num_workers. Received: {resolver!r}")
