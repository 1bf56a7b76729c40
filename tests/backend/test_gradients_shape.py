"""Numerical gradient checks (float64): shape, slicing and gather ops (ops.shape,
ops.slicing).

Each case is ``(fn, inputs)``: ``fn`` builds the op from placeholders standing for
the float inputs; ``check_gradients`` compares ``gradients`` with central
differences. Inputs stay clear of kinks (0 for abs/relu, ties for max/min, clip
bounds), where a one-sided derivative would be as right as any other.
"""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from tests.backend.gradcheck import check_gradients, grad_fn, x

pytestmark = pytest.mark.usefixtures("float64")


# -- shape ops ---------------------------------------------------------------------
SHAPE_CASES = {
    "reshape": (lambda t: K.reshape(t, (4, -1)), [(2, 3, 4)]),
    "reshape_none": (lambda t: K.reshape(t, (None, 2)), [(2, 3, 4)]),
    "flatten": (K.flatten, [(2, 3, 4)]),
    "transpose": (K.transpose, [(2, 3, 4)]),
    "transpose_perm": (lambda t: K.transpose(t, (1, 0, 2)), [(2, 3, 4)]),
    "transpose_perm_cycle": (lambda t: K.transpose(t, (2, 0, 1)), [(2, 3, 4)]),
    "T": (lambda t: t.T, [(3, 4)]),
    "concatenate_0": (lambda a, b, c: K.concatenate([a, b, c], axis=0),
                      [(1, 3), (2, 3), (3, 3)]),
    "concatenate_last": (lambda a, b: K.concatenate([a, b]), [(2, 3), (2, 1)]),
    "concatenate_same": (lambda a: K.concatenate([a, a * 2.0], axis=1), [(2, 3)]),
    "stack_0": (lambda a, b: K.stack([a, b]), [(2, 3), (2, 3)]),
    "stack_1": (lambda a, b, c: K.stack([a, b, c], axis=1), [(2, 3)] * 3),
    "stack_last": (lambda a, b: K.stack([a, b], axis=-1), [(2, 3), (2, 3)]),
    "split_equal": (lambda t: K.split(t, 2, axis=1), [(3, 4)]),
    "split_sizes": (lambda t: K.split(t, [1, 3], axis=-1), [(3, 4)]),
    "split_one_used": (lambda t: K.split(t, 3, axis=0)[1], [(3, 4)]),
    "split_two_used": (lambda t: K.split(t, [1, 1, 2], axis=1)[::2], [(3, 4)]),
    "expand_dims_0": (lambda t: K.expand_dims(t, 0), [(2, 3)]),
    "expand_dims_1": (lambda t: K.expand_dims(t, 1), [(2, 3)]),
    "expand_dims_last": (lambda t: K.expand_dims(t, -1), [(2, 3)]),
    "squeeze_all": (K.squeeze, [(1, 3, 1, 2)]),
    "squeeze_axis": (lambda t: K.squeeze(t, 2), [(1, 3, 1, 2)]),
    "squeeze_axes": (lambda t: K.squeeze(t, (0, -2)), [(1, 3, 1, 2)]),
    "broadcast_to": (lambda t: K.broadcast_to(t, (2, 3, 4)), [(3, 1)]),
    "broadcast_to_rank": (lambda t: K.broadcast_to(t, (3, 4)), [(4,)]),
    "broadcast_like": (lambda t: K.broadcast_like(t, np.zeros((2, 3))), [(3,)]),
    "tile_rows": (lambda t: K.tile(t, (2, 1)), [(2, 3)]),
    "tile_cols": (lambda t: K.tile(t, (1, 3)), [(2, 3)]),
    "tile_both": (lambda t: K.tile(t, (2, 2)), [(2, 3)]),
    "tile_3d": (lambda t: K.tile(t, (2, 1, 3)), [(1, 2, 2)]),
    "pad": (lambda t: K.pad(t, ((1, 2), (0, 1))), [(2, 3)]),
    "pad_value": (lambda t: K.pad(t, ((0, 0), (2, 0)), constant_values=1.5),
                  [(2, 3)]),
    "pad_3d": (lambda t: K.pad(t, ((1, 0), (0, 0), (2, 1))), [(2, 2, 2)]),
    "reshape_like": (lambda t: K.reshape_like(t, np.zeros((3, 4))), [(2, 6)]),
    # Run-time shapes (ReshapeTo, Fill); the outer reshape makes them static.
    "reshape_to": (lambda t: K.reshape(K.reshape(
        t, (K.shape_of(t)[0], K.shape_of(t)[1], 2, 2)), (2, 3, 2, 2)), [(2, 3, 4)]),
    "fill": (lambda v, t: K.reshape(K.fill((K.shape_of(t)[0], 3), v) * t, (2, 3)),
             [(), (2, 3)]),
}


@pytest.mark.parametrize("name", sorted(SHAPE_CASES))
def test_shape_op(name):
    fn, shapes = SHAPE_CASES[name]
    check_gradients(fn, [x(*s, seed=i) for i, s in enumerate(shapes)])


@pytest.mark.parametrize("name", sorted(SHAPE_CASES))
def test_shape_op_second_order(name):
    fn, shapes = SHAPE_CASES[name]

    def squared(*ts):
        return fn(*[t * t for t in ts])

    check_gradients(grad_fn(squared), [x(*s, seed=i) for i, s in enumerate(shapes)])


KEYS = {
    "int": 1,
    "negative_int": -1,
    "slice": slice(1, 3),
    "slice_step": slice(None, None, 2),
    "slice_negative_step": slice(None, None, -1),
    "slice_negative_bounds": (slice(-3, -1), slice(None, None, -2)),
    "ellipsis_int": (Ellipsis, 1),
    "int_ellipsis_step": (0, Ellipsis, slice(None, None, -2)),
    "none": (None, 0, slice(1, 3)),
    "none_middle": (slice(1, None), None, -2),
    "two_ints": (1, -2),
    "all": (slice(None), slice(None), slice(None)),
}


@pytest.mark.parametrize("key", sorted(KEYS))
def test_getitem(key):
    check_gradients(lambda t: t[KEYS[key]], [x(3, 4, 4)])


@pytest.mark.parametrize("key", ["slice_step", "none_middle", "int_ellipsis_step"])
def test_getitem_second_order(key):
    check_gradients(grad_fn(lambda t: (t * t)[KEYS[key]]), [x(3, 4, 4)])


GATHERS = {
    "axis0_repeated": ([0, 2, 0, 1, 2], 0),
    "axis1_2d_indices": ([[0, 0], [2, 1]], 1),
    "axis0_negative": ([-1, 0, -1], 0),
    "axis_last": ([3, 3, 1], -1),
}


@pytest.mark.parametrize("name", sorted(GATHERS))
def test_gather(name):
    idx, axis = GATHERS[name]
    idx = np.asarray(idx, dtype=np.int64)
    check_gradients(lambda t: K.gather(t, idx, axis=axis), [x(3, 4)])
    check_gradients(grad_fn(lambda t: K.gather(t * t, idx, axis=axis)), [x(3, 4)])


def test_getitem_with_int_array_gathers():
    idx = np.array([2, 2, 0], dtype=np.int64)
    check_gradients(lambda t: t[idx], [x(3, 4)])


def test_gather_with_index_placeholder():
    idx = K.placeholder("int64", (4,))
    params = K.placeholder("float64", (3, 2))
    (g,) = K.gradients(K.gather(params, idx), params)
    out = K.Function([params, idx], g)(np.ones((3, 2)), np.array([0, 2, 2, 2]))
    np.testing.assert_allclose(out, [[1, 1], [0, 0], [3, 3]])
