"""``kerasflow.config``: Keras 3's ``keras.config`` names for the global
settings kerasflow has (float type, fuzz factor, image layout, interactive
logging). They are the backend's and ``utils.io_utils``' functions, not copies.
"""

from __future__ import annotations

from kerasflow.backend import (
    epsilon,
    floatx,
    image_data_format,
    set_epsilon,
    set_floatx,
    set_image_data_format,
)
from kerasflow.utils.io_utils import (
    disable_interactive_logging,
    enable_interactive_logging,
    is_interactive_logging_enabled,
)
from kerasflow.utils.keras_surface import missing_attribute

__all__ = ["disable_interactive_logging", "enable_interactive_logging", "epsilon",
           "floatx", "image_data_format", "is_interactive_logging_enabled",
           "set_epsilon", "set_floatx", "set_image_data_format"]


def __getattr__(name):  # a Keras name kerasflow lacks: NotImplementedError
    raise missing_attribute("config", name)
