"""Cumulative counters (bytes moved, CPU seconds) turned into rates per second, one series at a
time: the first value of a series, and a counter that went backwards (a restarted daemon or
kubelet), give no rate rather than a wrong one. Shared by every sampler."""

from __future__ import annotations

import time


class CounterRates:
    def __init__(self) -> None:
        self._prev: dict[str, tuple[float, float]] = {}  # series -> (time, value)

    def rate(self, key: str, value: float, now: float | None = None) -> float | None:
        now = time.time() if now is None else now
        prev = self._prev.get(key)
        self._prev[key] = (now, value)
        if prev is None or now <= prev[0] or value < prev[1]:
            return None
        return (value - prev[1]) / (now - prev[0])
