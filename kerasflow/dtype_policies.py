"""Dtype policies (Keras 3's ``keras.dtype_policies`` and ``keras.DTypePolicy``):
the dtype a layer keeps its variables in and computes in, named as Keras
names them ("float32", "float64", "mixed_float16", "mixed_bfloat16"...).

A layer built under a mixed policy ("mixed_float16": float32 variables,
float16 computation) casts its float inputs to the compute dtype and reads
its Variables through an autocast scope (``kerasflow.layers.Layer``), as
Keras 3 does. ``set_dtype_policy`` sets the policy layers built afterwards
default to (``floatx()`` until it is called).

Example:
    >>> DTypePolicy("mixed_float16").compute_dtype
    'float16'
"""

from __future__ import annotations

import numpy as np

from kerasflow.backend import floatx
from kerasflow.backend.keras_backend import is_float_dtype, standardize_dtype

__all__ = ["DTypePolicy", "FloatDTypePolicy", "QUANTIZATION_MODES",
           "QuantizedDTypePolicy", "check_quantization_mode", "deserialize",
           "dtype_policy", "get", "layer_dtypes", "serialize", "set_dtype_policy"]

_MIXED = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}
# Keras 3's quantization modes, and the ones kerasflow implements.
QUANTIZATION_MODES = ("int8", "float8", "int4", "gptq", "awq")
_IMPLEMENTED_MODES = ("int8",)


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


def check_quantization_mode(mode, compute_dtype=None) -> None:
    """Raises unless kerasflow can quantize to ``mode`` (Keras 3's checks).

    Raises:
        ValueError: a mode Keras 3 does not know, naming it and the modes
            kerasflow implements; "int8" with a float16 compute dtype (Keras).
        NotImplementedError: a Keras 3 mode other than "int8" ("int4",
            "float8", "gptq", "awq"), naming it and the implemented ones.
    """
    if mode not in QUANTIZATION_MODES:
        raise ValueError(f"Invalid quantization mode. Expected one of "
                         f"{_IMPLEMENTED_MODES}. Received: mode={mode}")
    if mode not in _IMPLEMENTED_MODES:
        raise NotImplementedError(
            f"Quantization mode '{mode}' is one of Keras 3's but not "
            f"implemented in kerasflow. Expected one of {_IMPLEMENTED_MODES}. "
            f"Received: mode={mode}")
    if mode == "int8" and compute_dtype == "float16":
        raise ValueError(
            f"Quantization mode='{mode}' doesn't work well with "
            f"compute_dtype='float16'. Consider loading model/layer with "
            f"another dtype policy such as 'mixed_bfloat16' or "
            f"'mixed_float16' before calling `quantize()`.")


class QuantizedDTypePolicy(DTypePolicy):
    """The policy of a layer whose kernel is quantized (Keras 3's
    ``keras.dtype_policies.QuantizedDTypePolicy``), named
    "<mode>_from_<source>": "int8_from_float32" keeps an int8 kernel with a
    float32 scale and computes in the source policy's dtypes.

    Args:
        mode: "int8" (the mode kerasflow implements).
        source_name: the float policy the layer had ("float32"); None is
            the global policy's name.

    Raises:
        ValueError / NotImplementedError: as ``check_quantization_mode``.

    Example:
        >>> QuantizedDTypePolicy("int8", "float32").name
        'int8_from_float32'
    """

    def __init__(self, mode, source_name=None):
        if source_name is None:
            source_name = dtype_policy().name
        source = DTypePolicy(source_name)
        check_quantization_mode(mode, source.compute_dtype)
        super().__init__(source_name)
        self._name = f"{mode}_from_{source_name}"
        self._source_name, self._mode = source_name, mode

    @property
    def quantization_mode(self):
        """The quantization mode ("int8")."""
        return self._mode

    def get_config(self) -> dict:
        return {"mode": self._mode, "source_name": self._source_name}

    def __repr__(self):
        return f'<QuantizedDTypePolicy "{self.name}">'

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
        mode, sep, source = identifier.partition("_from_")
        if sep and mode in QUANTIZATION_MODES:
            return QuantizedDTypePolicy(mode, source)
        return DTypePolicy(identifier)
    if isinstance(identifier, dict):
        return deserialize(identifier)
    raise TypeError(f"Cannot interpret `dtype` argument. Expected a string, a "
                    f"DTypePolicy or a config dict. Received: {identifier} of "
                    f"type {type(identifier)}")


def serialize(policy: DTypePolicy) -> dict:
    """Keras' serialized form: ``{"module", "class_name", "config", ...}``."""
    if isinstance(policy, QuantizedDTypePolicy):
        return {"module": "keras.dtype_policies",
                "class_name": "QuantizedDTypePolicy",
                "config": policy.get_config(), "registered_name": None}
    return {"module": "keras", "class_name": "DTypePolicy",
            "config": policy.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None) -> DTypePolicy:
    """A policy from ``serialize``'s dict (or a bare config dict).

    Raises:
        ValueError: a class other than DTypePolicy / FloatDTypePolicy /
            QuantizedDTypePolicy.
    """
    if "class_name" in config:
        if config["class_name"] == "QuantizedDTypePolicy":
            return QuantizedDTypePolicy(**config["config"])
        if config["class_name"] not in ("DTypePolicy", "FloatDTypePolicy"):
            raise ValueError(f"kerasflow has DTypePolicy and the int8 "
                             f"QuantizedDTypePolicy. Received: class_name="
                             f"{config['class_name']!r}.")
        config = config["config"]
    if "mode" in config:
        return QuantizedDTypePolicy(**config)
    return DTypePolicy.from_config(config)


def layer_dtypes(dtype) -> tuple[DTypePolicy | None, str, str]:
    """(policy, variable dtype, compute dtype) of a layer given ``dtype=``:
    None follows the default policy; a dtype, policy name, policy or config
    gives that policy's dtypes. A mixed policy ("mixed_float16") keeps
    float32 variables and computes in float16; otherwise the two agree. The
    policy is None for a non-float dtype ("int64": kerasflow's policies are
    float ones).

    Raises:
        ValueError: an unknown policy name. TypeError: another type.
        NotImplementedError: a bfloat16 policy ("mixed_bfloat16",
            "bfloat16"): numpy and cupy arrays have no bfloat16.
    """
    if dtype is None and _GLOBAL[0] is None:
        dtype = floatx()
    if dtype is not None and not isinstance(dtype, (str, DTypePolicy, dict)):
        dtype = np.dtype(dtype).name
    if isinstance(dtype, str) and dtype not in _MIXED:
        try:
            name = np.dtype(dtype).name  # any dtype, int ones included
        except TypeError:
            pass
        else:
            policy = DTypePolicy(name) if np.dtype(name).kind == "f" else None
            return policy, name, name
    policy = get(dtype)
    if "bfloat16" in (policy.compute_dtype, policy.variable_dtype):
        raise NotImplementedError(
            f"kerasflow computes with numpy/cupy arrays, which have no "
            f"bfloat16: use 'float32' or 'mixed_float16'. Received: dtype "
            f"policy {policy.name!r}.")
    return (policy, np.dtype(policy.variable_dtype).name,
            np.dtype(policy.compute_dtype).name)
