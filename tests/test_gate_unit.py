"""`dfslab compare A B --fail-if-worse 5%`, the gate a CI pipeline trusts, simulated through
dfslab's own ratio_test and gate: runs with a run effect as large as the repetition noise, 57
headline metrics (what examples/containerized-vs-host.yaml compares). With no regression the gate
fails at most 5 % of comparisons (plus two standard errors), even with every metric exactly at the
threshold, where testing each metric alone failed nearly every comparison; a real 10 % loss on one
metric is caught in most comparisons at 5 runs per side; one run per side tests nothing."""

from __future__ import annotations

import math
import random

from dfslab.compare import GATE_ALPHA, gate
from dfslab.ratios import ratio_test

TRIALS = 2000
METRICS = 57
BOUND = GATE_ALPHA + 2 * math.sqrt(GATE_ALPHA * (1 - GATE_ALPHA) / TRIALS)  # 5 % and two standard errors
# Headline metrics of both directions: a throughput falls, a latency rises.
NAMES = ["bandwidth", "iops", "latency_avg", "latency_p99"]


def runs(rng: random.Random, n: int, factor: float, reps: int = 3, sd: float = 0.1) -> list[list[float]]:
    """n runs, each shifted by a run effect, each of `reps` repetitions with noise of the same size."""
    out = []
    for _ in range(n):
        shift = rng.gauss(0, sd)
        out.append([100 * factor * math.exp(shift + rng.gauss(0, sd)) for _ in range(reps)])
    return out


def comparison(rng: random.Random, n_a: int, n_b: int, worse: dict[int, float], reps: int = 3) -> list[dict]:
    """Rows as compare_runs makes them: metric i of B is worse by factor worse[i] (1: no change)."""
    rows = []
    for i in range(METRICS):
        metric = NAMES[i % len(NAMES)]
        factor = worse.get(i, 1.0)
        b_factor = factor if metric.startswith("latency") else 1 / factor
        test = ratio_test(runs(rng, n_a, 1.0, reps), runs(rng, n_b, b_factor, reps))
        rows.append({"workload": "w", "params": f"m{i}", "metric": metric, "unit": "", **test.fields()})
    return rows


def fail_rate(rng: random.Random, n: int, worse: dict[int, float], trials: int = TRIALS) -> float:
    return sum(bool(gate(comparison(rng, n, n, worse), 0.05).failed) for _ in range(trials)) / trials


def test_with_no_regression_the_gate_fails_at_most_5_percent_of_comparisons():
    assert fail_rate(random.Random(11), 3, {}) <= BOUND


def test_every_metric_exactly_at_the_threshold_still_fails_at_most_5_percent():
    """The family-wise bound where it binds: each of the 57 one-sided tests at its null boundary."""
    rate = fail_rate(random.Random(12), 3, {i: 1.05 for i in range(METRICS)})
    print(f"57 metrics each exactly 5 % worse, 3 vs 3 runs: the gate failed {rate:.1%} of {TRIALS} comparisons")
    assert rate <= BOUND


def caught(rng: random.Random, metric: int, n: int, sd: float, trials: int) -> float:
    """How often the gate names metric `metric` when it is 10 % worse and nothing else is."""
    loss = {metric: 1 / 0.9 if not NAMES[metric % len(NAMES)].startswith("latency") else 1.1}
    hits = 0
    for _ in range(trials):
        rows = []
        for i in range(METRICS):
            name = NAMES[i % len(NAMES)]
            factor = loss.get(i, 1.0)
            test = ratio_test(runs(rng, n, 1.0, sd=sd), runs(rng, n, factor if name.startswith("latency") else 1 / factor, sd=sd))
            rows.append({"workload": "w", "params": f"m{i}", "metric": name, "unit": "", **test.fields()})
        hits += any(r["params"] == f"m{metric}" for r in gate(rows, 0.05).failed)
    return hits / trials


def test_a_real_10_percent_loss_on_one_metric_is_caught_in_most_comparisons_at_5_runs():
    """Power is bought with quiet runs: 57 metrics at a 5 % family-wise error leave each test at
    0.05/57, and the loss is only 5 % past the threshold. At a run-to-run and repetition spread of
    1 % the gate catches it in most comparisons at 5 runs per side; at this box's 3-10 % it rarely
    does (printed), which the docs say: quieter runs, more runs, or fewer gated metrics."""
    rng = random.Random(13)
    for metric in (0, 2):  # a bandwidth 10 % down, a mean latency 10 % up
        rate = caught(rng, metric, 5, 0.01, 200)
        print(f"a 10 % loss in {NAMES[metric]}, 5 vs 5 runs, 1 % spread: caught in {rate:.0%} of 200 comparisons")
        assert rate > 0.5
    for sd in (0.03, 0.1):
        print(f"... at {sd:.0%} spread: {caught(rng, 0, 5, sd, 100):.0%} (5 runs), {caught(rng, 0, 10, sd, 100):.0%} (10 runs)")


def test_one_run_per_side_tests_nothing():
    rng = random.Random(14)
    for reps in (1, 3):
        result = gate(comparison(rng, 1, 1, {0: 1.5}, reps=reps), 0.05)
        assert result.tested == [] and result.failed == [] and len(result.untested) == METRICS
