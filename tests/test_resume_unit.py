"""What --resume keeps of an interrupted attempt: a step is done when its rows are in results.csv;
an interval whose rows never landed (a kill between the two writes) is dropped and the step runs
again, so every measured step has exactly one interval."""

from __future__ import annotations

from dfslab import run as run_mod
from dfslab.experiment import parse_experiment
from dfslab.results import RunDir
from dfslab.workloads import Measurement

NAME = "t-resume-unit"
EXPERIMENT = {"name": NAME, "cluster": {"name": NAME, "nodes": 1, "ceph": {"replica_size": 1, "cephfs": False}},
              "workloads": [{"type": "radosbench", "seconds": [1, 2], "mode": ["write"]}]}


def interval(label: str, rep: int, step: str | None, error: str | None = None) -> dict:
    iv = {"label": label, "workload": "radosbench", "repetition": rep, "start": 0.0, "end": 1.0, "error": error,
          "headlines": [], "rows": 0 if error else 1, "attempt": 1}
    return iv if step is None else {**iv, "step": step}


def test_an_interval_without_its_rows_is_dropped_and_its_step_runs_again(tmp_path):
    exp = parse_experiment(EXPERIMENT, tmp_path)
    run = RunDir.create("unit", tmp_path)
    run.add([Measurement("radosbench", "bandwidth", 100.0, "MB/s", {"seconds": 1}, 0)], step="a rep 0")
    run.add([Measurement("radosbench", "bandwidth", 90.0, "MB/s", {"seconds": 3}, 0)], step="c rep 0")
    run.write_json("intervals.json", [
        interval("a", 0, "a rep 0"),
        interval("b", 0, "b rep 0", error="rados bench failed"),  # failed: kept, and it runs again
        interval("c", 0, None),  # a run made before intervals named their step: found by label and rep
        interval("d", 0, "d rep 0"),  # killed after its interval was saved, before its rows: dropped
    ])
    _, done, intervals, attempt = run_mod._resumed(run.path, exp, NAME, lambda *a: None)
    assert done == {"a rep 0", "c rep 0"}
    assert [iv["label"] for iv in intervals] == ["a", "b", "c"]
    assert attempt == 2

