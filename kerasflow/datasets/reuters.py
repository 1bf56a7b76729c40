"""Reuters newswire topics classification dataset (Reuters-21578): not provided.

Keras ships it as ``reuters.npz``, whose sequences are object arrays readable only
with pickle; kerasflow never unpickles a download, so both functions raise.
"""

from __future__ import annotations

from kerasflow.datasets import _loader


def load_data(*args, **kwargs):
    """Keras' ``keras.datasets.reuters.load_data``: not provided.

    Raises:
        NotImplementedError: Always, saying why (the data is pickled).
    """
    raise _loader.pickle_only_error("reuters", "reuters.npz")


def get_word_index(*args, **kwargs):
    """Keras' ``keras.datasets.reuters.get_word_index``: not provided.

    Raises:
        NotImplementedError: Always (the word index only serves
            :func:`load_data`'s sequences).
    """
    raise _loader.pickle_only_error("reuters", "reuters.npz")
