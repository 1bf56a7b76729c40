"""``keras.config`` names (Keras 3) on ``kerasflow.config``: the switches and
the epoch/step caps in fit and evaluate."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import config


def test_config_switches():
    assert config.is_traceback_filtering_enabled() is True
    config.disable_traceback_filtering()
    assert config.is_traceback_filtering_enabled() is False
    config.enable_traceback_filtering()
    assert config.is_flash_attention_enabled() is None
    config.enable_flash_attention()
    assert config.is_flash_attention_enabled() is True
    config.disable_flash_attention()
    assert config.is_flash_attention_enabled() is False
    assert config.is_nnx_enabled() is False
    config.enable_unsafe_deserialization()
    assert config.is_unsafe_deserialization_enabled()
    config.set_backend("numpy")
    with pytest.raises(ValueError, match=r"one backend, 'numpy'.*Received: "
                                         r"backend='jax'"):
        config.set_backend("jax")
    with pytest.raises(ValueError, match=r"Received: max_epochs=0"):
        config.set_max_epochs(0)


def test_max_epochs_and_steps_cap_fit_and_evaluate():
    rng = np.random.default_rng(0)
    x = rng.random((64, 3)).astype("float32")
    y = x.sum(1, keepdims=True)
    model = kf.Sequential([kf.layers.Dense(1, input_shape=(3,))])
    model.compile("sgd", "mse")
    seen = []
    cb = kf.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: seen.append(b),
                                     on_test_batch_end=lambda b, logs: seen.append(
                                         -1 - b))
    config.set_max_epochs(2)
    config.set_max_steps_per_epoch(3)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            history = model.fit(x, y, epochs=5, batch_size=8, verbose=0,
                                callbacks=[cb])
            model.evaluate(x, y, batch_size=8, verbose=0, callbacks=[cb])
        assert config.max_epochs() == 2 and config.max_steps_per_epoch() == 3
    finally:
        config.set_max_epochs(None)
        config.set_max_steps_per_epoch(None)
    assert len(history.history["loss"]) == 2
    assert seen == [0, 1, 2, 0, 1, 2, -1, -2, -3]
    messages = {str(w.message) for w in caught}
    assert "Limiting epochs to 2" in messages
    assert "Limiting steps_per_epoch to 3" in messages
    assert len(model.fit(x, y, epochs=2, batch_size=8, verbose=0)
               .history["loss"]) == 2
