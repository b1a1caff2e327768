"""dfslab run --resume: after Ctrl-C or kill -9 in the middle of a sweep, the completed steps are
kept, the rest run on a fresh cluster and are appended; no step is lost or run twice, and
nothing of the interrupted attempt is left."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from conftest import DFSLAB, REPO, ctrl_c_as_at_a_terminal, dfslab
from dfslab import cluster

pytestmark = pytest.mark.cluster

NAME = "t-resume"
EXPERIMENT = {"name": NAME, "cluster": {"name": NAME, "nodes": 1,
                                        "ceph": {"replica_size": 1, "cephfs": False, "osd_size": "6GiB", "pg_num": 8}},
              "baselines": {"network": False, "disk": False},
              "workloads": [{"type": "radosbench", "seconds": [1, 2, 3, 4], "mode": ["write"], "threads": 1,
                             "object_size": "1MiB"}]}
STEPS = 4


def steps_measured(run: Path) -> Counter:
    with open(run / "results.csv") as fh:
        return Counter(r["step"] for r in csv.DictReader(fh) if r["metric"] == "bandwidth" and not r["t"])


def interrupted_run(tmp_path: Path, sig: int) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(EXPERIMENT))
    # Runs of its own: the run is found while it runs (no report line yet), in a directory that
    # holds nothing else, never by listing one other tests write into.
    runs = tmp_path / "runs"
    proc = subprocess.Popen([*DFSLAB, "run", str(path)], cwd=REPO, env={**os.environ, "DFSLAB_RUNS": str(runs)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=ctrl_c_as_at_a_terminal)
    deadline = time.monotonic() + 300
    run = None
    while time.monotonic() < deadline:
        if runs.is_dir() and any(runs.iterdir()):
            (run,) = runs.iterdir()
            if (run / "results.csv").exists() and len(steps_measured(run)) >= 2:
                break
        time.sleep(0.2)
    assert run is not None and len(steps_measured(run)) >= 2, "the run did not get two steps done"
    proc.send_signal(sig)
    proc.wait(timeout=300)
    assert len(steps_measured(run)) < STEPS, "the run finished before it could be interrupted"
    return run


def resume_and_check(run: Path) -> None:
    res = dfslab("run", "--resume", str(run))
    assert "report: " in res.stdout
    measured = steps_measured(run)
    assert len(measured) == STEPS and set(measured.values()) == {1}, measured  # none lost, none twice
    intervals = json.loads((run / "intervals.json").read_text())
    assert {iv["attempt"] for iv in intervals} == {1, 2}
    assert len([iv for iv in intervals if iv["workload"] == "radosbench" and not iv["error"]]) == STEPS
    prov = json.loads((run / "provenance.json").read_text())
    assert prov["failures"] == [] and prov["attempts"][-1]["attempt"] == 2
    assert "Resumed run: attempt 1" in (run / "report.html").read_text()
    assert cluster.leftovers(NAME) == []


def test_resume_after_ctrl_c(tmp_path):
    try:
        run = interrupted_run(tmp_path, signal.SIGINT)
        assert cluster.leftovers(NAME) == []  # Ctrl-C tears down what the run made
        resume_and_check(run)
    finally:
        cluster.down(NAME, missing_ok=True)


def test_resume_after_kill_9(tmp_path):
    try:
        run = interrupted_run(tmp_path, signal.SIGKILL)
        assert cluster.leftovers(NAME)  # kill -9 leaves the cluster; --resume removes it first
        resume_and_check(run)
    finally:
        cluster.down(NAME, missing_ok=True)


def test_resume_refuses_what_it_cannot_resume(tmp_path):
    res = dfslab("run", "--resume", str(tmp_path), check=False)
    assert res.returncode == 2 and "not a run directory" in res.stdout + res.stderr
    (tmp_path / "experiment.yaml").write_text(yaml.safe_dump(EXPERIMENT))
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump({**EXPERIMENT["cluster"], "ceph": {"replica_size": 9}}))
    res = dfslab("run", "--resume", str(tmp_path), check=False)
    assert res.returncode == 2 and "replica_size" in res.stdout + res.stderr
    res = dfslab("run", "--resume", str(tmp_path / "experiment.yaml"), check=False)
    assert res.returncode == 2 and "--resume takes a run directory" in res.stdout + res.stderr
    assert not list(tmp_path.glob("results.*"))  # refused before anything was written
