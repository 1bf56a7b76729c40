"""Dtype policies (Keras 3's ``keras.dtype_policies`` and ``keras.DTypePolicy``):
the dtype a layer keeps its variables in and computes in, named as Keras
names them ("float32", "float64", "mixed_float16", "mixed_bfloat16"...).

kerasflow computes in its variables' dtype: a policy whose compute and
variable dtypes agree ("float16", "float32", "float64", "bfloat16") is what a
layer built under it uses; a mixed policy is a valid object (its names and
config are Keras') but a layer refuses it with ``NotImplementedError``, since
kerasflow has no mixed-precision casting. ``set_dtype_policy`` sets the policy
layers built afterwards default to (``floatx()`` until it is called).

Example:
    >>> DTypePolicy("mixed_float16").compute_dtype
    'float16'
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend import floatx
from kerasflow.backend.keras_backend import is_float_dtype, standardize_dtype

__all__ = ["DTypePolicy", "FloatDTypePolicy", "deserialize", "dtype_policy", "get",
           "layer_dtype", "serialize", "set_dtype_policy"]

_MIXED = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}


class DTypePolicy:
    """A named pair of dtypes: ``compute_dtype`` and ``variable_dtype``.

    Args:
        name: "mixed_float16" (compute float16, variables float32),
            "mixed_bfloat16", or a float dtype name ("float32"...: both that
            dtype); None is ``floatx()``.

    Raises:
        TypeError: a name that is not a string. ValueError: an unknown name.
    """

    def __init__(self, name=None):
        if name is None:
            name = floatx()
        if not isinstance(name, str):
            raise TypeError(f"'name' must be a string, such as 'mixed_float16'. "
                            f"Received: name={name} (of type {type(name)})")
        if name in _MIXED:
            compute, variable = _MIXED[name], "float32"
        else:
            try:
                compute = variable = standardize_dtype(name)
            except ValueError:
                compute = None
            if compute is None or not is_float_dtype(compute):
                raise ValueError(
                    f"Cannot convert '{name}' to a mixed precision DTypePolicy. "
                    f"Valid policies include 'mixed_float16', 'mixed_bfloat16', "
                    f"and the name of any float dtype such as 'float32'.")
        self._name, self._compute_dtype, self._variable_dtype = name, compute, \
            variable

    @property
    def name(self) -> str:
        return self._name

    @property
    def compute_dtype(self) -> str:
        """The dtype layers compute in."""
        return self._compute_dtype

    @property
    def variable_dtype(self) -> str:
        """The dtype layers keep their weights in."""
        return self._variable_dtype

    @property
    def quantization_mode(self):
        """None: kerasflow has no quantized policies."""
        return None

    def get_config(self) -> dict:
        return {"name": self.name}

    @classmethod
    def from_config(cls, config: dict) -> DTypePolicy:
        return cls(**config)

    def __eq__(self, other):
        return type(other) is type(self) and other.name == self.name

    def __hash__(self):
        return hash((type(self), self.name))

    def __repr__(self):
        return f'<DTypePolicy "{self.name}">'


# Keras 3 keeps FloatDTypePolicy as the float policies' (deprecated) class.
FloatDTypePolicy = DTypePolicy

_GLOBAL: list = [None]


def set_dtype_policy(policy) -> None:
    """Sets the policy layers built afterwards use by default (Keras 3's
    ``keras.config.set_dtype_policy``).

    Args:
        policy: a ``DTypePolicy`` or its name.

    Raises:
        ValueError: an unknown policy name. TypeError: another type.
    """
    _GLOBAL[0] = get(policy)


def dtype_policy() -> DTypePolicy:
    """The default policy: the one ``set_dtype_policy`` set, else
    ``DTypePolicy(floatx())``."""
    return _GLOBAL[0] or DTypePolicy(floatx())


def get(identifier) -> DTypePolicy:
    """A ``DTypePolicy`` from a policy, a name, a config dict or None (the
    default policy).

    Raises:
        ValueError: an unknown name. TypeError: another type.
    """
    if identifier is None:
        return dtype_policy()
    if isinstance(identifier, DTypePolicy):
        return identifier
    if isinstance(identifier, str):
        return DTypePolicy(identifier)
    if isinstance(identifier, dict):
        return deserialize(identifier)
    raise TypeError(f"Cannot interpret `dtype` argument. Expected a string, a "
                    f"DTypePolicy or a config dict. Received: {identifier} of "
                    f"type {type(identifier)}")


def serialize(policy: DTypePolicy) -> dict:
    """Keras' serialized form: ``{"module", "class_name", "config", ...}``."""
    return {"module": "keras", "class_name": "DTypePolicy",
            "config": policy.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None) -> DTypePolicy:
    """A policy from ``serialize``'s dict (or a bare config dict).

    Raises:
        ValueError: a class other than DTypePolicy / FloatDTypePolicy.
    """
    if "class_name" in config:
        if config["class_name"] not in ("DTypePolicy", "FloatDTypePolicy"):
            raise ValueError(f"kerasflow has only DTypePolicy (no quantized "
                             f"policies). Received: class_name="
                             f"{config['class_name']!r}.")
        config = config["config"]
    return DTypePolicy.from_config(config)


def layer_dtype(dtype) -> str:
    """The dtype a layer given ``dtype=`` keeps its weights in: None follows
    the default policy; a dtype, policy name, policy or config gives its
    variable dtype.

    Raises:
        NotImplementedError: a mixed policy (kerasflow computes in the weights'
            dtype), naming the policy.
    """
    if dtype is None and _GLOBAL[0] is None:
        return np.dtype(floatx()).name
    if dtype is not None and not isinstance(dtype, (str, DTypePolicy, dict)):
        return np.dtype(dtype).name
    if isinstance(dtype, str) and dtype not in _MIXED:
        try:
            return np.dtype(dtype).name  # any dtype, int ones included
        except TypeError:
            pass
    policy = get(dtype)
    if policy.compute_dtype != policy.variable_dtype:
        raise NotImplementedError(
            f"kerasflow computes in the variables' dtype and has no mixed "
            f"precision: use a float policy such as 'float32' or 'float16'. "
            f"Received: dtype policy {policy.name!r}.")
    return np.dtype(policy.variable_dtype).name
