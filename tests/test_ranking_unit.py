"""Ranking swept settings: a winner is named only when best / runner-up is "different" over
runs (dfslab.ratios); checked on fixed data and by simulation with a run effect, at the run
counts the examples use."""

from __future__ import annotations

import math

import pytest
import random

from dfslab.compare import rank, rank_settings
from dfslab.results import RunDir
from dfslab.workloads import Measurement

KEY = ("fio", "rw=randwrite", "iops", "op/s")
LAT = ("fio", "", "latency_avg", "ms")


def test_identical_settings_name_no_winner():
    runs = [[100.0, 103.0, 98.0], [101.0, 99.0, 100.0]]
    [row] = rank({"a": {KEY: runs}, "b": {KEY: runs}})
    assert row["winner"] is None and len(row["ranking"]) == 2


def test_a_clear_difference_over_runs_names_the_best_and_latency_ranks_lower_first():
    rows = rank({"slow": {KEY: [[100.0, 101.0], [99.0, 98.0]], LAT: [[5.0, 5.1], [4.9, 5.0]]},
                 "fast": {KEY: [[150.0, 152.0], [149.0, 151.0]], LAT: [[3.0, 3.1], [2.9, 3.0]]}})
    by_metric = {r["metric"]: r for r in rows}
    assert by_metric["iops"]["winner"] == "fast" and by_metric["iops"]["best_over_runner_up"] > 1.4
    assert by_metric["latency_avg"]["winner"] == "fast"
    assert [e["settings"] for e in by_metric["iops"]["ranking"]] == ["fast", "slow"]
    assert by_metric["iops"]["ranking"][0]["over"] == "runs"


def test_one_run_per_setting_names_no_winner_however_clear():
    """Repetitions inside one run cannot see how much a fresh cluster differs: no winner, and why."""
    [row] = rank({"slow": {KEY: [[100.0, 101.0, 99.0]]}, "fast": {KEY: [[150.0, 152.0, 149.0]]}})
    assert row["winner"] is None and "one run per side" in row["why"]
    assert row["ranking"][0]["settings"] == "fast" and row["ranking"][0]["over"] == "repetitions of one run"


def test_picking_the_best_of_equal_settings_rarely_names_a_winner():
    """Settings with the same true throughput, a run effect as large as the repetition noise
    (10 % each), 2-3 runs of 3 repetitions per setting: a winner about 5 % of the time, no more."""
    rng = random.Random(7)

    def runs(n: int) -> list[list[float]]:
        out = []
        for _ in range(n):
            shift = rng.gauss(0, 0.1)
            out.append([100 * math.exp(shift + rng.gauss(0, 0.1)) for _ in range(3)])
        return out

    for settings, n in ((2, 2), (2, 3), (3, 3)):
        trials = 1000
        named = sum(rank({f"s{i}": {KEY: runs(n)} for i in range(settings)})[0]["winner"] is not None
                    for _ in range(trials))
        assert named / trials < 0.08, (settings, n, named / trials)


def test_rank_settings_reads_run_directories(tmp_path):
    groups = {}
    for label, values in (("bs=4k", [[10.0, 11.0], [10.5, 10.2]]), ("bs=1M", [[100.0, 101.0], [99.0, 102.0]])):
        groups[label] = []
        for i, reps in enumerate(values):
            run = RunDir.create(f"{label.replace('=', '')}-{i}", tmp_path)
            run.add([Measurement("fio", "bandwidth", v, "MB/s", {"rw": "write"}, j) for j, v in enumerate(reps)])
            groups[label].append(run.path)
    [row] = rank_settings(groups)
    assert row["winner"] == "bs=1M" and row["ranking"][0]["n"] == 2


def test_a_setting_a_cache_served_is_marked_in_the_ranking(tmp_path):
    groups = {}
    for label, values, share in (("cache=on", [[900.0, 910.0], [905.0, 915.0]], 0.05),
                                 ("cache=off", [[150.0, 151.0], [149.0, 152.0]], 1.01)):
        groups[label] = []
        for i, reps in enumerate(values):
            run = RunDir.create(f"{label.replace('=', '')}-{i}", tmp_path)
            params = {"rw": "randread"}
            run.add([*(Measurement("fio", "bandwidth", v, "MB/s", params, j) for j, v in enumerate(reps)),
                     *(Measurement("fio", "from_storage", share, "ratio", params, j) for j in range(len(reps)))])
            groups[label].append(run.path)
    [row] = rank_settings(groups)
    assert row["winner"] == "cache=on" and row["not_from_storage"] == ["cache=on"]
    assert [e["from_storage"] for e in row["ranking"]] == [pytest.approx(0.05), pytest.approx(1.01)]
