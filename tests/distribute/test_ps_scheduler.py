"""PSScheduler in process (no Ray): the bounded-delay rule, stealing, release."""

from kerasflow.distribute.parameter_server.scheduler import PSScheduler


def _sched(steps=3, parts=2, tau=0):
    s = PSScheduler()
    queues = {p: [(t, p) for t in range(steps)] for p in range(parts)}
    s.begin(1, queues, steps, parts, tau)
    return s


def test_sequential_rule_holds_step_until_previous_done():
    s = _sched(tau=0)
    assert s.claim(1, 0) == ("task", 0, 0)
    assert s.claim(1, 1) == ("task", 0, 1)
    assert s.claim(1, 0) == ("wait",)  # step 1 needs step 0 done
    s.finish(1, 0, 0, 0, {})
    assert s.claim(1, 0) == ("wait",)  # part 1 of step 0 still running
    assert s.claim(1, 1, (0, 1, {})) == ("task", 1, 1)  # reported with the claim
    assert s.claim(1, 0) == ("task", 1, 0)
    assert max(g for *_, g in s.trace) == 0


def test_bounded_delay_lets_fast_worker_run_tau_ahead_then_steal():
    s = _sched(steps=6, tau=2)
    assert s.claim(1, 1) == ("task", 0, 1)  # the slow worker holds step 0
    got = []
    for _ in range(4):
        task = s.claim(1, 0)
        got.append(task)
        if task[0] == "task":
            s.finish(1, 0, task[1], task[2], {})
    # Steps 0..2 of its own part start (t - 2 - 1 < 0); step 3 needs step 0
    # done, so it takes the slow worker's oldest queued task instead.
    assert got[:3] == [("task", 0, 0), ("task", 1, 0), ("task", 2, 0)]
    assert got[3] == ("task", 1, 1) and s.steals == 1
    assert max(g for *_, g in s.trace) <= 2


def test_release_moves_a_dead_workers_tasks_and_end():
    s = _sched(steps=2, tau=None)
    assert s.claim(1, 1) == ("task", 0, 1)
    assert sorted(s.release(1)) == [(0, 1), (1, 1)]
    seen = []
    while (task := s.claim(1, 0))[0] == "task":
        seen.append(task[1:])
        s.finish(1, 0, task[1], task[2], {"t": task[1]})
    assert task == ("end",)
    assert sorted(seen) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    infos, _, _ = s.results()
    assert len(infos) == 4 and s.status(60.0)[:2] == (4, 0)
    assert s.claim(2, 0) == ("end",)  # another call's claim
