"""Adam's bias-corrected step size as one node (``kernels.adam_step_size``)."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow.optimizers import kernels


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_step_size_is_bitwise_the_op_by_op_graph(dtype):
    it = K.Variable(0, dtype="int64")
    lr = K.Variable(np.array(3e-4, dtype), dtype=dtype)
    t = K.cast(K.add(it, 1), dtype)
    composite = K.multiply(lr, K.divide(K.sqrt(K.subtract(1.0, K.power(0.999, t))),
                                        K.subtract(1.0, K.power(0.9, t))))
    one = kernels.adam_step_size(lr, it, beta_1=0.9, beta_2=0.999)
    assert one.dtype == np.dtype(dtype) and one.shape == ()
    fn = K.Function([], [composite, one])
    for step in (0, 1, 2, 9, 99, 999, 123456):
        it.assign(step)
        want, got = fn()
        assert np.asarray(got).dtype == np.dtype(dtype)
        assert got == want, (step, got, want)
    it.assign(0)
    # t = 1: lr * sqrt(0.001) / 0.1, checkable by hand; float32 loses ~1e-5
    # relative in 1 - 0.999 (0.999 is not a float32).
    np.testing.assert_allclose(fn()[1], 3e-4 * np.sqrt(0.001) / 0.1,
                               rtol=1e-4 if dtype == "float32" else 1e-12)


def test_step_size_rejects_a_non_float_learning_rate():
    it = K.Variable(0, dtype="int64")
    with pytest.raises(TypeError, match="float learning rate"):
        kernels.adam_step_size(K.Variable(1, dtype="int64"), it, beta_1=0.9,
                               beta_2=0.999)
