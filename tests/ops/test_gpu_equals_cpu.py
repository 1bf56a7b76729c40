"""The ops added for Keras 3's names on the GPU (cupy) equal the CPU
(numpy): forward values eagerly and in graphs, and gradients. Skipped without
cupy and a CUDA device (tests/conftest.py)."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("float64")]

R = np.random.RandomState(8)
A = R.randn(3, 4)
SPD = A[:, :3] @ A[:, :3].T + 3 * np.eye(3)
IMG = R.rand(2, 5, 6, 3)
INTS = R.randint(0, 9, (3, 4))

# name: (fn of tensors, inputs, differentiable)
CASES = {
    "tan": (kf.ops.tan, [A * 0.3], True),
    "arctan2": (kf.ops.arctan2, [A, A[::-1]], True),
    "erfinv": (lambda x: kf.ops.erfinv(x * 0.2), [A], True),
    "logaddexp": (kf.ops.logaddexp, [A, A * 2], True),
    "quantile": (lambda x: kf.ops.quantile(x, [0.2, 0.7], axis=1), [A], True),
    "kron": (kf.ops.kron, [A[:2, :2], A[1:, 2:]], True),
    "diagonal": (lambda x: kf.ops.diagonal(x, 1), [A], True),
    "cross": (kf.ops.cross, [A[:, :3], A[:, 1:]], True),
    "correlate": (lambda a, v: kf.ops.correlate(a, v, "full"), [A[0], A[1, :2]],
                  True),
    "nanstd": (kf.ops.nanstd, [A], True),
    "segment_sum": (lambda x: kf.ops.segment_sum(x, np.array([1, 0, 1]), 2), [A],
                    True),
    "scatter_update": (lambda x, u: kf.ops.scatter_update(
        x, np.array([[0, 1], [2, 3]]), u), [A, A[0, :2]], True),
    "sparsemax": (kf.ops.sparsemax, [A], True),
    "layer_normalization": (kf.ops.layer_normalization, [A], True),
    "conv_transpose": (lambda x: kf.ops.conv_transpose(
        x, np.ones((2, 2, 2, 3)), 2, "same"), [IMG], True),
    "adaptive_max_pool": (lambda x: kf.ops.adaptive_max_pool(x, (2, 3)), [IMG],
                          True),
    "unfold": (lambda x: kf.ops.unfold(x, 2), [IMG], True),
    "cholesky": (kf.ops.cholesky, [SPD], True),
    "eigh": (lambda a: kf.ops.eigh(a)[0], [SPD], True),
    "qr": (lambda a: kf.ops.qr(a)[1], [A.T.copy()], True),
    "svd": (lambda a: kf.ops.svd(a, compute_uv=False), [A], True),
    "slogdet": (lambda a: kf.ops.slogdet(a)[1], [SPD], True),
    "rgb_to_hsv": (kf.ops.image.rgb_to_hsv, [IMG], True),
    "affine_transform": (lambda x: kf.ops.image.affine_transform(
        x, np.array([1.1, 0.2, -0.4, 0.1, 0.9, 0.3, 0.0, 0.0]), fill_mode="wrap"),
        [IMG], True),
    "map_coordinates": (lambda x: kf.ops.image.map_coordinates(
        x, np.array([[0.3, 1.7, 2.2], [3.1, 0.4, 2.9]]), 1), [A], True),
    "gaussian_blur": (kf.ops.image.gaussian_blur, [IMG], True),
    "rfft": (lambda x: kf.ops.rfft(x)[1], [A], True),
    "stft": (lambda x: kf.ops.stft(x, 4, 2, 4)[0], [R.randn(2, 12)], True),
    "scan": (lambda x: kf.ops.scan(lambda c, v: (c * v + 1.0, c), x[0] * 0, x)[1],
             [A], True),
    "bitwise_and": (lambda x: kf.ops.bitwise_and(x, 5), [INTS], False),
    "isin": (lambda x: kf.ops.isin(x, np.array([1, 4, 7])), [INTS], False),
    "searchsorted": (lambda x: kf.ops.searchsorted(np.arange(9.0), x), [A * 3], False),
    "nanquantile": (lambda x: kf.ops.nanquantile(x, 0.3, axis=0), [A], False),
    "eig": (lambda a: kf.ops.eig(a)[0], [SPD], False),
    "lu_factor": (lambda a: kf.ops.lu_factor(a)[0], [A], False),
    "lstsq": (lambda a: kf.ops.lstsq(a, A[:, :2]), [A[:, :3].copy()], False),
    "segment_max": (lambda x: kf.ops.segment_max(x, np.array([1, 0, 1]), 2), [A],
                    False),
    "scatter_max": (lambda x: kf.ops.scatter_update(
        x, np.array([[0, 1], [0, 1]]), np.array([5.0, 7.0]), "max"), [A], False),
}


def _run(device, fn, inputs, differentiable):
    old = K.get_device()
    K.set_device(device)
    try:
        eager = fn(*[K.to_device(v) for v in inputs])
        phs = [K.placeholder(v.dtype.name, v.shape) for v in inputs]
        out = fn(*phs)
        fetch = [out]
        if differentiable:
            w = np.random.RandomState(9).uniform(-1.0, 1.0, size=out.shape)
            fetch += [g for g in K.gradients(K.sum(out * w), phs) if g is not None]
        values = K.Function(phs, fetch)(*inputs)
        return [np.asarray(K.to_numpy(eager))] + [np.asarray(K.to_numpy(v))
                                                   for v in values]
    finally:
        K.set_device(old)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gpu_equals_cpu(name):
    fn, inputs, differentiable = CASES[name]
    cpu = _run("cpu", fn, inputs, differentiable)
    gpu = _run("gpu", fn, inputs, differentiable)
    assert len(cpu) == len(gpu)
    for c, g in zip(cpu, gpu):
        np.testing.assert_allclose(g, c, rtol=1e-7, atol=1e-9, err_msg=name)
