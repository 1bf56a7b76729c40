"""Error messages: what was expected, what was received, and which op or tensor."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow.backend.ops import infer as I
from kerasflow.backend.registry import get_op, register_op


def _register_once(name, infer, kernel, **kw):
    try:
        get_op(name)
    except KeyError:
        register_op(name, infer, **kw)(kernel)


def _fails_oddly(xp, x):
    # An exception type whose constructor does not take a single message.
    raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")


_register_once("TestNoGradient", I.same, lambda xp, x: x * 2.0)
_register_once("TestOddFailure", I.same, _fails_oddly)


# -- feeding -----------------------------------------------------------------------
def test_wrong_feed_shape_names_placeholder_and_shapes():
    x = K.placeholder("float32", (None, 3), name="features")
    f = K.Function([x], x * 2.0)
    msg = r"'features.*' expects shape \(None, 3\)\. Received: .*shape \(2, 4\)"
    with pytest.raises(ValueError, match=msg):
        f(np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"'features.*shape \(3,\)"):
        f(np.ones(3))  # wrong rank
    with pytest.raises(ValueError, match=msg):
        K.Session().run(x * 2.0, {x: np.ones((2, 4))})


def test_wrong_feed_dtype():
    ids = K.placeholder("int32", (2,), name="token_ids")
    with pytest.raises(TypeError, match=r"'token_ids.*expects dtype int32\. "
                                        r"Received: a value of dtype float64"):
        K.Session().run(ids * 2, {ids: np.array([1.5, 2.0])})
    with pytest.raises(TypeError, match=r"'token_ids.*dtype int32.*str"):
        K.Session().run(ids * 2, {ids: ["a", "b"]})
    x = K.placeholder("float32", (2,), name="floats")
    with pytest.raises(TypeError, match=r"'floats.*dtype float32.*str"):
        K.Function([x], x)(np.array(["1.0", "2.0"]))
    with pytest.raises(TypeError, match=r"'floats.*complex128"):
        K.Function([x], x)(np.array([1j, 2j]))


def test_missing_feed_names_the_placeholder():
    x = K.placeholder("float32", (None, 3), name="pixels")
    y = K.sum(x * 2.0)
    with pytest.raises(ValueError, match=r"placeholder 'pixels' \(shape=\(None, 3\), "
                                         r"dtype=float32\) must be fed"):
        K.Function([], y)
    with pytest.raises(ValueError, match="placeholder 'pixels'.*must be fed"):
        K.Session().run(y)
    other = K.placeholder("float32", (), name="unrelated")
    with pytest.raises(ValueError, match="placeholder 'pixels'"):
        K.Session().run(y, {other: 1.0})


def test_wrong_number_of_values():
    x = K.placeholder("float32", (), name="a")
    z = K.placeholder("float32", (), name="b")
    # Names are unique per process: other tests may have made "a" and "b".
    with pytest.raises(ValueError, match=r"takes 2 input value\(s\) "
                                         r"\(a(_\d+)?:0, b(_\d+)?:0\)\. Received: 1"):
        K.Function([x, z], x + z)(1.0)


def test_session_rejects_non_tensor_keys_and_fetches():
    x = K.placeholder("float32", ())
    with pytest.raises(TypeError, match="feed_dict keys are tensors"):
        K.Session().run(x, {"x": 1.0})
    with pytest.raises(TypeError, match="Fetches are tensors"):
        K.Session().run([x, "y"], {x: 1.0})
    with pytest.raises(TypeError, match="takes symbolic tensors"):
        K.Function([x], [np.ones(2)])


# -- graph-build time ----------------------------------------------------------------
def test_matmul_inner_dims_name_both_shapes():
    a = K.placeholder("float32", (3, 4))
    b = K.placeholder("float32", (5, 6))
    with pytest.raises(ValueError, match=r"MatMul.*a\.shape=\(3, 4\), "
                                         r"b\.shape=\(5, 6\)"):
        K.matmul(a, b)
    with pytest.raises(ValueError, match=r"rank >= 2.*a\.shape=\(4,\)"):
        K.matmul(K.placeholder("float32", (4,)), b)
    with pytest.raises(TypeError, match="a.dtype=float32, b.dtype=float64"):
        K.matmul(a, K.placeholder("float64", (4, 2)))
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(5, 6\)"):
        K.matmul(np.ones((3, 4)), np.ones((5, 6)))  # eagerly, the same check


def test_broadcasting_failure_names_both_shapes():
    a = K.placeholder("float32", (3, 4))
    with pytest.raises(ValueError, match=r"Op 'Add'.*\(3, 4\) and \(5, 4\) cannot "
                                         r"be broadcast"):
        a + K.placeholder("float32", (5, 4))
    with pytest.raises(ValueError, match=r"Op 'Mul'.*\(2, 3\) and \(4,\)"):
        K.multiply(np.ones((2, 3)), np.ones(4))


def test_bad_reshape():
    x = K.placeholder("float32", (3, 4))
    with pytest.raises(ValueError, match=r"Reshape.*shape \(3, 4\) \(12 elements\) "
                                         r"to \(5, 2\) \(10 elements\)"):
        K.reshape(x, (5, 2))
    with pytest.raises(ValueError, match=r"\(3, 4\) \(12 elements\) to \(5, -1\)"):
        K.reshape(x, (5, -1))
    with pytest.raises(ValueError, match="at most one -1"):
        K.reshape(x, (-1, -1))
    # Unknown dims: the check happens at run time, naming the node.
    z = K.placeholder("float32", (None, 4), name="rows")
    with pytest.raises(ValueError, match=r"Op 'Reshape.*' \(Reshape\) failed at run "
                                         r"time on inputs \[rows:0 \(None, 4\)\]"):
        K.Session().run(K.reshape(z, (5, -1)), {z: np.ones((3, 4))})


def test_other_build_time_checks():
    x = K.placeholder("float32", (2, 3))
    with pytest.raises(ValueError, match="axis 2 is out of range for rank 2"):
        K.sum(x, axis=2)
    with pytest.raises(ValueError, match=r"Concat.*\[\(2, 3\), \(3, 2\)\]"):
        K.concatenate([x, K.placeholder("float32", (3, 2))], axis=0)
    with pytest.raises(TypeError, match="condition must be bool"):
        K.where(x, x, x)
    with pytest.raises(TypeError, match="gather indices must be integers"):
        K.gather(x, np.array([0.0]))
    with pytest.raises(TypeError, match="expects a float input.*int64"):
        K.exp(K.placeholder("int64", (2,)))
    with pytest.raises(ValueError, match=r"labels\.shape=\(2, 4\), "
                                         r"logits\.shape=\(2, 3\)"):
        K.softmax_cross_entropy_with_logits(K.placeholder("float32", (2, 4)), x)
    with pytest.raises(TypeError, match="sparse labels must be integers"):
        K.sparse_softmax_cross_entropy_with_logits(np.zeros(2, np.float32), x)
    with pytest.raises(ValueError, match="cannot squeeze axis 1 of size 3"):
        K.squeeze(x, 1)
    with pytest.raises(ValueError, match="cannot split axis 1 of size 3 into 2"):
        K.split(x, 2, axis=1)
    with pytest.raises(ValueError, match="perm"):
        K.transpose(x, (0, 0))
    with pytest.raises(ValueError, match=r"BroadcastTo.*\(2, 3\) and \(3, 3\)"):
        K.broadcast_to(x, (3, 3))
    with pytest.raises(ValueError, match="non-negative ints or None"):
        K.placeholder("float32", (2, -3))


def test_symbolic_tensor_has_no_truth_value():
    x = K.placeholder("float32", ())
    with pytest.raises(TypeError, match="no truth value"):
        bool(x > 0.0)
    with pytest.raises(TypeError, match="not iterable"):
        list(x)


def test_device_and_floatx_arguments():
    with pytest.raises(ValueError, match="device must be 'cpu' or 'gpu'.*'tpu'"):
        K.set_device("tpu")
    with pytest.raises(ValueError, match="floatx must be one of.*int32"):
        K.set_floatx("int32")


# -- run time ------------------------------------------------------------------------
def test_sparse_labels_out_of_range_at_run_time():
    labels = K.placeholder("int64", (None,), name="labels")
    logits = K.placeholder("float32", (None, 4), name="logits")
    loss = K.sparse_softmax_cross_entropy_with_logits(labels, logits)
    f = K.Function([labels, logits], loss)
    f(np.array([0, 3]), np.zeros((2, 4)))  # in range: fine
    with pytest.raises(ValueError, match=r"SparseSoftmaxCrossEntropyWithLogits.*"
                                         r"failed at run time.*must lie in \[0, 4\) "
                                         r"for 4 classes. Received: labels from 0 "
                                         r"to 7"):
        f(np.array([0, 7]), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="from -1 to 1"):
        f(np.array([-1, 1]), np.zeros((2, 4)))


def test_kernel_failure_names_the_op():
    x = K.placeholder("float32", (None,), name="table")
    idx = K.placeholder("int64", (2,), name="ids")
    with K.name_scope("embedding"):
        out = K.gather(x, idx) * 2.0
    f = K.Function([x, idx], out)
    np.testing.assert_array_equal(f(np.arange(3.0), np.array([2, 0])), [4.0, 0.0])
    with pytest.raises(ValueError, match=r"Op 'embedding/Gather.*' \(Gather\) failed "
                                         r"at run time on inputs \[table(_\d+)?:0 \(None,\), "
                                         r"ids(_\d+)?:0 \(2,\)\]: gather indices must lie in "
                                         r"\[-3, 3\).*max=5"):
        f(np.arange(3.0), np.array([5, 0]))


def test_kernel_failure_with_an_unusual_exception_type():
    x = K.placeholder("float32", (2,), name="odd_input")
    y = K.apply("TestOddFailure", x)
    # The original type is kept (so `except UnicodeDecodeError` still works);
    # the failing node is added as a note (issue 7).
    with pytest.raises(UnicodeDecodeError, match="invalid start") as info:
        K.Function([x], y)(np.ones(2))
    assert any("TestOddFailure" in n and "odd_input" in n
               for n in info.value.__notes__)


def test_missing_gradient_names_the_op():
    x = K.placeholder("float32", (3,))
    y = K.apply("TestNoGradient", x, name="doubler")
    with pytest.raises(NotImplementedError, match=r"'TestNoGradient' \(node "
                                                  r"'doubler.*'\)"):
        K.gradients(K.sum(y), x)
    # stop_gradient cuts the path, so no rule is needed.
    assert K.gradients(K.sum(K.apply("TestNoGradient", K.stop_gradient(x))), x) \
        == [None]
    np.testing.assert_array_equal(K.apply("TestNoGradient", np.ones(2)), [2.0, 2.0])


def test_register_twice_and_unknown_op():
    with pytest.raises(ValueError, match="'TestNoGradient' is registered twice"):
        register_op("TestNoGradient", I.same)(lambda xp, x: x)
    with pytest.raises(KeyError, match="No op named 'NoSuchOp'"):
        get_op("NoSuchOp")
