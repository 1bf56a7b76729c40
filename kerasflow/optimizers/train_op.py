"""What ``Optimizer.minimize`` returns and what optimizers hand to user code.

``TrainOp`` (a fetchable op carrying its loss, variables and optimizer, so a
strategy or Estimator can split it into compute -> reduce -> apply) and
``LearningRateValue`` (the learning rate as Keras 3 code reads it).
"""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K

__all__ = ["LearningRateValue", "TrainOp", "train_op_info",
           "trainable_variables_of"]


class TrainOp(K.SymbolicTensor):
    """The op ``minimize`` returns: fetch it to take one step (TF1's train op).

    Besides being a fetchable op (``sess.run(train_op, feed_dict)`` returns None),
    it carries what it was built from, so a strategy or an Estimator can split it
    into compute -> reduce -> apply (``models.train_step.TrainStep.from_train_op``).

    Attributes:
        loss: the scalar loss tensor.
        var_list: the trained Variables, in order.
        optimizer: the ``Optimizer``.
        global_step: the int64 step Variable incremented with each step, or None.
    """

    # Pickled, it travels as a plain op (graph_pickle): the graph holds the updates.
    __slots__ = ("loss", "var_list", "optimizer", "global_step")


def train_op_info(train_op) -> TrainOp | None:
    """The ``TrainOp`` (with .loss, .var_list, .optimizer) if ``train_op`` is one."""
    return train_op if isinstance(train_op, TrainOp) else None


def trainable_variables_of(*tensors) -> list:
    """Trainable Variables that ``tensors`` depend on, in creation order."""
    return K.reachable_variables(tensors, trainable=True)


class LearningRateValue(float):
    """The learning rate as Keras 3 code reads it: a float that also speaks the
    variable API (``.assign(v)``, ``.value``, ``.numpy()``), so callbacks
    written for Keras (``optimizer.learning_rate.assign(x)``) work."""

    def __new__(cls, value, variable):
        obj = float.__new__(cls, value)
        obj._variable = variable
        return obj

    @property
    def value(self):
        """The current learning rate as a numpy scalar of the variable's dtype
        (float32 by default), as Keras 3's ``variable.value``: it compares equal
        to the Python float it was set from (``value == 0.005``)."""
        return self._variable.numpy()[()]

    def __eq__(self, other):
        # Compared in the variable's dtype, as a Keras 3 variable compares.
        return bool(self.value == other) if isinstance(
            other, (int, float, np.number)) else NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = float.__hash__

    def numpy(self):
        """The current learning rate as a numpy scalar array."""
        return self._variable.numpy()

    def assign(self, value):
        """Sets the optimizer's learning rate (next step onwards)."""
        self._variable.assign(float(value))
        return value
