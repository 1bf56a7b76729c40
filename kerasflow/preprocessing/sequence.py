"""``keras.preprocessing.sequence`` (Keras 3): ``pad_sequences``."""

from kerasflow.utils.sequence_utils import pad_sequences

__all__ = ["pad_sequences"]
