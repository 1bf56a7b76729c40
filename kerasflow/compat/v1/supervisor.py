"""``tf.train.Supervisor`` (TF 1.x ``supervisor.py``): the chief initializes
(or restores) the model and saves checkpoints; the other workers wait until
it has, then train.

On a cluster (``prepare_or_wait_for_session(server.target)``) the variables
live on the ps tasks: the chief's ``init_op`` sets them there, and a
non-chief polls the ps tasks until every ps variable of its graph is set, up
to ``max_wait_secs`` (default: the Server's timeout).
"""

from __future__ import annotations

import contextlib
import os
import time

from kerasflow.compat.v1 import graph as G
from kerasflow.compat.v1.saver import Saver, latest_checkpoint
from kerasflow.compat.v1.session import Session
from kerasflow.compat.v1.train import get_global_step
from kerasflow.compat.v1.variables import global_variables, global_variables_initializer

__all__ = ["Supervisor"]


class _UseDefault:
    def __repr__(self):
        return "Supervisor.USE_DEFAULT"


class Supervisor:
    """TF1's ``tf.train.Supervisor``.

    Args:
        graph: accepted (kerasflow's default graph record is used).
        is_chief: this worker initializes, restores and saves.
        init_op: run by the chief (default ``global_variables_initializer()``;
            None: nothing). init_feed_dict: its feeds. init_fn: called with
            the session after it.
        logdir: checkpoints (``checkpoint_basename``) and, for the chief,
            the summary writer's folder; None: neither.
        summary_op: accepted; summaries are written with
            :meth:`summary_computed` (no background thread).
        saver: default a ``Saver()`` when ``logdir`` is given; None: none.
        global_step: default the graph's global step.
        save_model_secs: seconds between the chief's checkpoints (checked in
            :meth:`should_stop`); 0 or None: only at :meth:`stop`.
        recovery_wait_secs: seconds between a non-chief's readiness polls.
        ready_op, ready_for_local_init_op, local_init_op: accepted (a
            non-chief is ready once every ps variable of its graph is set).

    Example:
        >>> sv = tf.train.Supervisor(is_chief=(task_index == 0), logdir=logdir,
        ...                          global_step=global_step, init_op=init_op)
        >>> with sv.prepare_or_wait_for_session(server.target) as sess:
        ...     while not sv.should_stop() and step < 1000:
        ...         _, step = sess.run([train_op, global_step], feed_dict=...)
        >>> sv.stop()
    """

    USE_DEFAULT = _UseDefault()

    def __init__(self, graph=None, ready_op=USE_DEFAULT,
                 ready_for_local_init_op=USE_DEFAULT, is_chief=True,
                 init_op=USE_DEFAULT, init_feed_dict=None, local_init_op=USE_DEFAULT,
                 logdir=None, summary_op=USE_DEFAULT, saver=USE_DEFAULT,
                 global_step=USE_DEFAULT, save_summaries_secs=120,
                 save_model_secs=600, recovery_wait_secs=30, stop_grace_secs=120,
                 checkpoint_basename="model.ckpt", session_manager=None,
                 summary_writer=USE_DEFAULT, init_fn=None,
                 local_init_run_options=None):
        D = Supervisor.USE_DEFAULT
        self._graph = G.get_default_graph()
        self._is_chief = bool(is_chief)
        self.init_op = global_variables_initializer() if init_op is D else init_op
        self.init_feed_dict, self.init_fn = init_feed_dict, init_fn
        self._logdir = logdir
        self.saver = (Saver() if logdir else None) if saver is D else saver
        self.global_step = get_global_step() if global_step is D else global_step
        self.summary_op = None if summary_op is D else summary_op
        self.save_model_secs = save_model_secs
        self.recovery_wait_secs = recovery_wait_secs
        self.save_path = os.path.join(logdir, checkpoint_basename) if logdir else None
        self._writer = summary_writer
        if summary_writer is D:
            self._writer = None
            if logdir and self._is_chief:
                from kerasflow.compat.v1.summary_ops import FileWriter

                self._writer = FileWriter(logdir, self._graph)
        self._stop = False
        self._sess = None
        self._last_save = time.monotonic()

    @property
    def is_chief(self):
        return self._is_chief

    @property
    def summary_writer(self):
        return self._writer

    @property
    def session_manager(self):
        return self

    def prepare_or_wait_for_session(self, master="", config=None,
                                    wait_for_checkpoint=False, max_wait_secs=None,
                                    start_standard_services=True):
        """A session ready to train: the chief restores the latest checkpoint
        of ``logdir`` or runs ``init_op``; a non-chief waits for the chief.

        Raises:
            TimeoutError: (non-chief) the ps variables were not initialized
                within ``max_wait_secs`` (naming the ps tasks and variables).
        """
        sess = Session(master, config=config)
        cluster = hasattr(sess, "missing")
        if self._is_chief:
            ckpt = latest_checkpoint(self._logdir) if self._logdir and self.saver \
                else None
            if ckpt:
                self.saver.restore(sess, ckpt)
                if cluster:
                    sess.publish(global_variables())
            else:
                if self.init_op is not None:
                    sess.run(self.init_op, feed_dict=self.init_feed_dict)
                if self.init_fn is not None:
                    self.init_fn(sess)
        elif cluster:
            self._wait_ready(sess, max_wait_secs)
        self._sess = sess
        self._last_save = time.monotonic()
        return sess

    def _wait_ready(self, sess, max_wait_secs):
        wait = sess.server.timeout if max_wait_secs is None else float(max_wait_secs)
        deadline = time.monotonic() + wait
        poll = min(float(self.recovery_wait_secs or 1.0), 0.5)
        while (missing := sess.missing()):
            if time.monotonic() > deadline:
                desc = "; ".join(f"/job:ps/task:{k}: {m[:5]}" for k, m in
                                 sorted(missing.items()))
                raise TimeoutError(
                    f"{sess.server.task} waited {wait:g} s for the chief to "
                    f"initialize the model: expected every ps variable set. "
                    f"Received still missing: {desc}. Is the chief "
                    f"(is_chief=True) running?")
            time.sleep(poll)

    @contextlib.contextmanager
    def managed_session(self, master="", config=None, start_standard_services=True,
                        close_summary_writer=True):
        """``prepare_or_wait_for_session`` in a ``with`` block; :meth:`stop`
        (and the session's close) at its end, also on an exception."""
        sess = self.prepare_or_wait_for_session(master, config)
        try:
            yield sess
        except Exception as e:
            self.request_stop(e)
            raise
        finally:
            self.stop(close_summary_writer=close_summary_writer)
            sess.close()

    def should_stop(self):
        """True after :meth:`request_stop`; the chief saves a checkpoint here
        every ``save_model_secs``."""
        if (self._is_chief and self.saver is not None and self.save_model_secs
                and time.monotonic() - self._last_save >= self.save_model_secs):
            self._save()
        return self._stop

    def request_stop(self, ex=None):
        self._stop = True

    def stop(self, threads=None, close_summary_writer=True, ignore_live_threads=False,
             stop_grace_period_secs=None):
        """Stops: the chief saves a last checkpoint; the writer is closed."""
        self._stop = True
        if self._is_chief and self.saver is not None and self._sess is not None:
            self._save()
        self._sess = None
        if close_summary_writer and self._writer is not None:
            self._writer.close()

    def _save(self):
        sess = self._sess
        if sess is None or sess._closed or self.save_path is None:
            return
        if hasattr(sess, "pull"):  # the ps holds the values: fetch them first
            sess.pull([v for v in global_variables() if v in sess.graph.ps_vars])
        step = self.global_step
        self.saver.save(sess, self.save_path,
                        global_step=None if step is None else int(step.numpy()))
        self._last_save = time.monotonic()

    def summary_computed(self, sess, summary, global_step=None):
        """Writes a fetched summary with the chief's writer."""
        if self._writer is not None:
            if global_step is None and self.global_step is not None:
                global_step = int(sess.run(self.global_step))
            self._writer.add_summary(summary, global_step)

    def start_queue_runners(self, sess, queue_runners=None):
        """Nothing to start: kerasflow has no queue runners (returns [])."""
        return []

    def wait_for_stop(self):
        while not self._stop:
            time.sleep(0.1)

    @property
    def coord(self):
        return self
