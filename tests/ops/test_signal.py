"""Fourier transforms, framing, distances and ``rearrange`` of
``kerasflow.ops`` against Keras 3 (numpy backend), eagerly and in graphs;
gradients of the DFT-matrix transforms checked numerically in float64."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from tests.backend.gradcheck import check_gradients
from tests.ops_oracle import assert_matches_keras

R = np.random.RandomState(7)
RE = R.randn(2, 3, 8).astype("float32")
IM = R.randn(2, 3, 8).astype("float32")
SIG = R.randn(2, 40).astype("float32")


def _pairs(name, x, kwargs=None, **kw):
    """Keras' complex ops take (real, imag) as one argument: graphs feed both."""
    assert_matches_keras(name, (x,), kwargs or {}, symbolic=False, **kw)


@pytest.mark.parametrize("name", ["fft", "fft2", "ifft2"])
def test_complex_transforms_equal_keras(name):
    _pairs(name, (RE, IM), rtol=1e-4, atol=1e-5)


def test_real_transforms_equal_keras():
    assert_matches_keras("rfft", (SIG,), rtol=1e-4, atol=1e-4)
    assert_matches_keras("rfft", (SIG,), {"fft_length": 16}, rtol=1e-4, atol=1e-4)
    assert_matches_keras("rfft", (SIG[:, :7],), {"fft_length": 12}, atol=1e-5)
    spec = kf.ops.rfft(SIG)
    _pairs("irfft", tuple(np.asarray(s) for s in spec), atol=1e-5)
    _pairs("irfft", tuple(np.asarray(s) for s in spec), {"fft_length": 30}, atol=1e-5)
    _pairs("irfft", (RE, IM), {"fft_length": 15}, atol=1e-5)


@pytest.mark.parametrize("kwargs", [
    {"sequence_length": 8, "sequence_stride": 4, "fft_length": 8},
    {"sequence_length": 6, "sequence_stride": 3, "fft_length": 10, "window": "hamming"},
    {"sequence_length": 8, "sequence_stride": 5, "fft_length": 8, "center": False,
     "window": None},
])
def test_stft_istft_equal_keras(kwargs):
    assert_matches_keras("stft", (SIG,), kwargs, rtol=1e-4, atol=1e-4)
    spec = tuple(np.asarray(s) for s in kf.ops.stft(SIG, **kwargs))
    _pairs("istft", spec, kwargs, rtol=1e-4, atol=1e-4)


def test_framing_distances_views_rearrange_equal_keras():
    assert_matches_keras("extract_sequences", (SIG, 8, 3))
    assert_matches_keras("cdist", (RE, IM[:, :2]), rtol=1e-5)
    z = RE + 1j * IM
    assert_matches_keras("view_as_real", (z,), symbolic=False)
    assert_matches_keras("view_as_complex", (np.stack([RE, IM], -1),),
                         symbolic=False)
    assert_matches_keras("polar", (np.abs(RE), IM), symbolic=False, namespace="ops.nn")
    img = R.randn(2, 4, 6, 3).astype("float32")
    for pattern, lengths in [("b h w c -> b c h w", {}),
                             ("b (h h1) (w w1) c -> b h w (c h1 w1)", {"h1": 2,
                                                                       "w1": 2}),
                             ("b h w c -> (b h) w c", {}),
                             ("b h (w w2) c -> b (h w2) w c", {"w2": 3})]:
        assert_matches_keras("rearrange", (img, pattern), lengths)


GRADS = [
    ("fft", lambda a, b: kf.ops.fft((a, b)), [R.randn(2, 5), R.randn(2, 5)]),
    ("ifft2", lambda a, b: kf.ops.ifft2((a, b)), [R.randn(3, 4), R.randn(3, 4)]),
    ("rfft", lambda a: kf.ops.rfft(a, 6), [R.randn(2, 5)]),
    ("irfft", lambda a, b: kf.ops.irfft((a, b), 7), [R.randn(4), R.randn(4)]),
    ("stft", lambda a: kf.ops.stft(a, 4, 2, 4), [R.randn(12)]),
    ("istft", lambda a, b: kf.ops.istft((a, b), 4, 2, 4), [R.randn(7, 3),
                                                          R.randn(7, 3)]),
    ("cdist", kf.ops.cdist, [R.randn(3, 2), R.randn(4, 2)]),
    ("rearrange", lambda a: kf.ops.rearrange(a, "(a b) c -> c (b a)", b=2),
     [R.randn(4, 3)]),
]


@pytest.mark.parametrize("name,fn,inputs", GRADS, ids=[g[0] for g in GRADS])
def test_gradients(float64, name, fn, inputs):
    check_gradients(fn, inputs)
