"""Loss functions and classes (L1; Keras 3's ``keras.losses``).

``base`` holds the ``Loss`` class, weighted reduction and the lookup
(``get``/``serialize``/``deserialize``); ``regression``, ``probabilistic`` and
``hinge`` hold the losses by family. Every public name is importable from here.

Example:
    >>> MeanSquaredError()(np.array([[0.0], [1.0]]), np.array([[1.0], [1.0]]))
    0.5
"""

from __future__ import annotations

# ruff: noqa: F401
from kerasflow.losses.base import (
    EPSILON,
    REDUCTIONS,
    Loss,
    LossFunctionWrapper,
    Reduction,
    as_tensor,
    deserialize,
    get,
    loss_functions,
    reduce_weighted_values,
    serialize,
    squeeze_or_expand_to_same_rank,
)
from kerasflow.losses.focal_overlap import (
    CTC,
    BinaryFocalCrossentropy,
    CategoricalFocalCrossentropy,
    Dice,
    Tversky,
    binary_focal_crossentropy,
    categorical_focal_crossentropy,
    ctc,
    dice,
    tversky,
)
from kerasflow.losses.hinge import (
    CategoricalHinge,
    Hinge,
    SquaredHinge,
    categorical_hinge,
    hinge,
    squared_hinge,
)
from kerasflow.losses.probabilistic import (
    KLD,
    BinaryCrossentropy,
    CategoricalCrossentropy,
    KLDivergence,
    Poisson,
    SparseCategoricalCrossentropy,
    sparse_labels,
    binary_crossentropy,
    categorical_crossentropy,
    kl_divergence,
    kld,
    kullback_leibler_divergence,
    poisson,
    sparse_categorical_crossentropy,
)
from kerasflow.losses.metric_learning import (
    CategoricalGeneralizedCrossEntropy,
    Circle,
    categorical_generalized_cross_entropy,
    circle,
)
from kerasflow.losses.regression import (
    MAE,
    MAPE,
    MSE,
    MSLE,
    CosineSimilarity,
    Huber,
    LogCosh,
    MeanAbsoluteError,
    MeanAbsolutePercentageError,
    MeanSquaredError,
    MeanSquaredLogarithmicError,
    cosine_similarity,
    huber,
    log_cosh,
    logcosh,
    mae,
    mape,
    mean_absolute_error,
    mean_absolute_percentage_error,
    mean_squared_error,
    mean_squared_logarithmic_error,
    mse,
    msle,
)

__all__ = [
    "BinaryFocalCrossentropy", "CTC", "CategoricalFocalCrossentropy", "Dice",
    "Tversky", "ctc", "Reduction",
    "binary_focal_crossentropy", "categorical_focal_crossentropy", "dice", "tversky",
    "BinaryCrossentropy", "CategoricalCrossentropy", "CategoricalHinge",
    "CosineSimilarity", "Hinge", "Huber", "KLDivergence", "LogCosh", "Loss",
    "LossFunctionWrapper", "MeanAbsoluteError", "MeanAbsolutePercentageError",
    "MeanSquaredError", "MeanSquaredLogarithmicError", "Poisson",
    "SparseCategoricalCrossentropy", "SquaredHinge", "binary_crossentropy",
    "categorical_crossentropy", "categorical_hinge", "cosine_similarity", "deserialize",
    "get", "hinge", "huber", "kl_divergence", "kld", "log_cosh", "mae", "mape",
    "mean_absolute_error", "mean_absolute_percentage_error", "mean_squared_error",
    "mean_squared_logarithmic_error", "mse", "msle", "poisson", "serialize",
    "sparse_categorical_crossentropy", "squared_hinge",
    "squeeze_or_expand_to_same_rank", "CategoricalGeneralizedCrossEntropy", "Circle",
    "categorical_generalized_cross_entropy", "circle",
]


def __getattr__(name):  # a Keras name kerasflow lacks: NotImplementedError
    from kerasflow.utils.keras_surface import missing_attribute

    raise missing_attribute("losses", name)
