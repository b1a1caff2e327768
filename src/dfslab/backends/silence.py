"""How long a cluster's daemon has left the sampler's questions unanswered: what a step's watch
calls silence (monitors, a master, glusterd).

Counted from the questions that went unanswered, not from the last answer: on a loaded machine,
or where each question is an exec through an API server beside a round of kubelet stats, one
sampler round can outlast the threshold, and a daemon that was not asked has not been silent (CI,
2026-11-30: a Rook step stopped as "the monitors have not answered" on a saturated machine). A
daemon is silent once two questions in a row failed and the first was asked more than `limit` s ago,
and only once it has answered at all (a question it could never answer, such as a keyring without
the rights, says nothing of its health: the sampler counts the errors).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

UNANSWERED_IN_A_ROW = 2


class Silence:
    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.first_unanswered: float | None = None  # when the first of the failed questions was asked
        self.unanswered = 0
        self.heard = False

    @contextmanager
    def asking(self) -> Iterator[None]:
        """Around one question: answered if the block returns, unanswered if it raises (re-raised)."""
        asked = time.monotonic()
        try:
            yield
        except Exception:
            self.missed(asked)
            raise
        self.answered()

    def answered(self) -> None:
        self.first_unanswered, self.unanswered, self.heard = None, 0, True

    def missed(self, asked: float) -> None:
        if self.first_unanswered is None:
            self.first_unanswered = asked
        self.unanswered += 1

    def seconds(self) -> float | None:
        """How long the daemon has been silent, or None while it is not."""
        if not self.heard or self.first_unanswered is None or self.unanswered < UNANSWERED_IN_A_ROW:
            return None
        silent = time.monotonic() - self.first_unanswered
        return silent if silent > self.limit else None


class SilenceOf:
    """A backend's `Silence`, one per instance, made on first use (tests build backends without
    __init__): `silence = SilenceOf(MASTER_SILENCE)` in the class body."""

    def __init__(self, limit: float) -> None:
        self.limit = limit

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = f"_{name}"

    def __get__(self, backend: object, owner: type | None = None) -> Silence:
        if backend is None:
            return self  # type: ignore[return-value]  (read on the class)
        if self.key not in backend.__dict__:
            backend.__dict__[self.key] = Silence(self.limit)
        return backend.__dict__[self.key]
