"""One lookup for every kind of object: the layer registry (layers never import
models), custom classes through custom_objects or register_serializable, and
round trips of constraints and optimizers through the shared functions."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import constraints
from kerasflow.utils import serialization as S

ROOT = pathlib.Path(kf.__file__).parent


_IMPORTS = """
import ast, json, sys
out = {}
for path in sys.argv[1:]:
    names = []
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    out[path] = names
print(json.dumps(out))
"""


def test_layers_never_import_models():
    # Parsed in a fresh interpreter: CPython 3.11's ast module can be left with
    # a stale recursion counter by an earlier deep parse in the same process.
    paths = sorted(str(p) for p in (ROOT / "layers").glob("*.py"))
    found = json.loads(subprocess.run([sys.executable, "-c", _IMPORTS, *paths],
                                      capture_output=True, text=True,
                                      check=True).stdout)
    assert len(found) == len(paths) > 10
    bad = [(pathlib.Path(p).name, m) for p, names in found.items() for m in names
           if m.startswith("kerasflow.models")]
    assert bad == []


def test_models_are_found_in_the_layer_registry():
    table = S.registry("layer")
    assert table["Sequential"] is kf.Sequential and table["Model"] is kf.Model
    assert table["Dense"] is kf.layers.Dense
    model = kf.Sequential([kf.layers.Dense(3, input_shape=(2,))])
    again = kf.layers.deserialize(kf.layers.serialize(model))
    assert isinstance(again, kf.Sequential) and again.count_params() == 9
    x = kf.Input((2,))
    fn = kf.Model(x, kf.layers.Dense(1)(x))
    config = {**kf.layers.serialize(fn), "class_name": "Functional"}  # Keras' name
    assert isinstance(kf.layers.deserialize(config), kf.Model)


def test_user_layers_need_custom_objects_or_registration():
    class Twice(kf.layers.Layer):
        def call(self, x):
            return x * 2.0

    config = kf.layers.serialize(Twice(name="twice"))
    with pytest.raises(ValueError, match=r"Unknown layer class: 'Twice'.*"
                       r"custom_objects=\{'Twice': Twice\}"):
        kf.layers.deserialize(config)
    assert isinstance(kf.layers.deserialize(config, {"Twice": Twice}), Twice)
    table = S.registry("layer")
    try:
        S.register_serializable("layer")(Twice)
        layer = kf.layers.deserialize(config)
        np.testing.assert_allclose(layer(np.ones((1, 2), np.float32)), [[2.0, 2.0]])
        with pytest.raises(ValueError, match="built-in layer is already"):
            S.register_serializable("layer", name="Dense")(Twice)
    finally:
        table.pop("Twice", None)


def test_constraints_round_trip_through_the_shared_lookup():
    c = constraints.get({"class_name": "MaxNorm", "config": {"max_value": 1.5}})
    assert isinstance(c, constraints.MaxNorm) and c.max_value == 1.5
    assert constraints.deserialize(constraints.serialize(c)).get_config() == \
        c.get_config()
    assert isinstance(constraints.get("non_neg"), constraints.NonNeg)
    with pytest.raises(ValueError, match="Unknown constraint identifier: 'pos'"):
        constraints.get("pos")
    with pytest.raises(TypeError, match="constraint identifier"):
        constraints.get(3)


def test_optimizer_class_names_match_in_any_case():
    opt = kf.optimizers.deserialize({"class_name": "rmsProp",
                                     "config": {"learning_rate": 0.25}})
    assert isinstance(opt, kf.optimizers.RMSprop)
    assert opt.learning_rate == pytest.approx(0.25)
    with pytest.raises(ValueError, match="Unknown optimizer class: 'Adamaxx'"):
        kf.optimizers.deserialize({"class_name": "Adamaxx", "config": {}})
