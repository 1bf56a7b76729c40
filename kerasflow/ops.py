"""``kerasflow.ops``: Keras 3's ``keras.ops`` namespace on the graph backend.

Every backend op (``matmul``, ``relu``, ``mean``, ...) plus Keras 3's array
creation and shape helpers (``zeros``, ``arange``, ``convert_to_tensor``,
``shape``, ``one_hot(x, num_classes)``). Ops run at once on arrays and add graph
nodes on symbolic tensors.
"""

from kerasflow.backend.keras_ops import *  # noqa: F403
from kerasflow.backend.keras_ops import __all__ as _keras_all
from kerasflow.backend.ops import *  # noqa: F403
from kerasflow.backend.ops import __all__ as _ops_all
from kerasflow.backend.keras_ops import one_hot, shape  # noqa: F401  (Keras' forms)

__all__ = sorted(set(_ops_all) | set(_keras_all))
