"""Dataset options and auto-sharding (tf.data's Options / AutoShardPolicy), and
the in-process side of distributed datasets (splitting, rebatching)."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow.distribute.sharding import DatasetShardSource, auto_shard
from kerasflow.distribute.values import split_batch

Policy = kf.data.experimental.AutoShardPolicy


def _options(policy):
    options = kf.data.Options()
    options.experimental_distribute.auto_shard_policy = policy
    return options


def _files(tmp_path, n=4, lines=3):
    paths = []
    for f in range(n):
        path = tmp_path / f"f{f}.txt"
        path.write_text("".join(f"{f}-{i}\n" for i in range(lines)))
        paths.append(str(path))
    return paths


def test_options_defaults_values_and_errors():
    options = kf.data.Options()
    assert options.experimental_distribute.auto_shard_policy == Policy.AUTO
    assert [p.value for p in (Policy.OFF, Policy.AUTO, Policy.FILE, Policy.DATA)] == [
        -1, 0, 1, 2]  # TF's values
    with pytest.raises(ValueError, match="AutoShardPolicy.*Received: 7"):
        options.experimental_distribute.auto_shard_policy = 7
    with pytest.raises(NotImplementedError, match="HINT"):
        options.experimental_distribute.auto_shard_policy = Policy.HINT
    with pytest.raises(TypeError, match="with_options takes a kerasflow.data.Options"):
        kf.data.Dataset.range(3).with_options({"auto_shard_policy": 1})


def test_options_apply_to_the_whole_pipeline_and_later_ones_win():
    base = kf.data.Dataset.range(10)
    ds = base.with_options(_options(Policy.DATA)).map(lambda x: x * 2).batch(3)
    assert ds.options().experimental_distribute.auto_shard_policy == Policy.DATA
    assert base.options().experimental_distribute.auto_shard_policy == Policy.AUTO
    assert [b.tolist() for b in ds] == [[0, 2, 4], [6, 8, 10], [12, 14, 16], [18]]
    later = ds.with_options(_options(Policy.OFF))
    assert later.options().experimental_distribute.auto_shard_policy == Policy.OFF
    # An options object without the policy set keeps the upstream one.
    det = kf.data.Options()
    det.deterministic = False
    merged = ds.with_options(det).options()
    assert merged.experimental_distribute.auto_shard_policy == Policy.DATA
    assert merged.deterministic is False
    # Through zip's and concatenate's inputs too.
    zipped = kf.data.Dataset.zip((ds, kf.data.Dataset.range(4)))
    assert zipped.options().experimental_distribute.auto_shard_policy == Policy.DATA


def test_auto_shard_by_file_reads_every_nth_file(tmp_path):
    files = _files(tmp_path)
    for index in range(2):
        ds = kf.data.TextLineDataset(files).map(lambda s: s + b"!").batch(2)
        ds, policy = auto_shard(ds, 2, index)
        assert policy == "FILE"
        got = [v.decode() for b in ds for v in b]
        assert got == [f"{f}-{i}!" for f in (index, index + 2) for i in range(3)]


def test_auto_shard_policies_and_fallbacks(tmp_path):
    files = _files(tmp_path, n=2)
    # AUTO: FILE when there are enough files, else DATA; DATA without files.
    assert auto_shard(kf.data.TextLineDataset(files), 2, 1)[1] == "FILE"
    assert auto_shard(kf.data.TextLineDataset(files), 3, 1)[1] == "DATA"
    assert auto_shard(kf.data.Dataset.range(8).batch(2), 2, 0)[1] == "DATA"
    off = kf.data.TextLineDataset(files).with_options(_options(Policy.OFF))
    assert auto_shard(off, 2, 1)[1] == "OFF"
    data = kf.data.TextLineDataset(files).with_options(_options(Policy.DATA))
    assert auto_shard(data, 2, 1)[1] == "DATA"
    one = kf.data.TextLineDataset(files)
    assert auto_shard(one, 1, 0) == (one, "DATA") and one._files == files
    with pytest.raises(ValueError, match=r"FILE needs a file source.*Received: no "
                                         r"file source"):
        auto_shard(kf.data.Dataset.range(8).with_options(_options(Policy.FILE)), 2, 0)
    with pytest.raises(ValueError, match=r"num_input_pipelines=3 files.*\[2\] files"):
        auto_shard(kf.data.TextLineDataset(files).with_options(_options(Policy.FILE)),
                   3, 0)


def test_replica_source_rebatches_file_shards_and_keeps_data_global(tmp_path):
    files = _files(tmp_path, n=4, lines=5)  # 20 lines; rank 1 of 2: files 1, 3
    ds = kf.data.TextLineDataset(files).batch(4)
    source = DatasetShardSource(ds, 1, 2)
    batches = [[v.decode() for v in b] for b in source.passes()]
    assert not source.global_rows
    assert batches == [["1-0", "1-1"], ["1-2", "1-3"], ["1-4", "3-0"], ["3-1", "3-2"],
                       ["3-3", "3-4"]]  # the global batch of 4 split over 2
    data = DatasetShardSource(kf.data.Dataset.range(10).batch(4), 1, 2)
    assert [b.tolist() for b in data.passes()] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert data.global_rows  # the replica keeps its rows of each global batch


def test_split_batch_is_contiguous_in_rank_order():
    x = np.arange(14).reshape(7, 2)
    parts = split_batch({"a": x, "b": (x[:, 0], x[:, 1])}, 3)
    assert [p.tolist() for p in parts["a"].values] == [
        [[0, 1], [2, 3]], [[4, 5], [6, 7]], [[8, 9], [10, 11], [12, 13]]]
    assert [p.tolist() for p in parts["b"][1].values] == [[1, 3], [5, 7], [9, 11, 13]]
    with pytest.raises(ValueError, match="needs batched elements"):
        split_batch(np.int64(3), 2)


def test_default_strategy_distributed_input_in_process():
    strategy = kf.distribute.get_strategy()
    ds = kf.data.Dataset.from_tensor_slices(np.arange(6.0)).batch(4)
    dist = strategy.experimental_distribute_dataset(ds)
    assert [[v.tolist() for v in pr.values] for pr in dist] == [[[0, 1, 2, 3]],
                                                                [[4, 5]]]
    seen = []
    out = strategy.distribute_datasets_from_function(
        lambda ctx: seen.append((ctx.num_input_pipelines, ctx.input_pipeline_id)) or ds)
    assert out is ds and seen == [(1, 0)]
    with pytest.raises(TypeError, match="expects a callable dataset_fn"):
        strategy.distribute_datasets_from_function(ds)
    with pytest.raises(TypeError, match="must return a kerasflow.data.Dataset. "
                                        "Received: int"):
        strategy.distribute_datasets_from_function(lambda ctx: 3)
