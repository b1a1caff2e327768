"""One way to wait: poll a condition until it holds or its time is up, saying what is waited on.

Every wait of dfslab's (a daemon's socket, HEALTH_OK, a brick online, a Job's pod, a mount) goes
through `wait_until`, so each one (1) has a deadline, (2) says on the progress line what it is
waiting on and for how long ("waiting on osd.2 to be up · 12/300 s"), and (3) fails with a
sentence naming it and what was last seen, never a bare timeout. Built on tenacity (its stop,
wait and before-sleep hooks, a well-kept library) rather than one hand-written
`while time.monotonic() < deadline` loop per call site, which is what dfslab had: 22 of them,
each with its own interval, error and silence.

This module is at the bottom layer: it imports nothing of dfslab's. The CLI's progress line
registers itself with `reporting`; without it a wait logs to the `dfslab.wait` logger only.
"""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

import tenacity

T = TypeVar("T")
log = logging.getLogger("dfslab.wait")
_reporters: list[Callable[[str], None]] = []


@contextmanager
def reporting(report: Callable[[str], None]) -> Iterator[None]:
    """While inside, every wait calls `report("waiting on WHAT · 12/300 s")` before each retry, and
    `report("")` when it ends."""
    _reporters.append(report)
    try:
        yield
    finally:
        _reporters.remove(report)


def _say(text: str) -> None:
    for report in _reporters:
        report(text)


class WaitTimeout(TimeoutError):
    """A wait whose condition did not hold in time; the message names what and the last state seen."""


def wait_until(check: Callable[[], T], what: str, timeout: float, interval: float = 1.0,
               error: Callable[[str], Exception] = WaitTimeout, last: Callable[[], str] | None = None,
               retry_on: tuple[type[BaseException], ...] = ()) -> T:
    """Call `check()` every `interval` seconds until it returns something truthy, and return that.
    After `timeout` seconds raise `error(message)`; the message is "`what` did not happen within N
    s", plus `last()` (what was last seen) when given. Exceptions of the types in `retry_on` count
    as "not yet" (a socket not yet there); any other propagates at once."""
    started = time.monotonic()
    failure = {"text": ""}  # the last "not yet" exception, for the message

    def attempt() -> T:
        try:
            return check()
        except retry_on as exc:  # an empty tuple catches nothing
            failure["text"] = f"{type(exc).__name__}: {exc}"
            return None  # type: ignore[return-value]

    def before_sleep(state: tenacity.RetryCallState) -> None:
        text = f"waiting on {what} · {time.monotonic() - started:.0f}/{timeout:.0f} s"
        log.debug(text)
        _say(text)

    retrying = tenacity.Retrying(stop=tenacity.stop_after_delay(timeout), wait=tenacity.wait_fixed(interval),
                                 retry=tenacity.retry_if_result(lambda value: not value), before_sleep=before_sleep)
    try:
        return retrying(attempt)
    except tenacity.RetryError:
        seen = last() if last else failure["text"]
        raise error(f"{what} did not happen within {timeout:.0f} s" + (f"; last seen: {seen}" if seen else "")) from None
    finally:
        if _reporters:
            _say("")


def poll(check: Callable[[], Any], what: str, timeout: float, interval: float = 1.0) -> bool:
    """`wait_until` that returns False instead of raising: for waits whose caller decides what a
    timeout means (a best-effort clean-up, a fault that may already be undone)."""
    try:
        wait_until(check, what, timeout, interval)
        return True
    except WaitTimeout:
        return False
