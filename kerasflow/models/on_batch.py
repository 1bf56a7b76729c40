"""``train_on_batch``, ``test_on_batch``, ``predict_on_batch``: one batch
through the same step and strategy as ``fit`` (a mixin of ``Trainer``)."""

from __future__ import annotations

from kerasflow.models import data as data_mod
from kerasflow.steps.batch import BatchRef

__all__ = ["OnBatchMixin"]


class OnBatchMixin:
    """Keras' single-batch training API."""

    def _on_batch(self, kind, x, y, sample_weight, class_weight=None):
        data = self._standardize(x, y, sample_weight, class_weight)
        self.reset_metrics()
        step = self._get_step(kind, data.xs, data.ys, data.weighted)
        r = self._strategy().run_step(step, BatchRef(data.arrays, None))
        return self._step_logs(step, r, r.loss)

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None,
                       return_dict=False):
        """One optimizer step on one batch; returns loss (and metrics)."""
        self._require_compiled("train_on_batch")
        logs = self._on_batch("train", x, y, sample_weight, class_weight)
        return self._batch_result(logs, return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        """Loss (and metrics) on one batch, without updating weights."""
        self._require_compiled("test_on_batch")
        logs = self._on_batch("eval", x, y, sample_weight)
        return self._batch_result(logs, return_dict)

    def predict_on_batch(self, x):
        """Model outputs for one batch, as numpy."""
        return self.predict(x, batch_size=len(data_mod.to_list(x)[0]) or 1)

    @staticmethod
    def _batch_result(logs, return_dict):
        if return_dict:
            return logs
        values = list(logs.values())
        return values[0] if len(values) == 1 else values
