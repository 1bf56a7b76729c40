"""The numpy-style ops added to ``kerasflow.ops`` and ``kerasflow.ops.numpy``
beyond the backend's: one import point for their modules."""

from kerasflow.ops.numpy_array import *  # noqa: F403
from kerasflow.ops.numpy_index import *  # noqa: F403
from kerasflow.ops.numpy_math import *  # noqa: F403
from kerasflow.ops.numpy_products import *  # noqa: F403
from kerasflow.ops.numpy_stats import *  # noqa: F403
from kerasflow.ops import (
    numpy_array, numpy_index, numpy_math, numpy_products, numpy_stats,
)

from kerasflow.ops.linalg_more import slogdet  # noqa: E402  (numpy.linalg's)

NUMPY_NAMES = sorted([n for m in (numpy_array, numpy_index, numpy_math, numpy_products,
                                     numpy_stats)
                      for n in m.__all__] + ["slogdet"])
__all__ = list(NUMPY_NAMES)
