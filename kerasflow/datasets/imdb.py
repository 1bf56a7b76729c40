"""IMDB movie review sentiment classification dataset (Maas et al., ACL 2011): not provided.

Keras ships it as ``imdb.npz``, whose sequences are object arrays readable only
with pickle; kerasflow never unpickles a download, so both functions raise.
"""

from __future__ import annotations

from kerasflow.datasets import _loader


def load_data(*args, **kwargs):
    """Keras' ``keras.datasets.imdb.load_data``: not provided.

    Raises:
        NotImplementedError: Always, saying why (the data is pickled).
    """
    raise _loader.pickle_only_error("imdb", "imdb.npz")


def get_word_index(*args, **kwargs):
    """Keras' ``keras.datasets.imdb.get_word_index``: not provided.

    Raises:
        NotImplementedError: Always (the word index only serves
            :func:`load_data`'s sequences).
    """
    raise _loader.pickle_only_error("imdb", "imdb.npz")
