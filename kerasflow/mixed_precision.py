"""``keras.mixed_precision`` names (Keras 3): the dtype policy API under its
older names, and ``LossScaleOptimizer``. A layer under "mixed_float16" keeps
float32 variables and computes in float16 (see ``kerasflow.dtype_policies``).
"""

from __future__ import annotations

from kerasflow.dtype_policies import DTypePolicy, dtype_policy, set_dtype_policy
from kerasflow.optimizers import LossScaleOptimizer

Policy = DTypePolicy
global_policy = dtype_policy
set_global_policy = set_dtype_policy

__all__ = ["DTypePolicy", "LossScaleOptimizer", "Policy", "dtype_policy",
           "global_policy", "set_dtype_policy", "set_global_policy"]
