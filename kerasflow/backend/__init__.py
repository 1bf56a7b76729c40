"""kerasflow's graph backend (layer L0): tensors, ops, autodiff and execution.

TF1 names are importable from here directly, as TF1 users wrote ``tf.square``::

    from kerasflow.backend import placeholder, Variable, square, gradients, Session
"""

import numpy as np

from kerasflow.backend import graph_pickle  # noqa: F401  (installs graph pickling)
from kerasflow.backend import ops
from kerasflow.backend.host_memory import tune_allocator
from kerasflow.backend.array import (
    floatx, get_device, get_xp, gpu_available, set_device, set_floatx, to_device,
    to_numpy,
)
from kerasflow.backend.autodiff import gradients
from kerasflow.backend.function import Function, Session, function
from kerasflow.backend.fusion import fusion_enabled, set_fusion
from kerasflow.backend.graph import (
    SymbolicTensor, TensorSpec, constant, in_tracing, is_symbolic, name_scope,
    placeholder, reachable_variables, record_stateful, tracing, walk,
)
from kerasflow.backend.variables import (
    AutocastScope, Variable, assign_all, get_autocast_scope,
)
from kerasflow.backend.ops import *  # noqa: F403
from kerasflow.backend.keras_ops import *  # noqa: F403
from kerasflow.backend.keras_backend import (
    backend, clear_session, get_uid, is_float_dtype, is_int_dtype, is_keras_tensor,
    is_tensor, result_type, standardize_dtype, uid_scope,
)
from kerasflow.backend.keras_ops import __all__ as _keras_all
from kerasflow.backend.ops import __all__ as _ops_all
from kerasflow.backend.ops.shape import shape_of
from kerasflow.backend.registry import apply, get_op, register_gradient, register_op
from kerasflow.backend.tape import GradientTape
from kerasflow.backend.tape_array import TapeArray
from kerasflow.backend.tape_array import recording as tape_recording
from kerasflow.backend.tape_call import TapedCall, call_taped


def shape(x):
    """Keras 2 / TF1 ``K.shape``: a symbolic tensor's run-time shape as an
    int64 vector (``K.shape(z)[0]`` is the batch size when the graph runs);
    an array's shape as a tuple. Keras 3's static form is
    ``kerasflow.ops.shape``."""
    return shape_of(x) if is_symbolic(x) else tuple(np.shape(x))


__all__ = [
    "ops", "AutocastScope", "get_autocast_scope", "floatx", "set_floatx",
    "get_device", "set_device", "get_xp",
    "gpu_available", "to_device", "to_numpy", "gradients", "Function", "Session",
    "function", "SymbolicTensor", "TensorSpec", "Variable", "constant",
    "is_symbolic", "name_scope", "placeholder", "assign_all", "apply", "get_op",
    "register_gradient", "register_op", "tracing", "in_tracing",
    "record_stateful", "set_fusion",
    "walk", "reachable_variables", "GradientTape", "TapeArray", "TapedCall",
    "call_taped",
    "tape_recording",
    "fusion_enabled", "backend", "clear_session", "get_uid", "is_float_dtype",
    "is_int_dtype", "is_keras_tensor", "is_tensor", "result_type", "standardize_dtype",
    "uid_scope",
    *_ops_all, *_keras_all,
]

tune_allocator()  # freed step buffers stay mapped for the next step (host_memory)
