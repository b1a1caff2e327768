"""Runs until decided (`dfslab run EXP --until-decided`): runs are added to both sides of a
comparison, alternating A B / B A, and after each new pair every headline metric not yet decided
is tested again; a metric is decided at the first look where it is "different" or "the same
within the margin", and keeps that verdict and the number of runs it took.

Looking again after every pair would inflate the error: a null metric tested at 5 % at each of 9
looks is called "different" at some look far more often than 5 %. The looks share the error
instead (Bonferroni over the looks a budget allows: each look tests at ALPHA / looks, both the
difference test and each one-sided test of the equivalence), so that the chance that a metric is
ever wrongly decided stays at ALPHA whatever look decides it. It is conservative (a
group-sequential boundary such as O'Brien-Fleming spends less early), and it needs no
assumption about when the runs stop: the budget may end the runs at any look.
tests/test_sequential_unit.py simulates it through `sequential_test`, which drives `Decisions` and
ratios.ratio_test as `run.run_until_decided` does."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from .compare import headline
from .ratios import ALPHA, ratio_test

MAX_RUNS = 10  # runs per side at most, unless --max-runs says otherwise
FIRST_LOOK = 2  # runs per side before the first look: an interval over runs needs two


def looks(max_runs: int) -> int:
    """Looks at most: after 2, 3, ... max_runs runs per side."""
    return max(1, max_runs - FIRST_LOOK + 1)


def look_alpha(max_runs: int) -> float:
    """The error each look may spend: ALPHA shared equally by every look the runs can reach."""
    return ALPHA / looks(max_runs)


def sequential_test(runs_a: Sequence[Sequence[float]], runs_b: Sequence[Sequence[float]], max_runs: int,
                    margin: float = 0.10, alpha: float | None = None, rounds: bool = True) -> tuple[str, int | None]:
    """One metric through the looks `run_until_decided` makes (the first n runs per side at look
    n, each tested at the look's alpha and taken by `Decisions`): ("different" | "same", the runs
    that decided it), or ("can't tell", None). `alpha` overrides each look's (a plain re-test);
    `rounds`: run i of each side made in round i, as run_until_decided makes them (paired from the
    looks where that pays, ratios.pairing_pays)."""
    decisions = Decisions(max_runs)
    each = decisions.alpha if alpha is None else alpha
    metric = {"workload": "simulated", "params": "", "metric": "bandwidth", "unit": "MB/s", "too_short": False}
    for n in range(FIRST_LOOK, min(len(runs_a), len(runs_b), max_runs) + 1):
        if not decisions.look([{**metric, **ratio_test(runs_a[:n], runs_b[:n], margin, each, rounds).fields()}], n):
            decided = decisions.decided[metric_key(metric)]
            return decided["verdict"], decided["decided_at"]
    return "can't tell", None


def metric_key(row: dict[str, Any]) -> tuple:
    return row["workload"], row["params"], row["metric"], row["unit"]


@dataclass
class Decisions:
    """Each headline metric's verdict at the look that decided it (and the runs it took)."""
    max_runs: int
    decided: dict[tuple, dict[str, Any]] = field(default_factory=dict)

    @property
    def alpha(self) -> float:
        return look_alpha(self.max_runs)

    def look(self, rows: list[dict[str, Any]], runs: int) -> list[dict[str, Any]]:
        """Take this look's comparison rows (made at `alpha`); the headline rows still undecided."""
        undecided = []
        for row in headline(rows):
            key = metric_key(row)
            if key in self.decided:
                continue
            if row["verdict"] in ("different", "same"):
                self.decided[key] = {**row, "decided_at": runs}
            else:
                undecided.append(row)
        return undecided

    def final_rows(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The last look's rows, each decided metric with the verdict, interval and why of the look
        that decided it and `decided_at`; the rest as the last look left them."""
        return [self.decided.get(metric_key(r), {**r, "decided_at": None}) for r in rows]
