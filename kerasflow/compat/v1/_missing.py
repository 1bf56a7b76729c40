"""Module ``__getattr__`` hooks: a TF1 name kerasflow lacks raises
``NotImplementedError`` naming it, not an ``AttributeError`` from deep inside."""

from __future__ import annotations

import types

__all__ = ["missing_attribute", "Namespace"]


def missing_attribute(prefix: str, namespace: dict):
    """A module ``__getattr__`` for the TF1 namespace ``prefix`` ("tf.nn").

    Dunder and private names raise ``AttributeError`` as usual (import
    machinery, ``hasattr`` probes); any other missing name raises
    ``NotImplementedError`` naming ``prefix.name``.
    """

    def __getattr__(name: str):
        if name.startswith("_"):
            raise AttributeError(f"module '{namespace.get('__name__')}' has no "
                                 f"attribute '{name}'")
        raise NotImplementedError(
            f"{prefix}.{name} is not provided by kerasflow.compat.v1 (kerasflow "
            f"maps TF1 names onto its own backend; this one has no counterpart "
            f"yet). Use an equivalent from the names kerasflow.compat.v1 offers, "
            f"or file an issue naming {prefix}.{name}."
        )

    return __getattr__


class Namespace(types.ModuleType):
    """A TF1 sub-namespace (``tf.math``) whose missing names raise
    ``NotImplementedError``."""

    def __init__(self, prefix: str, attrs: dict):
        super().__init__(prefix)
        self._prefix = prefix
        self.__dict__.update(attrs)
        self.__all__ = sorted(attrs)

    def __getattr__(self, name: str):
        return missing_attribute(self._prefix, {"__name__": self._prefix})(name)
