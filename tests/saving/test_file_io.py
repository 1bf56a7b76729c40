"""kerasflow.utils.file_io and kerasflow.saving.config_checks, function by function."""

from __future__ import annotations

import io
import json
import os
import stat
import struct
import zipfile

import pytest

from kerasflow.saving import config_checks
from kerasflow.utils import file_io


# -- atomic_write ----------------------------------------------------------------------
def test_atomic_write_replaces_and_returns_the_resolved_path(tmp_path):
    target = tmp_path / "f.bin"
    assert file_io.atomic_write(target, b"one") == str(target)
    file_io.atomic_write(target, b"two")
    assert target.read_bytes() == b"two"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]  # no temp left


def test_atomic_write_overwrite_false(tmp_path):
    target = tmp_path / "f.bin"
    target.write_bytes(b"keep")
    with pytest.raises(FileExistsError, match=r"f\.bin' exists and overwrite=False"):
        file_io.atomic_write(target, b"new", overwrite=False)
    assert target.read_bytes() == b"keep"


def test_atomic_write_through_a_dangling_symlink_creates_the_target(tmp_path):
    link = tmp_path / "link"
    link.symlink_to("sub/target.bin")
    (tmp_path / "sub").mkdir()
    file_io.atomic_write(link, b"data")
    assert link.is_symlink() and (tmp_path / "sub" / "target.bin").read_bytes() \
        == b"data"


def test_atomic_write_keeps_an_unusual_mode(tmp_path):
    target = tmp_path / "f.bin"
    target.write_bytes(b"x")
    os.chmod(target, 0o604)
    file_io.atomic_write(target, b"y")
    assert stat.S_IMODE(target.stat().st_mode) == 0o604


def test_stale_cleanup_keeps_other_names_and_recent_files(tmp_path):
    (tmp_path / ".tmp-1-abc.part").write_bytes(b"")  # live pid, recent
    (tmp_path / "model.kf").write_bytes(b"")
    assert file_io.remove_stale_temp_files(tmp_path, older_than_s=0) == []
    assert len(list(tmp_path.iterdir())) == 2


# -- read_zip_member -------------------------------------------------------------------
def _zip_bytes(members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def test_read_zip_member_under_the_cap():
    with zipfile.ZipFile(io.BytesIO(_zip_bytes({"a": b"x" * 1000}))) as z:
        assert file_io.read_zip_member(z, "a", 1000, "f.kf") == b"x" * 1000


def test_read_zip_member_counts_bytes_when_the_header_lies():
    raw = bytearray(_zip_bytes({"a": b"x" * 100_000}))
    # Forge the declared (uncompressed) size, 100 bytes, in both headers.
    local = raw.find(b"PK\x03\x04")
    struct.pack_into("<I", raw, local + 22, 100)
    central = raw.find(b"PK\x01\x02")
    struct.pack_into("<I", raw, central + 24, 100)
    with zipfile.ZipFile(io.BytesIO(bytes(raw))) as z:
        assert z.getinfo("a").file_size == 100
        # zipfile stops at the declared size; the CRC then fails.
        with pytest.raises(ValueError, match=r"'f\.kf': member 'a' is corrupt or "
                                             r"its header is forged"):
            file_io.read_zip_member(z, "a", 1000, "f.kf")
        with pytest.raises(ValueError, match=r"expects at most 50 bytes.*"
                                             r"Received: 100 bytes"):
            file_io.read_zip_member(z, "a", 50, "f.kf")


def test_caps_from_the_environment(monkeypatch):
    monkeypatch.setenv("KERASFLOW_MAX_CONFIG_BYTES", "123")
    assert file_io.config_cap() == 123
    monkeypatch.setenv("KERASFLOW_MAX_CONFIG_BYTES", "lots")
    with pytest.raises(ValueError, match=r"positive number of bytes\. Received: "
                                         r"KERASFLOW_MAX_CONFIG_BYTES='lots'"):
        file_io.config_cap()
    monkeypatch.delenv("KERASFLOW_MAX_CONFIG_BYTES")
    assert file_io.config_cap() == file_io.MAX_CONFIG_BYTES == 64 * 2**20


# -- config_checks ---------------------------------------------------------------------
def _dense(name, units=1):
    return {"class_name": "Dense", "config": {"name": name, "units": units}}


def test_valid_sequential_and_nested_configs_pass():
    inner = {"class_name": "Sequential", "config": {"layers": [_dense("a")]}}
    config_checks.check_model_config(
        {"class_name": "Sequential", "config": {"layers": [inner, _dense("b")]}},
        "f")


def test_unknown_reference_in_functional_config():
    config = {"class_name": "Functional", "config": {
        "name": "m",
        "layers": [{"name": "x", "class_name": "InputLayer", "config": {}},
                   {"name": "d", **_dense("d")}],
        "nodes": [{"layer": "d", "inputs": ["ghost", 0, 0]}],
        "input_layers": ["x", 0, 0], "output_layers": ["d", 0, 0]}}
    with pytest.raises(ValueError, match=r"'f': config\.config\.nodes\[0\] \(model "
                                         r"'m'\) expects layer 'd' to take outputs "
                                         r"of known layers or ops\. Received: a reference "
                                         r"to unknown layer 'ghost'"):
        config_checks.check_model_config(config, "f")


def test_output_reference_to_a_call_that_never_happens():
    config = {"class_name": "Functional", "config": {
        "name": "m",
        "layers": [{"name": "x", "class_name": "InputLayer", "config": {}},
                   {"name": "d", **_dense("d")}],
        "nodes": [{"layer": "d", "inputs": ["x", 0, 0]}],
        "input_layers": ["x", 0, 0], "output_layers": ["d", 1, 0]}}
    with pytest.raises(ValueError, match=r"output_layers .*call 1 computed before "
                                         r"it \(1 call\(s\) so far\)"):
        config_checks.check_model_config(config, "f")


def test_duplicate_layer_names_in_functional_config():
    config = {"class_name": "Functional", "config": {
        "layers": [{"name": "d", **_dense("d")}, {"name": "d", **_dense("d")}],
        "nodes": [], "input_layers": [], "output_layers": []}}
    with pytest.raises(ValueError, match=r"unique layer names\. Received: "
                                         r"duplicates \['d'\]"):
        config_checks.check_model_config(config, "f")


def test_units_of_wrong_type_in_config():
    config = {"class_name": "Sequential", "config": {"layers": [_dense("d", "3")]}}
    with pytest.raises(ValueError, match=r"layer 'd'.*Received: units='3'"):
        config_checks.check_model_config(config, "f")


def test_yaml_without_aliases_and_json_parse():
    assert config_checks.parse_yaml("a: [1, 2]", "f") == {"a": [1, 2]}
    with pytest.raises(ValueError, match=r"'f' holds invalid JSON"):
        config_checks.parse_json("{", "f")
    with pytest.raises(ValueError, match=r"'f' holds invalid or unsafe YAML"):
        config_checks.parse_yaml("!!python/object:os.system {}", "f")
    assert json.loads(json.dumps(config_checks.parse_json('{"a": 1}', "f"))) \
        == {"a": 1}
