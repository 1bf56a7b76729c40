"""kerasflow.summary: TensorBoard event files with the graph, read back."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow.summary import FileWriter, read_events


def test_graph_and_scalars_round_trip(tmp_path):
    x = K.placeholder("float32", (None, 3), name="x")
    with K.name_scope("dense"):
        w = K.Variable(np.ones((3, 2), np.float32), name="dense/kernel")
        y = K.relu(K.matmul(x, w))
    with FileWriter(tmp_path, graph=[y]) as writer:
        for step, value in enumerate([0.5, 0.25]):
            writer.add_scalar("loss", value, step)
    events = read_events(tmp_path)
    assert events[0].file_version.startswith("brain.Event")
    (graph,) = [e.graph_def for e in events if e.HasField("graph_def")]
    from kerasflow.summary import import_tensorboardx

    gd = import_tensorboardx("proto.graph_pb2").GraphDef.FromString(graph)
    nodes = {n.name: n for n in gd.node}
    matmul = nodes[y.node.inputs[0].node.name]
    assert matmul.op == "MatMul" and list(matmul.input) == [x.node.name, w.name]
    assert nodes[x.node.name].attr["T"].type == 1                 # DT_FLOAT
    shapes = nodes[x.node.name].attr["_output_shapes"].list.shape
    dims = [d.size for d in shapes[0].dim]
    assert dims == [-1, 3]
    scalars = [(e.step, v.simple_value) for e in events for v in e.summary.value]
    assert scalars == [(0, 0.5), (1, 0.25)]


def test_corrupt_event_file_is_reported(tmp_path):
    with FileWriter(tmp_path) as writer:
        writer.add_scalar("a", 1.0, 0)
    (path,) = tmp_path.glob("events.out.tfevents.*")
    raw = bytearray(path.read_bytes())
    raw[-6] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="CRC mismatch"):
        read_events(path)
    with pytest.raises(FileNotFoundError):
        read_events(tmp_path / "empty")
    with pytest.raises(TypeError, match="Summary protobuf"):
        FileWriter(tmp_path / "b").add_summary("not a summary")


def test_file_writer_does_not_import_torch(tmp_path):
    code = ("import sys; from kerasflow.summary import FileWriter; "
            f"FileWriter({str(tmp_path)!r}).add_scalar('a', 1.0, 0); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "False"
