"""TF 1.x dataset iterators for Session programs:
``dataset.make_one_shot_iterator().get_next()``.

``get_next()`` returns placeholders shaped like the dataset's element; the
compat ``Session.run`` feeds them the iterator's next element whenever a fetch
depends on them (one element per ``run``), and turns the end of the data into
``tf.errors.OutOfRangeError``.
"""

from __future__ import annotations

from kerasflow import backend as K
from kerasflow import tree

__all__ = ["Iterator", "elements_of", "iterators_feeding", "make_one_shot_iterator"]

# Placeholder node id -> the iterator that feeds it. Strong references, as
# TF's graph holds its iterators: `ds.make_one_shot_iterator().get_next()`
# drops the iterator object at once, yet its tensors must keep feeding.
_FEEDS: dict = {}


class Iterator:
    """A one-shot iterator over a ``Dataset`` (TF 1.x
    ``tf.compat.v1.data.make_one_shot_iterator``).

    Example::

        x, y = dataset.make_one_shot_iterator().get_next()
        loss = ...(x, y)
        with tf.Session() as sess:
            while True:
                try:
                    sess.run(train_op)      # one element per run
                except tf.errors.OutOfRangeError:
                    break
    """

    def __init__(self, dataset):
        self._dataset = dataset
        self._elements = None
        self._next = None

    @property
    def element_spec(self):
        return self._dataset.element_spec

    def get_next(self, name=None):
        """Placeholders with the element's structure, shapes and dtypes.

        Unlike TF, every call returns the same tensors: one ``Session.run``
        advances the iterator once however many of them it fetches.
        """
        if self._next is None:
            self._next = tree.map_structure(
                lambda s: K.placeholder(s.dtype, s.shape, name or "IteratorGetNext"),
                self._dataset.element_spec)
            for t in tree.flatten(self._next):
                _FEEDS[t.node.id] = self
        return self._next

    def next_feed(self) -> dict:
        """{placeholder: value} for the next element.

        Raises:
            StopIteration: the dataset is exhausted.
        """
        if self._elements is None:
            self._elements = iter(self._dataset)
        element = next(self._elements)
        return dict(zip(tree.flatten(self._next), tree.flatten(element)))


def make_one_shot_iterator(dataset) -> Iterator:
    """TF 1.x ``tf.compat.v1.data.make_one_shot_iterator(dataset)``."""
    return Iterator(dataset)


def has_iterators() -> bool:
    """Whether any live iterator has handed out tensors."""
    return len(_FEEDS) > 0


def iterators_feeding(nodes) -> list:
    """The iterators whose ``get_next`` placeholders are among ``nodes``."""
    found = {}
    for node in nodes:
        it = _FEEDS.get(node.id)
        if it is not None:
            found[id(it)] = it
    return list(found.values())


def elements_of(structure):
    """For a structure of one iterator's ``get_next()`` tensors (as a TF 1.x
    Estimator ``input_fn`` returns them, possibly repacked): a generator of the
    structure filled with that iterator's successive elements; else None.

    Raises:
        ValueError: tensors from more than one iterator.
    """
    leaves = [t for t in tree.flatten(structure) if isinstance(t, K.SymbolicTensor)]
    sources = {id(_FEEDS[t.node.id]): _FEEDS[t.node.id] for t in leaves
               if t.node.id in _FEEDS}
    if not sources:
        return None
    if len(sources) > 1:
        raise ValueError(f"Expected the get_next() tensors of one dataset "
                         f"iterator. Received tensors of {len(sources)}.")
    (source,) = sources.values()

    def elements():
        while True:
            try:
                feed = source.next_feed()
            except StopIteration:
                return
            by_id = {id(t): v for t, v in feed.items()}
            yield tree.map_structure(lambda t: by_id.get(id(t), t), structure)

    return elements()
