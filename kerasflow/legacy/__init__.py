"""``keras.legacy`` (Keras 3): the older serialization entry points under
``legacy.saving``; kerasflow's are its one serialization format's."""

from kerasflow.legacy import saving

__all__ = ["saving"]
