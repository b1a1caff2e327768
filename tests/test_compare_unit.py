"""Comparisons across runs: one run against another, or each runtime's runs pooled (ABBA)."""

from pathlib import Path

import pytest

from dfslab.compare import compare_runs
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
    assert row["n_a"] == 4 and row["n_b"] == 4
    assert row["mean_a"] == pytest.approx(100) and row["mean_b"] == pytest.approx(150)
    assert row["ratio"] == pytest.approx(1.5) and row["significant"]
    [single] = compare_runs(a1, b1)  # one run each still works
    assert single["n_a"] == 2 and single["ratio"] == pytest.approx(151 / 101)


def test_runtime_pairs_group_an_abba_order_by_runtime():
    paths = [Path(p) for p in ("r1", "r2", "r3", "r4")]
    assert runtime_pairs(["local", "docker", "docker", "local"], paths) == [
        ("local", "docker", [Path("r1"), Path("r4")], [Path("r2"), Path("r3")])]
    assert runtime_pairs(["docker", "local"], paths[:2]) == [("docker", "local", [Path("r1")], [Path("r2")])]
