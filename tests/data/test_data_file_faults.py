"""File sources on bad input: ``compression_type="GZIP"`` over a plain file
names the file; ``text_dataset_from_directory(follow_links=True)`` over
symlink loops ends, reading each real folder once."""

from __future__ import annotations

import gzip
import os
import threading

import pytest

import kerasflow as kf
from kerasflow.data import TextLineDataset


@pytest.mark.parametrize("make", [
    lambda p: kf.data.experimental.CsvDataset(p, [0, 0], compression_type="GZIP"),
    lambda p: kf.data.CsvDataset(p, [0, 0], compression_type="GZIP"),
    lambda p: TextLineDataset(p, compression_type="GZIP"),
])
def test_gzip_over_a_plain_file_names_the_file(tmp_path, make):
    path = tmp_path / "plain.csv"
    path.write_text("1,2\n3,4\n")
    with pytest.raises(gzip.BadGzipFile, match=(
            f"compression_type='GZIP' expects gzip files. Received: '{path}', "
            f"which is not gzip")):
        list(make(str(path)))


def test_gzip_of_a_truncated_file_names_the_file(tmp_path):
    path = tmp_path / "cut.csv.gz"
    path.write_bytes(gzip.compress(b"1,2\n" * 1000)[:40])
    with pytest.raises(gzip.BadGzipFile, match=f"Received: '{path}'.*truncated"):
        list(kf.data.CsvDataset(str(path), [0, 0], compression_type="GZIP"))


def test_text_dataset_from_directory_ends_on_symlink_loops(tmp_path):
    for cls, text in (("neg", "bad"), ("pos", "good")):
        (tmp_path / cls).mkdir()
        (tmp_path / cls / f"{cls}.txt").write_text(text)
    os.symlink("..", tmp_path / "pos" / "up")       # back to the root
    os.symlink("../pos", tmp_path / "neg" / "side")  # across to a sibling
    os.symlink(".", tmp_path / "neg" / "self")       # onto itself
    # os.walk(followlinks=True) alone never ends on this tree (2 links per
    # level): index on a thread, so that a regression fails instead of hanging.
    result = {}

    def index():
        result["ds"] = kf.utils.text_dataset_from_directory(
            tmp_path, follow_links=True, shuffle=False, batch_size=None,
            verbose=False)

    walker = threading.Thread(target=index, daemon=True)
    walker.start()
    walker.join(30)
    assert not walker.is_alive(), "text_dataset_from_directory did not end"
    pairs = sorted((str(t), int(y)) for t, y in result["ds"])
    # Each class reads each real folder once: neg itself and pos through side;
    # pos itself and neg through up.
    assert pairs == [("bad", 0), ("bad", 1), ("good", 0), ("good", 1)]
