"""Dataset transformations against hand-computed tf.data results."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import kerasflow as kf
from kerasflow.data import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset


def _vals(ds):
    """Elements as plain Python values (nested lists/tuples)."""
    def one(e):
        if isinstance(e, tuple):
            return tuple(one(v) for v in e)
        if isinstance(e, dict):
            return {k: one(v) for k, v in e.items()}
        return np.asarray(e).tolist()
    return [one(e) for e in ds]


def test_map_unpacks_tuples_and_passes_dicts_whole():
    ds = Dataset.from_tensor_slices((np.arange(3), np.arange(3) * 10))
    assert _vals(ds.map(lambda a, b: a + b)) == [0, 11, 22]
    dd = Dataset.from_tensor_slices({"a": np.arange(3), "b": np.ones(3, int)})
    assert _vals(dd.map(lambda d: d["a"] - d["b"])) == [-1, 0, 1]
    assert _vals(ds.map(lambda a, b: [a, b])) == [[0, 0], [1, 10], [2, 20]]


@pytest.mark.parametrize("calls", [2, 4, kf.data.AUTOTUNE])
def test_parallel_map_equals_serial_map_in_order(calls):
    def slow_square(x):
        threading.Event().wait(0.001 * float(x % 3))  # finish out of order
        return x * x, np.full((2,), x)
    ds = Dataset.range(50)
    serial = _vals(ds.map(slow_square))
    parallel = _vals(ds.map(slow_square, num_parallel_calls=calls))
    assert parallel == serial
    unordered = _vals(ds.map(slow_square, num_parallel_calls=calls,
                             deterministic=False))
    assert sorted(unordered) == sorted(serial)


def test_parallel_map_runs_on_other_threads_and_raises_errors():
    names = set()

    def record(x):
        names.add(threading.current_thread().name)
        return x
    list(Dataset.range(20).map(record, num_parallel_calls=3))
    assert names and all(n.startswith("kf-data-map") for n in names)

    def boom(x):
        if x == 5:
            raise RuntimeError("bad element 5")
        return x
    with pytest.raises(RuntimeError, match="bad element 5"):
        list(Dataset.range(10).map(boom, num_parallel_calls=2))
    with pytest.raises(ValueError, match="num_parallel_calls must be >= 1"):
        Dataset.range(3).map(boom, num_parallel_calls=0)


def test_filter_keeps_matching_and_makes_cardinality_unknown():
    ds = Dataset.range(10).filter(lambda x: x % 3 == 0)
    assert _vals(ds) == [0, 3, 6, 9]
    assert ds.cardinality() == UNKNOWN_CARDINALITY
    with pytest.raises(TypeError, match="unknown"):
        len(ds)
    with pytest.raises(ValueError, match="scalar bool"):
        list(Dataset.range(3).filter(lambda x: np.array([True, False])))


def test_shuffle_buffer_semantics_and_seeds():
    ds = Dataset.range(20)
    assert _vals(ds.shuffle(1)) == list(range(20))  # a buffer of 1 keeps order
    for size in (2, 5):
        out = _vals(ds.shuffle(size, seed=3))
        assert sorted(out) == list(range(20))
        # An element can only move ahead by the buffer: position i holds an
        # element < i + buffer_size.
        assert all(v < i + size for i, v in enumerate(out))
    full = ds.shuffle(20, seed=7)
    a, b = _vals(full), _vals(full)
    assert a != b  # reshuffled per pass
    assert a == _vals(ds.shuffle(20, seed=7))  # seeded: reproducible
    fixed = ds.shuffle(20, seed=7, reshuffle_each_iteration=False)
    assert _vals(fixed) == _vals(fixed) == a
    np.random.seed(0)
    c = _vals(ds.shuffle(20))
    np.random.seed(0)
    assert _vals(ds.shuffle(20)) == c  # seed=None follows numpy's global seed
    assert ds.shuffle(4).cardinality() == 20


def test_batch_remainder_drop_and_spec():
    ds = Dataset.from_tensor_slices((np.arange(7), np.arange(14).reshape(7, 2)))
    out = _vals(ds.batch(3))
    assert [x for x, _ in out] == [[0, 1, 2], [3, 4, 5], [6]]
    assert out[2][1] == [[12, 13]]
    assert ds.batch(3).cardinality() == 3
    dropped = ds.batch(3, drop_remainder=True)
    assert [x for x, _ in _vals(dropped)] == [[0, 1, 2], [3, 4, 5]]
    assert dropped.cardinality() == 2
    assert ds.batch(3).element_spec[1].shape == (None, 2)
    assert dropped.element_spec[1].shape == (3, 2)
    assert ds.batch(3).element_spec[0].dtype == np.int64


def test_batch_of_ragged_elements_suggests_padded_batch():
    ragged = Dataset.range(1, 4).map(lambda n: np.arange(n))
    with pytest.raises(ValueError, match=r"shape \(1,\).*shape \(2,\).*padded_batch"):
        list(ragged.batch(2))


def test_padded_batch_pads_to_longest_or_given_shape():
    ragged = Dataset.range(1, 4).map(lambda n: (np.arange(n) + 1, n))
    out = _vals(ragged.padded_batch(2))
    assert out == [([[1, 0], [1, 2]], [1, 2]), ([[1, 2, 3]], [3])]
    out = _vals(ragged.padded_batch(3, padded_shapes=([5], []),
                                    padding_values=(-1, 0)))
    assert out == [([[1, -1, -1, -1, -1], [1, 2, -1, -1, -1], [1, 2, 3, -1, -1]],
                    [1, 2, 3])]
    assert ragged.padded_batch(2, padded_shapes=([5], [])).element_spec[0].shape \
        == (None, 5)
    assert ragged.padded_batch(2, drop_remainder=True).cardinality() == 1
    with pytest.raises(ValueError, match=r"does not fit the padded shape \(2,\)"):
        list(ragged.padded_batch(3, padded_shapes=([2], [])))
    words = Dataset.from_tensor_slices(np.array([b"a", b"bc"])).map(
        lambda w: np.array([w, w]))
    assert _vals(words.padded_batch(2)) == [[[b"a", b"a"], [b"bc", b"bc"]]]


def test_unbatch_inverts_batch():
    ds = Dataset.from_tensor_slices({"x": np.arange(5), "y": np.arange(5) * 2})
    assert _vals(ds.batch(2).unbatch()) == _vals(ds)
    assert ds.batch(2).unbatch().element_spec["x"].shape == ()


def test_repeat_take_skip_and_cardinalities():
    ds = Dataset.range(3)
    assert _vals(ds.repeat(2)) == [0, 1, 2, 0, 1, 2]
    assert ds.repeat(2).cardinality() == 6
    assert ds.repeat().cardinality() == INFINITE_CARDINALITY
    assert ds.repeat(-1).cardinality() == INFINITE_CARDINALITY
    assert _vals(ds.repeat().take(7)) == [0, 1, 2, 0, 1, 2, 0]
    assert ds.repeat().take(7).cardinality() == 7
    assert _vals(ds.take(-1)) == [0, 1, 2] and ds.take(10).cardinality() == 3
    assert _vals(ds.skip(1)) == [1, 2] and ds.skip(1).cardinality() == 2
    assert _vals(ds.skip(-1)) == [] and ds.skip(5).cardinality() == 0
    assert ds.repeat().skip(2).cardinality() == INFINITE_CARDINALITY
    assert ds.filter(lambda x: True).repeat(2).cardinality() == UNKNOWN_CARDINALITY
    assert _vals(Dataset.range(0).repeat()) == []  # an empty pass ends it
    with pytest.raises(TypeError, match="infinite"):
        len(ds.repeat())
    assert len(ds.repeat(3)) == 9


def test_shard_takes_every_nth_from_index():
    ds = Dataset.range(10)
    assert _vals(ds.shard(3, 0)) == [0, 3, 6, 9]
    assert _vals(ds.shard(3, 1)) == [1, 4, 7]
    assert _vals(ds.shard(3, 2)) == [2, 5, 8]
    assert [ds.shard(3, i).cardinality() for i in range(3)] == [4, 3, 3]
    with pytest.raises(ValueError, match=r"\[0, num_shards=3\).*index=3"):
        ds.shard(3, 3)


def test_cache_replays_after_a_full_pass():
    calls = []
    ds = Dataset.range(4).map(lambda x: calls.append(int(x)) or x * 2).cache()
    assert _vals(ds.take(2)) == [0, 2]  # a partial pass is not kept
    assert _vals(ds) == [0, 2, 4, 6]
    assert _vals(ds) == [0, 2, 4, 6]
    assert calls == [0, 1, 0, 1, 2, 3]


def test_prefetch_reads_ahead_on_a_thread_and_keeps_order():
    names = set()

    def record(x):
        names.add(threading.current_thread().name)
        return x
    ds = Dataset.range(30).map(record).prefetch(kf.data.AUTOTUNE)
    assert _vals(ds) == list(range(30))
    assert names and all(n.startswith("kf-data-prefetch") for n in names)
    assert _vals(Dataset.range(5).prefetch(1)) == list(range(5))
    assert _vals(Dataset.range(5).prefetch(0)) == list(range(5))
    it = iter(Dataset.range(10**9).prefetch(3))  # endless source: closes cleanly
    assert [int(next(it)) for _ in range(3)] == [0, 1, 2]
    it.close()


def test_interleave_cycle_and_block_lengths():
    ds = Dataset.range(1, 6).interleave(
        lambda x: Dataset.from_tensors(x).repeat(6), cycle_length=2, block_length=4)
    assert _vals(ds) == [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4,
                         3, 3, 4, 4, 5, 5, 5, 5, 5, 5]
    ds = Dataset.range(3).interleave(lambda x: Dataset.range(x * 10, x * 10 + x + 1),
                                     cycle_length=3, block_length=1)
    assert _vals(ds) == [0, 10, 20, 11, 21, 22]
    assert ds.cardinality() == UNKNOWN_CARDINALITY


def test_enumerate_and_zip():
    ds = Dataset.from_tensor_slices(np.array([5, 6, 7])).enumerate(start=10)
    assert _vals(ds) == [(10, 5), (11, 6), (12, 7)]
    z = Dataset.zip((Dataset.range(5), Dataset.range(10, 13)))
    assert _vals(z) == [(0, 10), (1, 11), (2, 12)] and z.cardinality() == 3
    zd = Dataset.zip({"a": Dataset.range(2), "b": Dataset.range(1).repeat()})
    assert _vals(zd) == [{"a": 0, "b": 0}, {"a": 1, "b": 0}]
    assert zd.cardinality() == 2
    assert Dataset.zip(Dataset.range(2), Dataset.range(3).filter(
        lambda x: True)).cardinality() == UNKNOWN_CARDINALITY
    with pytest.raises(TypeError, match="zip takes datasets"):
        Dataset.zip((Dataset.range(2), [1, 2]))


def test_datasets_are_immutable_and_reiterable():
    base = Dataset.range(6)
    shuffled = base.shuffle(6, seed=1).batch(4)
    assert _vals(base) == list(range(6))
    first, second = _vals(shuffled), _vals(shuffled)
    assert len(first) == len(second) == 2
    assert sorted(first[0] + first[1]) == list(range(6))
    assert _vals(base.map(lambda x: x + 1)) == list(range(1, 7))
    assert _vals(base) == list(range(6))


def test_flat_map_concatenate_apply():
    ds = Dataset.range(1, 4).flat_map(lambda n: Dataset.range(n))
    assert _vals(ds) == [0, 0, 1, 0, 1, 2]
    with pytest.raises(TypeError, match="must return a Dataset. Received: ndarray"):
        list(Dataset.range(2).flat_map(lambda n: np.arange(3)))
    both = Dataset.range(2).concatenate(Dataset.range(5, 7))
    assert _vals(both) == [0, 1, 5, 6] and both.cardinality() == 4
    assert Dataset.range(2).concatenate(Dataset.range(1).repeat()).cardinality() \
        == INFINITE_CARDINALITY
    assert Dataset.range(2).concatenate(Dataset.range(1).filter(
        lambda x: True)).cardinality() == UNKNOWN_CARDINALITY
    assert _vals(Dataset.range(6).apply(lambda d: d.skip(2).take(2))) == [2, 3]


def test_map_outputs_are_numpy():
    ds = Dataset.range(2).map(lambda x: (int(x), 2.5, "s"))
    out = list(ds.as_numpy_iterator())
    assert out[0] == (0, 2.5, b"s")
    assert [type(v) for v in out[0]] == [np.int64, np.float64, bytes]
    # Iterated, the elements are TF 2's eager tensors: .numpy() gives the above.
    eager = next(iter(ds))
    assert [type(v.numpy()) for v in eager] == [np.int64, np.float64, bytes]
    assert eager[0] == 0 and eager[2] == b"s"
    assert Dataset.range(2).map(lambda x: (x, [x, x])).element_spec[1].shape == (2,)


@pytest.mark.parametrize("drop", [False, True])
def test_batch_of_slices_equals_batch_of_stacked_elements(drop):
    x = {"a": np.arange(14).reshape(7, 2), "b": np.array([b"x"] * 7)}
    sliced = Dataset.from_tensor_slices((x, np.arange(7.0)))  # slicing fast path
    stacked = sliced.map(lambda f, t: (f, t))  # element by element
    for a, b in zip(sliced.batch(3, drop), stacked.batch(3, drop), strict=True):
        np.testing.assert_array_equal(a[0]["a"], b[0]["a"])
        np.testing.assert_array_equal(a[0]["b"], b[0]["b"])
        np.testing.assert_array_equal(a[1], b[1])
    first = next(iter(sliced.batch(3)))
    first[1][:] = -1  # a batch is a copy: the source stays intact
    assert next(iter(sliced.batch(3)))[1].tolist() == [0.0, 1.0, 2.0]
    assert len(list(sliced.batch(3, drop))) == sliced.batch(3, drop).cardinality()
