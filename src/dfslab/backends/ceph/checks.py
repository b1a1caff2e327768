"""What a step's watch reads of a Ceph cluster's health (dfslab.watch), from the `ceph status`
the sampler already asked for: a cluster dfslab deployed and one it was given alike."""

from __future__ import annotations

import time
from typing import Any

from ..silence import Silence

# Health checks under which clients' writes block until someone acts (frees space, raises a
# ratio): a step that meets one fails naming it, not after the tool's own timeout.
BLOCKING_CHECKS = ("OSD_FULL", "POOL_FULL")
# PGs inactive (every OSD holding them down, as when an OSD crashes on ENOSPC before the full
# ratio trips): their clients' I/O waits. Peering makes them inactive for seconds; a minimum
# duration tells the two apart.
LASTING_CHECKS = {"PG_AVAILABILITY": 15.0}
MONITOR_SILENCE = 20.0  # seconds of `status` unanswered (dfslab.backends.silence): the MONs lost quorum (or died)
# Raised before full: writes still go on (nearfull), or only backfill stops (backfillfull).
WARNING_CHECKS = ("OSD_NEARFULL", "POOL_NEARFULL", "OSD_BACKFILLFULL", "POOL_BACKFILLFULL")


class HealthChecks:
    """The checks of the latest `ceph status`, since when each has been raised, and how long the
    monitors have left it unanswered (`silence.asking()` around each question)."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}
        self.since: dict[str, float] = {}
        self.silence = Silence(MONITOR_SILENCE)

    def saw(self, status: dict[str, Any]) -> None:
        self.seen = {name: check.get("summary", {}).get("message", name)
                     for name, check in status.get("health", {}).get("checks", {}).items()}
        self.silence.answered()
        now = time.monotonic()
        self.since = {name: self.since.get(name, now) for name in self.seen}

    def alarms(self) -> list[str]:
        now = time.monotonic()
        found = [f"{name}: {message}" + (f" (for {now - self.since[name]:.0f} s)" if name in LASTING_CHECKS else "")
                 for name, message in self.seen.items()
                 if name in BLOCKING_CHECKS or name in LASTING_CHECKS and now - self.since.get(name, now) >= LASTING_CHECKS[name]]
        if (silent := self.silence.seconds()) is not None:
            found.append(f"the monitors have not answered for {silent:.0f} s (quorum lost, or every MON down)")
        return found

    def warnings(self) -> list[str]:
        return [f"{name}: {message}" for name, message in self.seen.items() if name in WARNING_CHECKS]
