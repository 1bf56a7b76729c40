"""``kerasflow.compat.v1``: TensorFlow 1.x programs on kerasflow.

    import kerasflow.compat.v1 as tf      # the only line a TF1 program changes

    x = tf.placeholder("float")
    w = tf.Variable(0.0, name="weights")
    cost = tf.square(y - tf.multiply(x, w))
    train_op = tf.train.GradientDescentOptimizer(0.01).minimize(cost)
    with tf.Session() as sess:
        tf.global_variables_initializer().run()
        sess.run(train_op, feed_dict={x: 1.0, y: 2.0})

TF1 names and argument conventions are mapped onto kerasflow's backend ops,
optimizers, layers and checkpoint/summary writers; nothing is implemented a
second time. Where TF1 and Keras differ, TF1's semantics hold (``dropout``
takes keep_prob, ``"float"`` is float32, ``argmax`` defaults to axis 0,
``reduction_indices``/``keep_dims``). A TF1 name kerasflow does not offer
raises ``NotImplementedError`` naming it.

kerasflow has no global graph; the "default graph" here is a record of the
program's variables, collections and ops (see ``graph.py``), which
``reset_default_graph()`` starts afresh.
"""

from __future__ import annotations

import builtins as _builtins
import logging as _logging

from kerasflow import backend as _K
from kerasflow import data  # tf.data: the same objects as kerasflow.data
from kerasflow import errors as _errors
from kerasflow.compat.v1 import dtypes, flags, layers, losses, nn, train
from kerasflow.compat.v1 import gfile as _gfile
from kerasflow.compat.v1 import image as _image
from kerasflow.compat.v1 import sparse as _sparse
from kerasflow.compat.v1 import strings as _strings
from kerasflow.compat.v1 import summary_ops as summary
from kerasflow.compat.v1 import tensor_shape as _tensor_shape
from kerasflow.compat.v1._missing import Namespace as _Namespace
from kerasflow.compat.v1._missing import missing_attribute as _missing_attribute
from kerasflow.compat.v1.array_ops import *  # noqa: F403
from kerasflow.compat.v1.array_ops import __all__ as _array_all
from kerasflow.compat.v1.control_flow import cond, map_fn, vectorized_map
from kerasflow.compat.v1.dtypes import (  # noqa: F401
    DType,
    as_dtype,
    bool,
    double,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    string,
    uint8,
    uint16,
)
from kerasflow.compat.v1.graph import (  # noqa: F401
    Graph,
    GraphKeys,
    add_to_collection,
    get_collection,
    get_collection_ref,
    get_default_graph,
    reset_default_graph,
)
from kerasflow.compat.v1.math_ops import *  # noqa: F403
from kerasflow.compat.v1.math_ops import __all__ as _math_all
from kerasflow.compat.v1.session import (  # noqa: F401
    ConfigProto,
    GPUOptions,
    InteractiveSession,
    RunMetadata,
    RunOptions,
    Session,
    device,
    get_default_session,
)
from kerasflow.compat.v1.variables import *  # noqa: F403
from kerasflow.compat.v1.variables import __all__ as _variables_all
from kerasflow.data.csv import decode_csv
from kerasflow.summary import import_tensorboardx

__version__ = VERSION = "1.15.0"  # the TF API level this module follows

Tensor = Operation = _K.SymbolicTensor
TensorShape = _tensor_shape.TensorShape
Dimension = int


def gradients(ys, xs, grad_ys=None, name="gradients", **kwargs):
    """Symbolic d(sum of ys)/d(each of xs) (``kerasflow.backend.gradients``).

    Raises:
        NotImplementedError: ``grad_ys`` (initial gradients) given.
    """
    if grad_ys is not None:
        raise NotImplementedError("tf.gradients(grad_ys=...) is not provided by "
                                  "kerasflow.compat.v1.")
    # (tuple, range, bool are TF names in this module: use the builtins.)
    if isinstance(ys, (list, _builtins.tuple)):
        ys = add_n([reduce_sum(y) for y in ys])  # noqa: F405
    single = not isinstance(xs, (list, _builtins.tuple))
    grads = _K.gradients(ys, [xs] if single else list(xs))
    return list(grads)


from kerasflow.backend import GradientTape  # noqa: E402  (tf.GradientTape)
from kerasflow.compat.v1.tf2_names import (  # noqa: E402
    TensorSpec,
    control_dependencies,
    function,
)
from kerasflow.compat.v1.tf2_names import print_op as print  # noqa: E402,A001


def disable_v2_behavior():
    """Nothing to disable: this module is TF1 graph mode."""


disable_eager_execution = disable_v2_behavior


def enable_eager_execution(*args, **kwargs):
    """Raises: kerasflow.compat.v1 runs TF1 graph programs only."""
    raise NotImplementedError(
        "tf.enable_eager_execution is not supported by kerasflow.compat.v1, which "
        "runs TF1 graph programs (placeholders and Sessions). kerasflow's own ops "
        "run eagerly on numpy arrays: import kerasflow.backend and call them on "
        "arrays instead.")


enable_v2_behavior = enable_eager_execution


def executing_eagerly() -> bool:
    return False


def _set_verbosity(level):
    _logging.getLogger("tensorflow").setLevel(level)


_tf_logger = _logging.getLogger("tensorflow")
logging = _Namespace("tf.logging", {
    "DEBUG": _logging.DEBUG, "INFO": _logging.INFO, "WARN": _logging.WARNING,
    "WARNING": _logging.WARNING, "ERROR": _logging.ERROR, "FATAL": _logging.FATAL,
    "set_verbosity": _set_verbosity, "get_verbosity": _tf_logger.getEffectiveLevel,
    "debug": _tf_logger.debug, "info": _tf_logger.info, "warn": _tf_logger.warning,
    "warning": _tf_logger.warning, "error": _tf_logger.error,
    "fatal": _tf_logger.critical})

strings = _Namespace("tf.strings", {n: getattr(_strings, n) for n in _strings.__all__})
string_to_number = _strings.to_number
SparseTensor = _sparse.SparseTensor
sparse = _Namespace("tf.sparse", {"SparseTensor": _sparse.SparseTensor,
                                  "to_dense": _sparse.to_dense})
sparse_tensor_to_dense = _sparse.to_dense
image = _Namespace("tf.image", {n: getattr(_image, n) for n in _image.__all__})
random_crop = _image.random_crop
string_split = _strings.split

_gfile_v2 = {n: getattr(_gfile, n) for n in _gfile.__all__}
gfile = _Namespace("tf.gfile", {
    "Exists": _gfile.exists, "Open": _gfile.GFile, "GFile": _gfile.GFile,
    "FastGFile": _gfile.GFile, "Glob": _gfile.glob, "MakeDirs": _gfile.makedirs,
    "MkDir": _gfile.mkdir, "IsDirectory": _gfile.isdir,
    "ListDirectory": _gfile.listdir, "Remove": _gfile.remove,
    "DeleteRecursively": _gfile.rmtree, "Rename": _gfile.rename,
    "Copy": _gfile.copy, "Stat": _gfile.stat})
io = _Namespace("tf.io", {
    "decode_csv": decode_csv, "gfile": _Namespace("tf.io.gfile", _gfile_v2)})

app = _Namespace("tf.app", {"flags": flags, "run": flags.run})

errors = _Namespace("tf.errors", {n: getattr(_errors, n) for n in _errors.__all__})

math = _Namespace("tf.math", {
    **{n: globals()[n] for n in _math_all}, "cast": cast,  # noqa: F405
    "l2_normalize": nn.l2_normalize, "in_top_k": nn.in_top_k,
    "log_softmax": nn.log_softmax, "softmax": nn.softmax})

linalg = _Namespace("tf.linalg", {
    "matmul": matmul, "norm": norm, "eye": eye, "tensordot": tensordot,  # noqa: F405
    "transpose": transpose, "l2_normalize": nn.l2_normalize,  # noqa: F405
})

random = _Namespace("tf.random", {
    "normal": random_normal, "uniform": random_uniform,  # noqa: F405
    "truncated_normal": truncated_normal, "set_random_seed": set_random_seed,  # noqa: F405
    "set_seed": set_random_seed})  # noqa: F405

initializers = _Namespace("tf.initializers", {
    "zeros": zeros_initializer, "ones": ones_initializer,  # noqa: F405
    "constant": constant_initializer,  # noqa: F405
    "random_normal": random_normal_initializer,  # noqa: F405
    "truncated_normal": truncated_normal_initializer,  # noqa: F405
    "random_uniform": random_uniform_initializer,  # noqa: F405
    "glorot_uniform": glorot_uniform_initializer,  # noqa: F405
    "glorot_normal": glorot_normal_initializer,  # noqa: F405
    "variance_scaling": variance_scaling_initializer,  # noqa: F405
    "orthogonal": orthogonal_initializer,  # noqa: F405
    "global_variables": global_variables_initializer,  # noqa: F405
    "variables": variables_initializer,  # noqa: F405
    "local_variables": local_variables_initializer,  # noqa: F405
})

__all__ = [
    *_array_all, *_math_all, *_variables_all, "dtypes", "flags", "layers",
    "data", "losses", "nn", "strings", "gfile", "io", "decode_csv", "SparseTensor",
    "sparse", "sparse_tensor_to_dense", "image", "random_crop", "map_fn",
    "vectorized_map", "cond",
    "string_to_number", "string_split", "summary", "train", "app", "logging", "errors", "math",
    "linalg", "random", "initializers", "DType", "as_dtype", "float16", "half",
    "float32", "float64", "double", "int8", "int16", "int32", "int64", "uint8",
    "uint16", "bool", "string", "Graph", "GraphKeys", "add_to_collection",
    "get_collection", "get_collection_ref", "get_default_graph",
    "reset_default_graph", "ConfigProto", "GPUOptions", "InteractiveSession",
    "RunMetadata", "RunOptions", "Session", "device", "get_default_session",
    "gradients", "disable_v2_behavior", "disable_eager_execution",
    "enable_eager_execution", "enable_v2_behavior", "executing_eagerly", "Tensor",
    "Operation", "TensorShape", "Dimension", "VERSION", "GradientTape",
    "control_dependencies", "function", "print", "compat", "TensorSpec",
]

import sys as _sys  # noqa: E402

# tf.compat.v1 is this module itself (TF 1.15 programs write tf.compat.v1.X).
compat = _Namespace("tf.compat", {"v1": _sys.modules[__name__]})

_missing = _missing_attribute("tf", globals())


# Namespaces loaded on first use: the Estimator (L5) and its metric pairs, and
# contrib (whose strategies import ray).
_LAZY_MODULES = {"estimator": "kerasflow.estimators",
                 "keras": "kerasflow",             # tf.keras: kerasflow's Keras API
                 "distribute": "kerasflow.distribute",
                 "feature_column": "kerasflow.feature_column",
                 "metrics": "kerasflow.estimators.metrics",
                 "contrib": "kerasflow.compat.v1.contrib"}


def __getattr__(name):
    if name in _LAZY_MODULES:
        import importlib

        return importlib.import_module(_LAZY_MODULES[name])
    if name == "Summary":  # the protobuf class, for hand-made summaries
        return import_tensorboardx("proto.summary_pb2").Summary
    return _missing(name)
