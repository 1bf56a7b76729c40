"""Issue 7's catalogue of bad inputs and hostile files, one test per case.

Each test reproduces a case from the issue and asserts the exception type and
a message naming what was expected and what was received; for the cases that
used to give a silently wrong result, it also asserts that the wrong result
can no longer be produced. Keep this list: a change that brings a case back
fails here.

Cases whose fix is wired into ``models/training.py`` (issue 6 rewrites it) are
marked xfail until the lead calls the checks of ``kerasflow.models.input_checks``
from ``fit``; their pure checks are tested in tests/models/test_input_checks.py.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
import zipfile

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow import (
    callbacks,
    initializers,
    layers,
    models,
    optimizers,
    regularizers,
)
from kerasflow.saving import config_checks
from kerasflow.utils import file_io


def _dense_model(units=1, inputs=3, **compile_kw):
    model = models.Sequential([layers.Dense(units, input_shape=(inputs,))])
    if compile_kw:
        model.compile(**compile_kw)
    return model


# == Silent wrong results ===========================================================
# 1. gradients() with grad_ys of the wrong shape
def test_01_grad_ys_wrong_shape_is_refused():
    x = K.placeholder("float32", (3,))
    w = K.Variable(2.0)
    with pytest.raises(ValueError, match=r"grad_ys\[0\] of the shape of ys\[0\], "
                                         r"\(3,\)\. Received: .*shape \(3, 1\)"):
        K.gradients(x * w, [w], grad_ys=[K.constant(np.ones((3, 1), "float32"))])
    # The right shape gives d(sum(x * w))/dw = sum(x) = 6, never 18.
    (g,) = K.gradients(x * w, [w], grad_ys=[K.constant(np.ones(3, "float32"))])
    assert K.Session().run(g, {x: [1.0, 2.0, 3.0]}) == pytest.approx(6.0)


def test_01_grad_ys_checked_at_run_time_when_shapes_are_dynamic():
    x = K.placeholder("float32", (None,))
    gy = K.placeholder("float32", (None,))
    w = K.Variable(2.0)
    (g,) = K.gradients(x * w, [w], grad_ys=[gy])
    with K.Session() as sess:
        assert sess.run(g, {x: [1.0, 2.0, 3.0], gy: [1.0, 1.0, 1.0]}) == 6.0
        with pytest.raises(ValueError, match=r"grad_ys\[0\] of the shape of "
                                             r"ys\[0\], \(3,\)\. Received: "
                                             r"grad_ys\[0\] of shape \(1,\)"):
            sess.run(g, {x: [1.0, 2.0, 3.0], gy: [1.0]})


def test_01_grad_ys_wrong_dtype_is_a_type_error():
    x = K.placeholder("float32", (3,))
    with pytest.raises(TypeError, match=r"dtype of ys\[0\], float32\. Received: "
                                        r"grad_ys\[0\] of dtype float64"):
        K.gradients(x * 2.0, [x], grad_ys=[K.constant(np.ones(3))])


# 2. Reshape whose target size differs from the input's
def test_02_reshape_size_mismatch_fails_at_build_time():
    with pytest.raises(ValueError, match=r"Layer 'r2' expects inputs with 5 "
                                         r"elements per sample .*\(5,\)\. "
                                         r"Received: .*\(None, 4\) \(4 elements"):
        models.Sequential([layers.Reshape((5,), input_shape=(4,), name="r2")])


def test_02_reshape_size_mismatch_fails_at_run_time_for_dynamic_shapes():
    inp = layers.Input((None,))
    model = models.Model(inp, layers.Reshape((5,), name="dyn")(inp))
    with pytest.raises(ValueError, match=r"Layer 'dyn' expects inputs with 5 "
                                         r"elements.*Received: inputs of shape "
                                         r"\(5, 4\)"):
        model.predict(np.ones((5, 4)), verbose=0)
    # The batch size can no longer change: (5, 4) never becomes (4, 5).
    assert model.predict(np.ones((3, 5)), verbose=0).shape == (3, 5)


def test_02_reshape_target_shape_is_validated():
    with pytest.raises(ValueError, match=r"at most one -1\. Received: "
                                         r"target_shape=\(-1, -1\)"):
        layers.Reshape((-1, -1))
    with pytest.raises(TypeError, match=r"tuple of ints\. Received: "
                                        r"target_shape='ab'"):
        layers.Reshape("ab")


# 3. class_weight keys and values
@pytest.mark.parametrize("cw, error, match", [
    ({0: 1.0, 1: 1.0, -1: 5.0}, ValueError,
     r"class indices in \[0, .*\]\. Received: key -1"),
    ({0: 1.0, 1: float("nan"), 2: 1.0}, ValueError,
     r"finite weights >= 0\. Received: class_weight\[1\]"),
    ({0: 1.0, 1: -2.0, 2: 1.0}, ValueError, r"finite weights >= 0"),
    ({"0": 1.0, 1: 1.0, 2: 1.0}, TypeError, r"integer class indices.*'0'"),
])
def test_03_class_weight_is_validated(cw, error, match):
    model = _dense_model(3, optimizer="sgd", loss="sparse_categorical_crossentropy")
    with pytest.raises(error, match=match):
        model.fit(np.ones((6, 3)), np.array([0, 1, 2, 0, 1, 2]), class_weight=cw,
                  verbose=0)


# 4. fit(generator, y=...) and validation_data=(x,)
def _gen():
    while True:
        yield np.ones((2, 3), "float32"), np.ones((2, 1), "float32")


def test_04_fit_generator_with_y_is_refused():
    model = _dense_model(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match=r"x is a generator.*y .*be None\. "
                                         r"Received: y.*ndarray"):
        model.fit(_gen(), y=np.ones((2, 1)), steps_per_epoch=1, verbose=0)


def test_04_validation_data_of_one_element_is_refused():
    model = _dense_model(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match=r"\(x_val, y_val\).*Received: a tuple "
                                         r"of length 1"):
        model.fit(np.ones((4, 3)), np.ones((4, 1)), validation_data=(np.ones((2, 3)),),
                  verbose=0)


# 5. sparse labels that are not whole numbers
def test_05_fractional_sparse_labels_are_refused():
    model = _dense_model(3, optimizer="sgd", loss="sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match=r"whole class indices\. Received: .*2\.7"):
        model.fit(np.ones((3, 3)), np.array([0.0, 2.7, 1.0]), verbose=0)


def test_05_whole_float_sparse_labels_still_train():
    model = _dense_model(3, optimizer="sgd", loss="sparse_categorical_crossentropy")
    history = model.fit(np.ones((3, 3)), np.array([0.0, 2.0, 1.0]), verbose=0)
    assert np.isfinite(history.history["loss"][0])


# 6. epochs, learning rates, ReduceLROnPlateau, schedules
def test_06_negative_epochs_are_refused():
    model = _dense_model(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match=r"`epochs` >= 0\. Received: epochs=-3"):
        model.fit(np.ones((4, 3)), np.ones((4, 1)), epochs=-3, verbose=0)


@pytest.mark.parametrize("lr", [float("nan"), float("inf"), -0.1])
def test_06_bad_learning_rate_is_refused_at_construction(lr):
    with pytest.raises(ValueError, match=r"finite float >= 0\. Received: "
                                         rf"learning_rate={lr}"):
        optimizers.SGD(lr)
    opt = optimizers.Adam(0.01)
    with pytest.raises(ValueError, match="finite float >= 0"):
        opt.learning_rate = lr
    assert opt.learning_rate == pytest.approx(0.01)


@pytest.mark.parametrize("kw, match", [
    ({"factor": -1}, r"0\.0 <= factor < 1\.0\. Received: factor=-1\.0"),
    ({"factor": float("nan")}, r"factor=nan"),
    ({"min_lr": -1.0}, r"min_lr\. Received: min_lr=-1\.0|min_lr=-1\.0"),
    ({"patience": -2}, r"`patience` >= 0\. Received: patience=-2"),
    ({"min_delta": float("nan")}, r"min_delta=nan"),
])
def test_06_reduce_lr_on_plateau_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        callbacks.ReduceLROnPlateau(**kw)


def test_06_learning_rate_scheduler_returning_nan_stops_fit():
    model = _dense_model(optimizer=optimizers.SGD(0.1), loss="mse")
    cb = callbacks.LearningRateScheduler(lambda epoch: float("nan"))
    with pytest.raises(ValueError, match=r"finite learning rate >= 0\. "
                                         r"Received: nan at epoch 0"):
        model.fit(np.ones((4, 3)), np.ones((4, 1)), callbacks=[cb], verbose=0)
    assert model.optimizer.learning_rate == pytest.approx(0.1)


class _NaNAfterOne(optimizers.schedules.LearningRateSchedule):
    """0.1 at step 0, NaN from step 1 on."""

    def __call__(self, step):
        s = K.cast(step, "float32")
        return 0.1 + K.sqrt(-s)


@pytest.mark.filterwarnings("ignore:invalid value encountered in sqrt")
def test_06_schedule_producing_nan_stops_at_that_step():
    model = _dense_model(optimizer=optimizers.SGD(_NaNAfterOne()), loss="mse")
    x, y = np.ones((4, 3)), np.ones((4, 1))
    model.train_on_batch(x, y)  # step 0: rate 0.1
    before = [w.numpy().copy() for w in model.weights]
    with pytest.raises(ValueError, match=r"schedule _NaNAfterOne expects to "
                                         r"produce a finite rate >= 0.*Received: "
                                         r"nan"):
        model.train_on_batch(x, y)
    for b, w in zip(before, model.weights):  # no NaN reached the weights
        np.testing.assert_array_equal(b, w.numpy())


def test_06_schedule_arguments_are_validated():
    with pytest.raises(ValueError, match=r"initial_learning_rate.*Received: "
                                         r"initial_learning_rate=nan"):
        optimizers.schedules.ExponentialDecay(float("nan"), 10, 0.9)
    with pytest.raises(ValueError, match=r"values\[1\].*Received: values\[1\]=inf"):
        optimizers.schedules.PiecewiseConstantDecay([10], [0.1, float("inf")])


# 7. dataset files are verified by SHA-256 even when local
def test_07_edited_local_dataset_file_is_refused(tmp_path, data_dir):
    from kerasflow.datasets import _loader, mnist  # noqa: PLC0415

    local = tmp_path / "mnist"
    shutil.copytree(data_dir / "mnist", local)
    labels = local / _loader.TEST_LABELS
    raw = bytearray(gzip.decompress(labels.read_bytes()))
    raw[8] = (raw[8] + 1) % 10  # a valid gzip with one altered label
    os.chmod(labels, 0o644)
    labels.write_bytes(gzip.compress(bytes(raw)))
    with pytest.raises(ValueError) as info:
        mnist.load_data(path=local)
    msg = str(info.value)
    assert _loader.TEST_LABELS in msg and "SHA-256 mismatch" in msg
    assert mnist.SHA256[_loader.TEST_LABELS] in msg
    assert _loader.sha256_file(labels) in msg


# 8. save over a symlink; file modes
def test_08_save_over_symlink_writes_the_target(tmp_path):
    model = _dense_model()
    real = tmp_path / "real.kf"
    real.write_bytes(b"old")
    os.chmod(real, 0o644)
    link = tmp_path / "link.kf"
    link.symlink_to(real.name)
    model.save(link)
    assert link.is_symlink() and os.readlink(link) == real.name
    assert stat.S_IMODE(real.stat().st_mode) == 0o644
    np.testing.assert_array_equal(models.load_model(real).get_weights()[0],
                                  model.get_weights()[0])


def test_08_new_file_honours_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        _dense_model().save(tmp_path / "m.kf")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "m.kf").stat().st_mode) == 0o640


# 9. temp files of killed saves
def test_09_stale_temp_files_of_dead_processes_are_removed(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    pid = int(dead.stdout)
    stale = tmp_path / f".tmp-{pid}-abc123.part"
    recent = tmp_path / f".tmp-{pid}-def456.part"
    live = tmp_path / ".tmp-1-aaa.part"  # pid 1 is alive
    foreign = tmp_path / ".tmp-notours.part"
    for p in (stale, recent, live, foreign):
        p.write_bytes(b"x" * 100)
    old = time.time() - 2 * file_io.STALE_AFTER_S
    for p in (stale, live, foreign):
        os.utime(p, (old, old))
    _dense_model().save(tmp_path / "m.kf")
    assert not stale.exists()
    assert recent.exists() and live.exists() and foreign.exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".kf")) \
        == ["m.kf"]


@pytest.mark.skipif(not hasattr(os, "O_TMPFILE"), reason="needs Linux O_TMPFILE")
def test_09_a_killed_writer_leaves_no_file(tmp_path):
    code = textwrap.dedent(f"""
        import os, sys, time
        from kerasflow.utils import file_io
        fd = file_io._open_unnamed({str(tmp_path)!r})
        assert fd is not None
        os.write(fd, b"x" * (1 << 20))
        print("ready", flush=True)
        time.sleep(60)
    """)
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "ready"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert list(tmp_path.iterdir()) == []


# 10. overflow when a fed value is cast
def test_10_overflow_on_feeding_is_an_error_naming_the_placeholder():
    x = K.placeholder("float32", (2,), name="features")
    with pytest.raises(ValueError, match=r"'features.*' expects values that fit "
                                         r"dtype float32.*Received: .*float64 "
                                         r"with \|x\| up to 1e\+300"):
        K.Session().run(x * 1.0, {x: np.array([1e300, 1.0])})
    # inf fed as inf is not an overflow.
    assert np.isinf(K.Session().run(x * 1.0, {x: np.array([np.inf, 1.0])})[0])


def test_10_integer_wrap_around_on_feeding_is_an_error():
    ids = K.placeholder("int8", (2,), name="ids")
    with pytest.raises(ValueError, match=r"'ids.*' expects values of dtype int8, "
                                         r"in \[-128, 127\]\. Received: values in "
                                         r"\[1, 300\]"):
        K.Session().run(ids * 1, {ids: np.array([1, 300])})


def test_10_overflow_through_predict_names_the_input():
    model = _dense_model()
    with pytest.raises(ValueError, match=r"expects values that fit dtype float32"):
        model.predict(np.full((2, 3), 1e300), verbose=0)


# == Hangs and resource bombs =======================================================
def _alias_bomb(levels=10):
    lines = ["l0: &l0 {class_name: Dense, config: {units: 1}}"]
    for i in range(1, levels):
        refs = ", ".join([f"*l{i - 1}"] * 10)
        lines.append(f"l{i}: &l{i} {{class_name: Sequential, config: "
                     f"{{layers: [{refs}]}}}}")
    lines.append(f"class_name: Sequential\nconfig: {{layers: [*l{levels - 1}]}}")
    return "\n".join(lines)


# 11. YAML alias bombs; layer-count and nesting caps
def test_11_yaml_aliases_are_refused():
    text = _alias_bomb()
    assert len(text) < 1500  # ~10**9 layers when expanded
    with pytest.raises(ValueError, match=r"expects no aliases.*Received: the "
                                         r"alias '\*l0'"):
        models.model_from_yaml(text)


def test_11_layer_count_is_capped(monkeypatch):
    monkeypatch.setattr(config_checks, "MAX_LAYERS", 10)
    text = models.Sequential([layers.Dense(1) for _ in range(12)]).to_json()
    with pytest.raises(ValueError, match=r"at most 10 layers.*Received: more "
                                         r"than 10"):
        models.model_from_json(text)


def test_11_model_nesting_is_capped():
    spec = {"class_name": "Dense", "config": {"units": 1}}
    for _ in range(config_checks.MAX_NESTING + 2):
        spec = {"class_name": "Sequential", "config": {"layers": [spec]}}
    with pytest.raises(ValueError, match=r"models nested at most 32 deep"):
        models.model_from_json(json.dumps(spec))


# 12. zip member size caps
def _zip_with(path, members):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)


def test_12_config_member_bomb_is_refused_before_inflating(tmp_path):
    bomb = tmp_path / "bomb.kf"
    _zip_with(bomb, {"model.json": b" " * (file_io.MAX_CONFIG_BYTES + 1),
                     "model.weights.npz": b""})
    assert bomb.stat().st_size < 1 << 20
    with pytest.raises(ValueError, match=r"bomb\.kf': member 'model\.json' "
                                         r"expects at most 67108864 bytes.*"
                                         r"Received: 67108865 bytes"):
        models.load_model(bomb)


def test_12_weights_cap_is_overridable(tmp_path, monkeypatch):
    model = _dense_model()
    path = tmp_path / "m.kf"
    model.save(path)
    monkeypatch.setenv("KERASFLOW_MAX_WEIGHTS_BYTES", "100")
    with pytest.raises(ValueError, match=r"member 'model\.weights\.h5' expects "
                                         r"at most 100 bytes"):
        models.load_model(path)
    monkeypatch.setenv("KERASFLOW_MAX_WEIGHTS_BYTES", str(1 << 20))
    np.testing.assert_array_equal(models.load_model(path).get_weights()[0],
                                  model.get_weights()[0])


# 13. broken configs
def test_13_deeply_nested_json_and_yaml_are_value_errors():
    deep = '{"a":' * 100_000 + "1" + "}" * 100_000
    with pytest.raises(ValueError, match=r"nesting at most 500 deep"):
        models.model_from_json(deep)
    with pytest.raises(ValueError, match=r"nesting at most 500 deep"):
        models.model_from_yaml("[" * 5000 + "]" * 5000)


@pytest.mark.parametrize("config, match", [
    ({"class_name": "Sequential"}, r"'config' mapping\. Received: no 'config' key"),
    ({"class_name": "Sequential", "config": {"layers": 5}},
     r"config\.config\.layers .*expects a list of layer configs\. Received: int 5"),
    ({"class_name": "Sequential", "config": {"layers": [
        {"class_name": "Dense", "config": {"units": 2**40, "name": "huge"}}]}},
     (r"layer 'huge'.*units as an integer in \[1, 2147483647\]\. Received: "
      r"units=1099511627776")),
    ({"class_name": "Sequential", "config": {"layers": [{"config": {}}]}},
     r"layers\[0\] expects a 'class_name' string"),
])
def test_13_broken_configs_name_place_and_expectation(config, match):
    with pytest.raises(ValueError, match=match):
        models.model_from_json(json.dumps(config))


def _functional_config():
    inp = layers.Input((3,), name="x")
    h = layers.Dense(4, name="d1")(inp)
    out = layers.Dense(2, name="d2")(h)
    return json.loads(models.Model(inp, out, name="m").to_json())


def test_13_cycle_in_functional_config_is_a_value_error():
    config = _functional_config()
    nodes = config["config"]["nodes"]
    d1 = next(n for n in nodes if n["layer"] == "d1")
    d1["inputs"] = ["d2", 0, 0]  # d1 <- d2 <- d1
    with pytest.raises(ValueError, match=r"layer 'd1' to take the output of layer "
                                         r"'d2' call 0 computed before it.*cycle"):
        models.model_from_json(json.dumps(config))


def test_13_errors_from_a_file_name_the_file(tmp_path):
    model = _dense_model()
    path = tmp_path / "broken.kf"
    model.save(path)
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    config = json.loads(members["config.json"])  # Keras 3's .keras layout
    config["config"]["layers"][-1]["config"]["units"] = 2**40
    members["config.json"] = json.dumps(config).encode()
    _zip_with(path, members)
    with pytest.raises(ValueError, match=r"broken\.kf'.*units as an integer"):
        models.load_model(path)


def test_13_huge_dense_built_in_code_names_the_layer():
    with pytest.raises(ValueError, match=r"Layer 'huge' expects weight 'kernel' to "
                                         r"fit in memory.*Received: shape \(3, "
                                         r"1099511627776\)"):
        models.Sequential([layers.Dense(2**40, input_shape=(3,), name="huge")])


# == Unhelpful messages ==============================================================
def test_msg_two_output_model_with_one_target():
    inp = layers.Input((3,))
    model = models.Model(inp, [layers.Dense(1, name="a")(inp),
                               layers.Dense(1, name="b")(inp)])
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match=r"has 2 outputs \['a', 'b'\] and expects "
                                         r"2 target arrays.*Received: one ndarray"):
        model.fit(np.ones((4, 3)), np.ones((4, 1)), verbose=0)


def test_msg_model_without_trainable_weights():
    model = _dense_model()
    model.layers[0].trainable = False
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match=r"trainable weights"):
        model.fit(np.ones((4, 3)), np.ones((4, 1)), verbose=0)


def test_msg_dense_on_1d_input_names_the_rank():
    with pytest.raises(ValueError, match=r"Layer 'flat' expects inputs of rank >= "
                                         r"2 .*Received: inputs of rank 1"):
        layers.Dense(3, name="flat")(K.placeholder("float32", (4,)))
    with pytest.raises(ValueError, match=r"rank >= 2.*Received: inputs of rank 1"):
        models.Sequential([layers.Dense(3, input_shape=())])


def test_msg_callbacks_not_a_list():
    model = _dense_model(optimizer="sgd", loss="mse")
    with pytest.raises(TypeError, match=r"list of Callback instances\. Received: "
                                        r"EarlyStopping.*callbacks=\[EarlyStopping"):
        model.fit(np.ones((4, 3)), np.ones((4, 1)),
                  callbacks=callbacks.EarlyStopping(), verbose=0)


def test_msg_dropout_rate_string():
    with pytest.raises(TypeError, match=r"`rate` as a float in \[0, 1\)\. "
                                        r"Received: rate='a' of type str"):
        layers.Dropout("a")


def test_msg_dense_units_string_shows_the_quotes():
    # ValueError, the type Keras raises for any invalid units.
    with pytest.raises(ValueError, match=r"expected a positive integer\. "
                                         r"Received: units='3'"):
        layers.Dense("3")


def test_msg_ragged_nested_lists_as_x():
    model = _dense_model(2, inputs=2, optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match=r"`x` expects a rectangular array.*"
                                         r"Received: ragged lists"):
        model.fit([[1.0, 2.0], [3.0]], np.ones((2, 2)), verbose=0)


def test_msg_ragged_nested_lists_fed_to_a_placeholder():
    x = K.placeholder("float32", (None, 2), name="rows")
    with pytest.raises(ValueError, match=r"'rows.*' expects a rectangular array"):
        K.Session().run(x * 1.0, {x: [[1.0, 2.0], [3.0]]})


def test_msg_tensor_fed_as_a_value():
    x = K.placeholder("float32", (2,), name="x")
    other = K.placeholder("float32", (2,), name="other")
    with pytest.raises(TypeError, match=r"'x.*' is fed a value.*Received: the "
                                        r"symbolic tensor 'other"):
        K.Session().run(x * 1.0, {x: other})


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores folder permissions")
def test_msg_read_only_folder_names_the_target(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    os.chmod(folder, 0o555)
    try:
        with pytest.raises(PermissionError) as info:
            _dense_model().save(folder / "m.kf")
    finally:
        os.chmod(folder, 0o755)
    assert str(folder / "m.kf") in str(info.value) and ".tmp-" not in str(info.value)


def test_msg_unwritable_target_names_the_target_not_a_temp_file(tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("not a folder")
    target = blocker / "m.kf"
    with pytest.raises(OSError) as info:
        _dense_model().save(target)
    assert f"Cannot save to '{target}'" in str(info.value)
    assert ".tmp-" not in str(info.value)


def _alloc_huge(xp, x):
    return xp.empty((1 << 46,), dtype=np.uint8)  # 64 TiB


def test_msg_memory_error_in_a_kernel_keeps_its_type():
    from kerasflow.backend.ops import infer as I  # noqa: PLC0415
    from kerasflow.backend.registry import get_op, register_op  # noqa: PLC0415

    try:
        get_op("TestHugeAlloc")
    except KeyError:
        register_op("TestHugeAlloc", I.same)(_alloc_huge)
    x = K.placeholder("float32", (2,), name="small")
    y = K.apply("TestHugeAlloc", x)
    with pytest.raises(MemoryError) as info:
        K.Function([x], y)(np.ones(2))
    notes = " ".join(getattr(info.value, "__notes__", [])) + str(info.value)
    assert "TestHugeAlloc" in notes


# == Nearby: the same kinds of defects found around the catalogue ====================
def test_nearby_constant_and_variable_refuse_overflow():
    with pytest.raises(ValueError, match=r"constant 'big' expects values that fit "
                                         r"dtype float32.*1e\+300"):
        K.constant(1e300, dtype="float32", name="big")
    v = K.Variable(np.zeros(2, "float32"), name="v")
    with pytest.raises(ValueError, match=r"Variable 'v.*' expects values that fit"):
        v.assign(np.array([1e300, 0.0]))
    np.testing.assert_array_equal(v.numpy(), [0.0, 0.0])


def test_nearby_set_weights_overflow_changes_nothing():
    model = _dense_model()
    before = model.get_weights()
    with pytest.raises(ValueError, match=r"Weight '.*bias' of .* expects values "
                                         r"that fit dtype float32"):
        model.set_weights([np.zeros((3, 1)), np.array([1e300])])
    for b, a in zip(before, model.get_weights()):
        np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("make, match", [
    (lambda: optimizers.Adam(beta_1=float("nan")),
     r"0\.0 <= beta_1 < 1\.0\. Received: beta_1=nan"),
    (lambda: optimizers.Adam(beta_2=1.0), r"beta_2 < 1\.0\. Received: beta_2=1\.0"),
    (lambda: optimizers.Adam(epsilon=-1e-7), r"epsilon=-1e-07"),
    (lambda: optimizers.RMSprop(rho=2.0), r"rho < 1\.0\. Received: rho=2\.0"),
    (lambda: optimizers.SGD(0.1, clipnorm=float("nan")), r"clipnorm=nan"),
    (lambda: regularizers.L2(float("nan")),
     r"finite and non-negative\. Received: l2=nan"),
    (lambda: initializers.RandomNormal(stddev=float("nan")),
     r"`stddev` as a finite float >= 0\.0\. Received: stddev=nan"),
    (lambda: callbacks.EarlyStopping(patience=-1),
     r"`patience` >= 0\. Received: patience=-1"),
    (lambda: callbacks.EarlyStopping(baseline=float("nan")), r"baseline=nan"),
])
def test_nearby_nan_and_out_of_range_hyperparameters(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_nearby_type_errors_name_the_argument():
    with pytest.raises(TypeError, match=r"`axis` as an int\. Received: axis='a'"):
        layers.Concatenate(axis="a")
    with pytest.raises(TypeError, match=r"`schedule` as a function.*Received: 0\.1"):
        callbacks.LearningRateScheduler(0.1)


def test_nearby_load_weights_applies_the_weights_cap(tmp_path, monkeypatch):
    model = _dense_model()
    model.save(tmp_path / "m.kf")
    monkeypatch.setenv("KERASFLOW_MAX_WEIGHTS_BYTES", "10")
    with pytest.raises(ValueError, match=r"model\.weights\.h5' expects at most 10 "
                                         r"bytes"):
        model.load_weights(tmp_path / "m.kf")
