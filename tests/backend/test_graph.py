"""The graph as data: names, static shapes, Variables, pickling, the eager path,
and ``gradients`` on graph structure (unconnected inputs, grad_ys, fan-out)."""

from __future__ import annotations

import itertools
import pickle
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from kerasflow import backend as K

_fresh = itertools.count(int(time.time() * 1e6))


# -- names -------------------------------------------------------------------------
def test_name_scope_prefixes_and_unique_names():
    x = K.placeholder("float32", (2,), name="in")
    with K.name_scope("block_a"):
        a = K.add(x, 1.0)
        b = K.add(x, 1.0)
        with K.name_scope("inner"):
            c = K.exp(x)
    d = K.exp(x)
    assert a.node.name.startswith("block_a/Add")
    assert b.node.name.startswith("block_a/Add_")
    assert a.node.name != b.node.name
    assert c.node.name.startswith("block_a/inner/Exp")
    assert not d.node.name.startswith("block_a")
    assert a.name == f"{a.node.name}:0"


def test_names_are_unique_per_scope_and_counted():
    scope = f"uniq_{next(_fresh)}"  # a scope no other test has used
    with K.name_scope(scope):
        first = K.placeholder("float32", (), name="p")
        second = K.placeholder("float32", (), name="p")
        third = K.placeholder("float32", (), name="p")
    assert first.node.name == f"{scope}/p"
    assert second.node.name == f"{scope}/p_1"
    assert third.node.name == f"{scope}/p_2"


def test_variable_name_and_repr():
    v = K.Variable(np.zeros((2, 3)), name="kernel_for_repr")
    assert v.name.startswith("kernel_for_repr")
    assert "shape=(2, 3)" in repr(v) and "float32" in repr(v)


# -- static shapes and dtypes -------------------------------------------------------
def test_static_shape_inference():
    x = K.placeholder("float32", (None, 3, 4))
    assert K.sum(x, axis=1).shape == (None, 4)
    assert K.sum(x, axis=(0, -1), keepdims=True).shape == (1, 3, 1)
    assert K.transpose(x, (2, 0, 1)).shape == (4, None, 3)
    assert K.reshape(x, (-1, 12)).shape == (None, 12)
    assert x[:, 1:, None].shape == (None, 2, 1, 4)
    assert x[..., ::2].shape == (None, 3, 2)
    assert K.matmul(x, K.placeholder("float32", (4, 5))).shape == (None, 3, 5)
    assert K.concatenate([x, x], axis=1).shape == (None, 6, 4)
    assert K.gather(x, np.array([[0, 1]]), axis=2).shape == (None, 3, 1, 2)
    assert (x + K.placeholder("float32", (4,))).shape == (None, 3, 4)
    assert K.greater(x, 0.0).dtype == np.bool_
    assert (x * 2).dtype == np.float32  # a Python number takes the tensor's dtype


def test_variable_dtype_defaults_to_floatx(float64):
    assert K.Variable(1.0).dtype == np.float64
    assert K.Variable(np.zeros(2, np.float32)).dtype == np.float64
    assert K.Variable(np.zeros(2, np.int32)).dtype == np.int32
    assert K.Variable(np.zeros(2), dtype="float16").dtype == np.float16


def test_variable_callable_initializer_needs_shape():
    v = K.Variable(lambda shape, dtype: np.full(shape, 2.0, dtype), shape=(2, 2))
    np.testing.assert_array_equal(v.numpy(), [[2.0, 2.0], [2.0, 2.0]])
    with pytest.raises(ValueError, match="needs shape="):
        K.Variable(lambda shape, dtype: np.zeros(shape), name="w")


# -- Variables ---------------------------------------------------------------------
def test_variable_assign_eager():
    v = K.Variable(np.array([1.0, 2.0, 3.0]), name="v")
    v.assign([4.0, 5.0, 6.0])
    np.testing.assert_array_equal(v.numpy(), [4.0, 5.0, 6.0])
    v.assign_add(1.5)
    np.testing.assert_array_equal(v.numpy(), [5.5, 6.5, 7.5])
    v.assign_sub(np.array([0.5, 0.5, 1.5]))
    np.testing.assert_array_equal(v.numpy(), [5.0, 6.0, 6.0])
    snapshot = v.numpy()
    v.assign_add(1.0)
    np.testing.assert_array_equal(snapshot, [5.0, 6.0, 6.0])  # numpy() is a copy
    with pytest.raises(ValueError, match=r"shape \(3,\).*shape \(4,\)"):
        v.assign(np.zeros(4))


def test_variable_assign_symbolic():
    v = K.Variable(np.array([1.0, 2.0]), name="v")
    x = K.placeholder("float32", (2,))
    set_op, add_op, sub_op = v.assign(x * 2.0), v.assign_add(x), v.assign_sub(x)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])  # nothing ran yet
    sess = K.Session()
    np.testing.assert_array_equal(sess.run(set_op, {x: [1.0, 3.0]}), [2.0, 6.0])
    np.testing.assert_array_equal(sess.run(add_op, {x: [1.0, 1.0]}), [3.0, 7.0])
    np.testing.assert_array_equal(sess.run(sub_op, {x: [3.0, 3.0]}), [0.0, 4.0])
    np.testing.assert_array_equal(v.numpy(), [0.0, 4.0])
    with pytest.raises(ValueError, match=r"\(2,\).*\(3,\)"):
        v.assign(K.placeholder("float32", (3,)))


def test_assign_broadcasts_a_scalar():
    v = K.Variable(np.ones((2, 2)))
    K.Session().run(K.assign(v, K.constant(7.0)))
    np.testing.assert_array_equal(v.numpy(), np.full((2, 2), 7.0))


def test_group_runs_all_and_returns_none():
    a, b = K.Variable(1.0), K.Variable(2.0)
    op = K.group(a.assign_add(K.constant(1.0)), [b.assign(K.constant(5.0))])
    assert K.Session().run(op) is None
    assert float(a.numpy()) == 2.0 and float(b.numpy()) == 5.0
    assert K.Session().run(K.global_variables_initializer()) is None
    assert float(a.numpy()) == 2.0


# -- pickling ----------------------------------------------------------------------
def test_pickled_graph_reruns_with_same_result():
    x = K.placeholder("float32", (None, 3), name="x")
    w = K.Variable(np.arange(6.0).reshape(3, 2), name="w")
    b = K.Variable(np.array([0.5, -0.5]), name="b")
    h = K.relu(K.matmul(x, w) + b)
    y = K.sum(K.softmax(h) * K.dropout(h, 0.5, seed=3), axis=-1)
    (gw,) = K.gradients(K.mean(y), w)
    feed = np.array([[1.0, -2.0, 0.5], [0.3, 0.2, 0.1]], np.float32)
    expected = K.Function([x], [y, gw])(feed)

    x2, y2, gw2, w2 = pickle.loads(pickle.dumps((x, y, gw, w)))
    assert w2 is not w and w2.name == w.name
    np.testing.assert_array_equal(w2.numpy(), w.numpy())
    got = K.Function([x2], [y2, gw2])(feed)
    np.testing.assert_allclose(got[0], expected[0])
    np.testing.assert_allclose(got[1], expected[1])
    # The copy's Variables are its own: changing one leaves the other alone.
    w2.assign(np.zeros((3, 2)))
    assert w.numpy().sum() == 15.0


def test_pickled_train_step_updates_its_own_variable():
    x = K.placeholder("float32", (None,))
    w = K.Variable(1.0)
    loss = K.mean(K.square(x * w - 2.0 * x))
    (g,) = K.gradients(loss, w)
    train = w.assign_sub(0.1 * g)
    x2, loss2, train2 = pickle.loads(pickle.dumps((x, loss, train)))
    step = K.Function([x2], loss2, updates=[train2])
    losses = [float(step(np.array([1.0, 2.0]))) for _ in range(3)]
    assert losses[0] == pytest.approx(2.5)
    assert losses[2] < losses[1] < losses[0]
    assert float(w.numpy()) == 1.0  # the original is untouched


def test_pickled_graph_compiles_in_a_fresh_process(tmp_path):
    # Split and concatenate's gradient use ops registered on first use; a process
    # that only unpickles the graph (a Ray actor) must still find them.
    x = K.placeholder("float32", (2, 3), name="x")
    w = K.Variable(np.arange(9.0).reshape(3, 3), name="w")
    a, b = K.split(K.concatenate([K.matmul(x, w), x], axis=1), [2, 4], axis=1)
    (g,) = K.gradients(K.sum(a) * K.sum(b), w)
    feed = np.array([[1.0, 0.0, 2.0], [0.5, -1.0, 1.0]], np.float32)
    expected = K.Function([x], g)(feed)
    blob = tmp_path / "graph.pkl"
    blob.write_bytes(pickle.dumps((x, g, feed)))
    script = (
        "import pickle, sys, numpy as np\n"
        "import kerasflow.backend as K\n"
        "x, g, feed = pickle.loads(open(sys.argv[1], 'rb').read())\n"
        "np.save(sys.argv[2], K.Function([x], g)(feed))\n"
    )
    out = tmp_path / "out.npy"
    subprocess.run([sys.executable, "-c", script, str(blob), str(out)], check=True,
                   cwd=Path(__file__).resolve().parents[2], timeout=120)
    np.testing.assert_allclose(np.load(out), expected)


# -- eager path --------------------------------------------------------------------
def test_eager_ops_take_and_return_arrays():
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    out = K.matmul(a, a)
    assert isinstance(out, np.ndarray) and not K.is_symbolic(out)
    np.testing.assert_array_equal(out, a @ a)
    np.testing.assert_array_equal(K.sum(a, axis=0), [4.0, 6.0])
    np.testing.assert_array_equal(K.transpose(a), a.T)
    np.testing.assert_array_equal(K.gather(a, [1, 1, 0]), a[[1, 1, 0]])
    np.testing.assert_allclose(K.softmax(np.zeros(4)), np.full(4, 0.25))
    assert K.add(a, 1).dtype == np.float32
    parts = K.split(np.arange(6.0), 3)
    assert [p.tolist() for p in parts] == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]


def test_eager_and_graph_agree_on_dtypes():
    x = K.placeholder("float32", (2,))
    assert K.add([1.0, 2.0], 1.0).dtype == K.add(K.constant([1.0, 2.0]), 1.0).dtype
    assert K.add([1.0, 2.0], 1.0).dtype == np.float32
    assert K.add([1, 2], 1).dtype == np.int64
    assert K.exp(np.array([0.0])).dtype == np.float64  # arrays keep their dtype
    assert (x + [1.0, 2.0]).dtype == np.float32


def test_eager_random_is_stateless_with_a_seed():
    a = K.random_uniform((3,), seed=5)
    np.testing.assert_array_equal(a, K.random_uniform((3,), seed=5))
    assert not np.array_equal(a, K.random_uniform((3,), seed=6))
    assert a.dtype == np.float32 and ((0 <= a) & (a < 1)).all()
    t = K.truncated_normal((1000,), stddev=2.0, seed=1)
    assert np.abs(t).max() <= 4.0


# -- gradients on graph structure ------------------------------------------------------
def test_gradients_none_for_unconnected():
    x, z = K.placeholder("float32", (2,)), K.placeholder("float32", (2,))
    y = K.sum(x * 3.0)
    gx, gz = K.gradients(y, [x, z])
    assert gz is None
    np.testing.assert_array_equal(K.Function([x], gx)(np.ones(2)), [3.0, 3.0])
    # Only through a non-differentiable op: stops quietly.
    assert K.gradients(K.cast(K.argmax(x), "float32"), x) == [None]


def test_gradients_sum_over_paths_and_multiple_ys():
    x = K.placeholder("float32", (2,))
    y1 = x * x          # d/dx = 2x
    y2 = K.sin(x) + x   # d/dx = cos(x) + 1
    (g,) = K.gradients([y1, y2], x)
    v = np.array([0.5, 2.0], np.float32)
    np.testing.assert_allclose(K.Function([x], g)(v), 2 * v + np.cos(v) + 1,
                               rtol=1e-6)


def test_gradients_grad_ys():
    x = K.placeholder("float32", (3,))
    gy = K.placeholder("float32", (3,))
    (g,) = K.gradients(x * x, x, grad_ys=gy)
    out = K.Function([x, gy], g)(np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 2.0]))
    np.testing.assert_array_equal(out, [2.0, 0.0, 12.0])
    (g2,) = K.gradients([x * 2.0], [x], grad_ys=[K.constant([1.0, 2.0, 3.0])])
    np.testing.assert_array_equal(K.Function([x], g2)(np.zeros(3)), [2.0, 4.0, 6.0])
    with pytest.raises(ValueError, match="expected 1, received 2"):
        K.gradients(x, x, grad_ys=[x, x])


def test_gradients_wrt_intermediate_and_variable():
    x = K.placeholder("float32", (2,))
    w = K.Variable(np.array([2.0, 3.0]))
    h = x * w
    gh, gw = K.gradients(K.sum(h * h), [h, w])
    f = K.Function([x], [gh, gw])
    got_h, got_w = f(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(got_h, [4.0, 12.0])   # 2h
    np.testing.assert_array_equal(got_w, [4.0, 24.0])   # 2h * x


def test_gradients_unbroadcast_with_unknown_batch_dim():
    # A (None, 3) placeholder fed with batch 1 broadcasts at run time only.
    x = K.placeholder("float32", (None, 3))
    y = K.placeholder("float32", (None, 3))
    gx, gy = K.gradients(K.sum(x * y), [x, y])
    f = K.Function([x, y], [gx, gy])
    out_x, out_y = f(np.ones((1, 3)), np.full((4, 3), 2.0))
    np.testing.assert_array_equal(out_x, np.full((1, 3), 8.0))
    np.testing.assert_array_equal(out_y, np.ones((4, 3)))


def test_gradients_rejects_arrays():
    with pytest.raises(TypeError, match="symbolic tensors"):
        K.gradients(np.ones(2), K.placeholder("float32", (2,)))


def test_integer_inputs_get_no_gradient():
    x = K.placeholder("int64", (3,))
    p = K.placeholder("float32", (3,))
    gx, gp = K.gradients(K.sum(K.cast(x, "float32") * p), [x, p])
    assert gx is None and gp is not None


@pytest.mark.parametrize("dtype,sum_dtype,mean_dtype", [
    ("int32", "int32", "float32"), ("bool", "int64", "float32"),
    ("float16", "float16", "float16"), ("float64", "float64", "float64"),
])
def test_reduction_dtypes_match_at_run_time(dtype, sum_dtype, mean_dtype):
    # The static dtype is what the run produces (numpy alone widens int32 sums).
    x = K.placeholder(dtype, (3,))
    value = np.array([1, 0, 1], dtype=dtype)
    for op, expected in ((K.sum, sum_dtype), (K.prod, sum_dtype),
                         (K.mean, mean_dtype), (K.max, dtype)):
        y = op(x)
        assert y.dtype == np.dtype(expected), op.__name__
        assert np.asarray(K.Function([x], y)(value)).dtype == y.dtype, op.__name__
        assert np.asarray(op(value)).dtype == y.dtype, op.__name__
    np.testing.assert_allclose(K.Function([x], K.mean(x))(value), 2.0 / 3.0,
                               rtol=1e-3)


@pytest.mark.parametrize("shape", [(None, None, 3), None, (None, 5, None)], ids=str)
def test_flatten_with_dims_known_only_at_run_time(shape):
    x = K.placeholder("float32", shape)
    y = K.flatten(x)
    assert y.shape == (None, None)
    (g,) = K.gradients(K.sum(y * K.constant(np.arange(15.0))), x)
    value = np.ones((2, 5, 3), np.float32)
    out, grad = K.Function([x], [y, g])(value)
    assert out.shape == (2, 15)
    np.testing.assert_array_equal(grad, np.tile(np.arange(15.0).reshape(5, 3),
                                                (2, 1, 1)))
    assert K.flatten(K.placeholder("float32", (None, 2, 3))).shape == (None, 6)
    assert K.flatten(np.ones((2, 3, 4))).shape == (2, 12)


def test_integer_division_gives_floatx_at_run_time():
    a = K.placeholder("int32", (2,))
    for y in (a / 2, 2 / a, K.divide(a, a)):
        assert y.dtype == np.float32
        assert K.Function([a], y)(np.array([1, 4])).dtype == np.float32
    np.testing.assert_array_equal(K.Function([a], a / 2)(np.array([1, 4])),
                                  [0.5, 2.0])
    assert K.divide(np.int32([1]), np.int32([2])).dtype == np.float32
    assert K.divide(1, 2).dtype == np.float32
    assert (a // 2).dtype == np.int32
