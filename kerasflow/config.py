"""``kerasflow.config``: Keras 3's ``keras.config`` names.

The float type, fuzz factor, image layout and interactive logging are the
backend's and ``utils.io_utils``' functions, not copies; the dtype policy is
``kerasflow.dtype_policies``'. The rest are the switches Keras keeps here:
the epoch and step caps ``fit``/``evaluate``/``predict`` honour (also read
from ``KERAS_MAX_EPOCHS`` / ``KERAS_MAX_STEPS_PER_EPOCH``, for quick debugging
runs), unsafe deserialization, flash attention and traceback filtering
(recorded and reported; kerasflow's attention has no flash kernel and its
tracebacks are not filtered), and the backend (kerasflow has one: "numpy").
"""

from __future__ import annotations

import os

from kerasflow.backend import (
    epsilon,
    floatx,
    image_data_format,
    set_epsilon,
    set_floatx,
    set_image_data_format,
)
from kerasflow.backend.keras_backend import backend
from kerasflow.dtype_policies import dtype_policy, set_dtype_policy
from kerasflow.utils.io_utils import (
    disable_interactive_logging,
    enable_interactive_logging,
    is_interactive_logging_enabled,
)
from kerasflow.utils.keras_surface import missing_attribute

__all__ = ["backend", "disable_flash_attention", "disable_interactive_logging",
           "disable_traceback_filtering", "dtype_policy", "enable_flash_attention",
           "enable_interactive_logging", "enable_traceback_filtering",
           "enable_unsafe_deserialization", "epsilon", "floatx",
           "image_data_format", "is_flash_attention_enabled",
           "is_interactive_logging_enabled", "is_nnx_enabled",
           "is_traceback_filtering_enabled", "is_unsafe_deserialization_enabled",
           "max_epochs", "max_steps_per_epoch", "set_backend",
           "set_dtype_policy", "set_epsilon", "set_floatx",
           "set_image_data_format", "set_max_epochs", "set_max_steps_per_epoch"]


def _env_int(name):
    value = os.environ.get(name)
    return int(value) if value else None


_STATE = {"max_epochs": _env_int("KERAS_MAX_EPOCHS"),
          "max_steps_per_epoch": _env_int("KERAS_MAX_STEPS_PER_EPOCH"),
          "unsafe_deserialization": False, "flash_attention": None,
          "traceback_filtering": True}


def _check_cap(name, value):
    if value is not None and (isinstance(value, bool) or not isinstance(
            value, int) or value < 1):
        raise ValueError(f"`{name}` must be None or an integer >= 1. Received: "
                         f"{name}={value!r}.")
    return value


def set_max_epochs(max_epochs) -> None:
    """Caps the number of epochs of every ``fit`` (None: no cap); ``fit``
    warns when it cuts a run short.

    Raises:
        ValueError: not None nor an integer >= 1.
    """
    _STATE["max_epochs"] = _check_cap("max_epochs", max_epochs)


def max_epochs():
    """The epoch cap ``set_max_epochs`` (or ``KERAS_MAX_EPOCHS``) set, or None."""
    return _STATE["max_epochs"]


def set_max_steps_per_epoch(max_steps_per_epoch) -> None:
    """Caps the steps of every epoch of ``fit`` and of every ``evaluate`` /
    ``predict`` (None: no cap).

    Raises:
        ValueError: not None nor an integer >= 1.
    """
    _STATE["max_steps_per_epoch"] = _check_cap("max_steps_per_epoch",
                                               max_steps_per_epoch)


def max_steps_per_epoch():
    """The step cap ``set_max_steps_per_epoch`` (or
    ``KERAS_MAX_STEPS_PER_EPOCH``) set, or None."""
    return _STATE["max_steps_per_epoch"]


def enable_unsafe_deserialization() -> None:
    """Keras 3's switch to let ``load_model`` run saved lambdas. kerasflow's
    formats hold no code and its loaders never unpickle, so there is nothing
    unsafe to enable: the switch is recorded
    (``is_unsafe_deserialization_enabled``) and loading is unchanged."""
    _STATE["unsafe_deserialization"] = True


def is_unsafe_deserialization_enabled() -> bool:
    """Whether ``enable_unsafe_deserialization`` was called."""
    return _STATE["unsafe_deserialization"]


def enable_flash_attention() -> None:
    """Records a request for flash attention (Keras 3); kerasflow's attention
    computes the same values without a flash kernel."""
    _STATE["flash_attention"] = True


def disable_flash_attention() -> None:
    """Records that flash attention must not be used."""
    _STATE["flash_attention"] = False


def is_flash_attention_enabled():
    """None (the default: the backend decides), True or False, as set."""
    return _STATE["flash_attention"]


def enable_traceback_filtering() -> None:
    """Records Keras 3's traceback filtering switch (kerasflow shows whole
    tracebacks either way)."""
    _STATE["traceback_filtering"] = True


def disable_traceback_filtering() -> None:
    """Records that tracebacks must not be filtered."""
    _STATE["traceback_filtering"] = False


def is_traceback_filtering_enabled() -> bool:
    """The traceback filtering switch (True by default, as Keras)."""
    return _STATE["traceback_filtering"]


def is_nnx_enabled() -> bool:
    """False: Flax NNX is a JAX-backend feature."""
    return False


def set_backend(backend_name) -> None:
    """Keras 3's backend switch. kerasflow has one backend, "numpy" (on cupy
    with ``kerasflow.backend.set_device``): asking for it is a no-op.

    Raises:
        ValueError: any other backend, naming the one kerasflow has.
    """
    if backend_name != "numpy":
        raise ValueError(f"kerasflow has one backend, 'numpy' (cupy on a GPU via "
                         f"kerasflow.backend.set_device). Received: "
                         f"backend={backend_name!r}.")


def __getattr__(name):  # a Keras name kerasflow lacks: NotImplementedError
    raise missing_attribute("config", name)
