"""Runs until decided (`dfslab run EXP --until-decided`): runs are added to both sides of a
comparison in rounds, A B then B A, and at each look every headline metric not yet decided is
tested again; a metric is decided at the first look where it is "different" or "the same within
the margin", and keeps that verdict and the number of runs it took.

Looking again would inflate the error: a null metric tested at 5 % at each of 9 looks is called
"different" at some look far more often than 5 %. The looks share the error instead (Bonferroni:
the looks' levels add up to ALPHA, each look testing both the difference and each one-sided test
of the equivalence at its own), so that the chance that a metric is ever wrongly decided stays at
ALPHA whatever look decides it, and wherever the runs stop. Each look costs the others their
share, so there are two (`look_rounds`): half way and at the last round the budget allows (sized
from the first round's time, before anything is tested). The half-way look gets what O'Brien and
Fleming's spending function (Lan & DeMets 1983) spends by then, the last look the rest (0.56 % and
4.44 % at 8 rounds): an interval half way is wide whatever its level, so most metrics are decided
at the last look, where the error is worth most. Measured on containerized-vs-host, local vs
docker, 60 min: of 41 headline metrics a look after every round decided 2 (7 rounds), equal
shares at rounds 4 and 7 decided 14, this split 18; at 8 rounds equal shares 29, this split 32,
on the same runs; a fresh hour at 10 rounds of 2 repetitions: 32 (equal shares on those runs 31).
Simulated, the split decides more than equal shares and than Pocock's equal levels (2.94 % a look,
valid through the looks' correlation, not Bonferroni): 84, 74 and 78 % at 7 rounds with B 3 %
above A. If the budget ends the runs before the planned last round, the last look is made there
instead and spends what is left (still two looks at most).
tests/test_sequential_unit.py simulates it through `sequential_test`, which drives `Decisions` and
ratios.ratio_test as `campaign.run_until_decided` does."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Sequence

from .compare import headline
from .ratios import ALPHA, ratio_test

FIRST_LOOK = 2  # runs per side before the first look: an interval over runs needs two


def look_rounds(rounds: int) -> list[int]:
    """The rounds after which the runs are tested when `rounds` are planned: half way and at the end."""
    rounds = max(FIRST_LOOK, rounds)
    return sorted({max(FIRST_LOOK, math.ceil(rounds / 2)), rounds})


def looks(rounds: int) -> int:
    """Looks at most when `rounds` are planned."""
    return len(look_rounds(rounds))


def spent_by(fraction: float, alpha: float = ALPHA) -> float:
    """The error O'Brien and Fleming's spending function (Lan & DeMets 1983) has spent at
    `fraction` of the planned runs: 2 - 2 Phi(z_(1 - alpha/2) / sqrt(fraction)); all of alpha at 1."""
    normal = NormalDist()
    return 2 * (1 - normal.cdf(normal.inv_cdf(1 - alpha / 2) / math.sqrt(min(1.0, fraction))))


def look_alphas(rounds: int) -> list[float]:
    """Each planned look's level: the half-way look what the spending function spent by then,
    the last the rest of ALPHA."""
    schedule = look_rounds(rounds)
    early = [spent_by(n / schedule[-1]) for n in schedule[:-1]]
    return [*early, ALPHA - sum(early)]


def looks_text(levels: Sequence[Sequence[float]]) -> str:
    """"looks after rounds 4 and 8 at 0.56 % and 4.44 % (of 5 %)": (round, level) of each look."""
    rounds = " and ".join(str(int(n)) for n, _ in levels)
    at = " and ".join(f"{100 * a:.3g} %" for _, a in levels)
    plural = "s" if len(levels) > 1 else ""
    return f"look{plural} after round{plural} {rounds} at {at} (of {100 * ALPHA:g} %)"


def planned_rounds(budget: float, first_round: float, max_runs: int) -> int:
    """Rounds the budget allows at the first round's pace (at most max_runs, at least FIRST_LOOK)."""
    fit = int(budget // first_round) if first_round > 0 and math.isfinite(budget) else max_runs
    return max(FIRST_LOOK, min(max_runs, fit))


def sequential_test(runs_a: Sequence[Sequence[float]], runs_b: Sequence[Sequence[float]], max_runs: int,
                    margin: float = 0.10, alpha: float | None = None, rounds: bool = True,
                    every_round: bool = False) -> tuple[str, int | None]:
    """One metric through the looks `run_until_decided` makes with `max_runs` rounds planned (the
    first n runs per side at look n, each tested at its look's level and taken by `Decisions`):
    ("different" | "same", the runs that decided it), or ("can't tell", None). `alpha` overrides
    every look's, `every_round` looks after every round (a plain re-test); `rounds`: run i of each
    side made in round i, as run_until_decided makes them (paired where that pays, ratios.pairing_pays)."""
    decisions = Decisions(max_runs)
    metric = {"workload": "simulated", "params": "", "metric": "bandwidth", "unit": "MB/s", "too_short": False}
    made = min(len(runs_a), len(runs_b), max_runs)
    for n in range(FIRST_LOOK, made + 1) if every_round else [n for n in decisions.schedule if n <= made]:
        each = decisions.alpha_at(n, last=n == made) if alpha is None else alpha
        if not decisions.look([{**metric, **ratio_test(runs_a[:n], runs_b[:n], margin, each, rounds).fields()}], n, each):
            decided = decisions.decided[metric_key(metric)]
            return decided["verdict"], decided["decided_at"]
    return "can't tell", None


def metric_key(row: dict[str, Any]) -> tuple:
    return row["workload"], row["params"], row["metric"], row["unit"]


@dataclass
class Decisions:
    """Each headline metric's verdict at the look that decided it (and the runs it took), with
    `rounds` planned; `spent`: the error the looks made so far have spent."""
    rounds: int
    decided: dict[tuple, dict[str, Any]] = field(default_factory=dict)
    levels: list[tuple[int, float]] = field(default_factory=list)  # (round, level) of each look made

    @property
    def spent(self) -> float:
        return sum(alpha for _, alpha in self.levels)

    @property
    def schedule(self) -> list[int]:
        return look_rounds(self.rounds)

    def alpha_at(self, runs: int, last: bool = False) -> float:
        """The level of a look after `runs` rounds: its planned share, or, at the last look (the
        planned last round, or where the budget stops the runs), what the earlier looks left."""
        if last or runs >= self.schedule[-1]:
            return ALPHA - self.spent
        return look_alphas(self.rounds)[len(self.levels)]

    def look(self, rows: list[dict[str, Any]], runs: int, alpha: float) -> list[dict[str, Any]]:
        """Take this look's comparison rows (made at `alpha`, which it spends); the headline rows
        still undecided."""
        self.levels.append((runs, alpha))
        undecided = []
        for row in headline(rows):
            key = metric_key(row)
            if key in self.decided:
                continue
            if row["verdict"] in ("different", "same"):
                self.decided[key] = {**row, "decided_at": runs, "look_alpha": alpha}
            else:
                undecided.append(row)
        return undecided

    def final_rows(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The last look's rows, each decided metric with the verdict, interval and why of the look
        that decided it and `decided_at`; the rest as the last look left them."""
        return [self.decided.get(metric_key(r), {**r, "decided_at": None}) for r in rows]
