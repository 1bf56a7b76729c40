"""``kerasflow.ops.linalg`` against Keras 3's ``keras.ops.linalg`` (numpy
backend; Keras needs scipy for a few), eagerly and (``assert_matches_keras``)
in graphs: inv, det, solve, norm, the factorizations (cholesky, eigh, qr,
svd, lu_factor, ...), solvers and ``slogdet``/``logdet``; gradients of inv,
det, solve, norm, cholesky, eigh, solve_triangular, cholesky_inverse,
slogdet, qr and the singular values checked numerically in float64; ``jvp``
against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy
from tests.ops_oracle import assert_matches_keras

RNG = np.random.RandomState(0)
A = RNG.randn(2, 3, 3) + 3 * np.eye(3)
RHS = RNG.randn(2, 3, 2)
R = np.random.RandomState(4)
M = R.randn(2, 4, 4).astype("float32")
SPD = (M @ np.swapaxes(M, -1, -2) + 4 * np.eye(4)).astype("float32")
TALL = R.randn(5, 3).astype("float32")
B = R.randn(2, 4, 2).astype("float32")
LOW = np.tril(M) + 3 * np.eye(4, dtype="float32")


@pytest.mark.parametrize("name,args", [("inv", (A,)), ("det", (A,)),
                                       ("solve", (A, RHS))])
def test_inv_det_solve_equal_keras(name, args):
    keras = keras_numpy()
    np.testing.assert_allclose(getattr(kf.ops.linalg, name)(*args),
                               np.asarray(getattr(keras.ops.linalg, name)(*args)),
                               rtol=1e-6)


@pytest.mark.parametrize("kwargs", [{}, {"ord": 1, "axis": -1}, {"ord": np.inf,
                                                                  "axis": 1},
                                    {"axis": (1, 2)}, {"ord": 3, "axis": 0,
                                                       "keepdims": True}])
def test_norm_equals_keras(kwargs):
    keras = keras_numpy()
    x = A if "axis" in kwargs else A[0]
    np.testing.assert_allclose(kf.ops.linalg.norm(x, **kwargs),
                               np.asarray(keras.ops.linalg.norm(x, **kwargs)),
                               rtol=1e-6)


@pytest.mark.parametrize("fn", [K.inv, K.det, lambda a: K.solve(a, RHS),
                                lambda a: kf.ops.linalg.norm(a, axis=(1, 2))])
def test_linalg_gradients(float64, fn):
    check_gradients(fn, [A])


@pytest.mark.parametrize("name,args,kwargs", [
    ("cholesky", (SPD,), {}), ("cholesky", (SPD[0],), {"upper": True}),
    ("cholesky_inverse", (LOW[0],), {}), ("cholesky_inverse", (LOW[0].T.copy(),),
                                       {"upper": True}),
    ("solve_triangular", (LOW, B), {"lower": True}),
    ("solve_triangular", (np.swapaxes(LOW, -1, -2).copy(), B), {}),
    ("solve_triangular", (LOW, B[..., 0]), {"lower": True}),
    ("solve_triangular", (LOW[0], B[0]), {"lower": True}),
    ("qr", (TALL,), {}), ("qr", (M,), {"mode": "complete"}),
    ("svd", (TALL,), {"full_matrices": False}), ("svd", (M,), {"compute_uv": False}),
    ("lstsq", (TALL, TALL[:, :2] + 1), {}), ("pinv", (TALL,), {}),
    ("matrix_rank", (M,), {}), ("matrix_rank", (TALL @ TALL.T,), {}),
    ("eigh", (SPD,), {}), ("lu_factor", (M,), {}), ("lu_factor", (TALL,), {}),
    ("lu_factor", (TALL.T.copy(),), {}),
    ("norm", (M,), {"ord": 1, "axis": (1, 2)}),
    ("norm", (M,), {"ord": -np.inf, "axis": (2, 1), "keepdims": True}),
    ("norm", (M,), {"ord": "nuc", "axis": (1, 2)}),
    ("norm", (M[0],), {"ord": 2}), ("norm", (M[0],), {"ord": -2, "keepdims": True}),
])
def test_linalg_equals_keras(name, args, kwargs):
    # Sign conventions of qr/svd/eigh vectors are LAPACK's on both sides.
    assert_matches_keras(name, args, kwargs, namespace="ops.linalg", rtol=1e-4,
                         atol=1e-5)


def test_eig_slogdet_logdet_equal_keras():
    assert_matches_keras("eig", (M[0],), symbolic=False, rtol=1e-4, atol=1e-5)
    assert_matches_keras("slogdet", (M,), namespace="ops.numpy", rtol=1e-5)
    assert_matches_keras("logdet", (SPD,), rtol=1e-5)


def test_svd_gradient_through_u_or_v_raises():
    a = K.placeholder("float64", (3, 2))
    with pytest.raises(NotImplementedError, match="singular values only"):
        K.gradients(kf.ops.sum(kf.ops.svd(a)[0]), [a])


def test_jvp_matches_finite_differences():
    x, t = np.array([0.3, -1.2, 2.0]), np.array([1.0, 0.5, -2.0])

    def f(v):
        return kf.ops.sin(v) * kf.ops.sum(v * v)

    out, tangent = kf.ops.linalg.jvp(f, (x,), (t,))
    eps = 1e-6
    numeric = (np.sin(x + eps * t) * np.sum((x + eps * t) ** 2)
               - np.sin(x - eps * t) * np.sum((x - eps * t) ** 2)) / (2 * eps)
    np.testing.assert_allclose(out, np.sin(x) * np.sum(x * x))
    np.testing.assert_allclose(tangent, numeric, rtol=1e-6)
    with pytest.raises(ValueError, match="concrete primals"):
        kf.ops.linalg.jvp(f, (kf.backend.placeholder("float64", (3,)),), (t,))


def _spd(a):
    return kf.ops.matmul(a, kf.ops.transpose(a)) + 3.0 * np.eye(3)


GRADS = [
    ("cholesky", lambda a: kf.ops.cholesky(_spd(a)), [R.randn(3, 3)]),
    ("eigh_values", lambda a: kf.ops.eigh(_spd(a))[0], [R.randn(3, 3)]),
    ("eigh_vectors", lambda a: kf.ops.abs(kf.ops.eigh(_spd(a))[1]),
     [R.randn(3, 3)]),
    ("solve_triangular", lambda a, b: kf.ops.solve_triangular(a, b, lower=True),
     [np.tril(R.randn(3, 3)) + 3 * np.eye(3), R.randn(3, 2)]),
    ("cholesky_inverse", kf.ops.cholesky_inverse,
     [np.tril(R.randn(3, 3)) + 3 * np.eye(3)]),
    ("slogdet", lambda a: kf.ops.slogdet(a)[1], [R.randn(2, 3, 3)]),
    ("norm_1", lambda a: kf.ops.linalg.norm(a, 1, (0, 1)), [R.randn(3, 4)]),
    ("qr_tall", lambda a: kf.ops.qr(a), [R.randn(2, 5, 3)]),
    ("qr_square_r", lambda a: kf.ops.qr(a, mode="complete")[1], [R.randn(3, 3)]),
    ("svd_values", lambda a: kf.ops.svd(a, compute_uv=False), [R.randn(2, 4, 3)]),
    ("norm_nuc", lambda a: kf.ops.linalg.norm(a, "nuc", (0, 1)), [R.randn(3, 4)]),
]


@pytest.mark.parametrize("name,fn,inputs", GRADS, ids=[g[0] for g in GRADS])
def test_gradients(float64, name, fn, inputs):
    check_gradients(fn, inputs, rtol=1e-4)
