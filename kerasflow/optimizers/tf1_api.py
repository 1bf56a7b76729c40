"""TF1's optimizer methods on top of ``apply_gradients``: ``get_updates``,
``compute_gradients`` and ``minimize`` (returning a ``TrainOp``)."""

from __future__ import annotations

from kerasflow import backend as K
from kerasflow.optimizers.train_op import TrainOp, trainable_variables_of

__all__ = ["TF1OptimizerMixin"]


class TF1OptimizerMixin:
    """Mixin of ``Optimizer``: the TF1 / Keras 2 graph-building entry points."""

    def get_updates(self, loss, params) -> list:
        """Update nodes minimizing ``loss`` over ``params`` (Keras 2's name).

        Gradients come from ``kerasflow.backend.gradients``; see
        ``apply_gradients`` for the returned list and the errors.
        """
        params = list(params)
        return self.apply_gradients(zip(K.gradients(loss, params), params))

    def compute_gradients(self, loss, var_list=None) -> list:
        """``(gradient, variable)`` pairs of ``loss`` (TF1's ``compute_gradients``).

        Args:
            loss: scalar tensor.
            var_list: Variables; default: every trainable Variable ``loss``
                depends on, in creation order.

        Returns:
            List of ``(symbolic gradient or None, Variable)``; feed it (possibly
            transformed) to ``apply_gradients``.

        Raises:
            ValueError: no trainable variable to differentiate against.
        """
        var_list = trainable_variables_of(loss) if var_list is None else list(
            var_list)
        if not var_list:
            raise ValueError(f"Found no trainable Variable to differentiate "
                             f"against. Received: loss={loss!r}, var_list=[].")
        return list(zip(K.gradients(loss, var_list), var_list))

    def minimize(self, loss, global_step=None, var_list=None):
        """One train op that takes a step on ``loss`` (TF1's ``minimize``).

        Args:
            loss: scalar tensor (a non-scalar one is summed).
            global_step: optional int Variable incremented by each step
                (``kerasflow.train.get_or_create_global_step()``).
            var_list: Variables to train; default: every trainable Variable the
                loss depends on.

        Returns:
            A ``TrainOp``: ``sess.run(train_op, feed_dict)`` applies one step and
            returns None; ``train_op.loss/var_list/optimizer`` say what it trains.

        Raises:
            ValueError: no trainable variable to train.

        Example:
            >>> train_op = GradientDescentOptimizer(0.01).minimize(cost)
            >>> with Session() as sess:
            ...     sess.run(train_op, feed_dict={X: x, Y: y})
        """
        if isinstance(global_step, (list, tuple)) and var_list is None:
            global_step, var_list = None, global_step  # minimize(loss, var_list)
        pairs = self.compute_gradients(loss, var_list)
        updates = self.apply_gradients(pairs)
        if global_step is not None:
            updates.append(K.assign_add(global_step, 1))
        group = K.group(*updates, name=f"{self.name}/minimize")
        node = group.node
        op = TrainOp.__new__(TrainOp)
        K.SymbolicTensor.__init__(op, node, 0, (), "bool")
        node.outputs = (op,)
        op.loss, op.var_list, op.optimizer = loss, [v for _, v in pairs], self
        op.global_step = global_step
        return op
