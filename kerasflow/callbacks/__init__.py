"""Callbacks: hooks into `fit`, `evaluate` and `predict` (Keras callbacks API)."""

from __future__ import annotations

from kerasflow.callbacks.callback import Callback
from kerasflow.callbacks.callback_list import CallbackList
from kerasflow.callbacks.csv_logger import CSVLogger
from kerasflow.callbacks.early_stopping import EarlyStopping
from kerasflow.callbacks.history import History
from kerasflow.callbacks.lambda_callback import LambdaCallback
from kerasflow.callbacks.learning_rate_scheduler import LearningRateScheduler
from kerasflow.callbacks.model_checkpoint import ModelCheckpoint
from kerasflow.callbacks.monitor_callback import MonitorCallback
from kerasflow.callbacks.progbar_logger import ProgbarLogger
from kerasflow.callbacks.reduce_lr_on_plateau import ReduceLROnPlateau
from kerasflow.callbacks.tensorboard import TensorBoard
from kerasflow.callbacks.terminate_on_nan import TerminateOnNaN

# -- Keras 3 callbacks of issue 25 --------------------------------------------------
from kerasflow.callbacks.backup_and_restore import BackupAndRestore  # noqa: E402
from kerasflow.callbacks.swap_ema_weights import SwapEMAWeights  # noqa: E402

__all__ = [
    "Callback",
    "CallbackList",
    "CSVLogger",
    "EarlyStopping",
    "History",
    "LambdaCallback",
    "LearningRateScheduler",
    "ModelCheckpoint",
    "MonitorCallback",
    "ProgbarLogger",
    "ReduceLROnPlateau",
    "TensorBoard",
    "TerminateOnNaN",
    "BackupAndRestore",
    "SwapEMAWeights",
]


def __getattr__(name):  # a Keras name kerasflow lacks: NotImplementedError
    from kerasflow.utils.keras_surface import missing_attribute

    raise missing_attribute("callbacks", name)
