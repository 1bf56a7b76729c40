"""Weight initializers (Keras 3's ``keras.initializers``), computed on the host.

An initializer is called as ``init(shape, dtype=None)`` and returns a numpy
array; ``Variable`` moves it to the device. ``base`` holds the classes,
``stft`` the STFT kernel; this module the lookup (``get``/``serialize``/
``deserialize``) and Keras' aliases: the snake-case names are the classes
themselves (``initializers.glorot_uniform(seed=1)``), and ``get`` also knows
"uniform", "normal", "one" and "zero", as Keras does.

Example:
    >>> w = get("uniform")((3, 2))  # RandomUniform(-0.05, 0.05)
"""

from __future__ import annotations

from typing import Any

from kerasflow.initializers.base import (
    Constant,
    GlorotNormal,
    GlorotUniform,
    HeNormal,
    HeUniform,
    Identity,
    Initializer,
    LecunNormal,
    LecunUniform,
    Ones,
    Orthogonal,
    RandomNormal,
    RandomUniform,
    TruncatedNormal,
    VarianceScaling,
    Zeros,
    compute_fans,
)
from kerasflow.initializers.stft import STFT
from kerasflow.utils.keras_surface import missing_attribute
from kerasflow.utils.serialization import lookup_functions

# Keras 3's aliases: the same classes under other names.
IdentityInitializer = Identity
OrthogonalInitializer = Orthogonal
STFTInitializer = STFT
constant, zeros, ones = Constant, Zeros, Ones
identity, orthogonal, stft = Identity, Orthogonal, STFT
random_normal, random_uniform = RandomNormal, RandomUniform
truncated_normal, variance_scaling = TruncatedNormal, VarianceScaling
glorot_normal, glorot_uniform = GlorotNormal, GlorotUniform
he_normal, he_uniform = HeNormal, HeUniform
lecun_normal, lecun_uniform = LecunNormal, LecunUniform

__all__ = [
    "Constant", "GlorotNormal", "GlorotUniform", "HeNormal", "HeUniform", "Identity",
    "IdentityInitializer", "Initializer", "LecunNormal", "LecunUniform", "Ones",
    "Orthogonal", "OrthogonalInitializer", "RandomNormal", "RandomUniform", "STFT",
    "STFTInitializer", "TruncatedNormal", "VarianceScaling", "Zeros", "compute_fans",
    "constant", "deserialize", "get", "glorot_normal", "glorot_uniform",
    "he_normal", "he_uniform", "identity", "lecun_normal", "lecun_uniform", "ones",
    "orthogonal", "random_normal", "random_uniform", "serialize", "stft",
    "truncated_normal", "variance_scaling", "zeros",
]

_CLASSES = (Zeros, Ones, Constant, RandomNormal, RandomUniform, TruncatedNormal,
            VarianceScaling, GlorotUniform, GlorotNormal, HeUniform, HeNormal,
            LecunUniform, LecunNormal, Orthogonal, Identity, STFT)
_OBJECTS: dict[str, Any] = {cls.__name__: cls for cls in _CLASSES}
_OBJECTS.update({
    "zeros": Zeros, "ones": Ones, "constant": Constant,
    "random_normal": RandomNormal, "random_uniform": RandomUniform,
    "truncated_normal": TruncatedNormal, "variance_scaling": VarianceScaling,
    "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal,
    "he_uniform": HeUniform, "he_normal": HeNormal, "lecun_uniform": LecunUniform,
    "lecun_normal": LecunNormal, "orthogonal": Orthogonal, "identity": Identity,
    "stft": STFT, "IdentityInitializer": Identity,
    "OrthogonalInitializer": Orthogonal, "STFTInitializer": STFT,
    # Keras 3's short aliases (keras/src/initializers/__init__.py).
    "uniform": RandomUniform, "normal": RandomNormal, "one": Ones, "zero": Zeros,
})


_GET_DOC = """Resolves an initializer identifier (Keras' ``initializers.get``).

    Args:
        identifier: None, a name ("glorot_uniform", "HeNormal", "uniform",
            "normal", "one", "zero"...) giving a new instance with default
            arguments, a config dict, or a callable ``f(shape, dtype)``
            (returned as is).

    Returns:
        None for None, else a callable ``(shape, dtype=None) -> np.ndarray``.

    Raises:
        ValueError: an unknown name. TypeError: an identifier of another type.
    """
# serialize: class_name and config, in Keras' format.
serialize, deserialize, get = lookup_functions(__name__, _OBJECTS, "initializer",
                                               _GET_DOC)


def __getattr__(name):  # a Keras name kerasflow lacks: NotImplementedError
    raise missing_attribute("initializers", name)
