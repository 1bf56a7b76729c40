"""Keras 3's ``keras.Operation`` and ``keras.Function``.

An ``Operation`` is a callable built from kerasflow ops: subclasses write
``call``; since every kerasflow op adds a graph node on symbolic tensors and
computes at once on arrays, the same ``call`` serves both (Keras needs a
separate ``compute_output_spec``; kerasflow infers shapes per op).

A ``Function`` is the graph between symbolic ``inputs`` and ``outputs``,
compiled once and called on arrays with ``inputs``' nesting, returning arrays
with ``outputs``' nesting.

Example:
    >>> inp = kf.Input((3,))
    >>> fn = Function(inp, kf.ops.relu(inp) * 2.0)
    >>> fn(np.array([[-1.0, 0.5, 2.0]]))
    array([[0., 1., 4.]], dtype=float32)
"""

from __future__ import annotations

from kerasflow import tree
from kerasflow.backend import Function as _CompiledFunction
from kerasflow.backend import is_symbolic
from kerasflow.utils.serialization import to_snake_case

__all__ = ["Function", "Operation"]


class Operation:
    """Base class of an op written in kerasflow ops (Keras 3's
    ``keras.Operation``).

    Args:
        name: the op's name (default: the class name in snake case).

    Subclasses implement ``call(*args, **kwargs)``; ``op(...)`` runs it on
    symbolic tensors (adding graph nodes) or arrays (computing at once).
    """

    def __init__(self, name=None):
        self.name = name or to_snake_case(type(self).__name__)

    def call(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement call().")

    def __call__(self, *args, **kwargs):
        return self.call(*args, **kwargs)

    def get_config(self) -> dict:
        return {"name": self.name}

    @classmethod
    def from_config(cls, config: dict) -> Operation:
        return cls(**config)

    def __repr__(self):
        return f"<Operation name={self.name}>"


class Function:
    """The ops between symbolic ``inputs`` and ``outputs`` as one callable
    (Keras 3's ``keras.Function``).

    Args:
        inputs: a symbolic tensor (``kf.Input`` or a placeholder) or a
            list/tuple/dict of them.
        outputs: a symbolic tensor or a nested structure of them, computed
            from ``inputs`` by kerasflow ops or layers.
        name: shown in errors.

    Calling it with arrays nested as ``inputs`` (shapes matching, batch free)
    returns numpy arrays nested as ``outputs``.

    Raises:
        TypeError: inputs or outputs that are not symbolic tensors; a call on
            symbolic tensors (call the ops themselves to extend a graph).
        ValueError: outputs that need an input not among ``inputs``.
    """

    def __init__(self, inputs, outputs, name=None):
        self.name = name or "function"
        self._inputs_struct, self._outputs_struct = inputs, outputs
        self.inputs, self.outputs = tree.flatten(inputs), tree.flatten(outputs)
        self._fn = _CompiledFunction(self.inputs, self.outputs, name=self.name)

    def __call__(self, inputs):
        if any(is_symbolic(x) for x in tree.flatten(inputs)):
            raise TypeError(f"Function '{self.name}' runs on arrays; call the ops "
                            f"on symbolic tensors to extend a graph. Received: "
                            f"symbolic inputs.")
        flat = tree.flatten(inputs)
        if len(flat) != len(self.inputs):
            raise ValueError(f"Function '{self.name}' expects {len(self.inputs)} "
                             f"input arrays nested as its inputs. Received: "
                             f"{len(flat)}.")
        return tree.pack_sequence_as(self._outputs_struct, list(self._fn(*flat)))

    def __repr__(self):
        return f"<Function name={self.name}>"
