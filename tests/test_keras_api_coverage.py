"""The Keras 3 API coverage tool and the names it finds present."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import kerasflow as kf
from kerasflow.utils import api_coverage, keras_surface
from tests.keras_oracle import keras_numpy

PRESENT = Path(__file__).with_name("keras_api_present.txt")


def _committed() -> list[str]:
    return PRESENT.read_text().split()


def _namespace_of(qualified: str) -> tuple[str, str]:
    parts = qualified.split(".")[1:]
    return ".".join(parts[:-1]), parts[-1]


def test_every_committed_present_name_still_resolves():
    # Without Keras: a name reported present earlier must still be importable.
    gone = []
    for qualified in _committed():
        namespace, name = _namespace_of(qualified)
        module = api_coverage.kerasflow_namespace(namespace)
        if not api_coverage.has_name(module, name):
            gone.append(qualified)
    assert len(_committed()) > 400 and gone == []


def test_tool_finds_every_committed_name_and_classifies_the_rest():
    keras_numpy()
    report = api_coverage.coverage()
    found = {keras_surface.qualified(ns, n) for ns, row in report.items()
             for n in row["present"]}
    assert sorted(set(_committed()) - found) == []
    assert "FlaxLayer" in report["layers"]["excluded"]
    assert "SeedGenerator" in report["random"]["present"]
    assert "FeatureSpace" in report["utils"]["missing"]
    for row in report.values():  # the three lists partition Keras' names
        names = row["present"] + row["excluded"] + row["missing"]
        assert len(names) == len(set(names))


def test_excluded_names_exist_in_keras():
    keras = keras_numpy()
    for namespace, names in keras_surface.EXCLUDED.items():
        module = keras
        for part in filter(None, namespace.split(".")):
            module = getattr(module, part)
        assert all(hasattr(module, n) for n in names), namespace


def test_main_writes_the_markdown_table(tmp_path, capsys):
    keras_numpy()
    out = tmp_path / "coverage.md"
    assert api_coverage.main(["--output", str(out)]) == 0
    text = out.read_text()
    printed = capsys.readouterr().out
    assert "| `keras.random` | 11 | 0 | 0 | 100% |" in text
    assert "excluded: `TorchModuleWrapper`" in text
    assert "In `keras`, " in text and "`keras.utils`" in text.split("raises")[0]
    assert "keras.random" in printed and "total" in printed


def test_render_markdown_counts_in_scope_names_only():
    report = {"": {"present": ["Layer"], "excluded": ["src"], "missing": ["remat"]},
              "random": {"present": ["normal", "uniform"], "excluded": [],
                         "missing": []}}
    text = api_coverage.render_markdown(report, "3.15.1")
    assert "**3 of 4 in-scope public names present (75%)**" in text
    assert "| `keras` | 1 | 1 | 1 | 50% |" in text
    assert "- missing: `remat`" in text


def test_import_kerasflow_does_not_load_the_tool_or_keras():
    code = ("import sys, kerasflow, kerasflow.utils, kerasflow.saving; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'keras' "
            "or m.endswith('api_coverage')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("module, name, match", [
    (kf, "distillation", r"keras\.distillation is not offered"),
    (kf, "export", r"keras\.export is excluded .* by design: ExportArchive"),
    (kf, "applications", r"keras\.applications is excluded .* by design"),
    (kf.utils, "FeatureSpace", r"keras\.utils\.FeatureSpace is not offered"),
    (kf.saving, "KerasFileEditor", r"keras\.saving\.KerasFileEditor"),
    (kf.layers, "TorchModuleWrapper", r"keras\.layers\.TorchModuleWrapper is "
                                      r"excluded .* by design"),
    (kf.optimizers, "Muon", r"keras\.optimizers\.Muon is not offered by kerasflow "
                            r"\(kerasflow\.optimizers\); docs/keras_api_coverage"),
    (kf.callbacks, "RemoteMonitor", r"keras\.callbacks\.RemoteMonitor is not offered"),
])
def test_missing_keras_names_raise_not_implemented(module, name, match):
    with pytest.raises(NotImplementedError, match=match):
        getattr(module, name)


def test_other_names_keep_attribute_error_and_hasattr():
    assert not hasattr(kf, "__wrapped__") and not hasattr(kf.utils, "_private")
    assert not hasattr(kf.models, "no_such_name")
    assert not hasattr(kf.layers, "NoSuchLayer") and not hasattr(kf.losses, "nope")
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        kf.saving.no_such_name  # noqa: B018
