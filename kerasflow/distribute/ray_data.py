"""Ray Data as training input: ``kf.data.from_ray``.

A ``ray.data.Dataset`` keeps data that outgrows one machine in Ray's object
store. ``from_ray`` names its feature and label columns; ``Model.fit`` then
reads it in batches. Under ``MirroredStrategy`` / ``MultiWorkerMirroredStrategy``
the dataset is split with Ray Data's ``streaming_split(N, equal=True)`` and
each replica actor streams its own blocks
(``iter_batches(batch_size=global // N, batch_format="numpy")``), so rows never
pass through the driver; in one process (or under ``ParameterServerStrategy``)
the driver iterates ``iter_batches(batch_size=global)``.

Ray Data objects are used through their methods only (duck typing); ray
itself is loaded only by ``kerasflow/distribute/runtime/ray.py``.
"""

from __future__ import annotations

from kerasflow.distribute.input_lib import InputContext, InputSource, ReplicaInput

__all__ = ["RayDataset", "from_ray", "is_ray_dataset"]


def is_ray_dataset(x) -> bool:
    """True for a ``ray.data.Dataset`` (by its methods)."""
    return all(hasattr(x, m) for m in ("iter_batches", "streaming_split",
                                       "columns"))


def _names(value, what):
    if value is None:
        return None
    names = [value] if isinstance(value, str) else list(value)
    if not names or not all(isinstance(n, str) for n in names):
        raise TypeError(f"from_ray expects {what} to be a column name or a list of "
                        f"column names. Received: {value!r}.")
    return names


def _pick(batch, names, single):
    if names is None:
        return None
    return batch[names[0]] if single else {n: batch[n] for n in names}


class RaySplitSource(InputSource):
    """One replica's ``DataIterator`` from ``streaming_split``: a pass is one
    ``iter_batches`` call (an epoch of the split, all replicas together)."""

    def __init__(self, iterator, adapter, batch_size):
        self.iterator, self.adapter, self.batch_size = iterator, adapter, batch_size

    def passes(self):
        return self.adapter.batches(self.iterator, self.batch_size)


class RayDataset(ReplicaInput):
    """A ``ray.data.Dataset`` with named feature and label columns; build it
    with :func:`from_ray`."""

    def __init__(self, dataset, feature_columns, label_columns=None,
                 sample_weight_column=None, batch_size=32, drop_last=False,
                 collate_fn=None):
        if not is_ray_dataset(dataset):
            raise TypeError(f"from_ray expects a ray.data.Dataset. Received: "
                            f"{type(dataset).__name__}.")
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or (
                batch_size < 1):
            raise ValueError(f"from_ray expects batch_size to be a positive int "
                             f"(the global batch). Received: "
                             f"batch_size={batch_size!r}.")
        self.dataset = dataset
        self.features = _names(feature_columns, "feature_columns")
        self.labels = _names(label_columns, "label_columns")
        self.weights = _names(sample_weight_column, "sample_weight_column")
        if self.features is None:
            raise TypeError("from_ray expects feature_columns. Received: None.")
        if self.weights is not None and len(self.weights) != 1:
            raise TypeError(f"from_ray expects one sample_weight_column. Received: "
                            f"{sample_weight_column!r}.")
        self._single = (isinstance(feature_columns, str),
                        isinstance(label_columns, str))
        self.batch_size, self.drop_last = batch_size, bool(drop_last)
        self.collate_fn = collate_fn
        if collate_fn is None:  # with collate_fn the columns appear per batch
            have = dataset.columns() or []
            wanted = self.features + (self.labels or []) + (self.weights or [])
            missing = [c for c in wanted if c not in have]
            if missing:
                raise ValueError(f"from_ray: the Ray dataset has no column(s) "
                                 f"{missing}. Expected columns: {wanted}. Received "
                                 f"columns: {have}.")

    def element(self, batch):
        """``(x, y, sample_weight)``, ``(x, y)`` or ``(x,)`` of one numpy batch
        dict (column -> array), as the columns were named.

        Raises:
            ValueError: a named column is missing from the batch.
        """
        if self.collate_fn is not None:
            batch = self.collate_fn(batch)
        wanted = self.features + (self.labels or []) + (self.weights or [])
        missing = [c for c in wanted if c not in batch]
        if missing:
            raise ValueError(f"from_ray: a batch has no column(s) {missing}. "
                             f"Received columns: {sorted(batch)}.")
        x = _pick(batch, self.features, self._single[0])
        y = _pick(batch, self.labels, self._single[1])
        if self.weights is not None:
            return x, y, batch[self.weights[0]]
        return (x,) if y is None else (x, y)

    def batches(self, source, batch_size):
        """A pass over ``source`` (a Ray dataset or ``DataIterator``) as
        ``element`` batches of ``batch_size`` rows."""
        for batch in source.iter_batches(batch_size=batch_size, batch_format="numpy",
                                         drop_last=self.drop_last):
            yield self.element(batch)

    # -- ReplicaInput -----------------------------------------------------------
    def sources(self, num_replicas, node_ids=None):
        """One split per replica: ``streaming_split(num_replicas, equal=True,
        locality_hints=node_ids)``, each read ``batch_size // num_replicas``
        rows at a time.

        Raises:
            ValueError: ``batch_size`` not divisible by ``num_replicas``.
        """
        per = InputContext(num_replicas, 0, num_replicas).get_per_replica_batch_size(
            self.batch_size)
        splits = self.dataset.streaming_split(num_replicas, equal=True,
                                              locality_hints=node_ids)
        return [RaySplitSource(it, self, per) for it in splits]

    def local(self):
        return _Passes(self)

    def __getstate__(self):  # replicas need the column mapping, not the dataset
        state = dict(self.__dict__)
        state["dataset"] = None
        return state

    def __repr__(self):
        return (f"<RayDataset features={self.features} labels={self.labels} "
                f"batch_size={self.batch_size}>")


class _Passes:
    """Re-iterable global batches read in this process (a new pass per iter)."""

    def __init__(self, adapter):
        self.adapter = adapter

    def __iter__(self):
        return self.adapter.batches(self.adapter.dataset, self.adapter.batch_size)


def from_ray(dataset, feature_columns, label_columns=None, sample_weight_column=None,
             batch_size=32, drop_last=False, collate_fn=None) -> RayDataset:
    """A ``ray.data.Dataset`` as ``Model.fit`` input (column names as Ray Data's
    ``Dataset.to_tf`` takes them).

    Example::

        ds = ray.data.from_items([{"x": x[i], "y": y[i]} for i in range(n)])
        model.fit(kf.data.from_ray(ds, "x", "y", batch_size=64), epochs=3)

    Args:
        dataset: a ``ray.data.Dataset``.
        feature_columns: a column name (its array, (batch, ...), is the model's
            input ``x``) or a list of names (``x`` is a dict keyed by column
            name, matched to the model's input names as ``fit`` matches dicts).
        label_columns: a column name or list of names (``y``), or None.
        sample_weight_column: a column of per-row weights (batch,), or None.
        batch_size: int, the global batch size (rows per step over all
            replicas; each of N replicas reads ``batch_size // N``).
        drop_last: drop a last batch shorter than ``batch_size``.
        collate_fn: optional callable run on each numpy batch dict (column ->
            array) before the columns are picked; on the replica that reads it
            (Ray Train's ``collate_fn``).

    Returns:
        A ``RayDataset`` to pass to ``Model.fit`` / ``evaluate`` (also from an
        Estimator ``input_fn``).

    Raises:
        TypeError: ``dataset`` is not a Ray dataset, or bad column arguments.
        ValueError: a named column the dataset does not have (naming the
            dataset's columns), a non-positive batch_size; under N replicas,
            a batch_size not divisible by N.
    """
    return RayDataset(dataset, feature_columns, label_columns, sample_weight_column,
                      batch_size, drop_last, collate_fn)
