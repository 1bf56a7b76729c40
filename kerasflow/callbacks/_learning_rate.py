"""Reading and writing the optimizer's learning rate for LR callbacks."""

from __future__ import annotations

from typing import Any


def get_learning_rate(model: Any, caller: str) -> float:
    """``model.optimizer.learning_rate`` as a Python float."""
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None or not hasattr(optimizer, "learning_rate"):
        raise TypeError(
            f"{caller} needs a compiled model whose optimizer has a "
            f"`learning_rate` attribute. Received: optimizer={optimizer!r}."
        )
    return float(optimizer.learning_rate)


def set_learning_rate(model: Any, value: float, caller: str) -> None:
    """Sets ``model.optimizer.learning_rate``; explains the schedule case."""
    try:
        model.optimizer.learning_rate = value
    except TypeError as error:
        raise TypeError(
            f"{caller} cannot set the learning rate of an optimizer that uses a "
            "learning-rate schedule; give the optimizer a float learning_rate "
            f"instead. Received: {error}"
        ) from error
