"""The numpy-style ops of ``kerasflow.ops`` (the ``ops.numpy`` namespace)
against ``keras.ops`` on its numpy backend: eagerly and in a graph, float32,
float64 and integer inputs; gradients of the differentiable ones checked
numerically in float64."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy
from tests.ops_oracle import assert_matches_keras

R = np.random.RandomState(0)
F = R.randn(3, 4).astype("float32")
F3 = R.randn(2, 3, 4).astype("float32")
D = R.randn(4, 5)
U = R.uniform(-0.9, 0.9, (3, 4)).astype("float32")
P = R.uniform(1.1, 3.0, (3, 4)).astype("float32")
I32 = R.randint(0, 20, (3, 4)).astype("int32")
I64 = R.randint(1, 20, (3, 4)).astype("int64")
V3 = R.randn(5, 3).astype("float32")
W3 = R.randn(5, 3).astype("float32")
NAN = F.copy()
NAN[0, 1] = NAN[2, 3] = np.nan
SQ = R.randn(4, 4).astype("float32")

UNARY = ["tan", "sinh", "cosh", "arctan", "arcsinh", "cbrt", "exp2",
         "deg2rad", "rad2deg", "sinc", "absolute", "fabs", "erfc", "trunc",
         "signbit", "isneginf", "isposinf", "isreal", "real", "imag", "conj",
         "conjugate", "angle", "i0"]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("x", [F, D, I64], ids=["f32", "f64", "i64"])
def test_unary_equal_keras(name, x):
    assert_matches_keras(name, (x,), check_dtype=name not in ("i0",))


@pytest.mark.parametrize("name,x", [("arcsin", U), ("arccos", U), ("arctanh", U),
                                    ("erfinv", U), ("arccosh", P), ("log2", P),
                                    ("log10", P)])
def test_domain_limited_unary_equal_keras(name, x):
    assert_matches_keras(name, (x,), rtol=2e-5)


I_A = R.randint(1, 50, (3, 4)).astype("int32")
I_B = R.randint(1, 7, (4,)).astype("int32")
BINARY = [
    ("arctan2", (F, D[:3, :4].astype("float32"))), ("hypot", (F, U)),
    ("logaddexp", (F, U)), ("logaddexp2", (D, D[::-1])), ("fmax", (NAN, F.T.reshape(3, 4))),
    ("fmin", (NAN, U)), ("fmod", (F, P)), ("heaviside", (F, U)),
    ("nextafter", (F, U)), ("true_divide", (F, P)), ("divide_no_nan", (F, F * (F > 0))),
    ("gcd", (I_A, I_B)), ("lcm", (I_A, I_B)), ("bitwise_and", (I_A, I_B)),
    ("bitwise_or", (I_A, I_B)), ("bitwise_xor", (I_A, I_B)),
    ("bitwise_left_shift", (I_A, I_B)), ("left_shift", (I_A, I_B)),
    ("bitwise_right_shift", (I_A, I_B)), ("right_shift", (I_A, I_B)),
    ("logical_xor", (F > 0, U > 0)), ("ldexp", (F, I_B)),
    ("isclose", (F, F + 1e-6)), ("isin", (I_A, I_B)),
]


@pytest.mark.parametrize("name,args", BINARY, ids=[b[0] for b in BINARY])
def test_binary_equal_keras(name, args):
    assert_matches_keras(name, args)


@pytest.mark.parametrize("name", ["bitwise_invert", "bitwise_not"])
def test_bitwise_not_equal_keras(name):
    assert_matches_keras(name, (I_A,))


ARRAY = [
    ("append", (F, U), {}), ("append", (F, U), {"axis": 0}),
    ("array_split", (D, 3), {"axis": 1}), ("array_split", (F3, 3), {"axis": -1}),
    ("hsplit", (F, 2), {}), ("vsplit", (D, [1, 3]), {}), ("dsplit", (F3, 2), {}),
    ("hstack", ([F, U],), {}), ("vstack", ([F, U],), {}), ("dstack", ([F, U],), {}),
    ("hstack", ([F[0], U[1]],), {}), ("vstack", ([F[0], U[1]],), {}),
    ("moveaxis", (F3, 0, -1), {}), ("moveaxis", (F3, [0, 1], [2, 0]), {}),
    ("swapaxes", (F3, 0, 2), {}), ("ravel", (F3,), {}), ("flipud", (F,), {}),
    ("fliplr", (F,), {}), ("rot90", (F3,), {"k": 1}), ("rot90", (F3,), {"k": 2}),
    ("rot90", (F3,), {"k": 3, "axes": (1, 2)}), ("rot90", (F3,), {"k": -1}),
    ("diagonal", (F3,), {}), ("diagonal", (F3,), {"offset": 1, "axis1": 1, "axis2": 2}),
    ("diagonal", (D,), {"offset": -2}), ("trace", (F3,), {"axis1": 1, "axis2": 2}),
    ("trace", (I_A,), {"offset": 1}), ("diag", (F,), {"k": 1}), ("diag", (F[0],), {}),
    ("diag", (F[0],), {"k": -2}), ("diag", (I_B,), {"k": 1}), ("diagflat", (F,), {}),
    ("outer", (F[0], U[1]), {}), ("vdot", (F, U), {}), ("inner", (F, U), {}),
    ("inner", (F3, U), {}), ("dot", (F, U.T), {}), ("dot", (F3, U.T), {}),
    ("dot", (F[0], U[0]), {}), ("dot", (F3, U[0]), {}), ("kron", (F, U[:2, :2]), {}),
    ("kron", (I_A, I_B), {}), ("cross", (V3, W3), {}), ("cross", (V3[:, :2], W3), {}),
    ("cross", (V3[:, :2], W3[:, :2]), {}), ("cross", (V3.T, W3.T), {"axis": 0}),
    ("vander", (F[0],), {}), ("vander", (I_B,), {"N": 3, "increasing": True}),
    ("diff", (F3,), {}), ("diff", (F3,), {"n": 2, "axis": 1}),
    ("trapezoid", (F,), {}), ("trapezoid", (F,), {"dx": 0.5, "axis": 0}),
    ("trapezoid", (F, np.cumsum(P[0]).astype("float32")), {}),
    ("unstack", (F3,), {"axis": 1}), ("full_like", (F, 3.0), {}),
    ("full_like", (I_A, 2), {"dtype": "float32"}),
    ("copy", (F,), {}), ("get_item", (F3, (1, slice(0, 2))), {}),
    ("slice", (F3, (0, 1, 1), (2, 2, 3)), {}),
    ("slice_update", (F3, (0, 1, 1), U[:2, :3].reshape(1, 2, 3)), {}),
]


@pytest.mark.parametrize("name,args,kwargs", ARRAY,
                         ids=[f"{a[0]}-{i}" for i, a in enumerate(ARRAY)])
def test_array_ops_equal_keras(name, args, kwargs):
    list_arg = any(isinstance(a, list) for a in args)
    assert_matches_keras(name, args, kwargs, symbolic=not list_arg)


def test_meshgrid_equal_keras():
    x, y, z = F[0], U[1, :3], P[2, :2]
    for indexing in ("xy", "ij"):
        assert_matches_keras("meshgrid", (x, y, z), {"indexing": indexing})
        assert_matches_keras("meshgrid", (x, y), {"indexing": indexing})


CONSTRUCTORS = [
    ("eye", (3,), {}), ("eye", (3, 5, 1), {"dtype": "int32"}), ("tri", (4, 3, -1), {}),
    ("hamming", (5,), {}), ("hanning", (6,), {}),
    ("bartlett", (5,), {}), ("blackman", (7,), {}), ("kaiser", (6, 2.5), {}),
    ("logspace", (0.0, 2.0, 5), {}), ("geomspace", (1.0, 100.0, 4), {}),
    ("ndim", (F3,), {}), ("size", (F3,), {}),
]


@pytest.mark.parametrize("name,args,kwargs", CONSTRUCTORS,
                         ids=[f"{a[0]}-{i}" for i, a in enumerate(CONSTRUCTORS)])
def test_constructors_equal_keras(name, args, kwargs):
    assert_matches_keras(name, args, kwargs, symbolic=False, check_dtype=name not in (
        "ndim", "size"))


def test_empty_has_keras_shape_and_dtype():
    # Its values are unspecified (Keras' numpy backend returns np.empty's
    # uninitialized memory), so only the shape and dtype are compared.
    keras = keras_numpy()
    for args in (((2, 3),), ((4,), "int32")):
        ours = np.asarray(kf.ops.empty(*args))
        theirs = np.asarray(keras.ops.empty(*args))
        assert (ours.shape, ours.dtype) == (theirs.shape, theirs.dtype)


STATS = [
    ("amax", (F3,), {"axis": 1}), ("amin", (F3,), {"axis": (0, 2), "keepdims": True}),
    ("ptp", (F3,), {"axis": -1}), ("average", (F3,), {"axis": 1}),
    ("average", (F3,), {"axis": 2, "weights": P[0]}),
    ("average", (F,), {"weights": P}),
    ("quantile", (F3, 0.3), {}), ("quantile", (F3, [0.1, 0.5, 1.0]), {"axis": 1}),
    ("quantile", (D, 0.25), {"axis": 0, "method": "nearest", "keepdims": True}),
    ("quantile", (F3, 0.7), {"axis": (0, 2), "method": "midpoint"}),
    ("quantile", (I_A, 0.5), {"axis": 0, "method": "lower"}),
    ("percentile", (F3, [20.0, 80.0]), {"axis": -1, "method": "higher"}),
    ("median", (F3,), {}), ("median", (F3,), {"axis": 1, "keepdims": True}),
    ("nansum", (NAN,), {"axis": 1}), ("nanmean", (NAN,), {}), ("nanprod", (NAN,), {}),
    ("nanmax", (NAN,), {"axis": 0}), ("nanmin", (NAN,), {"axis": 1, "keepdims": True}),
    ("nanvar", (NAN,), {"axis": 1}), ("nanstd", (NAN,), {}),
    ("nancumsum", (NAN,), {"axis": 1}), ("nancumprod", (NAN,), {"axis": 0}),
    ("nanargmax", (NAN,), {"axis": 1}), ("nanargmin", (NAN,), {"axis": 0}),
    ("nanquantile", (NAN, 0.4), {"axis": 1}), ("nanmedian", (NAN,), {}),
    ("nanpercentile", (NAN, [10.0, 60.0]), {"axis": 0}),
    ("count_nonzero", (I_A % 3,), {"axis": 1}), ("count_nonzero", (F > 0,), {}),
    ("corrcoef", (F,), {}), ("corrcoef", (D,), {}),
    ("correlate", (F[0], U[1, :2]), {}), ("correlate", (F.ravel(), U[0]), {"mode": "same"}),
    ("correlate", (F[0], F.ravel()), {"mode": "full"}),
]


@pytest.mark.parametrize("name,args,kwargs", STATS,
                         ids=[f"{a[0]}-{i}" for i, a in enumerate(STATS)])
def test_statistics_equal_keras(name, args, kwargs):
    assert_matches_keras(name, args, kwargs, rtol=2e-5)


SEQ = np.sort(R.randn(6)).astype("float32")
IDX = R.randint(0, 4, (5, 2)).astype("int32")
SEARCH = [
    ("searchsorted", (SEQ, F), {}), ("searchsorted", (SEQ, F), {"side": "right"}),
    ("digitize", (F, SEQ), {}), ("argpartition", (F, 2), {"axis": 1}),
    ("unravel_index", (I_A % 20, (5, 4)), {}),
    ("select", ([F > 0, U > 0], [F, U]), {"default": -1.0}),
    ("allclose", (F, F + 1e-7), {}),
    ("scatter", (IDX, F[:, :2].ravel()[:5], (4, 4)), {}),
    ("scatter", (IDX[:, :1], R.randn(5, 3).astype("float32"), (4, 3)), {}),
    ("scatter_update", (SQ, IDX[:3] * 0 + [[0, 1], [2, 3], [3, 0]], U[0, :3]), {}),
    ("scatter_update", (SQ, IDX, F.ravel()[:5]), {"reduction": "add"}),
    ("scatter_update", (SQ, IDX, F.ravel()[:5]), {"reduction": "max"}),
    ("scatter_update", (SQ, IDX, F.ravel()[:5]), {"reduction": "mul"}),
    ("segment_sum", (F3, np.array([1, 0])), {"num_segments": 3}),
    ("segment_max", (F, np.array([1, -1, 1])), {"num_segments": 2}),
    ("segment_min", (F, np.array([0, 0, 1])), {"num_segments": 2}),
    ("segment_prod", (F, np.array([1, 0, 1])), {"num_segments": 3}),
    ("saturate_cast", (F * 300, "uint8"), {}), ("saturate_cast", (I_A * 10, "int8"), {}),
    ("view", (F, "int32"), {}), ("view", (I_A, "uint8"), {}),
]


@pytest.mark.parametrize("name,args,kwargs", SEARCH,
                         ids=[f"{a[0]}-{i}" for i, a in enumerate(SEARCH)])
def test_search_and_scatter_equal_keras(name, args, kwargs):
    if name == "argpartition":  # numpy's introselect order is its own: check the
        ours = kf.ops.argpartition(*args, **kwargs)  # partition property instead
        part = np.take_along_axis(args[0], np.asarray(ours), 1)
        assert (part[:, :2].max(1) <= part[:, 2]).all()
        assert (part[:, 3:].min(1) >= part[:, 2]).all()
        return
    list_arg = any(isinstance(a, list) for a in args)
    assert_matches_keras(name, args, kwargs, symbolic=not list_arg)


EAGER_ONLY = [
    ("bincount", (I_B,), {}), ("bincount", (I_B,), {"weights": F[0], "minlength": 9}),
    ("histogram", (F.ravel(),), {"bins": 4}),
    ("nonzero", (I_A % 3,), {}), ("unique", (I_A % 5,), {}),
    ("unique", (I_A % 5,), {"return_counts": True, "return_index": True}),
    ("unique", (I_A % 5,), {"size": 8, "fill_value": -1}),
]


@pytest.mark.parametrize("name,args,kwargs", EAGER_ONLY,
                         ids=[f"{a[0]}-{i}" for i, a in enumerate(EAGER_ONLY)])
def test_value_dependent_shapes_eager_and_clear_error_in_graphs(name, args, kwargs):
    assert_matches_keras(name, args, kwargs, symbolic=False)
    ph = kf.backend.placeholder(args[0].dtype.name, args[0].shape)
    with pytest.raises(ValueError, match=f"`{name}` returns a shape that depends"):
        getattr(kf.ops, name)(ph, *args[1:], **kwargs)


def test_small_helpers():
    assert kf.ops.dtype(F) == "float32" and kf.ops.is_tensor(F)
    assert kf.ops.is_tensor(kf.backend.placeholder("float32", (2,)))
    assert not kf.ops.is_tensor([1.0])
    e = kf.ops.empty_like(I_A)
    assert e.shape == I_A.shape and e.dtype == I_A.dtype
    for ours, ref in zip(kf.ops.array_split(F3, [1, 3], axis=-1),
                         np.array_split(F3, [1, 3], axis=-1)):
        np.testing.assert_array_equal(ours, ref)
    np.testing.assert_array_equal(kf.ops.vectorize(lambda a: a + 1)(I_B), I_B + 1)
    with pytest.raises(TypeError, match="integer exponent"):
        kf.ops.ldexp(F, F)
    with pytest.raises(ValueError, match="1-D sorted sequences"):
        kf.ops.searchsorted(F, F)


GRADS = [
    ("tan", lambda x: kf.ops.tan(x * 0.5), [D]),
    ("sinh", kf.ops.sinh, [D]), ("cosh", kf.ops.cosh, [D]),
    ("arcsin", lambda x: kf.ops.arcsin(x * 0.3), [D]),
    ("arccos", lambda x: kf.ops.arccos(x * 0.3), [D]),
    ("arctan", kf.ops.arctan, [D]), ("arcsinh", kf.ops.arcsinh, [D]),
    ("arccosh", lambda x: kf.ops.arccosh(x * x + 1.5), [D]),
    ("arctanh", lambda x: kf.ops.arctanh(x * 0.3), [D]),
    ("arctan2", kf.ops.arctan2, [D, D[::-1] + 0.1]),
    ("cbrt", lambda x: kf.ops.cbrt(x * x + 0.5), [D]),
    ("erfinv", lambda x: kf.ops.erfinv(x * 0.3), [D]),
    ("logaddexp", kf.ops.logaddexp, [D, D[::-1]]), ("hypot", kf.ops.hypot, [D, D + 1]),
    ("sinc", kf.ops.sinc, [D]), ("divide_no_nan", kf.ops.divide_no_nan, [D, D + 2]),
    ("quantile", lambda x: kf.ops.quantile(x, [0.3, 0.5], axis=1), [D]),
    ("median", lambda x: kf.ops.median(x, axis=0), [D]),
    ("diagonal", lambda x: kf.ops.diagonal(x, 1), [D]),
    ("trace", kf.ops.trace, [D]), ("diag", lambda x: kf.ops.diag(x[0], -1), [D]),
    ("kron", kf.ops.kron, [D[:2, :3], D[2:, 1:3]]), ("cross", kf.ops.cross, [D[:, :3],
                                                                            D[:, 2:]]),
    ("correlate", lambda a, v: kf.ops.correlate(a, v, "full"), [D[0], D[1, :3]]),
    ("corrcoef", kf.ops.corrcoef, [D]), ("nanstd", kf.ops.nanstd, [D]),
    ("average", lambda x, w: kf.ops.average(x, 1, w), [D, D[0] ** 2 + 0.5]),
    ("select", lambda a, b: kf.ops.select([a > 0, b > 0], [a, b]), [D, D[::-1]]),
    ("scatter_update", lambda s, u: kf.ops.scatter_update(
        s, np.array([[0, 1], [2, 3]]), u), [D, D[0, :2]]),
    ("slice_update", lambda s, u: kf.ops.slice_update(s, (1, 2), u), [D, D[:2, :2]]),
    ("segment_sum", lambda x: kf.ops.segment_sum(x, np.array([1, 0, 1, -1]), 2), [D]),
    ("vander", lambda x: kf.ops.vander(x[0]), [D]),
    ("trapezoid", lambda y: kf.ops.trapezoid(y, axis=0), [D]),
    ("rot90", lambda x: kf.ops.rot90(x, 3), [D]), ("dot", kf.ops.dot, [D, np.ascontiguousarray(D.T)]),
]


@pytest.mark.parametrize("name,fn,inputs", GRADS, ids=[g[0] for g in GRADS])
def test_gradients(float64, name, fn, inputs):
    check_gradients(fn, inputs)


def test_ops_build_on_an_unknown_batch_dimension():
    from kerasflow import backend as K

    x = K.placeholder("float32", (None, 4))
    outs = [kf.ops.quantile(x, [0.2, 0.5], axis=1), kf.ops.kron(x, np.ones((2, 2),
                                                                          "float32")),
            kf.ops.diff(x), kf.ops.cross(x[:, :3], x[:, 1:]), kf.ops.nanmean(x, 0),
            kf.ops.hstack([x, x]), kf.ops.array_split(x, 3, axis=1)[0],
            kf.ops.layer_normalization(x), kf.ops.sparsemax(x), kf.ops.rfft(x)[0]]
    got = K.Function([x], outs)(F)
    want = [np.quantile(F, [0.2, 0.5], axis=1), np.kron(F, np.ones((2, 2))),
            np.diff(F), np.cross(F[:, :3], F[:, 1:]), np.nanmean(F, 0),
            np.hstack([F, F]), np.array_split(F, 3, axis=1)[0]]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call,error,match", [
    (lambda: kf.ops.diag(F3), ValueError, r"1-D or 2-D input.*\(2, 3, 4\)"),
    (lambda: kf.ops.cross(F, U), ValueError, "2 or 3 components. Received: 4"),
    (lambda: kf.ops.quantile(F, 0.5, method="cubic"), ValueError, "method=.cubic"),
    (lambda: kf.ops.moveaxis(F3, [0, 1], [2]), ValueError, "as many destinations"),
    (lambda: kf.ops.vsplit(D, 3), ValueError, "dimension of 4 into 3"),
    (lambda: kf.ops.select([F > 0], [F, U]), ValueError, "Received: 1 and 2"),
    (lambda: kf.ops.average(F3, weights=P[0]), ValueError, "weights.shape=\\(4,\\)"),
    (lambda: kf.ops.glu(F3[:, :, :3]), ValueError, "divisible by 2"),
    (lambda: kf.ops.scatter_update(F, np.array([[0, 0]]), F[0, :1], "sum"),
     ValueError, "Unsupported reduction: 'sum'"),
    (lambda: kf.ops.matrix_rank(F[0]), ValueError, "rank >= 2"),
    (lambda: kf.ops.image.map_coordinates(F, F3[:1], 1), ValueError,
     "First dim of `coordinates`"),
    (lambda: kf.ops.bitwise_and(kf.backend.placeholder("int32", (2, 3)),
                                np.zeros((4,), "int32")), ValueError,
     "bitwise_and cannot take inputs"),
])
def test_bad_input_errors_name_expected_and_received(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_numpy_namespace_holds_the_ops():
    assert kf.ops.numpy.cumsum is kf.ops.cumsum
    assert kf.ops.numpy.matmul is kf.ops.matmul
