"""``kerasflow.ops.numpy``: Keras 3's ``keras.ops.numpy``, the numpy-style ops
of ``kerasflow.ops`` under their sub-namespace (the same functions)."""

from kerasflow.backend.keras_ops import *  # noqa: F403
from kerasflow.backend.keras_ops import __all__ as _keras_all
from kerasflow.backend.ops import *  # noqa: F403
from kerasflow.backend.ops import __all__ as _ops_all
from kerasflow.backend.keras_ops import one_hot, shape  # noqa: F401  (Keras' forms)
from kerasflow.ops.numpy_more import *  # noqa: F403, E402
from kerasflow.ops.numpy_more import NUMPY_NAMES as _more_all  # noqa: E402

__all__ = sorted(set(_ops_all) | set(_keras_all) | set(_more_all))
