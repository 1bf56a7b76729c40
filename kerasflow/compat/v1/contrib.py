"""``tf.contrib``: the TF 1.x contrib names kerasflow has counterparts for.

``tf.contrib.distribute`` (TF 1.12-1.14's home of the distribution strategies,
used with ``RunConfig(train_distribute=...)``): ``MirroredStrategy``,
``CollectiveAllReduceStrategy`` (kerasflow's ``MultiWorkerMirroredStrategy``)
and ``ParameterServerStrategy``, the objects of ``kerasflow.distribute``
(loaded on first use: they import ray). Other contrib names raise
``NotImplementedError`` naming them.
"""

from __future__ import annotations

import types

from kerasflow import distribute as _distribute
from kerasflow.compat.v1._missing import missing_attribute

__all__ = ["distribute"]

_ALIASES = {"MirroredStrategy": "MirroredStrategy",
            "CollectiveAllReduceStrategy": "MultiWorkerMirroredStrategy",
            "ParameterServerStrategy": "ParameterServerStrategy"}


class _Distribute(types.ModuleType):
    """``tf.contrib.distribute``: aliases of ``kerasflow.distribute`` classes."""

    def __init__(self):
        super().__init__("tf.contrib.distribute")
        self.__all__ = sorted(_ALIASES)

    def __getattr__(self, name):
        if name in _ALIASES:
            return getattr(_distribute, _ALIASES[name])
        return missing_attribute("tf.contrib.distribute",
                                 {"__name__": "tf.contrib.distribute"})(name)


distribute = _Distribute()
__getattr__ = missing_attribute("tf.contrib", globals())
