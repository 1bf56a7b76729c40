"""``utils.plot_model`` / ``model_to_dot`` (Keras 3 names): the graph's nodes
and edges for functional (raw ops included) and Sequential models, the .dot
file, and the errors without pydot or Graphviz."""

from __future__ import annotations

import shutil
import sys

import pytest

import kerasflow as kf

pydot = pytest.importorskip("pydot")


def _functional():
    a, b = kf.Input((4,), name="a"), kf.Input((4,), name="b")
    x = (a + b) * 0.5
    y = kf.layers.Dense(3, activation="relu", name="head")(
        kf.ops.concatenate([x, a]))
    return kf.Model([a, b], y)


def _edges(dot):
    labels = {n.get_name(): n.get_label().strip('"').split(" (")[0]
              for n in dot.get_nodes() if n.get_label()}
    return {(labels[e.get_source()], labels[e.get_destination()])
            for e in dot.get_edges()}


def test_functional_graph_has_layers_ops_and_edges():
    dot = kf.utils.model_to_dot(_functional(), show_shapes=True)
    assert _edges(dot) == {("a", "add"), ("b", "add"), ("add", "mul"),
                           ("mul", "concat"), ("a", "concat"), ("concat", "head")}
    text = dot.to_string()
    assert "head (Dense)" in text and "output: (None, 3)" in text


def test_sequential_is_a_chain(tmp_path):
    model = kf.Sequential([kf.Input((3,)), kf.layers.Dense(4, name="d1"),
                           kf.layers.Dense(2, name="d2")])
    path = tmp_path / "model.dot"
    dot = kf.utils.plot_model(model, to_file=str(path), show_layer_activations=True,
                              show_trainable=True, rankdir="LR")
    assert _edges(dot) == {("d1", "d2")}
    (graph,) = pydot.graph_from_dot_file(str(path))
    assert graph.get_rankdir() == "LR" and len(graph.get_edges()) == 1


def test_errors_name_what_is_missing(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="rankdir"):
        kf.utils.model_to_dot(_functional(), rankdir="XY")
    with pytest.raises(ValueError, match="not been built"):
        kf.utils.plot_model(kf.Sequential([kf.layers.Dense(2)]))
    if shutil.which("dot") is None:
        with pytest.raises(ImportError, match="Graphviz"):
            kf.utils.plot_model(_functional(), to_file=str(tmp_path / "m.png"))
    monkeypatch.setitem(sys.modules, "pydot", None)
    with pytest.raises(ImportError, match="pip install pydot"):
        kf.utils.plot_model(_functional(), to_file=str(tmp_path / "m.dot"))
