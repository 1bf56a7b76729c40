"""A step as picklable graph data, and what goes in and out of it (layer
L2.5, below ``distribute/`` and ``models/``).

Modules, by job: ``batch`` (``BatchRef``, ``StepResult``, ``take_rows``),
``step`` (``TrainStep`` / ``EvalStep`` / ``PredictStep``, ``FlatLayout``),
``custom`` (steps traced from a model's own ``train_step`` / ``test_step``),
``replica_fn`` (the step ``strategy.run(fn)`` runs on replicas). Strategies
receive these objects; ``models/training.py`` builds them from a
``Model``. Internal: import the modules themselves.
"""

from __future__ import annotations

__all__: list[str] = []
