"""Distribution strategies (L4): the Ray strategies build on the base in
``kerasflow.distribute_lib``, re-exported here with ``DefaultStrategy``."""

from kerasflow.strategies.base import (
    BatchRef, DefaultStrategy, ReduceOp, Strategy, get_strategy,
)

__all__ = ["BatchRef", "DefaultStrategy", "ReduceOp", "Strategy", "get_strategy"]
