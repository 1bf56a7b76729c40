"""Distribution strategies (L4). This package holds the base ``Strategy`` and the
in-process ``DefaultStrategy`` that every ``fit`` goes through."""

from kerasflow.strategies.base import DefaultStrategy, Strategy, get_strategy

__all__ = ["Strategy", "DefaultStrategy", "get_strategy"]
