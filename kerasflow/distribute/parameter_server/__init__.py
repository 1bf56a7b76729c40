"""Parameter servers (Li et al., OSDI 2014): ``strategy``
(``ParameterServerStrategy``), ``coordinator`` and ``scheduler`` (the
driver's loop with sync / bounded-delay / async consistency), ``shard`` (a
PS shard actor), ``worker`` (a PS worker), ``partitioners`` (variable
partitioning), ``stragglers`` (test hooks for slow workers). Internal: the
public names are in ``kf.distribute``."""

from __future__ import annotations

__all__: list[str] = []
