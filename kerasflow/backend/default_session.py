"""The default ``Session``: ``tensor.eval()`` and ``op.run()``, as in TF1.

TF1 keeps a per-thread stack of default sessions: ``with sess:`` (and
``sess.as_default()``, and an ``InteractiveSession`` while open) pushes one, so
``tensor.eval(feed_dict)`` means ``get_default_session().run(tensor,
feed_dict)`` and ``op.run(feed_dict)`` runs an op for its effect. This module
holds that stack and adds ``eval``/``run`` to ``SymbolicTensor`` and ``Node``.
"""

from __future__ import annotations

import contextlib
import threading

from kerasflow.backend.graph import Node, SymbolicTensor

__all__ = ["get_default_session", "push_default_session", "pop_default_session",
           "default_session"]

_local = threading.local()


def _stack() -> list:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def get_default_session():
    """The innermost default session of this thread, or None."""
    stack = _stack()
    return stack[-1] if stack else None


def push_default_session(session) -> None:
    """Makes ``session`` the default of this thread until popped."""
    _stack().append(session)


def pop_default_session(session) -> None:
    """Removes the innermost entry of ``session`` from this thread's stack."""
    stack = _stack()
    for i in range(len(stack) - 1, -1, -1):
        if stack[i] is session:
            del stack[i]
            return


@contextlib.contextmanager
def default_session(session):
    """``with default_session(sess):`` makes ``sess`` the default inside."""
    push_default_session(session)
    try:
        yield session
    finally:
        pop_default_session(session)


def _session_for(what, session):
    if session is not None:
        return session
    session = get_default_session()
    if session is None:
        raise ValueError(
            f"Cannot {what}: no default session is registered. Use "
            f"`with tf.Session() as sess:` (or `with sess.as_default():`, or an "
            f"`InteractiveSession`) around the call, or pass the session "
            f"explicitly: `{'tensor.eval' if what.startswith('eval') else 'op.run'}"
            f"(session=sess)`."
        )
    return session


def _tensor_eval(self, feed_dict=None, session=None):
    """The value of this tensor: ``session.run(self, feed_dict)`` (TF1).

    Args:
        feed_dict: ``{tensor: value}`` for the placeholders it needs.
        session: the session to use; default: the default session.

    Returns:
        A numpy array.

    Raises:
        ValueError: no session given and no default session (saying how to fix).
    """
    return _session_for(f"evaluate tensor '{self.name}' using `eval()`",
                        session).run(self, feed_dict)


def _tensor_run(self, feed_dict=None, session=None):
    """Runs this op for its effect (TF1 ``Operation.run``); returns None."""
    _session_for(f"run op '{self.node.name}' using `run()`", session).run(
        self, feed_dict)


def _node_run(self, feed_dict=None, session=None):
    """Runs this node's first output for its effect (``tensor.op.run()``)."""
    _tensor_run(self.outputs[0], feed_dict, session)


SymbolicTensor.eval = _tensor_eval
SymbolicTensor.run = _tensor_run
Node.run = _node_run
