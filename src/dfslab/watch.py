"""No step waits blind: while a step's tools run, StepWatch asks the cluster every few seconds for
what would make them wait forever (a full OSD or pool, monitors that stopped answering: the
backend's `alarms`, read from the sampler's own latest status, so watching costs no command) and
on the first one stops the tools and keeps the reason, so the step fails in seconds naming it
instead of hanging until Ctrl-C. A step with a fault scheduled in it is not watched: the fault
causes such states on purpose.

A healthy cluster can still leave a tool stuck (a hung mount, a client cut off): for workloads that
stream data, the watch also counts the client side's bytes on the wire, and a minute in which
they moved next to nothing (STALL_BYTES) stops the step as "no progress", long before a sized
tool's deadline."""

from __future__ import annotations

import threading
import time
from typing import Callable

from .workloads import Runner

WATCH_INTERVAL = 2.0  # seconds between looks; a step fails at most this long after an alarm
# No progress: under 1 MiB on the client's links in 60 s (17 kB/s). Keepalives to the MONs and
# MDS are a few kB a minute; a streaming tool on the slowest link a spec may shape moves more.
STALL_SECONDS = 60.0
STALL_BYTES = 2**20


class StepWatch:
    def __init__(self, runner: Runner, alarms: Callable[[], list[str]], interval: float = WATCH_INTERVAL,
                 warnings: Callable[[], list[str]] | None = None, moved: Callable[[], int | None] | None = None,
                 stall_seconds: float = STALL_SECONDS, stall_bytes: int = STALL_BYTES):
        self.runner = runner
        self.alarms = alarms
        # What is worth saying of the step but blocks nothing yet (a nearfull OSD): kept, in order
        # first seen, never a reason to stop the tools.
        self.warnings_of = warnings
        self.warnings: list[str] = []
        self.interval = interval
        # Bytes the client side has moved so far (None: not counted here), for the stall rule.
        self.moved = moved
        self.stall_seconds, self.stall_bytes = stall_seconds, stall_bytes
        self._seen: list[tuple[float, int]] = []  # (monotonic time, bytes moved) over the last window
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
                    found = self.alarms() + self._stalled()
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

    def _stalled(self) -> list[str]:
        """"no progress ..." once the client side has moved under stall_bytes in stall_seconds."""
        total = self.moved() if self.moved else None
        if total is None:
            return []
        now = time.monotonic()
        self._seen.append((now, total))
        while len(self._seen) > 1 and now - self._seen[1][0] >= self.stall_seconds:
            self._seen.pop(0)  # keep one look at least stall_seconds old
        since, then = self._seen[0]
        if now - since < self.stall_seconds or total - then >= self.stall_bytes:
            return []
        return [f"no progress: the client side moved {total - then:,} bytes on the wire in the last {now - since:.0f} s "
                f"while the cluster reported nothing wrong (a hung mount or tool; its output so far is in raw/)"]
