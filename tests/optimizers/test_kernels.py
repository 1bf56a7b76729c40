"""Fused update kernels: one node per variable, no reallocation, never aliasing."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow import optimizers as O

FUSED = {O.SGD: "ApplyGradientDescent", O.Adam: "ApplyAdam",
         O.RMSprop: "ApplyRMSProp", O.Adagrad: "ApplyAdagrad"}


def _mlp_step(opt, sizes=(4, 8, 3)):
    x = K.placeholder("float32", (None, sizes[0]))
    rng = np.random.default_rng(0)
    params, h = [], x
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        w = K.Variable(rng.normal(size=(a, b)).astype("float32"), name=f"w{i}")
        bias = K.Variable(np.zeros(b, "float32"), name=f"b{i}")
        params += [w, bias]
        h = K.tanh(K.matmul(h, w) + bias)
    loss = K.mean(K.square(h))
    return K.Function([x], loss, opt.get_updates(loss, params)), params


@pytest.mark.parametrize("cls", list(FUSED), ids=[c.__name__ for c in FUSED])
def test_one_fused_node_per_variable_reusing_two_buffers(cls):
    step, params = _mlp_step(cls())
    # ``_lines`` lists a node again for each ``del`` line it is followed by.
    ops = [n.op for n in {id(n): n for n in step._lines}.values()]
    assert ops.count(FUSED[cls]) == len(params)
    assert not {"Assign", "AssignSub"} & set(ops)
    data = np.ones((5, 4), "float32")
    before = [p.numpy() for p in params]
    seen = [set() for _ in params]
    for _ in range(4):
        step(data)
        for ids, p in zip(seen, params):
            ids.add(id(p.value))
    # Double-buffered: two arrays per variable, swapped, never reallocated.
    assert [len(ids) for ids in seen] == [2] * len(params)
    assert all(not np.array_equal(b, p.numpy()) for b, p in zip(before, params))


def test_fetched_values_never_change_under_the_caller():
    w = K.Variable(np.zeros(3, "float32"))
    train_op = O.SGD(1.0).minimize(K.sum(w))
    sess = K.Session()
    fetched = sess.run(w)  # may alias w's buffer: the update must not write it
    view = w.value[1:]
    for _ in range(3):  # the spare buffer comes round again at steps 2 and 3
        sess.run(train_op)
    np.testing.assert_array_equal(fetched, [0, 0, 0])
    np.testing.assert_array_equal(view, [0, 0])
    np.testing.assert_array_equal(w.numpy(), [-3, -3, -3])


def test_a_variable_fetched_with_its_update_is_the_pre_update_value():
    w = K.Variable(np.zeros(2, "float32"))
    train_op = O.SGD(1.0).minimize(K.sum(w))
    sess = K.Session()
    for k in range(3):
        value, _ = sess.run([w, train_op])
        np.testing.assert_array_equal(value, [-k, -k])
    assert w.numpy()[0] == -3


def test_the_initial_array_of_a_variable_is_not_overwritten():
    init = np.ones(2, "float32")
    w = K.Variable(init)
    K.Session().run(O.Adam(0.5).minimize(K.sum(w * w)))
    np.testing.assert_array_equal(init, [1, 1])
    assert w.numpy()[0] < 1


def test_read_only_values_are_copied_and_read_only_slots_explained():
    w = K.Variable(np.ones(2, "float32"))
    opt = O.SGD(0.5, momentum=0.5)
    train_op = opt.minimize(K.sum(w))
    w.value = np.frombuffer(np.ones(2, "float32").tobytes(), "float32")
    assert not w.value.flags.writeable  # as ray.get hands out arrays
    sess = K.Session()
    sess.run(train_op)
    np.testing.assert_array_equal(w.numpy(), [0.5, 0.5])
    slot = opt.get_slot(w, "momentum")
    slot.value = np.frombuffer(np.zeros(2, "float32").tobytes(), "float32")
    with pytest.raises(ValueError, match="read-only"):
        sess.run(train_op)


def test_constraints_apply_after_the_update():
    w = K.Variable(np.array([0.25, 1.0], "float32"),
                   constraint=lambda a: np.maximum(a, 0.0))
    K.Session().run(O.SGD(0.5).minimize(K.sum(w)))
    np.testing.assert_array_equal(w.numpy(), [0.0, 0.5])


def test_shape_mismatch_names_the_variable_shape():
    w = K.Variable(np.zeros((2, 2), "float32"))
    g = K.placeholder("float32", (3,))
    with pytest.raises(ValueError, match=r"variable's shape \(2, 2\)"):
        O.SGD().apply_gradients([(g, w)])
    # Arrays apply at once (Keras 3); a wrong shape names the variable's.
    with pytest.raises(ValueError, match=r"variable's shape \(2, 2\)"):
        O.SGD().apply_gradients([(np.zeros((3,), "float32"), w)])
    with pytest.raises(TypeError, match="all-symbolic or all-array"):
        O.SGD().apply_gradients([(g, w), (np.zeros((2,), "float32"),
                                          K.Variable(np.zeros(2, "float32")))])
