"""``tf.train.MonitoredTrainingSession``, ``SessionRunHook`` and
``StopAtStepHook`` (TF 1.x ``monitored_session.py`` / ``basic_session_run_hooks``).

The session is built by a ``Supervisor`` (``supervisor.py``): the chief
restores the latest checkpoint of ``checkpoint_dir`` or initializes (on a
cluster, on the ps tasks), and saves checkpoints every
``save_checkpoint_secs`` and at ``close()``; a non-chief waits for the chief.
Each ``run`` asks the hooks for extra fetches (``before_run``), runs them in
the same ``Session.run`` and hands the results back (``after_run``).
"""

from __future__ import annotations

import collections

from kerasflow.compat.v1.supervisor import Supervisor
from kerasflow.compat.v1.train import get_global_step

__all__ = ["MonitoredTrainingSession", "MonitoredSession", "Scaffold", "SessionRunHook",
           "SessionRunArgs", "SessionRunContext", "SessionRunValues",
           "StopAtStepHook"]

SessionRunArgs = collections.namedtuple("SessionRunArgs",
                                        ["fetches", "feed_dict", "options"])
SessionRunArgs.__new__.__defaults__ = (None, None)
SessionRunValues = collections.namedtuple("SessionRunValues",
                                          ["results", "options", "run_metadata"])


class SessionRunContext:
    """What a hook sees of one ``run``: its arguments and the session."""

    def __init__(self, original_args, session):
        self.original_args, self.session = original_args, session
        self._stop = False

    def request_stop(self):
        self._stop = True

    @property
    def stop_requested(self):
        return self._stop


class SessionRunHook:
    """Base of the hooks: every method is a no-op."""

    def begin(self):
        pass

    def after_create_session(self, session, coord):
        pass

    def before_run(self, run_context):
        return None

    def after_run(self, run_context, run_values):
        pass

    def end(self, session):
        pass


class StopAtStepHook(SessionRunHook):
    """Requests a stop once the global step reaches ``last_step`` (or
    ``num_steps`` past its value when the session was created).

    Raises:
        ValueError: both or neither of ``num_steps`` and ``last_step``.
    """

    def __init__(self, num_steps=None, last_step=None):
        if (num_steps is None) == (last_step is None):
            raise ValueError(f"StopAtStepHook expects exactly one of num_steps and "
                             f"last_step. Received: num_steps={num_steps!r}, "
                             f"last_step={last_step!r}")
        self._num_steps, self._last_step = num_steps, last_step

    def begin(self):
        self._global_step = get_global_step()
        if self._global_step is None:
            raise RuntimeError("StopAtStepHook needs a global step: create it with "
                               "tf.train.get_or_create_global_step().")

    def after_create_session(self, session, coord):
        if self._last_step is None:
            step = int(session.run(self._global_step))
            self._last_step = step + self._num_steps
        elif int(session.run(self._global_step)) >= self._last_step:
            coord.request_stop()

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values):
        # The step fetched with a train op is read before its increment (TF1
        # adds 1 too, then re-reads the step to be sure).
        if int(run_values.results) + 1 >= self._last_step:
            if int(run_context.session.run(self._global_step)) >= self._last_step:
                run_context.request_stop()


class Scaffold:
    """What a ``MonitoredTrainingSession`` builds its session with: the
    ``init_op`` (default ``global_variables_initializer()``), its feeds and
    ``init_fn``, and the ``saver`` (default ``Saver()`` over every variable)."""

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None,
                 ready_op=None, ready_for_local_init_op=None, local_init_op=None,
                 summary_op=None, saver=None, copy_from_scaffold=None):
        self.init_op, self.init_feed_dict = init_op, init_feed_dict
        self.init_fn = init_fn
        self.summary_op, self.saver = summary_op, saver


class MonitoredSession:
    """A session that runs hooks around each ``run`` (see the module docstring).

    Args:
        session: the ``Session`` to run. hooks: ``SessionRunHook``s.
        supervisor: the ``Supervisor`` that made it (saves at close), or None.
    """

    def __init__(self, session, hooks=(), supervisor=None):
        self._sess, self._hooks, self._sv = session, list(hooks), supervisor
        self._stop = False
        for h in self._hooks:
            h.after_create_session(session, self)

    def request_stop(self, ex=None):
        self._stop = True

    def should_stop(self):
        return self._stop or (self._sv is not None and self._sv.should_stop())

    @property
    def graph(self):
        return self._sess.graph

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs ``fetches`` and the hooks' extra fetches in one ``run``."""
        ctx = SessionRunContext(SessionRunArgs(fetches, feed_dict), self._sess)
        extra, feeds = [], dict(feed_dict or {})
        for h in self._hooks:
            args = h.before_run(ctx)
            extra.append(None if args is None else args.fetches)
            if args is not None and args.feed_dict:
                feeds.update(args.feed_dict)
        wanted = [i for i, e in enumerate(extra) if e is not None]
        out = self._sess.run([fetches] + [extra[i] for i in wanted], feeds)
        results = dict(zip(wanted, out[1:]))
        for i, h in enumerate(self._hooks):
            h.after_run(ctx, SessionRunValues(results.get(i), options, run_metadata))
        if ctx.stop_requested:
            self._stop = True
        return out[0]

    def close(self):
        """Ends the hooks, has the chief save a last checkpoint, closes."""
        for h in self._hooks:
            h.end(self._sess)
        if self._sv is not None:
            self._sv.stop()
        self._sess.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def MonitoredTrainingSession(master="", is_chief=True, checkpoint_dir=None,
                             scaffold=None, hooks=None, chief_only_hooks=None,
                             save_checkpoint_secs=600, save_summaries_steps=100,
                             save_summaries_secs=None, config=None,
                             stop_grace_period_secs=120, log_step_count_steps=100,
                             max_wait_secs=7200, save_checkpoint_steps=None,
                             summary_dir=None):
    """TF1's ``tf.train.MonitoredTrainingSession``: a :class:`MonitoredSession`
    whose chief restores from or initializes and checkpoints into
    ``checkpoint_dir``; a non-chief waits up to ``max_wait_secs`` for it.

    Raises:
        TimeoutError: (non-chief) the chief did not initialize in time.
    """
    hooks = list(hooks or []) + (list(chief_only_hooks or []) if is_chief else [])
    if save_checkpoint_steps is not None and checkpoint_dir and is_chief:
        hooks.append(_StepSaver(int(save_checkpoint_steps)))
        save_checkpoint_secs = None  # steps given: they set the cadence
    for h in hooks:
        h.begin()
    scaffold = scaffold or Scaffold()
    D = Supervisor.USE_DEFAULT
    sv = Supervisor(is_chief=is_chief, logdir=checkpoint_dir,
                    init_op=D if scaffold.init_op is None else scaffold.init_op,
                    init_feed_dict=scaffold.init_feed_dict, init_fn=scaffold.init_fn,
                    saver=D if scaffold.saver is None else scaffold.saver,
                    save_model_secs=save_checkpoint_secs, summary_writer=None)
    sess = sv.prepare_or_wait_for_session(master, config=config,
                                          max_wait_secs=max_wait_secs)
    for h in hooks:
        if isinstance(h, _StepSaver):
            h.supervisor = sv
    return MonitoredSession(sess, hooks, sv)


class _StepSaver(SessionRunHook):
    """The chief's checkpoint every ``save_checkpoint_steps`` global steps
    (TF's ``CheckpointSaverHook(save_steps=...)``)."""

    def __init__(self, every):
        if every < 1:
            raise ValueError(f"save_checkpoint_steps expects an int >= 1. "
                             f"Received: {every}")
        self.every, self.supervisor, self.last = every, None, None

    def after_create_session(self, session, coord):
        self.last = int(session.run(get_global_step()))

    def before_run(self, run_context):
        return SessionRunArgs(get_global_step())

    def after_run(self, run_context, run_values):
        if int(run_values.results) + 1 - self.last >= self.every:
            self.supervisor._save()
            self.last = int(self.supervisor.global_step.numpy())
