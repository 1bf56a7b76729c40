"""``kerasflow.ops``: Keras 3's ``keras.ops`` namespace on the graph backend,
with its sub-namespaces ``nn``, ``numpy``, ``linalg`` and ``image``.

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

from kerasflow.ops import image, linalg, nn, numpy  # noqa: E402, F401  (sub-namespaces)
from kerasflow.ops.numpy import *  # noqa: F403, E402
from kerasflow.ops.numpy import __all__ as _numpy_all  # noqa: E402

from kerasflow.ops.linalg import *  # noqa: F403, E402
from kerasflow.ops.linalg import __all__ as _linalg_all  # noqa: E402

from kerasflow.ops.control_flow import *  # noqa: F403, E402
from kerasflow.ops.control_flow import __all__ as _control  # noqa: E402

from kerasflow.ops.signal import *  # noqa: F403, E402
from kerasflow.ops.signal import __all__ as _signal  # noqa: E402

# ops.nn names that ops lacks (Keras exports them in both); existing ones stay.
_nn_only = sorted(set(nn.__all__) - set(globals()))
globals().update({_n: getattr(nn, _n) for _n in _nn_only})
# Where Keras' signature differs from the backend op's, keras.ops.X is
# keras.ops.nn.X: gelu's default is the tanh approximation, leaky_relu takes
# ``negative_slope``, ctc_loss takes Keras' argument names.
from kerasflow.ops.nn import ctc_loss, gelu, leaky_relu  # noqa: E402, F401

__all__ = sorted(set(_ops_all) | set(_keras_all) | set(_numpy_all) | set(_nn_only)
                 | set(_linalg_all) | set(_control) | set(_signal)
                 | {"image", "linalg", "nn", "numpy"})
