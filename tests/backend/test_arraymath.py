"""cumsum, cumprod, sort, argsort, top_k, tril/triu, flip, roll, repeat,
take_along_axis, var/std/moments, linspace, einsum, erf, expm1, ceil, isinf,
nan_to_num, any/all: forward values against Keras 3's ``keras.ops`` (numpy
backend) and gradients against central differences in float64."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow.backend.ops.arraymath import _pair_plan
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy

RNG = np.random.RandomState(0)
X = RNG.randn(3, 4, 5)
M = RNG.randn(4, 4)


@pytest.mark.parametrize("name,args,kwargs", [
    ("cumsum", (X,), {"axis": 1}), ("cumsum", (X,), {}),
    ("cumprod", (X,), {"axis": -1}), ("sort", (X,), {"axis": 1}),
    ("argsort", (X,), {"axis": -1}), ("tril", (M,), {"k": 1}),
    ("triu", (X,), {"k": -1}), ("flip", (X,), {"axis": (0, 2)}),
    ("roll", (X,), {"shift": 2, "axis": 1}), ("roll", (X,), {"shift": -3}),
    ("repeat", (X, 3), {"axis": 1}), ("repeat", (M, 2), {}),
    ("var", (X,), {"axis": (0, 2), "keepdims": True}), ("std", (X,), {"axis": 1}),
    ("linspace", (0.0, 2.0, 7), {}), ("erf", (X,), {}), ("expm1", (X,), {}),
    ("ceil", (X,), {}), ("isinf", (np.array([1.0, np.inf, -np.inf]),), {}),
    ("nan_to_num", (np.array([1.0, np.nan, np.inf, -np.inf]),), {"nan": 2.0}),
    ("any", (X > 1.5,), {"axis": 1}), ("all", (X > -2.5,), {}),
    ("einsum", ("ij,jk->ik", M, M.T), {}), ("einsum", ("bij,bjk->bik", X,
                                                       X.transpose(0, 2, 1)), {}),
    ("einsum", ("ij->ji", M), {}), ("einsum", ("i,i", M[0], M[1]), {}),
])
def test_forward_equals_keras(name, args, kwargs):
    keras = keras_numpy()
    ours = getattr(kf.ops, name)(*args, **kwargs)
    theirs = getattr(keras.ops, name)(*args, **kwargs)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6,
                               atol=1e-12)


def test_top_k_and_moments_equal_keras():
    keras = keras_numpy()
    values, idx = kf.ops.top_k(X, 3)
    kv, ki = keras.ops.top_k(X, 3)
    np.testing.assert_allclose(values, np.asarray(kv))
    np.testing.assert_array_equal(idx, np.asarray(ki))
    for a, b in zip(kf.ops.moments(X, axes=[0, 1]), keras.ops.moments(X, axes=[0, 1])):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-6)
    idx = np.argsort(X, axis=2)[..., :2]
    np.testing.assert_allclose(kf.ops.take_along_axis(X, idx, axis=2),
                               np.asarray(keras.ops.take_along_axis(X, idx, axis=2)))


@pytest.mark.parametrize("fn", [
    lambda x: K.cumsum(x, axis=1), lambda x: K.cumsum(x),
    lambda x: K.cumprod(x, axis=2), lambda x: K.sort(x, axis=1),
    lambda x: K.top_k(x, 2)[0], lambda x: K.tril(x, 1), lambda x: K.triu(x),
    lambda x: K.flip(x, 1), lambda x: K.roll(x, 2, axis=2),
    lambda x: K.repeat(x, 2, axis=1), lambda x: K.repeat(x, 3),
    lambda x: K.std(x, axis=1), lambda x: K.var(x), lambda x: K.erf(x),
    lambda x: K.expm1(x), lambda x: K.nan_to_num(x),
    lambda x: K.take_along_axis(x, np.argsort(X, axis=2)[..., ::2], axis=2),
    lambda x: K.einsum("bij,bkj->bik", x, x), lambda x: K.einsum("bij->j", x),
])
def test_gradients(float64, fn):
    check_gradients(fn, [X + 0.1])  # +0.1: no exact zero for cumprod


def test_einsum_gradient_in_both_operands(float64):
    check_gradients(lambda a, b: K.einsum("ij,jk->ik", a, b),
                    [RNG.randn(3, 4), RNG.randn(4, 2)])


def test_einsum_symbolic_batch_and_errors():
    ph = K.placeholder("float64", (None, 4))
    out = K.einsum("bi,ij->bj", ph, M)
    assert out.shape == (None, 4)
    np.testing.assert_allclose(K.Function([ph], [out])(M)[0], M @ M)
    with pytest.raises(ValueError, match=r"'\.\.\.'"):
        K.einsum("...i,i", X, X[0, 0])


PAIR_EQUATIONS = [
    ("abcd,aecd->acbe", (3, 5, 2, 4), (3, 6, 2, 4)),   # attention scores
    ("acbe,aecd->abcd", (3, 2, 5, 6), (3, 6, 2, 4)),   # attention combine
    ("ij,jk->ik", (3, 4), (4, 5)), ("ij,jk->ki", (3, 4), (4, 5)),
    ("bij,bjk->bik", (2, 3, 4), (2, 4, 5)), ("abc,cde->abde", (2, 3, 4), (4, 5, 6)),
    ("ab,cd->abcd", (2, 3), (4, 5)), ("ab,ab->a", (3, 4), (3, 4)),
    ("ab,ab->", (3, 4), (3, 4)), ("abc,bd->ad", (2, 3, 4), (3, 5)),
    ("ijk,ik->j", (2, 3, 4), (2, 4)), ("a,a->a", (4,), (4,)),
    ("ba,ca->abc", (3, 4), (5, 4)),
    # the output's last index from the first operand: operands swapped
    ("aecd,abcd->acbe", (3, 6, 2, 4), (3, 5, 2, 4)), ("abd,bc->adc", (2, 3, 4), (3, 5)),
    # a swapped group that is not adjacent in the output: product transposed back
    ("abd,bc->acd", (2, 3, 4), (3, 5)), ("xay,by->xba", (2, 3, 4), (5, 4)),
    # batch indices between the free ones, several indices per group
    ("bxhy,bhyz->xbhz", (2, 3, 4, 5), (2, 4, 5, 6)), ("pqrs,rst->pqt", (2, 3, 4, 5), (4, 5, 6)),
    # numpy's own path: a repeated index
    ("ii,ij->j", (3, 3), (3, 4)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("eq,sa,sb", PAIR_EQUATIONS, ids=[e[0] for e in PAIR_EQUATIONS])
def test_two_operand_einsum_as_one_gemm_equals_numpy(eq, sa, sb, dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(sa).astype(dtype)
    b = rng.standard_normal(sb).astype(dtype)
    got = K.einsum(eq, K.constant(a), K.constant(b))
    fn = K.Function([], [got])
    (value,) = fn()
    want = np.einsum(eq, a, b)
    assert value.shape == want.shape and value.dtype == want.dtype
    assert value.flags.c_contiguous
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(value, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("eq,sa,sb", PAIR_EQUATIONS[:-1], ids=[e[0] for e in PAIR_EQUATIONS[:-1]])
def test_two_operand_einsum_reads_strided_views(eq, sa, sb):
    # Operands that are every-other-element views (no unit stride anywhere):
    # BLAS cannot read them, so the plan copies; reversed views likewise.
    rng = np.random.default_rng(1)
    a = rng.standard_normal(tuple(2 * d for d in sa))[(slice(None, None, 2),) * len(sa)]
    b = rng.standard_normal(sb)[(slice(None, None, -1),) * len(sb)]
    plan = _pair_plan(eq, a, b)
    got = plan(np, a, b)
    np.testing.assert_allclose(got, np.einsum(eq, a, b), rtol=1e-12, atol=1e-12)
    assert got.flags.c_contiguous
