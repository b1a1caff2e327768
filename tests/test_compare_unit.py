"""Comparisons across runs: one run against another, or several runs per side (ABBA), counted per run."""

import json
from pathlib import Path

import pytest

from dfslab.compare import compare_runs, verdict
from dfslab.results import RunDir
from dfslab.run import runtime_pairs
from dfslab.workloads import Measurement


def run_with(tmp_path: Path, name: str, values: list[float]) -> Path:
    path = tmp_path / name
    path.mkdir()
    RunDir(path).add(Measurement("radosbench", "bandwidth", v, "MB/s", {"mode": "write"}, rep) for rep, v in enumerate(values))
    return path


def test_runs_of_one_runtime_are_pooled(tmp_path):
    a1, a2 = run_with(tmp_path, "a1", [100, 102]), run_with(tmp_path, "a2", [98, 100])
    b1, b2 = run_with(tmp_path, "b1", [150, 152]), run_with(tmp_path, "b2", [148, 150])
    [row] = compare_runs([a1, a2], [b1, b2])
    assert row["n_a"] == 4 and row["n_b"] == 4 and row["runs_a"] == 2 and row["over"] == "runs"
    assert row["mean_a"] == pytest.approx(100) and row["mean_b"] == pytest.approx(150)
    assert row["ratio"] == pytest.approx(1.5) and row["significant"]
    [single] = compare_runs(a1, b1)  # one run each still works
    assert single["n_a"] == 2 and single["ratio"] == pytest.approx(151 / 101)
    assert single["over"] == "repetitions" and "do not see run-to-run variation" in verdict([single])
    assert "intervals over runs (2 and 2 per side" in verdict([row])


def test_runtime_pairs_group_an_abba_order_by_runtime():
    paths = [Path(p) for p in ("r1", "r2", "r3", "r4")]
    assert runtime_pairs(["local", "docker", "docker", "local"], paths) == [
        ("local", "docker", [Path("r1"), Path("r4")], [Path("r2"), Path("r3")])]
    assert runtime_pairs(["docker", "local"], paths[:2]) == [("docker", "local", [Path("r1")], [Path("r2")])]


# -- Does the interval keep its promise? Simulated through `compare_runs`, the code `dfslab
# compare` and the runtime comparison use, on run directories like real ones.
import math
import random

from dfslab.analysis import ratio_ci95

METRICS = 200


def simulated_runs(tmp_path: Path, label: str, n: int, rng: random.Random, cv: float, factor_b: float = 1.0):
    """Two run directories with METRICS bandwidth metrics of n repetitions each: log-normal
    noise of coefficient of variation `cv`; B's true value is factor_b times A's."""
    sigma = math.sqrt(math.log(1 + cv * cv))
    dirs = []
    for side, factor in (("a", 1.0), ("b", factor_b)):
        path = tmp_path / f"{label}-{side}"
        path.mkdir()
        RunDir(path).add(Measurement("fio", "bandwidth", 100 * factor * rng.lognormvariate(0, sigma), "MB/s",
                                     {"bs": m}, rep) for m in range(METRICS) for rep in range(n))
        dirs.append(path)
    return dirs


@pytest.mark.parametrize("n", [2, 3, 5, 10])
def test_null_comparisons_are_flagged_at_the_nominal_rate(tmp_path, n):
    rng = random.Random(n)
    flagged = tested = 0
    for trial in range(10):  # 2000 null comparisons per n
        a, b = simulated_runs(tmp_path, f"t{trial}", n, rng, cv=0.15)
        rows = compare_runs(a, b)
        assert len(rows) == METRICS and all(r["low"] is not None for r in rows)
        flagged += sum(r["significant"] for r in rows)
        tested += len(rows)
    # 5 % nominal; three binomial standard errors of 2000 draws is 1.5 points.
    assert flagged / tested <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / tested), flagged / tested


def test_a_real_twenty_percent_difference_is_found_at_n5(tmp_path):
    rng = random.Random(7)
    a, b = simulated_runs(tmp_path, "real", 5, rng, cv=0.05, factor_b=1.2)
    rows = compare_runs(a, b)
    found = sum(r["significant"] and r["low"] > 1 for r in rows) / len(rows)
    assert found >= 0.95, found
    assert all(0.9 < r["low"] and r["high"] < 1.5 for r in rows)


def test_no_interval_without_two_repetitions_per_side(tmp_path):
    a, b = run_with(tmp_path, "one-a", [100]), run_with(tmp_path, "one-b", [300, 310])
    [row] = compare_runs(a, b)
    assert row["low"] is None and not row["significant"]


# -- Runs of one spec differ by more than the repetitions of one run (each run is a fresh cluster
# at another hour of a shared machine). Simulated: a run effect as large as the repetition noise.

def runs_with_a_run_effect(tmp_path: Path, label: str, runs: int, reps: int, rng: random.Random,
                           run_sigma: float, rep_sigma: float) -> list[Path]:
    dirs = []
    for r in range(runs):
        path = tmp_path / f"{label}-{r}"
        path.mkdir()
        shift = [rng.gauss(0, run_sigma) for _ in range(METRICS)]  # this run's cluster and hour, per metric
        RunDir(path).add(Measurement("fio", "bandwidth", 100 * math.exp(shift[m] + rng.gauss(0, rep_sigma)), "MB/s",
                                     {"bs": m}, rep) for m in range(METRICS) for rep in range(reps))
        dirs.append(path)
    return dirs


@pytest.mark.parametrize("runs", [2, 3])
def test_null_comparisons_over_runs_keep_their_rate_where_pooled_repetitions_do_not(tmp_path, runs):
    rng = random.Random(runs)
    flagged = pooled_flagged = tested = 0
    for trial in range(5):  # 1000 null comparisons per number of runs
        a = runs_with_a_run_effect(tmp_path, f"a{trial}", runs, 3, rng, run_sigma=0.1, rep_sigma=0.1)
        b = runs_with_a_run_effect(tmp_path, f"b{trial}", runs, 3, rng, run_sigma=0.1, rep_sigma=0.1)
        rows = compare_runs(a, b)
        assert all(r["over"] == "runs" and r["runs_a"] == runs for r in rows)
        flagged += sum(r["significant"] for r in rows)
        tested += len(rows)
        # What the comparison did before: every repetition of every run as one independent value.
        values_a, values_b = by_metric(a), by_metric(b)
        pooled = [ratio_ci95(values_a[m], values_b[m])[1] for m in range(METRICS)]
        pooled_flagged += sum(lo > 1 or hi < 1 for lo, hi in pooled)
    bound = 0.05 + 3 * math.sqrt(0.05 * 0.95 / tested)
    print(f"runs {runs}: over runs {flagged / tested:.3f}, pooled repetitions {pooled_flagged / tested:.3f}")
    assert flagged / tested <= bound, flagged / tested
    assert pooled_flagged / tested > bound, pooled_flagged / tested  # why runs are the unit


def by_metric(runs: list[Path]) -> dict[int, list[float]]:
    values: dict[int, list[float]] = {}
    for run in runs:
        for r in RunDir(run).rows():
            values.setdefault(r["params"]["bs"], []).append(r["value"])
    return values


def test_the_cli_compares_several_runs_per_side_over_runs(tmp_path):
    from typer.testing import CliRunner

    from dfslab.cli import app
    a = [run_with(tmp_path, f"a{i}", [100 + i, 101 + i, 99 + i]) for i in range(2)]
    b = [run_with(tmp_path, f"b{i}", [150 + i, 151 + i, 149 + i]) for i in range(2)]
    res = CliRunner().invoke(app, ["compare", ",".join(map(str, a)), ",".join(map(str, b)), "--json"])
    assert res.exit_code == 0, res.output
    [row] = json.loads(res.output)
    assert row["over"] == "runs" and row["runs_a"] == row["runs_b"] == 2 and row["significant"]
    res = CliRunner().invoke(app, ["compare", f"{a[0]},{tmp_path / 'missing'}", str(b[0])])
    assert res.exit_code != 0 and "missing is not a run directory" in res.output
