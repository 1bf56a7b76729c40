"""DropoutMask: keep rate, scaling, seeds, and the fused kernel equal to numpy's."""

import numpy as np
import pytest

import kerasflow.backend as K
from kerasflow.backend import fusion, jit
from kerasflow.backend.ops import dropout_mask as D


def _numpy_mask(x, rate, seed):
    return D._dropout_mask(np, x, rate=rate, seed=seed,
                           rng=np.random.default_rng(seed))


def test_hash_stream_first_values_are_fixed():
    # The stream is part of the op's contract (saved runs replay it): pinned.
    bits = D._hash_bits(np, 4, 0, 0)
    assert bits.dtype == np.uint32
    np.testing.assert_array_equal(bits, [0, 2926543089, 71125540, 2547806519])
    np.testing.assert_array_equal(D._hash_bits(np, 3, 1, 2),
                                  [3405767568, 3893269270, 3157731170])
    assert len(set(D._hash_bits(np, 1 << 16, 12345, 678).tolist())) == 1 << 16


@pytest.mark.parametrize("rate", [0.1, 0.25, 0.5, 0.9])
def test_keep_rate_and_scale(rate):
    x = np.zeros((200, 500), "float32")
    m = _numpy_mask(x, rate, seed=3)
    assert m.shape == x.shape and m.dtype == np.float32
    assert set(np.unique(m).tolist()) == {0.0, np.float32(1 / (1 - rate))}
    keep = (m != 0).mean()
    # 1e5 Bernoulli draws: 5 standard deviations of the mean.
    assert abs(keep - (1 - rate)) < 5 * np.sqrt(rate * (1 - rate) / m.size)
    # Neighbours are independent: P(both kept) = keep^2.
    flat = m.reshape(-1) != 0
    both = (flat[1:] & flat[:-1]).mean()
    assert abs(both - (1 - rate) ** 2) < 5 * np.sqrt((1 - rate) ** 2 / m.size)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size", [4097, (64, 70, 33)])
def test_fused_kernel_equals_numpy_kernel(dtype, size):
    if jit.numba_module() is None:
        pytest.skip("numba not importable")
    x = np.ones(size, dtype)
    fused = D._fused_factory(np, {"rng": np.random.default_rng(9), "rate": 0.3,
                                  "seed": 9})
    a, b = fused(x), _numpy_mask(x, 0.3, seed=9)
    assert a.dtype == b.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(a, b)


def test_compiled_draws_anew_per_run_and_replays_per_function():
    t = K.placeholder("float32", (128, 64))
    y = K.dropout(t, 0.5, seed=11)
    v = np.ones((128, 64), "float32")
    f = K.Function([t], [y])
    a, b = f(v)[0], f(v)[0]
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(K.Function([t], [y])(v)[0], a)
    # Saved generator states replay the next mask (replica recovery).
    state = f.rng_state()
    c = f(v)[0]
    f.set_rng_state(state)
    np.testing.assert_array_equal(f(v)[0], c)


def test_fused_and_unfused_plans_draw_the_same_masks():
    t = K.placeholder("float32", (64, 128))
    y = K.dropout(t, 0.25, seed=5)
    v = np.random.default_rng(0).standard_normal((64, 128)).astype("float32")
    try:
        fusion.set_fusion(False)
        off = K.Function([t], [y])(v)[0]
    finally:
        fusion.set_fusion(None)
    on = K.Function([t], [y])(v)[0]
    np.testing.assert_array_equal(on, off)
    np.testing.assert_allclose(on, np.where(on != 0, v / 0.75, 0), rtol=1e-6)


def test_eager_mask_with_seed_is_stateless():
    x = np.ones((10, 10), "float32")
    np.testing.assert_array_equal(D.dropout_mask(x, 0.5, seed=1),
                                  D.dropout_mask(x, 0.5, seed=1))
    assert not np.array_equal(D.dropout_mask(x, 0.5, seed=1),
                              D.dropout_mask(x, 0.5, seed=2))


def test_rate_outside_open_interval_raises():
    with pytest.raises(ValueError, match="rate=1.0"):
        D.dropout_mask(np.ones(3), 1.0)
    with pytest.raises(ValueError, match="rate=0"):
        D.dropout_mask(np.ones(3), 0)


@pytest.mark.parametrize("rows", [8, 256])  # numpy kernel; numba kernel
def test_dropout_apply_node_gives_values_and_gradient_of_the_unfused_ops(rows):
    t = K.placeholder("float32", (rows, 64))
    y = K.dropout(t, 0.3, seed=21)
    w = np.random.default_rng(1).standard_normal((rows, 64)).astype("float32")
    (g,) = K.gradients(K.sum(y * w), t)
    v = np.random.default_rng(2).standard_normal((rows, 64)).astype("float32")
    got = {}
    for on in (True, False):
        fusion.set_fusion(on)
        try:
            f = K.Function([t], [y, g])
            assert any(n.op == "DropoutApply" for n in f._lines) == on
            got[on] = f(v)
        finally:
            fusion.set_fusion(None)
    for a, b in zip(got[True], got[False]):
        np.testing.assert_array_equal(a, b)
    y1, g1 = got[True]
    keep = y1 != 0
    np.testing.assert_allclose(g1, np.where(keep, w / np.float32(0.7), 0), rtol=1e-6)
