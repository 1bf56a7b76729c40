"""Ray in one place (the only importer of ray): ``ray`` (connecting,
actors, deadlines), ``worker_group`` (``WorkerGroup``: N actors in a
placement group, called with deadlines), ``placement`` (the arithmetic of
bundles), ``errors`` (``WorkerGroupError`` and its subclasses naming the
rank), ``shipping`` (moving arrays to the actors once). Internal."""

from __future__ import annotations

__all__: list[str] = []
