"""``keras.legacy.saving`` / ``keras.utils.legacy``: ``serialize_keras_object``
and ``deserialize_keras_object``, kerasflow's (one format, no pickle)."""

from __future__ import annotations

from kerasflow.saving.api import deserialize_keras_object, serialize_keras_object

__all__ = ["deserialize_keras_object", "serialize_keras_object"]
