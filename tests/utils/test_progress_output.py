"""Progress output on a terminal (a tqdm bar redrawn in place) and off one
(one line per epoch, as Keras' non-interactive progress bar), and
``kerasflow.utils.io_utils``."""

from __future__ import annotations

import logging
import re

import numpy as np
import pytest

import kerasflow as kf
from kerasflow.utils import io_utils


def _fit(verbose=1, epochs=3):
    x = np.linspace(-1, 1, 256, dtype="float32").reshape(-1, 1)
    model = kf.Sequential([kf.layers.Dense(1, input_shape=(1,))])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, 2 * x, batch_size=8, epochs=epochs, verbose=verbose,
              validation_split=0.25)


def test_not_a_terminal_writes_one_line_per_epoch(capsys):
    _fit(epochs=3)
    out = capsys.readouterr().out
    assert "\r" not in out
    lines = out.splitlines()
    assert len(lines) == 3
    for i, line in enumerate(lines, 1):
        assert re.match(rf"Epoch {i}/3 - 24/24 batches - \d+\.\ds - loss: ", line)
        assert "val_loss: " in line and "samples/s" in line


def test_a_terminal_gets_a_bar_redrawn_in_place(capsys, monkeypatch):
    monkeypatch.setattr(io_utils, "interactive_terminal", lambda: True)
    _fit(epochs=2)
    out = capsys.readouterr().out
    assert "\r" in out  # tqdm redraws the line
    finals = [s for s in re.split(r"[\r\n]", out) if "24/24" in s]
    assert any(s.startswith("Epoch 2/2") and "val_loss" in s for s in finals)


def test_disable_interactive_logging_also_gives_lines(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdout.isatty", lambda: True, raising=False)
    io_utils.disable_interactive_logging()
    try:
        assert not io_utils.is_interactive_logging_enabled()
        _fit(epochs=1)
    finally:
        io_utils.enable_interactive_logging()
    out = capsys.readouterr().out
    assert "\r" not in out and len(out.splitlines()) == 1


def test_print_msg_goes_to_stdout_or_the_log(capsys, caplog):
    io_utils.print_msg("hello")
    io_utils.print_msg("no newline", line_break=False)
    assert capsys.readouterr().out == "hello\nno newline"
    io_utils.disable_interactive_logging()
    try:
        with caplog.at_level(logging.INFO, logger="kerasflow"):
            io_utils.print_msg("to the log")
    finally:
        io_utils.enable_interactive_logging()
    assert capsys.readouterr().out == ""
    assert "to the log" in caplog.text


@pytest.mark.parametrize("verbose", [0, 2])
def test_verbose_0_and_2_unchanged(capsys, verbose):
    _fit(verbose=verbose, epochs=2)
    out = capsys.readouterr().out
    assert len(out.splitlines()) == (0 if verbose == 0 else 2)


def test_set_random_seed_makes_a_training_run_reproducible():
    def run():
        kf.utils.set_random_seed(123)
        model = kf.Sequential([kf.layers.Dense(8, activation="relu", input_shape=(3,)),
                               kf.layers.Dropout(0.5), kf.layers.Dense(1)])
        model.compile(optimizer="adam", loss="mse")
        x = np.random.rand(64, 3).astype("float32")
        model.fit(x, x.sum(1), epochs=2, batch_size=16, verbose=0)
        return model.get_weights()

    a, b = run(), run()
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    kf.utils.set_random_seed(124)
    c = kf.Sequential([kf.layers.Dense(8, input_shape=(3,))]).get_weights()[0]
    assert not np.array_equal(c, a[0])
    with pytest.raises(ValueError, match="non-negative integer"):
        kf.utils.set_random_seed(-1)
