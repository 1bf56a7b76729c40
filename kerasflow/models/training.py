"""The training loop: ``compile``, ``fit``, ``evaluate``, ``predict`` and friends.

One loop for every strategy (ARCHITECTURE.md): a step is built once per input
signature as a ``Function`` (placeholders -> model -> losses -> gradients ->
optimizer and metric updates) and each batch goes through
``strategy.run_train_step``. Keras' ``Model.fit`` semantics and names.
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.models import data as data_mod

__all__ = ["Trainer"]

_ACC_NAMES = ("accuracy", "acc")


def _loss_kind(loss):
    name = getattr(loss, "__name__", type(loss).__name__).lower()
    if "sparse" in name and "categorical" in name:
        return "sparse"
    if "categorical" in name and "crossentropy" in name:
        return "categorical"
    if "binary" in name and "crossentropy" in name:
        return "binary"
    return None


class Trainer:
    """Mixin of ``Model`` holding the training API."""

    def __init__(self):
        self.optimizer = None
        self.compiled = False
        self.stop_training = False
        self.history = None
        self._steps: dict = {}
        self._metric_objs: list = []

    def _reset_steps(self):
        self._steps = {}

    # -- compile -----------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None,
                weighted_metrics=None, run_eagerly=False, steps_per_execution=1,
                jit_compile=None, auto_scale_loss=None):
        """Configures training (Keras' ``Model.compile``).

        Args:
            optimizer: name ('sgd', 'adam', ...) or optimizer instance.
            loss: name, Loss instance or function; for several outputs a list or
                a dict keyed by output layer name.
            metrics: list of names/instances (one list for all outputs), or a
                list/dict of lists per output. 'accuracy' picks the binary,
                categorical or sparse variant from the loss, as Keras does.
            loss_weights: list or dict of floats weighting each output's loss.

        Raises:
            ValueError: unknown names (from the registries), naming them.
        """
        from kerasflow import losses, optimizers  # noqa: PLC0415

        self.optimizer = optimizers.get(optimizer)
        self._loss_spec = loss
        self._metrics_spec = metrics
        self._loss_weights = loss_weights
        # Resolve eagerly so unknown names fail here, not at fit time.
        for item in (loss.values() if isinstance(loss, dict) else
                     loss if isinstance(loss, (list, tuple)) else [loss]):
            if item is not None:
                losses.get(item)
        self.compiled = True
        self._steps = {}
        self._metric_objs = []

    def _require_compiled(self, what):
        if not self.compiled:
            raise RuntimeError(
                f"You must call compile() on model '{self.name}' before {what}()."
            )

    # -- losses and metrics per output -----------------------------------------------------
    def _per_output(self, spec, names, what):
        if isinstance(spec, dict):
            unknown = set(spec) - set(names)
            if unknown:
                raise ValueError(f"{what} has keys {sorted(unknown)} that match no "
                                 f"output. Outputs: {names}.")
            return [spec.get(n) for n in names]
        if isinstance(spec, (list, tuple)) and len(names) > 1 and what == "loss":
            if len(spec) != len(names):
                raise ValueError(f"loss has {len(spec)} entries for {len(names)} "
                                 f"outputs {names}.")
            return list(spec)
        return [spec] * len(names)

    def _build_losses_metrics(self, outputs):
        from kerasflow import losses, metrics as metrics_mod  # noqa: PLC0415

        names = self._output_names(len(outputs))
        loss_fns = [None if l is None else losses.get(l)
                    for l in self._per_output(self._loss_spec, names, "loss")]
        if all(l is None for l in loss_fns):
            raise ValueError(f"Model '{self.name}' was compiled without a loss. "
                             f"Pass loss= to compile().")
        weights = self._loss_weights
        weights = ([1.0] * len(names) if weights is None else
                   self._per_output(weights, names, "loss_weights")
                   if isinstance(weights, dict) else list(weights))
        mspec = self._metrics_spec or []
        if isinstance(mspec, dict):
            per = [list(mspec.get(n) or []) for n in names]
        elif len(names) > 1 and mspec and all(isinstance(m, (list, tuple))
                                              for m in mspec):
            per = [list(m) for m in mspec]
        else:
            per = [list(mspec)] * len(names)
        metric_objs = []  # (output index, log name, metric)
        for i, (ms, loss_fn, out) in enumerate(zip(per, loss_fns, outputs)):
            prefix = f"{names[i]}_" if len(names) > 1 else ""
            for m in ms:
                metric = self._resolve_metric(m, loss_fn, out, metrics_mod)
                metric_objs.append((i, prefix + metric.name, metric))
        return names, loss_fns, weights, metric_objs

    @staticmethod
    def _resolve_metric(m, loss_fn, out, metrics_mod):
        if isinstance(m, str) and m in _ACC_NAMES:
            kind = _loss_kind(loss_fn)
            if kind is None and out.shape is not None and out.shape[-1] == 1:
                kind = "binary"
            cls = {"sparse": metrics_mod.SparseCategoricalAccuracy,
                   "categorical": metrics_mod.CategoricalAccuracy,
                   "binary": metrics_mod.BinaryAccuracy}.get(kind, metrics_mod.Accuracy)
            return cls(name=m)
        return metrics_mod.get(m)

    # -- step construction -------------------------------------------------------------
    def _input_placeholders(self, xs):
        specs = self._default_input_specs()
        phs = []
        for i, a in enumerate(xs):
            if specs is not None and i < len(specs):
                shape, dtype = specs[i]
                expected = tuple(shape[1:]) if shape is not None else None
                if expected is not None and (len(expected) != a.ndim - 1 or any(
                        d is not None and d != s for d, s in zip(expected, a.shape[1:]))):
                    raise ValueError(
                        f"Input {i} of model '{self.name}' expects data of shape "
                        f"(None, {', '.join(str(d) for d in expected)}). Received: "
                        f"data of shape {a.shape}."
                    )
            else:
                shape = (None,) + a.shape[1:]
                dtype = K.floatx() if a.dtype.kind in "fub" or a.dtype == np.uint8 \
                    else a.dtype
                if a.dtype.kind in "iu" and a.dtype != np.uint8:
                    dtype = a.dtype
            phs.append(K.placeholder(dtype, shape, name=f"input_{i + 1}"))
        return phs

    def _structure_inputs(self, phs):
        specs = getattr(self, "_inputs_struct", None)
        if isinstance(specs, dict):
            return dict(zip(specs, phs))
        return phs[0] if len(phs) == 1 else phs

    def _get_step(self, kind, xs, ys):
        key = (kind, tuple((a.shape[1:], a.dtype.kind) for a in xs),
               tuple((a.shape[1:], a.dtype.kind) for a in ys or []))
        step = self._steps.get(key)
        if step is None:
            step = self._steps[key] = self._make_step(kind, xs, ys)
        return step

    def _make_step(self, kind, xs, ys):
        x_phs = self._input_placeholders(xs)
        from kerasflow.layers.base import collect_updates  # noqa: PLC0415

        with collect_updates() as layer_updates:  # BatchNormalization's moving stats
            outputs = self(self._structure_inputs(x_phs), training=(kind == "train"))
        outs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        outs = list(outs.values()) if isinstance(outs, dict) else list(outs)
        if kind == "predict":
            return K.Function(x_phs, outs, name=f"{self.name}_predict"), None
        names, loss_fns, weights, metric_objs = self._build_losses_metrics(outs)
        if not self._metric_objs or len(self._metric_objs) != len(metric_objs):
            self._metric_objs = metric_objs
        else:  # reuse the metric objects across signatures and train/eval steps
            metric_objs = self._metric_objs
        if len(ys or []) != len(outs):
            raise ValueError(f"Model '{self.name}' has {len(outs)} output(s) "
                             f"{names}. Received: {len(ys or [])} target array(s).")
        y_phs = []
        for i, (a, out, loss_fn) in enumerate(zip(ys, outs, loss_fns)):
            self._check_targets(a, out, loss_fn, names[i])
            dtype = np.int64 if a.dtype.kind in "iu" else K.floatx()
            y_phs.append(K.placeholder(dtype, (None,) + a.shape[1:],
                                       name=f"{names[i]}_target"))
        sw = K.placeholder(K.floatx(), (None,), name="sample_weight")
        per_output = []
        total = None
        for y, out, loss_fn, w in zip(y_phs, outs, loss_fns, weights):
            if loss_fn is None:
                continue
            value = _apply_loss(loss_fn, y, out, sw)
            per_output.append(value)
            term = value if w == 1.0 else value * float(w)
            total = term if total is None else total + term
        for penalty in self.losses:
            total = total + penalty
        updates = []
        for i, _, metric in metric_objs:
            updates += list(metric.update_state(y_phs[i], outs[i], sample_weight=sw)
                            or [])
        fetches = [total] + (per_output if len(per_output) > 1 else [])
        if kind == "train":
            updates = list(self.optimizer.get_updates(total, self.trainable_weights)
                           ) + updates + layer_updates
        fn = K.Function(x_phs + y_phs + [sw], fetches, updates=updates,
                        name=f"{self.name}_{kind}")
        return fn, names

    def _check_targets(self, y, out, loss_fn, name):
        if _loss_kind(loss_fn) == "sparse" and out.shape is not None \
                and out.shape[-1] is not None:
            n = out.shape[-1]
            if y.size and (y.min() < 0 or y.max() >= n):
                raise ValueError(
                    f"Sparse labels of output '{name}' must lie in [0, {n}) for {n} "
                    f"classes. Received: labels from {y.min()} to {y.max()}."
                )

    # -- batches -------------------------------------------------------------------------
    def _standardize(self, x, y=None, sample_weight=None, class_weight=None,
                     batch_size=None):
        in_names = None
        if getattr(self, "_is_functional", False):
            from kerasflow.layers.base import get_history  # noqa: PLC0415

            in_names = [get_history(t)[0].name for t in self.inputs]
            if isinstance(getattr(self, "_inputs_struct", None), dict):
                in_names = list(self._inputs_struct)
        xs = data_mod.to_list(x, in_names, "x")
        n_out = len(self.outputs) if getattr(self, "_is_functional", False) else 1
        out_names = self._output_names(n_out)
        ys = data_mod.to_list(y, out_names if n_out > 1 else None, "y")
        if ys is not None and n_out > 1 and len(ys) == 1 and not isinstance(y, dict):
            ys = [np.asarray(v) for v in y]
        # 1-D features and (non-sparse) targets become one column, as Keras 2 did.
        xs = [a.reshape(-1, 1) if a.ndim == 1 else a for a in xs]
        if ys is not None:
            from kerasflow import losses  # noqa: PLC0415

            specs = self._per_output(getattr(self, "_loss_spec", None), out_names,
                                     "loss") if len(ys) == len(out_names) else []
            kinds = [_loss_kind(losses.get(l)) if l is not None else None
                     for l in specs] or [None] * len(ys)
            ys = [a.reshape(-1, 1) if a.ndim == 1 and kind != "sparse" else a
                  for a, kind in zip(ys, kinds)]
        sw = None if sample_weight is None else np.asarray(sample_weight, np.float64)
        data_mod.check_arrays(xs, ys, sw, batch_size)
        if class_weight is not None:
            if ys is None or len(ys) != 1:
                raise ValueError("class_weight needs exactly one target array.")
            cw = data_mod.class_weights_to_sample_weights(ys[0], class_weight)
            sw = cw if sw is None else sw * cw
        return xs, ys, sw

    def _ones(self, n):
        ones = getattr(self, "_ones_cache", None)
        if ones is None or len(ones) < n:
            ones = self._ones_cache = np.ones(max(n, 256), dtype=K.floatx())
        return ones[:n]

    def _run(self, fn, xs, ys, sw):
        from kerasflow.strategies import get_strategy  # noqa: PLC0415

        args = xs + ys + [self._ones(len(xs[0])) if sw is None else sw]
        return get_strategy().run_train_step(fn, args)

    # -- logs ----------------------------------------------------------------------------
    def reset_metrics(self):
        """Zeroes every compiled metric's state."""
        for _, _, m in self._metric_objs:
            m.reset_state()

    def _metric_logs(self, logs):
        for _, name, m in self._metric_objs:
            r = m.result()
            logs[name] = float(r) if np.ndim(r) == 0 else r
        return logs

    # -- fit -----------------------------------------------------------------------------
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto",
            callbacks=None, validation_split=0.0, validation_data=None, shuffle=True,
            class_weight=None, sample_weight=None, initial_epoch=0,
            steps_per_epoch=None, validation_steps=None, validation_batch_size=None,
            validation_freq=1):
        """Trains for ``epochs`` passes (Keras' ``Model.fit``).

        Args:
            x: array (batch, ...), list/dict of arrays for several inputs, or a
                Python generator yielding (x, y) or (x, y, sample_weight) batches.
            y: targets: array, or list/dict per output; None with a generator.
            batch_size: samples per step (default 32).
            epochs: index of the last epoch (training starts at initial_epoch).
            verbose: 0 silent, 1 a tqdm bar per epoch, 2 one line per epoch.
            validation_split: fraction of the (unshuffled) data held out at the end.
            validation_data: (x_val, y_val) or (x_val, y_val, sample_weight).
            shuffle: reshuffle the training arrays every epoch.
            class_weight: {class index: weight} scaling each sample's loss.
            sample_weight: (batch,) weights of each sample's loss.
            steps_per_epoch: batches per epoch (needed for endless generators).

        Returns:
            A ``History`` whose ``history`` dict maps 'loss', metric names and
            'val_*' to per-epoch lists.

        Raises:
            RuntimeError: fit before compile.
            ValueError / TypeError: bad data (mismatched lengths, wrong feature
                shapes, NaNs, labels out of range, batch_size <= 0, empty arrays),
                naming what was expected and received.
        """
        from kerasflow.callbacks import CallbackList  # noqa: PLC0415

        self._require_compiled("fit")
        verbose = 1 if verbose == "auto" else int(verbose)
        batch_size = 32 if batch_size is None and not data_mod.is_generator(x) \
            else batch_size
        gen = data_mod.is_generator(x)
        if gen:
            if validation_split:
                raise ValueError("validation_split is not supported with "
                                 "generators; pass validation_data.")
            batches, steps, samples = _GeneratorBatches(x, steps_per_epoch), \
                steps_per_epoch, None
        else:
            if y is None:
                raise ValueError("fit() needs targets y when x is an array.")
            xs, ys, sw = self._standardize(x, y, sample_weight, class_weight,
                                           batch_size)
            if validation_split and validation_data is None:
                n_x, n_y = len(xs), len(ys)
                train, val = data_mod.split_validation(xs + ys + [sw],
                                                       validation_split)
                xs, ys, sw = train[:n_x], train[n_x:n_x + n_y], train[-1]
                validation_data = (val[:n_x], val[n_x:n_x + n_y], val[-1])
            batches = data_mod.ArrayBatches(xs, ys, sw, batch_size, shuffle,
                                            steps_per_epoch)
            steps, samples = batches.steps, len(xs[0])
        val = None
        if validation_data is not None:
            vx, vy = validation_data[0], validation_data[1]
            vsw = validation_data[2] if len(validation_data) > 2 else None
            if isinstance(vx, list) and len(vx) == 1 and not getattr(
                    self, "_is_functional", False):
                vx = vx[0]
            if isinstance(vy, list) and len(vy) == 1:
                vy = vy[0]
            val = self._standardize(vx, vy, vsw, None, validation_batch_size)

        cbs = CallbackList(callbacks, add_history=True, add_progbar=verbose != 0,
                           model=self, verbose=verbose, epochs=epochs, steps=steps,
                           samples=samples, batch_size=batch_size)
        self.stop_training = False
        cbs.on_train_begin()
        logs = {}
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            cbs.on_epoch_begin(epoch)
            total, seen = 0.0, 0
            for step, (bx, by, bsw) in enumerate(batches):
                cbs.on_train_batch_begin(step)
                fn, _ = self._get_step("train", bx, by)
                out = self._run(fn, bx, by, bsw)
                n = len(bx[0])
                total += float(out[0]) * n
                seen += n
                logs = self._metric_logs({"loss": total / seen})
                cbs.on_train_batch_end(step, {**logs, "size": n})
                if self.stop_training:
                    break
            if seen == 0:
                raise ValueError("The training data yielded no batches.")
            epoch_logs = dict(logs)
            if val is not None and (epoch + 1) % validation_freq == 0:
                vlogs = self._evaluate_arrays(*val, validation_batch_size or
                                              batch_size or 32, validation_steps)
                epoch_logs.update({f"val_{k}": v for k, v in vlogs.items()})
            cbs.on_epoch_end(epoch, epoch_logs)
            logs = epoch_logs
            if self.stop_training:
                break
        cbs.on_train_end(logs)
        return self.history

    # -- evaluate / predict ---------------------------------------------------------------------
    def _evaluate_arrays(self, xs, ys, sw, batch_size, steps=None, callbacks=None):
        self.reset_metrics()
        total, seen = 0.0, 0
        per_out, names = None, None
        for step, (bx, by, bsw) in enumerate(data_mod.ArrayBatches(
                xs, ys, sw, batch_size, False, steps)):
            if callbacks is not None:
                callbacks.on_test_batch_begin(step)
            fn, names = self._get_step("eval", bx, by)
            out = self._run(fn, bx, by, bsw)
            n = len(bx[0])
            total += float(out[0]) * n
            if len(out) > 1:
                per_out = [0.0] * (len(out) - 1) if per_out is None else per_out
                per_out = [p + float(v) * n for p, v in zip(per_out, out[1:])]
            seen += n
            if callbacks is not None:
                callbacks.on_test_batch_end(step, {"loss": total / seen})
        logs = {"loss": total / seen}
        if per_out is not None:
            for name, p in zip(names, per_out):
                logs[f"{name}_loss"] = p / seen
        return self._metric_logs(logs)

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto",
                 sample_weight=None, steps=None, callbacks=None, return_dict=False):
        """Loss and metrics on the given data (Keras' ``Model.evaluate``).

        Returns:
            The loss (a float) when there are no metrics, else ``[loss, *metrics]``;
            a dict of them with ``return_dict=True``.
        """
        from kerasflow.callbacks import CallbackList  # noqa: PLC0415

        self._require_compiled("evaluate")
        batch_size = batch_size or 32
        xs, ys, sw = self._standardize(x, y, sample_weight, None, batch_size)
        verbose = 1 if verbose == "auto" else int(verbose)
        cbs = CallbackList(callbacks, add_progbar=verbose != 0, model=self,
                           verbose=verbose, steps=-(-len(xs[0]) // batch_size))
        cbs.on_test_begin()
        logs = self._evaluate_arrays(xs, ys, sw, batch_size, steps, cbs)
        cbs.on_test_end(logs)
        if return_dict:
            return logs
        values = list(logs.values())
        return values[0] if len(values) == 1 else values

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """Model outputs for ``x`` in batches (Keras' ``Model.predict``).

        Returns:
            A numpy array (batch, ...) or a list of them for several outputs.
        """
        batch_size = batch_size or 32
        xs, _, _ = self._standardize(x, None, None, None, batch_size)
        chunks = None
        for bx, _, _ in data_mod.ArrayBatches(xs, [], None, batch_size, False, steps):
            fn, _ = self._get_step("predict", bx, [])
            outs = [K.to_numpy(o) for o in fn(*bx)]
            chunks = [[o] for o in outs] if chunks is None else [
                c + [o] for c, o in zip(chunks, outs)]
        results = [np.concatenate(c, axis=0) for c in chunks]
        return results[0] if len(results) == 1 else results

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None,
                       return_dict=False):
        """One optimizer step on one batch; returns loss (and metrics)."""
        self._require_compiled("train_on_batch")
        xs, ys, sw = self._standardize(x, y, sample_weight, class_weight)
        self.reset_metrics()
        fn, _ = self._get_step("train", xs, ys)
        out = self._run(fn, xs, ys, sw)
        return self._batch_result(float(out[0]), return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        """Loss (and metrics) on one batch, without updating weights."""
        self._require_compiled("test_on_batch")
        xs, ys, sw = self._standardize(x, y, sample_weight)
        self.reset_metrics()
        fn, _ = self._get_step("eval", xs, ys)
        out = self._run(fn, xs, ys, sw)
        return self._batch_result(float(out[0]), return_dict)

    def predict_on_batch(self, x):
        """Model outputs for one batch, as numpy."""
        return self.predict(x, batch_size=len(data_mod.to_list(x)[0]) or 1)

    def _batch_result(self, loss, return_dict):
        logs = self._metric_logs({"loss": loss})
        if return_dict:
            return logs
        values = list(logs.values())
        return values[0] if len(values) == 1 else values

    # -- inspection and saving ------------------------------------------------------------------
    def summary(self, print_fn=None, line_length=80):
        """Prints a table of layers, output shapes and parameter counts."""
        from kerasflow.models.summary import summary_text  # noqa: PLC0415

        text = summary_text(self, line_length)
        (print_fn or print)(text)

    def save(self, filepath, overwrite=True):
        """Writes one zip file: architecture JSON + weights .npz (atomic)."""
        from kerasflow.models import saving  # noqa: PLC0415

        saving.save_model(self, filepath, overwrite=overwrite)

    def save_weights(self, filepath, overwrite=True):
        """Writes the weights as a .npz file (atomic)."""
        from kerasflow.models import saving  # noqa: PLC0415

        saving.save_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath):
        """Loads weights written by ``save_weights`` (or a model file)."""
        from kerasflow.models import saving  # noqa: PLC0415

        saving.load_weights(self, filepath)

    def to_json(self, **kwargs):
        """The architecture as a JSON string (``model_from_json`` rebuilds it)."""
        from kerasflow.models import saving  # noqa: PLC0415

        return saving.to_json(self, **kwargs)

    def to_yaml(self, **kwargs):
        """The architecture as YAML (``model_from_yaml`` rebuilds it)."""
        from kerasflow.models import saving  # noqa: PLC0415

        return saving.to_yaml(self, **kwargs)


def _apply_loss(loss_fn, y, out, sw):
    from kerasflow import losses  # noqa: PLC0415

    if isinstance(loss_fn, losses.Loss):
        return loss_fn(y, out, sample_weight=sw)
    per_sample = loss_fn(y, out)
    if per_sample.ndim is not None and per_sample.ndim > 1:
        per_sample = K.mean(per_sample, axis=tuple(range(1, per_sample.ndim)))
    return K.mean(per_sample * sw)


class _GeneratorBatches:
    """Batches from a Python generator of (x, y[, sample_weight]) tuples."""

    def __init__(self, gen, steps):
        self.gen, self.steps = gen, steps

    def __iter__(self):
        count = 0
        while self.steps is None or count < self.steps:
            try:
                item = next(self.gen)
            except StopIteration:
                if self.steps is not None and count < self.steps:
                    raise ValueError(
                        f"The generator ran out after {count} batches; "
                        f"steps_per_epoch={self.steps} were expected."
                    ) from None
                return
            if not isinstance(item, tuple) or len(item) not in (2, 3):
                raise ValueError(f"A generator must yield (x, y) or (x, y, "
                                 f"sample_weight). Received: {type(item).__name__}.")
            bx = [np.asarray(v) for v in (item[0] if isinstance(item[0], list)
                                          else [item[0]])]
            by = [np.asarray(v) for v in (item[1] if isinstance(item[1], list)
                                          else [item[1]])]
            sw = None if len(item) == 2 else np.asarray(item[2])
            data_mod.check_arrays(bx, by, sw, None)
            count += 1
            yield bx, by, sw

