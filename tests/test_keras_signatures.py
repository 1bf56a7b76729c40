"""Keras 3 names take Keras' arguments, in Keras' order, with Keras' defaults:
functions and classes of ``random``, ``saving``, ``models`` and ``utils``; and
layers, optimizers and callbacks, which are also built with every Keras
argument (explicitly or through ``**kwargs``) at its Keras default."""

from __future__ import annotations

import inspect

import pytest

import kerasflow as kf
from tests.keras_oracle import keras_numpy

NAMES = [
    *(f"random.{n}" for n in ("normal", "uniform", "truncated_normal", "randint",
                              "categorical", "dropout", "shuffle", "gamma", "beta",
                              "binomial", "SeedGenerator")),
    *(f"saving.{n}" for n in ("load_model", "save_model", "register_keras_serializable",
                              "serialize_keras_object", "deserialize_keras_object",
                              "get_registered_object", "save_weights",
                              "load_weights")),
    "models.clone_model", "utils.pad_sequences", "utils.Progbar",
    "utils.timeseries_dataset_from_array", "utils.split_dataset",
    "utils.pack_x_y_sample_weight", "Variable",
]
_SKIP = {"self", "kwargs", "args", "preferred_backend"}  # Keras' backend choice

CLASSES = [
    *(f"layers.{n}" for n in (
        "Attention", "AdditiveAttention", "GroupNormalization",
        "UnitNormalization", "RMSNormalization", "EinsumDense", "Conv1DTranspose",
        "Identity", "GaussianDropout", "AlphaDropout", "RNN", "SimpleRNNCell",
        "LSTMCell", "GRUCell", "StackedRNNCells", "ConvLSTM1D", "ConvLSTM2D",
        "ConvLSTM3D")),
    *(f"optimizers.{n}" for n in ("Nadam", "Adamax", "Lion", "Lamb", "Adafactor",
                                  "LossScaleOptimizer")),
    "callbacks.BackupAndRestore", "callbacks.SwapEMAWeights",
]
# Keras features kerasflow does not offer (refused with an error when set).
_NOT_OFFERED = {"lora_rank", "lora_alpha", "gptq_unpacked_column_size",
                "quantization_config", "loss_scale_factor",
                "gradient_accumulation_steps"}
# Required arguments, given a value the constructor accepts.
_REQUIRED = {"cell": lambda keras: kf.layers.GRUCell(2), "cells": lambda keras: [
    kf.layers.GRUCell(2)], "inner_optimizer": lambda keras: kf.optimizers.SGD(),
    "equation": lambda keras: "ab,bc->ac", "output_shape": lambda keras: 3,
    "units": lambda keras: 2, "filters": lambda keras: 2,
    "kernel_size": lambda keras: 2, "rate": lambda keras: 0.5,
    "backup_dir": lambda keras: "/tmp/kf_backup_sig"}


def _resolve(root, dotted):
    for part in dotted.split("."):
        root = getattr(root, part)
    return root


def _params(obj):
    target = obj.__init__ if inspect.isclass(obj) else obj
    return {n: p.default for n, p in inspect.signature(target).parameters.items()
            if n not in _SKIP}


@pytest.mark.parametrize("dotted", NAMES)
def test_arguments_and_defaults_match_keras(dotted):
    keras = keras_numpy()
    ours, theirs = _params(_resolve(kf, dotted)), _params(_resolve(keras, dotted))
    assert list(theirs) == [n for n in ours if n in theirs]  # same order
    missing = set(theirs) - set(ours)
    assert not missing, f"{dotted} lacks Keras arguments {sorted(missing)}"
    for name, default in theirs.items():
        assert ours[name] == default, f"{dotted}({name}=...) default"


@pytest.mark.parametrize("dotted", CLASSES)
def test_keras_arguments_accepted_with_keras_defaults(dotted):
    keras = keras_numpy()
    ours_cls = _resolve(kf, dotted)
    ours, theirs = _params(ours_cls), _params(_resolve(keras, dotted))
    explicit = [n for n in theirs if n in ours]
    assert explicit == [n for n in ours if n in theirs]  # Keras' order
    for name in explicit:
        if theirs[name] is not inspect.Parameter.empty and name != "name":
            assert ours[name] == theirs[name], f"{dotted}({name}=...) default"
    args = {}
    for name, default in theirs.items():
        if name in _NOT_OFFERED or name == "name":
            continue
        args[name] = _REQUIRED[name](keras) if default is \
            inspect.Parameter.empty else default
    ours_cls(**args)  # every Keras argument, at its Keras default
