"""backend.graph.walk / reachable_variables: the one graph traversal."""

from __future__ import annotations

import pytest

from kerasflow import backend as K


def test_walk_is_topological_and_visits_each_node_once():
    x = K.placeholder("float64", (None, 2), name="x")
    h = x * 2.0
    y = h + h  # h's node reached twice
    order = K.walk([y, h])
    assert len(order) == len({id(n) for n in order})
    pos = {id(n): i for i, n in enumerate(order)}
    for n in order:
        for t in n.inputs:
            assert pos[id(t.node)] < pos[id(n)]
    assert order[-1] is y.node
    assert x.node in order


def test_walk_handles_long_chains_iteratively():
    t = K.placeholder("float64", ())
    for _ in range(20_000):
        t = t + 1.0
    assert len(K.walk([t])) > 20_000


def test_walk_refuses_non_graph_roots():
    with pytest.raises(TypeError, match="SymbolicTensors or Nodes. Received: 3"):
        K.walk([3])


def test_reachable_variables_in_creation_order_filtered_by_trainable():
    a = K.Variable(1.0, name="a")
    b = K.Variable(2.0, name="b", trainable=False)
    c = K.Variable(3.0, name="c")
    y = c * a + b  # c is reached first by the walk, created last
    assert K.reachable_variables([y]) == [a, b, c]
    assert K.reachable_variables([y], trainable=True) == [a, c]
    assert K.reachable_variables([y], trainable=False) == [b]
