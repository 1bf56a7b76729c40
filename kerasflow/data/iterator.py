"""TF 1.x dataset iterators for Session programs:
``dataset.make_one_shot_iterator().get_next()``, initializable iterators
(``make_initializable_iterator()``, run ``iterator.initializer`` to start a
pass, optionally feeding the placeholders a ``from_tensor_slices`` was built
on) and reinitializable ones (``Iterator.from_structure`` +
``make_initializer(dataset)``).

``get_next()`` returns placeholders shaped like the dataset's element; the
compat ``Session.run`` feeds them the iterator's next element whenever a fetch
depends on them (one element per ``run``), and turns the end of the data into
``tf.errors.OutOfRangeError``.
"""

from __future__ import annotations

from kerasflow import backend as K
from kerasflow import tree
from kerasflow.data.structure import ElementSpecViews, signature

__all__ = ["Initializer", "Iterator", "bound_value", "elements_of",
           "iterators_feeding", "make_initializable_iterator",
           "make_one_shot_iterator"]

# Placeholder node id -> the iterator that feeds it. Strong references, as
# TF's graph holds its iterators: `ds.make_one_shot_iterator().get_next()`
# drops the iterator object at once, yet its tensors must keep feeding.
_FEEDS: dict = {}
# Placeholder node id -> the value fed with the last initializer run that fed
# it: what a dataset built on placeholders reads (TF's initializable iterator).
_BOUND: dict = {}


def bound_value(placeholder):
    """The value fed for ``placeholder`` when an iterator initializer last ran.

    Raises:
        ValueError: it was never fed (naming it).
    """
    try:
        return _BOUND[placeholder.node.id]
    except KeyError:
        raise ValueError(f"The dataset reads placeholder '{placeholder.name}', "
                         f"which was not fed: run the iterator's initializer "
                         f"with feed_dict={{{placeholder.name}: value}}.") from None


class Initializer:
    """``iterator.initializer``: ``sess.run(initializer, feed_dict)`` binds the
    fed placeholders and starts a new pass of the iterator over ``dataset``."""

    def __init__(self, iterator, dataset):
        self._iterator, self._dataset = iterator, dataset

    def run(self, feed_dict=None, session=None):
        for key, value in (feed_dict or {}).items():
            node = getattr(key, "node", None)
            if node is not None:
                _BOUND[node.id] = value
        self._iterator._restart(self._dataset)


class Iterator(ElementSpecViews):
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

    def __init__(self, dataset, spec=None, initializable=False):
        self._dataset = dataset
        self._spec = spec
        self._elements = None
        self._next = None
        self._initializable = initializable
        self.initializer = Initializer(self, dataset) if initializable and \
            dataset is not None else None

    @staticmethod
    def from_structure(output_types, output_shapes=None, shared_name=None,
                       output_classes=None):
        """A reinitializable iterator of the given element structure (TF 1.x
        ``tf.data.Iterator.from_structure``): ``make_initializer(dataset)``
        gives each dataset's initializer."""
        return Iterator(None, signature(output_types, output_shapes),
                        initializable=True)

    def make_initializer(self, dataset, name=None) -> Initializer:
        """The initializer that points this iterator at ``dataset``.

        Raises:
            TypeError: ``dataset``'s element structure differs from the
                iterator's.
        """
        try:
            tree.assert_same_structure(self.element_spec, dataset.element_spec)
        except (TypeError, ValueError):
            raise TypeError(f"make_initializer expects a dataset with elements "
                            f"like {self.element_spec!r}. Received: "
                            f"{dataset.element_spec!r}.") from None
        return Initializer(self, dataset)

    def _restart(self, dataset):
        self._dataset, self._elements = dataset, iter(dataset)

    @property
    def element_spec(self):
        return self._spec if self._dataset is None else self._dataset.element_spec

    def get_next(self, name=None):
        """Placeholders with the element's structure, shapes and dtypes.

        Unlike TF, every call returns the same tensors: one ``Session.run``
        advances the iterator once however many of them it fetches.
        """
        if self._next is None:
            self._next = tree.map_structure(
                lambda s: K.placeholder(s.dtype, s.shape, name or "IteratorGetNext"),
                self.element_spec)
            for t in tree.flatten(self._next):
                _FEEDS[t.node.id] = self
        return self._next

    def next_feed(self) -> dict:
        """{placeholder: value} for the next element.

        Raises:
            StopIteration: the dataset is exhausted.
            ValueError: an initializable iterator whose initializer has not
                run.
        """
        if self._elements is None:
            if self._initializable:
                raise ValueError("GetNext() failed because the iterator has not "
                                 "been initialized: run iterator.initializer "
                                 "(sess.run(iterator.initializer)) first.")
            self._elements = iter(self._dataset)
        element = next(self._elements)
        return dict(zip(tree.flatten(self._next), tree.flatten(element)))


def make_one_shot_iterator(dataset) -> Iterator:
    """TF 1.x ``tf.compat.v1.data.make_one_shot_iterator(dataset)``."""
    return Iterator(dataset)


def make_initializable_iterator(dataset, shared_name=None) -> Iterator:
    """TF 1.x ``tf.compat.v1.data.make_initializable_iterator(dataset)``:
    ``sess.run(it.initializer, feed_dict=...)`` starts each pass."""
    return Iterator(dataset, initializable=True)


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
