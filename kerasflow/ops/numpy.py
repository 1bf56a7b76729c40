"""``kerasflow.ops.numpy``: Keras 3's ``keras.ops.numpy``, the numpy-style ops
of ``kerasflow.ops`` under their sub-namespace (the same functions): the
backend's ops and Keras' array helpers, and the numpy-style ops composed in
``numpy_array``, ``numpy_index``, ``numpy_math``, ``numpy_products`` and
``numpy_stats`` (with numpy.linalg's ``slogdet``)."""

from __future__ import annotations

from kerasflow.backend.keras_ops import *  # noqa: F403
from kerasflow.backend.keras_ops import __all__ as _keras_all
from kerasflow.backend.ops import *  # noqa: F403
from kerasflow.backend.ops import __all__ as _ops_all
from kerasflow.backend.keras_ops import one_hot, shape  # noqa: F401  (Keras' forms)
from kerasflow.ops import (
    numpy_array, numpy_index, numpy_math, numpy_products, numpy_stats,
)
from kerasflow.ops.numpy_array import *  # noqa: F403
from kerasflow.ops.numpy_index import *  # noqa: F403
from kerasflow.ops.numpy_math import *  # noqa: F403
from kerasflow.ops.numpy_products import *  # noqa: F403
from kerasflow.ops.numpy_stats import *  # noqa: F403
from kerasflow.ops.linalg import slogdet  # noqa: F401  (numpy.linalg's)

__all__ = sorted(set(_ops_all) | set(_keras_all) | {"slogdet"} | {
    n for m in (numpy_array, numpy_index, numpy_math, numpy_products, numpy_stats)
    for n in m.__all__})
