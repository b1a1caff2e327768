"""When a faulted cluster counts as recovered: its health must hold for STABLE_S; a flap back
to unhealthy (Ceph marking an OSD down on reports it queued while a link was cut) restarts the
count. The backend is a stand-in answering from a script of health answers, one per second."""

from __future__ import annotations

from types import SimpleNamespace

from dfslab.chaos import schedule


class Clock:
    def __init__(self):
        self.now = 1000.0

    def time(self):
        return self.now

    def sleep(self, s):
        self.now += s


def _attached(clock, answers):
    def healthy():
        answer = answers.pop(0) if answers else True
        if isinstance(answer, Exception):
            raise answer
        return answer
    return SimpleNamespace(backend=SimpleNamespace(healthy=healthy))


def test_recovered_only_once_health_holds_and_counted_from_the_start_of_that_stretch(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(schedule, "time", clock)
    # OK at once, then a flap (an OSD marked down late), an error (MON election), then OK for good
    answers = [True, True, False, RuntimeError("mon election"), False, True, True, True, True, True, True, True]
    assert schedule.wait_recovered(_attached(clock, answers), timeout=60, stable=5) == 5.0


def test_never_healthy_or_never_stable_is_none(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(schedule, "time", clock)
    assert schedule.wait_recovered(_attached(clock, [False] * 100), timeout=10, stable=5) is None
    assert clock.now - 1000 <= 12
    flapping = [True, False] * 100
    assert schedule.wait_recovered(_attached(clock, flapping), timeout=10, stable=5) is None
