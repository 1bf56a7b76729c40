"""kerasflow: a Keras-style deep-learning framework on a TF1-style graph backend.

    import kerasflow as kf
    model = kf.Sequential([kf.layers.Dense(10, input_shape=(784,))])

``import kerasflow`` loads numpy, pyyaml and tqdm only; ray and cupy load when
first needed.
"""

from kerasflow._version import __version__, version
from kerasflow import backend
from kerasflow import ops
from kerasflow import activations, constraints, initializers, regularizers
from kerasflow import losses, metrics, optimizers
from kerasflow import layers
from kerasflow import callbacks
from kerasflow import data
from kerasflow import models
from kerasflow import datasets, summary, utils
from kerasflow import config, random, saving, tree
from kerasflow import dtype_policies, legacy, mixed_precision, preprocessing
from kerasflow import distribute  # tf.distribute's names; Ray loads on first use
from kerasflow.backend import GradientTape, name_scope
from kerasflow.backend import SymbolicTensor as KerasTensor
from kerasflow.dtype_policies import DTypePolicy, FloatDTypePolicy
from kerasflow.initializers import Initializer
from kerasflow.layers import Input, InputSpec, Layer
from kerasflow.losses import Loss
from kerasflow.metrics import Metric
from kerasflow.models import Model, Sequential
from kerasflow.operation import Function, Operation
from kerasflow.optimizers import Optimizer
from kerasflow.regularizers import Regularizer
from kerasflow.scopes import RematScope, SymbolicScope, device, remat
from kerasflow.utils.keras_surface import missing_attribute as _missing_attribute
from kerasflow.variable import Variable

__all__ = ["backend", "config", "ops", "activations", "constraints", "initializers",
           "regularizers", "losses", "metrics", "optimizers", "layers", "callbacks",
           "data", "models", "datasets", "summary", "utils", "distribute", "random",
           "saving", "tree", "dtype_policies", "legacy", "mixed_precision",
           "preprocessing", "DTypePolicy", "FloatDTypePolicy", "Function", "Operation",
           "RematScope", "SymbolicScope", "device", "remat", "GradientTape",
           "Initializer", "Input", "InputSpec",
           "KerasTensor", "Layer", "Loss", "Metric", "Model", "Optimizer",
           "Regularizer", "Sequential", "Variable", "name_scope", "version",
           "__version__"]


_LAZY = {"estimators": "kerasflow.estimators", "estimator": "kerasflow.estimators",
         "feature_column": "kerasflow.feature_column", "train": "kerasflow.train",
         "experimental": "kerasflow.experimental"}


def __getattr__(name):  # estimators, feature columns, train load on first use
    if name in _LAZY:
        import importlib  # noqa: PLC0415

        return importlib.import_module(_LAZY[name])
    raise _missing_attribute("", name)  # a Keras name: NotImplementedError
