"""The training API of ``Model`` (Keras 3's ``Trainer``): ``compile``, ``fit``,
``evaluate``, ``predict``, the ``*_on_batch`` methods, and the overridable
``train_step`` / ``test_step`` / ``predict_step`` / ``compute_loss`` /
``compute_metrics``.

One loop for every strategy (ARCHITECTURE.md): per input signature a step is
built once as graph data (placeholders -> traced model -> losses -> gradients
-> optimizer, metric and state updates; ``kerasflow.steps``), cached per
signature, and batches go through ``get_strategy().run_steps(step, batches)``,
``steps_per_execution`` at a time. A model that overrides a step method gets a
step traced from its own methods (``kerasflow.steps.custom``): those methods
run while the step is traced, so ``data`` holds placeholders and the
optimizer's and the metrics' assignments join the traced step; the defaults
do what the built-in step does, so a subclass may override one method and call
``super()`` for the rest, as in keras.io's "Customizing what happens in
``fit()``". Keras' ``Model.fit`` semantics and names (Keras 3
``keras.src.trainers.trainer.Trainer`` and its TensorFlow trainer).
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from kerasflow import backend as K
from kerasflow import optimizers, tree
from kerasflow.callbacks import CallbackList
from kerasflow.distribute.distribute_lib import (
    DefaultStrategy,
    get_strategy,
    training_call,
)
from kerasflow.distribute.input_lib import ReplicaInput
from kerasflow.layers.base import collect_updates, get_history
from kerasflow.layers.tracing import trace_losses
from kerasflow.metrics import Mean, Metric
from kerasflow.models import batches as batches_mod
from kerasflow.models import compile_utils as cu
from kerasflow.models import data as data_mod
from kerasflow.models import input_checks
from kerasflow.steps.batch import BatchRef
from kerasflow.steps.custom import build_custom_step
from kerasflow.steps.step import EvalStep, PredictStep, TrainStep
from kerasflow.utils.data_utils import unpack_x_y_sample_weight

__all__ = ["Trainer", "uses_custom_step"]


class Trainer:
    """Mixin of ``Model`` holding the training API (see the module docstring)."""

    # A subclass's call receives dict data as a dict; Sequential (False) feeds
    # its one array to its first layer.
    _call_takes_data_structure = True

    def __init__(self):
        self.optimizer = None
        self.compiled = False
        self.stop_training = False
        self.history = None
        self.steps_per_execution = None
        self._steps: dict = {}
        self._metric_objs = None
        self._trained_weights = None  # trainable weights when compiled
        self._compiled_losses = None
        self._loss_spec = self._metrics_spec = self._loss_weights = None
        self._compiled_strategy = None
        self._added_metrics: dict = {}  # add_metric name -> Mean
        self._loss_tracker = None  # a Mean once compiled (Keras 3)
        self._data_keys = None  # a subclassed model's dict inputs: their keys
        self._loss_scale_wrapped = False  # compile's auto_scale_loss wrapped it

    def _reset_steps(self):
        self._steps = {}

    # -- compile -----------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None,
                weighted_metrics=None, run_eagerly=False, steps_per_execution=None,
                jit_compile=None, auto_scale_loss=True):
        """Configures training (Keras' ``Model.compile``).

        Args:
            optimizer: name ('sgd', 'adam', ...) or optimizer instance.
            loss: name, Loss instance or function; for several outputs a list or
                a dict keyed by output layer name.
            metrics: list of names/instances (one list for all outputs), or a
                list/dict of lists per output. 'accuracy' picks the binary,
                categorical or sparse variant from the output and target shapes,
                as Keras does.
            loss_weights: list or dict of floats weighting each output's loss.
            steps_per_execution: batches per strategy call (replicas run that
                many steps per driver round trip); default 1 in process, the
                strategy's ``default_steps_per_execution`` under a strategy.
            auto_scale_loss: True wraps the optimizer in a
                ``LossScaleOptimizer`` (dynamic loss scaling) when the model's
                dtype policy is "mixed_float16" and it is not one already
                (Keras 3's ``Trainer.compile``): float16 gradients of small
                losses would underflow to zero.

        Raises:
            ValueError: unknown names (from the registries), naming them, or a
                steps_per_execution that is not a positive int.
        """
        if steps_per_execution is not None and (
                not isinstance(steps_per_execution, (int, np.integer))
                or isinstance(steps_per_execution, bool) or steps_per_execution < 1):
            raise ValueError(f"steps_per_execution must be a positive int. "
                             f"Received: steps_per_execution={steps_per_execution!r}.")
        self.optimizer = optimizers.get(optimizer)
        policy = self._dtype_policy
        # Saved files name the optimizer given here (Keras' compile_config);
        # loading compiles with it and wraps it again.
        self._loss_scale_wrapped = bool(
            auto_scale_loss and policy is not None
            and policy.name == "mixed_float16" and self.optimizer is not None
            and not isinstance(self.optimizer, optimizers.LossScaleOptimizer))
        if self._loss_scale_wrapped:
            self.optimizer = optimizers.LossScaleOptimizer(
                self.optimizer, name="loss_scale_optimizer")
        self._compiled_losses = cu.CompiledLosses(loss, loss_weights)
        self._loss_spec, self._metrics_spec = loss, metrics
        self._loss_weights = loss_weights
        self.steps_per_execution = steps_per_execution
        strategy = get_strategy()
        self._compiled_strategy = None if isinstance(
            strategy, DefaultStrategy) else strategy
        self.compiled = True
        self._steps = {}
        self._metric_objs = None
        self._loss_tracker = Mean(name="loss")  # Keras 3: model.metrics[0]
        # What trains is fixed here, as in Keras: `trainable` set after compile
        # (a GAN's frozen discriminator) takes effect at the next compile.
        self._trained_weights = list(self.trainable_weights) if self.built else None

    def weights_to_train(self) -> list:
        """The weights ``fit`` updates: the trainable weights when ``compile``
        ran (Keras: changing ``trainable`` afterwards needs a new compile), or
        now for a model built after compiling."""
        return (self.trainable_weights if self._trained_weights is None
                else self._trained_weights)

    @property
    def distribute_strategy(self):
        """The strategy ``fit`` / ``evaluate`` / ``predict`` use now (Keras'
        ``Model.distribute_strategy``): see :meth:`_strategy`."""
        return self._strategy()

    def _strategy(self):
        """The innermost ``scope()``'s strategy, else the one the model was
        compiled under (tf.distribute: compile in scope, fit anywhere)."""
        strategy = get_strategy()
        if isinstance(strategy, DefaultStrategy) and self._compiled_strategy:
            return self._compiled_strategy
        return strategy

    def _require_compiled(self, what):
        if not self.compiled:
            raise RuntimeError(
                f"You must call compile() on model '{self.name}' before {what}()."
            )

    # -- data ----------------------------------------------------------------------------
    def _standardize(self, x, y=None, sample_weight=None, class_weight=None,
                     batch_size=None) -> data_mod.Standardized:
        """Checked arrays in model order (``data.standardize``)."""
        self._note_data_structure(x)
        n_out = len(self.outputs) if self._is_functional else 1
        return data_mod.standardize(
            x, y, sample_weight, class_weight, batch_size,
            input_names=self._input_names(), input_shapes=self._input_shapes(),
            output_names=self._output_names(n_out),
            output_shapes=self._output_shapes, model_name=self.name)

    def _input_shapes(self):
        """The model's input shapes (batch axis first), or None before data."""
        specs = self._default_input_specs()
        return None if specs is None else [shape for shape, _ in specs]

    def _output_shapes(self, xs):
        """Static output shapes for inputs like ``xs``: the functional graph's,
        else those of the traced predict step (cached per signature)."""
        if self._is_functional:
            return [t.shape for t in self.outputs]
        if not _defines_call(self):  # its train_step takes the targets as given
            return None
        return [o.shape for o in self._get_step("predict", xs).outputs]

    def _element_converter(self, class_weight):
        """``Standardized sample -> ElementConverter``: this model's
        ``standardize`` with its names and output shapes bound, for replicas
        that read their own input."""
        def make(sample):
            n_out = len(self.outputs) if self._is_functional else 1
            shapes = self._output_shapes(sample.xs) if sample.ys else None
            return batches_mod.ElementConverter(functools.partial(
                data_mod.standardize, class_weight=class_weight,
                input_names=self._input_names(), input_shapes=self._input_shapes(),
                output_names=self._output_names(n_out),
                output_shapes=batches_mod.FixedShapes(shapes), model_name=self.name))
        return make

    def _spe(self, strategy):
        return self.steps_per_execution or strategy.default_steps_per_execution

    # -- logs ----------------------------------------------------------------------------
    def _all_metrics(self):
        return [(name, m) for _, name, m in self._metric_objs or []] + list(
            self._added_metrics.items())

    def reset_metrics(self):
        """Zeroes every metric's state: compiled, add_metric and ``metrics``."""
        for _, m in self._all_metrics():
            m.reset_state()
        for m in self.metrics:  # Keras 3: what a custom train_step reports
            m.reset_state()

    def _metric_logs(self, logs):
        for name, m in self._all_metrics():
            r = m.result()
            logs[name] = float(r) if np.ndim(r) == 0 else r
        return logs

    def _step_logs(self, step, result, mean_loss):
        """The logs after one step: a custom step's own, else loss + metrics."""
        if hasattr(step, "custom_logs"):
            return step.custom_logs(result)
        return self._metric_logs({"loss": mean_loss})

    # -- fit -----------------------------------------------------------------------------
    @training_call  # actors a fit outside the strategy's scope starts end with it
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto",
            callbacks=None, validation_split=0.0, validation_data=None, shuffle=True,
            class_weight=None, sample_weight=None, initial_epoch=0,
            steps_per_epoch=None, validation_steps=None, validation_batch_size=None,
            validation_freq=1):
        """Trains for ``epochs`` passes (Keras' ``Model.fit``).

        Args:
            x: array (batch, ...), list/dict of arrays for several inputs, a
                ``kerasflow.data.Dataset`` or a Python generator of batches
                ``(x, y)``, ``(x, y, sample_weight)`` or ``x`` (a new pass over
                a dataset every epoch; its cardinality sets the epoch length).
            y: targets: array, or list/dict per output; None with a dataset or
                generator.
            batch_size: samples per step (default 32).
            epochs: index of the last epoch (training starts at initial_epoch).
            verbose: 0 silent, 1 a tqdm bar per epoch, 2 one line per epoch.
            validation_split: fraction of the (unshuffled) data held out at the end.
            validation_data: (x_val, y_val), (x_val, y_val, sample_weight), or a
                dataset/generator of such batches.
            shuffle: reshuffle the training arrays every epoch.
            class_weight: {class index: weight} scaling each sample's loss.
            sample_weight: (batch,) weights of each sample's loss.
            steps_per_epoch: batches per epoch (needed for endless generators
                and infinite datasets; when it differs from a dataset's
                cardinality, one pass over the dataset runs across epochs, as in
                tf.keras).

        Returns:
            A ``History`` whose ``history`` dict maps 'loss', metric names and
            'val_*' to per-epoch lists.

        Raises:
            RuntimeError: fit before compile.
            ValueError / TypeError: bad data (mismatched lengths, wrong feature
                shapes, NaNs, labels out of range, batch_size <= 0, empty arrays),
                naming what was expected and received; an infinite dataset
                without steps_per_epoch (or validation_steps).
        """
        self._require_compiled("fit")
        epochs, initial_epoch = input_checks.check_epochs(epochs, initial_epoch)
        steps_per_epoch = input_checks.check_steps(steps_per_epoch, "steps_per_epoch")
        validation_steps = input_checks.check_steps(validation_steps,
                                                    "validation_steps")
        strategy = self._strategy()
        verbose = 1 if verbose == "auto" else int(verbose)
        # Replica-side input (distribute_datasets_from_function, Ray Data):
        # the replicas read it; else the driver reads it.
        remote = isinstance(x, ReplicaInput) and x.on_replicas and (
            strategy.reads_replica_input)
        x = x if remote else batches_mod.local_input(x)
        validation_data = batches_mod.local_input(validation_data)
        gen = remote or batches_mod.is_generator(x)
        val = None
        if gen:
            batches_mod.check_no_targets(y)
            if validation_split:
                raise ValueError("validation_split is not supported with "
                                 "generators; pass validation_data.")
            std = lambda bx, by, bsw: self._standardize(bx, by, bsw,  # noqa: E731
                                                        class_weight)
            if remote:
                batches = batches_mod.ReplicaBatches(
                    x, strategy, steps_per_epoch, std,
                    self._element_converter(class_weight))
            else:
                batches_mod.check_dataset_steps(x, steps_per_epoch)
                batches = batches_mod.GeneratorBatches(x, steps_per_epoch, std)
            steps, samples = batches.steps, None
        else:
            batch_size = 32 if batch_size is None else batch_size
            if (y is None and not self._compiled_losses.empty
                    and not uses_custom_step(self, "train")):
                raise ValueError("fit() needs targets y when x is an array "
                                 "(unless the loss comes from add_loss()).")
            data = self._standardize(x, y, sample_weight, class_weight, batch_size)
            if validation_split and validation_data is None:
                train, held = data_mod.split_validation(data.arrays,
                                                        validation_split)
                data, val = data.split(train), data.split(held)
            batches = batches_mod.ArrayBatches(data.arrays, batch_size, shuffle,
                                            steps_per_epoch, len(data.xs),
                                            data.weighted)
            steps, samples = batches.steps, len(data.xs[0])
        if batches_mod.is_generator(validation_data):
            batches_mod.check_dataset_steps(validation_data, validation_steps,
                                         "validation_steps")
            val = batches_mod.GeneratorBatches(validation_data, validation_steps,
                                            self._standardize)
        elif validation_data is not None:
            vx, vy, vsw = data_mod.unpack_validation_data(validation_data,
                                                          self._is_functional)
            val = self._standardize(vx, vy, vsw, None, validation_batch_size)
        if isinstance(val, data_mod.Standardized):
            val = batches_mod.ArrayBatches(
                val.arrays, validation_batch_size or batch_size or 32, False,
                validation_steps, len(val.xs), val.weighted)

        cbs = CallbackList(callbacks, add_history=True, add_progbar=verbose != 0,
                           model=self, verbose=verbose, epochs=epochs, steps=steps,
                           samples=samples, batch_size=batch_size)
        spe = self._spe(strategy)
        self.stop_training = False
        cbs.on_train_begin()
        # BackupAndRestore sets where a resumed fit starts (Keras 3's trainers).
        initial_epoch = getattr(self, "_initial_epoch", None) or initial_epoch
        self._initial_epoch = None
        logs = {}
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            cbs.on_epoch_begin(epoch)
            total, seen, index = 0.0, 0, 0
            for chunk in batches_mod.chunks(batches, spe):
                cbs.on_train_batch_begin(index)
                arrays, n_in = chunk[0].arrays, batches.n_inputs
                step = self._get_step("train", arrays[:n_in], arrays[n_in:-1],
                                      chunk[0].weighted)
                results = strategy.run_steps(step, chunk)
                for j, r in enumerate(results):
                    if j:
                        cbs.on_train_batch_begin(index)
                    total += r.loss * r.count
                    seen += r.count
                    logs = self._step_logs(step, r, total / seen)
                    cbs.on_train_batch_end(index, {**logs, "size": r.count})
                    index += 1
                if len(results) < len(chunk):  # the replicas' own input ran out
                    # With steps_per_epoch one pass spans epochs: stop (tf.keras).
                    self.stop_training |= batches.steps is not None
                    break
                if self.stop_training:
                    break
            if seen == 0:
                raise ValueError("The training data yielded no batches.")
            epoch_logs = dict(logs)
            if val is not None and (epoch + 1) % validation_freq == 0:
                cbs.on_test_begin()  # Keras 3: validation runs the test hooks
                vlogs = self._evaluate_batches(val, cbs)
                cbs.on_test_end(vlogs)
                epoch_logs.update({f"val_{k}": v for k, v in vlogs.items()})
            cbs.on_epoch_end(epoch, epoch_logs)
            logs = epoch_logs
            if self.stop_training:
                break
        if getattr(self.optimizer, "use_ema", False) and isinstance(
                strategy, DefaultStrategy):  # Keras 3: weights take their EMA
            self.optimizer.finalize_variable_values(self.trainable_weights)
        recoveries = list(strategy.recoveries)
        if recoveries and self.history is not None:  # lost steps, for the record
            self.history.history["recoveries"] = recoveries
        cbs.on_train_end(logs)
        return self.history

    # -- evaluate / predict ---------------------------------------------------------------
    def _evaluate_batches(self, batches, callbacks=None):
        strategy = self._strategy()
        self.reset_metrics()
        total, seen, index, per_out, custom = 0.0, 0, 0, None, None
        for chunk in batches_mod.chunks(batches, self._spe(strategy)):
            if callbacks is not None:
                callbacks.on_test_batch_begin(index)
            arrays, n_in = chunk[0].arrays, batches.n_inputs
            step = self._get_step("eval", arrays[:n_in], arrays[n_in:-1],
                                  chunk[0].weighted)
            for j, r in enumerate(strategy.run_steps(step, chunk)):
                if j and callbacks is not None:
                    callbacks.on_test_batch_begin(index)
                if hasattr(step, "custom_logs"):
                    custom = self._step_logs(step, r, None)
                total += r.loss * r.count
                if r.output_losses:
                    per_out = [0.0] * len(r.output_losses) if per_out is None \
                        else per_out
                    per_out = [p + v * r.count for p, v in zip(per_out,
                                                               r.output_losses)]
                seen += r.count
                if callbacks is not None:
                    callbacks.on_test_batch_end(index, {"loss": total / seen})
                index += 1
        if seen == 0:
            raise ValueError("The evaluation data yielded no batches.")
        if custom is not None:  # a test_step's own logs, after the last batch
            return custom
        logs = {"loss": total / seen}
        if per_out is not None:
            for name, p in zip(self._output_names(len(per_out)), per_out):
                logs[f"{name}_loss"] = p / seen
        return self._metric_logs(logs)

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto",
                 sample_weight=None, steps=None, callbacks=None, return_dict=False):
        """Loss and metrics on the given data (Keras' ``Model.evaluate``).

        ``x`` may be a ``kerasflow.data.Dataset`` or generator of ``(x, y)`` or
        ``(x, y, sample_weight)`` batches (``y`` None); an infinite dataset
        needs ``steps``.

        Returns:
            The loss (a float) when there are no metrics, else ``[loss, *metrics]``;
            a dict of them with ``return_dict=True``.
        """
        self._require_compiled("evaluate")
        steps = input_checks.check_steps(steps)
        batch_size = batch_size or 32
        verbose = 1 if verbose == "auto" else int(verbose)
        x = batches_mod.local_input(x)
        if batches_mod.is_generator(x):
            batches_mod.check_no_targets(y)
            batches_mod.check_dataset_steps(x, steps, "steps")
            batches = batches_mod.GeneratorBatches(x, steps, self._standardize)
            n_steps = batches.steps
        else:
            data = self._standardize(x, y, sample_weight, None, batch_size)
            batches = batches_mod.ArrayBatches(data.arrays, batch_size, False, steps,
                                            len(data.xs), data.weighted)
            n_steps = batches.steps
        cbs = CallbackList(callbacks, add_progbar=verbose != 0, model=self,
                           verbose=verbose, steps=n_steps)
        cbs.on_test_begin()
        logs = self._evaluate_batches(batches, cbs)
        cbs.on_test_end(logs)
        if return_dict:
            return logs
        values = list(logs.values())
        return values[0] if len(values) == 1 else values

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """Model outputs for ``x`` in batches (Keras' ``Model.predict``).

        ``x`` may be a ``kerasflow.data.Dataset`` or generator of batches ``x``,
        ``(x,)`` or ``(x, y, ...)`` (targets ignored); an infinite dataset needs
        ``steps``.

        Returns:
            A numpy array (batch, ...), a list of them for several outputs, or a
            dict keyed like the outputs of a functional model built with a dict.
        """
        strategy = self._strategy()
        batch_size = batch_size or 32
        steps = input_checks.check_steps(steps)
        x = batches_mod.local_input(x)
        if batches_mod.is_generator(x):  # batches of x, (x,) or (x, y...): y unused
            batches_mod.check_dataset_steps(x, steps, "steps")
            batches = batches_mod.GeneratorBatches(
                x, steps, lambda bx, by, bsw: self._standardize(bx),
                inputs_only=True)
        else:
            self._note_data_structure(x)
            xs = data_mod.to_list(x, self._input_names(), "x")
            xs = [a.reshape(-1, 1) if a.ndim == 1 else a for a in xs]
            xs = input_checks.match_input_ranks(xs, self._input_shapes())
            data_mod.check_arrays(xs, None, None, batch_size)
            batches = batches_mod.ArrayBatches(xs, batch_size, False, steps)
        chunks = None
        for chunk in batches_mod.chunks(batches, self._spe(strategy)):
            step = self._get_step("predict", chunk[0].arrays)
            for outs in strategy.run_steps(step, chunk):
                outs = [K.to_numpy(o) for o in outs]
                chunks = [[o] for o in outs] if chunks is None else [
                    c + [o] for c, o in zip(chunks, outs)]
        results = [np.concatenate(c, axis=0) for c in chunks]
        if self._is_functional and isinstance(self._outputs_struct, dict):
            return tree.pack_sequence_as(self._outputs_struct, results)  # Keras 3
        return results[0] if len(results) == 1 else results

    def _input_names(self):
        """Names keying dict inputs (a functional model's, or the keys of the
        dict last given to a subclassed model), else None."""
        if not self._is_functional:
            return None if self._data_keys is None else list(self._data_keys)
        if isinstance(self._inputs_struct, dict):  # in tree.flatten's order
            return tree.flatten({k: k for k in self._inputs_struct})
        return [get_history(t)[0].name for t in self.inputs]

    # -- steps per input signature ---------------------------------------------------
    # One step per input signature: losses weighted as compiled, add_loss terms,
    # metric updates (sample-weighted only when the caller gave weights, as
    # Keras) and the layer-state updates collected while tracing (BatchNorm).
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
                dtype = a.dtype if a.dtype.kind in "iu" and a.dtype != np.uint8 \
                    else K.floatx()
            phs.append(K.placeholder(dtype, shape, name=f"input_{i + 1}"))
        return phs

    def _note_data_structure(self, x):
        """A subclassed model given a dict of arrays receives that dict in
        ``call`` (Keras passes the data's structure through, e.g. keras.io's
        endpoint-layer pattern); its keys in ``tree.flatten``'s order."""
        if self._is_functional or not self._call_takes_data_structure:
            return
        flat = isinstance(x, dict) and not any(isinstance(v, dict) for v in x.values())
        self._data_keys = tuple(tree.flatten({k: k for k in x})) if flat else None

    def _structure_inputs(self, phs):
        if not self._is_functional and self._data_keys is not None:
            return dict(zip(self._data_keys, phs))
        if isinstance(self._inputs_struct, dict):
            return tree.pack_sequence_as(self._inputs_struct, phs)
        return phs[0] if len(phs) == 1 else phs

    def _get_step(self, kind, xs, ys=(), weighted=False):
        """The step for this signature; ``weighted``: the sample weights came
        from the user, so metrics are weighted too (Keras)."""
        key = (kind, self._data_keys,
               tuple((a.shape[1:], a.dtype.kind) for a in xs),
               tuple((a.shape[1:], a.dtype.kind) for a in ys), weighted)
        step = self._steps.get(key)
        if step is None:
            step = self._steps[key] = self._build_step(kind, xs, ys, weighted)
        return step

    def _static_losses(self):
        return [loss for layer in self._flatten_layers()
                for loss in layer.__dict__.get("_added_losses", ())]

    def _trace(self, xs, training):
        if self._is_functional and any(K.is_symbolic(loss)
                                       for loss in self._static_losses()):
            # add_loss(f(inputs)) on the functional graph: feed its own Inputs.
            self._input_placeholders(xs)  # shape checks only
            x_phs = list(self.inputs)
        else:
            x_phs = self._input_placeholders(xs)
        with collect_updates() as state_updates:
            outputs = self(self._structure_inputs(x_phs), training=training)
        outs = tree.flatten(outputs)
        return x_phs, outs, state_updates

    def _build_step(self, kind, xs, ys, weighted=False):
        if uses_custom_step(self, kind):  # the model's own train_step & co.
            x_phs = self._input_placeholders(xs)
            y_phs = [K.placeholder(np.int64 if a.dtype.kind in "iu" else K.floatx(),
                                   (None,) + a.shape[1:], name=f"target_{i + 1}")
                     for i, a in enumerate(ys)]
            sw = K.placeholder(K.floatx(), (None,), name="sample_weight")
            return build_custom_step(self, kind, x_phs, y_phs, sw, weighted)
        x_phs, outs, state_updates = self._trace(xs, kind == "train")
        if kind == "predict":
            return PredictStep(x_phs, outs, state_updates)
        names = self._output_names(len(outs))
        added = state_updates.losses + self.losses
        if self._compiled_losses.empty and not ys:
            loss_fns, weights = [None] * len(outs), [1.0] * len(outs)
            if not added:
                self._compiled_losses.resolve(names, self.name)  # raises
        else:
            if len(ys) != len(outs):
                raise ValueError(
                    f"Model '{self.name}' has {len(outs)} output(s) {names} and "
                    f"expects one target array per output. Received: {len(ys)} "
                    f"target array(s).")
            loss_fns, weights = self._compiled_losses.resolve(names, self.name,
                                                              bool(added))
        self._metric_objs = cu.resolve_metrics(
            self._metrics_spec if ys else None, names, outs,
            [a.shape for a in ys], self._metric_objs)
        y_phs = [K.placeholder(np.int64 if a.dtype.kind in "iu" else K.floatx(),
                               (None,) + a.shape[1:], name=f"{names[i]}_target")
                 for i, a in enumerate(ys)]
        sw = K.placeholder(K.floatx(), (None,), name="sample_weight")
        per_output, total = [], None
        for y, out, loss_fn, w in zip(y_phs, outs, loss_fns, weights):
            if loss_fn is None:
                continue
            value = cu.weighted_loss(loss_fn, y, out, sw)
            per_output.append(value)
            term = value if w == 1.0 else value * w
            total = term if total is None else total + term
        for penalty in added:
            total = penalty if total is None else total + penalty
        metric_updates = []
        added_metrics = self._added_metrics
        for name, value in state_updates.metrics:
            metric = added_metrics.setdefault(name, Mean(name=name))
            metric_updates += list(metric.update_state(value) or [])
        for i, _, metric in self._metric_objs:
            metric_updates += list(
                # Keras passes no sample weights to metrics unless given some.
                metric.update_state(y_phs[i], outs[i],
                                    sample_weight=sw if weighted else None) or [])
        inputs = x_phs + y_phs + [sw]
        out_losses = per_output if len(per_output) > 1 else []
        metrics = list(added_metrics.values()) + [m for *_, m in self._metric_objs]
        if kind == "train":
            return TrainStep(inputs, total, self.optimizer, self.weights_to_train(),
                             out_losses, metric_updates, state_updates,
                             metrics=metrics)
        return EvalStep(inputs, total, out_losses, metric_updates, state_updates,
                        metrics=metrics)

    # -- Keras 3's overridable step methods ------------------------------------------
    @property
    def compiled_loss(self) -> cu.CompileLoss:
        """The compiled loss as a callable (Keras 2's ``compiled_loss``)."""
        return cu.CompileLoss(self)

    @property
    def compiled_metrics(self) -> cu.CompileMetrics:
        """The compiled metrics as one metric (``update_state``/``result``)."""
        return cu.CompileMetrics(self)

    @property
    def metrics(self) -> list:
        """Keras 3's order: the loss tracker, the compiled metrics, then Metric
        attributes of the model (a subclass may override this property)."""
        out = []
        if getattr(self, "compiled", False):
            if self._loss_tracker is not None:
                out.append(self._loss_tracker)
            if self._metrics_spec:
                out.append(self.compiled_metrics)
        out += [v for k, v in vars(self).items()
                if isinstance(v, Metric) and k != "_loss_tracker"]
        return out

    @property
    def metrics_names(self) -> list:
        """Names of ``metrics``."""
        return [m.name for m in self.metrics]

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                     training=True):
        """The compiled loss plus the model's added losses (Keras 3).

        Args:
            x: the inputs (unused by default).
            y, y_pred: targets and predictions, like the model's outputs.
            sample_weight: (batch,) weights or None.
            training: whether a training step is being traced.

        Returns:
            A scalar tensor.

        Raises:
            ValueError: no compiled loss and no added loss.
        """
        del x, training
        total = self.compiled_loss(y, y_pred, sample_weight)
        for penalty in trace_losses() + self.losses:
            total = penalty if total is None else total + penalty
        if total is None:
            raise ValueError("No loss to compute. Provide a `loss` argument in "
                             "`compile()`.")
        return total

    def _compute_loss(self, x, y, y_pred, sample_weight, training):
        if "training" in inspect.signature(self.compute_loss).parameters:
            return self.compute_loss(x, y, y_pred, sample_weight, training=training)
        return self.compute_loss(x, y, y_pred, sample_weight)

    def compute_metrics(self, x, y, y_pred, sample_weight=None) -> dict:
        """Updates the compiled metrics; returns ``get_metrics_result()``."""
        del x
        if self._metrics_spec and y is not None:
            self.compiled_metrics.update_state(y, y_pred, sample_weight)
        return self.get_metrics_result()

    def get_metrics_result(self) -> dict:
        """``{name: result}`` of ``metrics``, dict results merged (Keras 3)."""
        logs = {}
        for metric in self.metrics:
            result = metric.result()
            if isinstance(result, dict):
                logs.update(result)
            else:
                logs[metric.name] = result
        return logs

    def train_step(self, data) -> dict:
        """One traced training step (Keras 3's default).

        Args:
            data: ``x``, ``(x, y)`` or ``(x, y, sample_weight)`` of placeholders.

        Returns:
            The logs: ``{metric name: result tensor}``.
        """
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        with K.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self._compute_loss(x, y, y_pred, sample_weight, True)
        self._loss_tracker.update_state(loss, sample_weight=_batch_size(x))
        variables = self.trainable_weights
        grads = tape.gradient(loss, variables)
        self.optimizer.apply_gradients(zip(grads, variables))
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def test_step(self, data) -> dict:
        """One traced evaluation step (Keras 3's default)."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        y_pred = self(x, training=False)
        loss = self._compute_loss(x, y, y_pred, sample_weight, False)
        self._loss_tracker.update_state(loss, sample_weight=_batch_size(x))
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def predict_step(self, data):
        """The model's outputs for one batch (Keras 3's default)."""
        x, _, _ = unpack_x_y_sample_weight(data)
        return self(x, training=False)

    # -- one batch -------------------------------------------------------------------
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


_TRAIN_HOOKS = ("train_step", "compute_loss", "compute_metrics")
_EVAL_HOOKS = ("test_step", "compute_loss", "compute_metrics")


def _overridden(model, name) -> bool:
    return getattr(type(model), name) is not getattr(Trainer, name)


def _defines_call(model) -> bool:
    """A functional model, or a subclass with its own ``call``: Model's only
    replays a functional graph (a GAN of keras.io trains through its own
    ``train_step`` and is never called, as Keras allows)."""
    if model._is_functional:
        return True
    owner = next(c for c in type(model).__mro__ if "call" in vars(c))
    return (owner.__module__, owner.__qualname__) != ("kerasflow.models.model",
                                                      "Model")


def uses_custom_step(model, kind) -> bool:
    """Whether ``kind``'s step must be traced from the model's own methods."""
    hooks = {"train": _TRAIN_HOOKS, "eval": _EVAL_HOOKS,
             "predict": ("predict_step",)}[kind]
    return any(_overridden(model, h) for h in hooks)


def _batch_size(x):
    """The batch size of ``x`` as a float tensor (the loss tracker's weight)."""
    first = tree.flatten(x)[0]
    return K.cast(K.shape_of(first)[0], K.floatx())
