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
from kerasflow.backend.ops.pooling import *  # noqa: F403
from kerasflow.backend.ops.checks import *  # noqa: F403
from kerasflow.backend.ops.embedding import *  # noqa: F403
from kerasflow.backend.ops.normalization import *  # noqa: F403
from kerasflow.backend.ops.attention import *  # noqa: F403
from kerasflow.backend.ops.scan import *  # noqa: F403
from kerasflow.backend.ops import scan_grad  # noqa: F401  (registers RNNLoopGrad)
from kerasflow.backend.ops import batch_norm_fast  # noqa: F401  (fused batch norm)
from kerasflow.backend.ops import conv_fast  # noqa: F401  (fused conv kernels)
from kerasflow.backend.ops import pool_relu_grad  # noqa: F401  (fused conv block grad)
from kerasflow.backend.ops import conv_bias_relu  # noqa: F401  (conv + bias + ReLU)
from kerasflow.backend.ops import rnn_fast  # noqa: F401  (fused LSTM kernels)
from kerasflow.backend.ops import xent_fast  # noqa: F401  (fused loss kernels)
from kerasflow.backend.ops import sum_fast  # noqa: F401  (fused bias-gradient sum)
from kerasflow.backend.ops import layer_norm_fast  # noqa: F401  (fused layer norm)
from kerasflow.backend.ops.ctc import *  # noqa: F403
from kerasflow.backend.ops.arraymath import *  # noqa: F403
from kerasflow.backend.ops import npcall  # noqa: F401  (numpy-call ops)
from kerasflow.backend.ops import (  # noqa: F401
    arraymath, attention, checks, conv, ctc, elementwise, embedding, linalg, math,
    nn, normalization, pooling, random, reduction, scan, shape, slicing, state,
)

__all__ = [name for module in (
    math, elementwise, reduction, shape, slicing, linalg, state, random, nn, conv,
    pooling, checks, embedding, normalization, attention, scan, ctc, arraymath,
) for name in module.__all__]
