"""Re-export of the strategy base, which lives in ``kerasflow.distribute_lib``
(below ``models/``, as TF's ``distribute_lib`` sits below Keras)."""

from kerasflow.distribute_lib import (
    BatchRef, DefaultStrategy, ReduceOp, Strategy, get_strategy,
)

__all__ = ["BatchRef", "DefaultStrategy", "ReduceOp", "Strategy", "get_strategy"]
