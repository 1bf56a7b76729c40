"""All backend ops, by family; each module registers its kernels on import."""

from kerasflow.backend.ops.math import *  # noqa: F403
from kerasflow.backend.ops.elementwise import *  # noqa: F403
from kerasflow.backend.ops.reduction import *  # noqa: F403
from kerasflow.backend.ops.shape import *  # noqa: F403
from kerasflow.backend.ops.slicing import *  # noqa: F403
from kerasflow.backend.ops.linalg import *  # noqa: F403
from kerasflow.backend.ops.state import *  # noqa: F403
from kerasflow.backend.ops.random import *  # noqa: F403
from kerasflow.backend.ops.nn import *  # noqa: F403
from kerasflow.backend.ops.conv import *  # noqa: F403
from kerasflow.backend.ops.checks import *  # noqa: F403
from kerasflow.backend.ops.conv_extra import *  # noqa: F403
from kerasflow.backend.ops.embedding import *  # noqa: F403
from kerasflow.backend.ops.normalization import *  # noqa: F403
from kerasflow.backend.ops.scan import *  # noqa: F403
from kerasflow.backend.ops import (  # noqa: F401
    checks, conv, conv_extra, elementwise, embedding, linalg, math, nn, normalization, random,
    reduction, scan, shape, slicing, state,
)
from kerasflow.backend.ops.math import __all__ as _m
from kerasflow.backend.ops.elementwise import __all__ as _el
from kerasflow.backend.ops.reduction import __all__ as _r
from kerasflow.backend.ops.shape import __all__ as _s
from kerasflow.backend.ops.slicing import __all__ as _sl
from kerasflow.backend.ops.linalg import __all__ as _l
from kerasflow.backend.ops.state import __all__ as _st
from kerasflow.backend.ops.random import __all__ as _rn
from kerasflow.backend.ops.nn import __all__ as _nn
from kerasflow.backend.ops.conv import __all__ as _cv
from kerasflow.backend.ops.checks import __all__ as _ck
from kerasflow.backend.ops.conv_extra import __all__ as _cx
from kerasflow.backend.ops.embedding import __all__ as _em
from kerasflow.backend.ops.normalization import __all__ as _bn
from kerasflow.backend.ops.scan import __all__ as _sc

__all__ = [*_m, *_el, *_r, *_s, *_sl, *_l, *_st, *_rn, *_nn, *_cv, *_ck, *_cx, *_em, *_bn,
           *_sc]
