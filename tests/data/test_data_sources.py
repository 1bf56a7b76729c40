"""Dataset sources, element_spec, len/cardinality, and the tf.data alias."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

import kerasflow as kf
from kerasflow.backend import TensorSpec
from kerasflow.data import CsvDataset, Dataset, TextLineDataset


def test_from_tensor_slices_array_tuple_dict():
    ds = Dataset.from_tensor_slices(np.arange(6).reshape(3, 2))
    assert [e.tolist() for e in ds] == [[0, 1], [2, 3], [4, 5]]
    assert ds.cardinality() == 3 and len(ds) == 3
    assert ds.element_spec.shape == (2,) and ds.element_spec.dtype == np.int64
    pairs = Dataset.from_tensor_slices((np.arange(3), np.array([1.5, 2.5, 3.5])))
    assert [(int(a), float(b)) for a, b in pairs] == [(0, 1.5), (1, 2.5), (2, 3.5)]
    dicts = Dataset.from_tensor_slices({"b": np.arange(2), "a": [[1, 2], [3, 4]]})
    first = next(iter(dicts))
    assert sorted(first) == ["a", "b"] and first["a"].tolist() == [1, 2]
    assert dicts.element_spec["a"].shape == (2,)


def test_from_tensor_slices_refuses_mismatched_lengths_and_scalars():
    with pytest.raises(ValueError, match=r"lengths \[3, 2\]"):
        Dataset.from_tensor_slices((np.zeros(3), np.zeros(2)))
    with pytest.raises(ValueError, match="scalar"):
        Dataset.from_tensor_slices(np.float32(1.0))


def test_from_tensors_is_one_element():
    ds = Dataset.from_tensors((np.arange(3), 7))
    (a, b), = list(ds)
    assert a.tolist() == [0, 1, 2] and int(b) == 7 and ds.cardinality() == 1
    assert ds.element_spec[0].shape == (3,)


def test_range_forms_and_dtype():
    assert [int(v) for v in Dataset.range(4)] == [0, 1, 2, 3]
    assert [int(v) for v in Dataset.range(2, 5)] == [2, 3, 4]
    assert [int(v) for v in Dataset.range(10, 0, -4)] == [10, 6, 2]
    assert Dataset.range(10, 0, -4).cardinality() == 3
    assert Dataset.range(3, dtype="int32").element_spec.dtype == np.int32
    with pytest.raises(ValueError, match="1 to 3 arguments"):
        Dataset.range()


def _gen(n):
    for i in range(n):
        yield np.arange(i % 3), float(i)


SIG = (TensorSpec((None,), "int64"), TensorSpec((), "float32"))


def test_from_generator_calls_anew_each_pass_and_casts():
    ds = Dataset.from_generator(_gen, args=(4,), output_signature=SIG)
    first = [(a.tolist(), b) for a, b in ds]
    assert first == [([], 0.0), ([0], 1.0), ([0, 1], 2.0), ([], 3.0)]
    assert [(a.tolist(), b) for a, b in ds] == first
    assert next(iter(ds))[1].dtype == np.float32
    assert ds.element_spec is SIG
    assert ds.cardinality() == kf.data.UNKNOWN_CARDINALITY
    batched = ds.padded_batch(2)
    assert [a.tolist() for a, _ in batched] == [[[0], [0]], [[0, 1], [0, 0]]]


def test_from_generator_checks_elements_against_signature():
    sig = TensorSpec((2,), "int32")
    with pytest.raises(ValueError, match=r"shape \(3,\) where .*\(2,\)"):
        list(Dataset.from_generator(lambda: iter([[1, 2, 3]]),
                                    output_signature=sig))
    with pytest.raises(TypeError, match="dtype float64 where int32"):
        list(Dataset.from_generator(lambda: iter([[1.5, 2.0]]),
                                    output_signature=sig))
    with pytest.raises(ValueError, match="sequence of 2 items"):
        list(Dataset.from_generator(lambda: iter([np.zeros(2)]),
                                    output_signature=SIG))
    with pytest.raises(TypeError, match="output_signature"):
        Dataset.from_generator(lambda: iter([]))
    with pytest.raises(TypeError, match="callable"):
        Dataset.from_generator(iter([1]), output_signature=sig)


def test_len_and_bool():
    assert len(Dataset.range(5).batch(2)) == 3
    with pytest.raises(TypeError, match="infinite"):
        len(Dataset.range(5).repeat())
    with pytest.raises(TypeError, match="unknown"):
        len(Dataset.range(5).filter(lambda x: x > 1))
    assert bool(Dataset.range(0).filter(lambda x: True))
    assert kf.data.experimental.cardinality(Dataset.range(5).repeat()) == -1
    assert kf.data.experimental.AUTOTUNE == kf.data.AUTOTUNE == -1
    assert kf.data.INFINITE_CARDINALITY == -1 and kf.data.UNKNOWN_CARDINALITY == -2


def test_compat_tf_data_is_kerasflow_data():
    import kerasflow.compat.v1 as tf
    assert tf.data is kf.data and tf.data.Dataset is Dataset


def test_text_line_dataset_reads_files_in_order(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt.gz"
    a.write_bytes(b"header\r\nfirst\nsecond")
    with gzip.open(b, "wb") as f:
        f.write(b"third\n")
    ds = TextLineDataset(str(a))
    assert list(ds.skip(1)) == [b"first", b"second"]
    assert list(TextLineDataset([str(a)]).take(1)) == [b"header"]
    assert list(TextLineDataset(str(b), compression_type="GZIP")) == [b"third"]
    assert ds.element_spec.dtype == np.dtype(object)
    with pytest.raises(ValueError, match="compression_type"):
        TextLineDataset(str(a), compression_type="ZLIB")
    with pytest.raises(FileNotFoundError):
        list(TextLineDataset(str(tmp_path / "missing.txt")))


def test_csv_dataset_parses_defaults_and_names_bad_rows(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text('x,label,name\n1.5,3,"a,b"\n,4,c\n\n2.5,,d\n')
    ds = CsvDataset(str(path), [0.0, np.int64, ""], header=True)
    with pytest.raises(ValueError, match=r"rows\.csv:5: column 1 is required"):
        list(ds)
    ok = CsvDataset(str(path), [[-1.0], 0, ""], header=True)
    rows = [(float(x), int(n), s) for x, n, s in ok]
    assert rows == [(1.5, 3, b"a,b"), (-1.0, 4, b"c"), (2.5, 0, b"d")]
    assert [s.dtype for s in ok.element_spec] == [np.float32, np.int32,
                                                  np.dtype(object)]
    assert next(iter(ok))[0].dtype == np.float32
    picked = CsvDataset(str(path), [""], header=True, select_cols=[2])
    assert [r for r, in picked] == [b"a,b", b"c", b"d"]
    bad = tmp_path / "bad.csv"
    bad.write_text("1,2,3\n4,5\n")
    with pytest.raises(ValueError, match=r"bad\.csv:2: expected 3 fields.*"
                                         r"Received 2"):
        list(CsvDataset(str(bad), [0, 0, 0]))
    with pytest.raises(ValueError, match=r"bad\.csv:1: column 0 expects int32. "
                                         r"Received: '1,2,3'"):
        list(CsvDataset(str(bad), [0], use_quote_delim=False, field_delim=";"))


def test_from_generator_with_tf1_output_types_and_shapes():
    ds = Dataset.from_generator(lambda: _gen(3), output_types=("int64", "float32"),
                                output_shapes=((None,), ()))
    assert [s.shape for s in ds.element_spec] == [(None,), ()]
    assert [float(b) for _, b in ds] == [0.0, 1.0, 2.0]
    loose = Dataset.from_generator(lambda: iter([np.zeros((2, 2))]),
                                   output_types="float32")
    assert next(iter(loose)).dtype == np.float32
