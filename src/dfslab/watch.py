"""No step waits blind: while a step's tools run, StepWatch asks the cluster every few seconds for
what would make them wait forever (a full OSD or pool, monitors that stopped answering: the
backend's `alarms`, read from the sampler's own latest status, so watching costs no command) and
on the first one stops the tools and keeps the reason, so the step fails in seconds naming it
instead of hanging until Ctrl-C. A step with a fault scheduled in it is not watched: the fault
causes such states on purpose."""

from __future__ import annotations

import threading
import time
from typing import Callable

from .workloads import Runner

WATCH_INTERVAL = 2.0  # seconds between looks; a step fails at most this long after an alarm


class StepWatch:
    def __init__(self, runner: Runner, alarms: Callable[[], list[str]], interval: float = WATCH_INTERVAL,
                 warnings: Callable[[], list[str]] | None = None):
        self.runner = runner
        self.alarms = alarms
        # What is worth saying of the step but blocks nothing yet (a nearfull OSD): kept, in order
        # first seen, never a reason to stop the tools.
        self.warnings_of = warnings
        self.warnings: list[str] = []
        self.interval = interval
        self.reason: str | None = None
        self.after: float | None = None  # seconds into the step when it was stopped
        self.message: str | None = None  # the step's error, with the backend's detail (run._stopped)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="step-watch", daemon=True)
        self._started = 0.0

    def __enter__(self) -> "StepWatch":
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._note_warnings()
            if self.reason is None:
                try:
                    found = self.alarms()
                except Exception:  # a question that failed is no alarm; the sampler reports its own errors
                    continue
                if not found:
                    continue
                self.reason = "; ".join(found)
                self.after = time.monotonic() - self._started
            self.runner.stop_tools()  # and whatever the step starts after (its cleanup would wait too)

    def _note_warnings(self) -> None:
        try:
            seen = self.warnings_of() if self.warnings_of else []
        except Exception:  # as for alarms: a question that failed says nothing
            return
        self.warnings += [w for w in seen if w not in self.warnings]
