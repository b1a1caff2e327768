"""The promise of docs/architecture.md, checked: a filesystem, a runtime and a tool are each one
module (or package) plus a registration line. tests/standin/ holds a stand-in of each, written
against dfslab's public interfaces only (`Backend`, `Runtime`, `Workload`), and
tests/standin/register.py adds them with the registration lines alone; `dfslab run` then deploys
the stand-in cluster, runs a step of the stand-in tool on it (dd: real I/O on its volume),
writes the run directory and tears the cluster down. The stand-ins stand in for nothing a
measurement claims: they are the shape of an addition, not storage."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

STANDIN = Path(__file__).resolve().parent / "standin"
SRC = Path(__file__).resolve().parent.parent / "src"


def _dfslab_with_standins(args: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFSLAB_")}
    env.update(DFSLAB_HOME=str(home), PYTHONPATH=os.pathsep.join([str(STANDIN), str(SRC)]))
    return subprocess.run([sys.executable, str(STANDIN / "register.py"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_a_filesystem_runtime_and_tool_registered_from_outside_run_a_step_end_to_end(tmp_path):
    exp = tmp_path / "standin.yaml"
    exp.write_text(yaml.safe_dump({
        "name": "standin", "repetitions": 1, "baselines": {"network": False, "disk": False},
        "cluster": {"name": "t-standin", "filesystem": "standin", "runtime": "standin", "nodes": 1},
        "workloads": [{"type": "ddwrite", "mib": 8}]}))
    home = tmp_path / "home"
    res = _dfslab_with_standins(["run", str(exp)], tmp_path, home)
    assert res.returncode == 0, res.stdout + res.stderr
    [run] = list((tmp_path / "runs").iterdir())
    with open(run / "results.csv") as fh:
        rows = {r["metric"]: float(r["value"]) for r in csv.DictReader(fh) if r["workload"] == "ddwrite"}
    # the number is dd's: its own summary line, kept untouched in raw/
    [raw] = list((run / "raw").glob("dd-*.txt"))
    moved, seconds = re.search(r"^(\d+) bytes .* copied, ([\d.]+) s", raw.read_text(), re.M).groups()
    assert rows["bytes"] == int(moved) == 8 * 2**20
    assert abs(rows["bandwidth"] - int(moved) / float(seconds) / 1e6) < 1e-6 * rows["bandwidth"], rows
    assert "ddwrite" in (run / "report.html").read_text()
    assert json.loads((run / "status.json").read_text())["health"] == "HEALTH_OK"
    assert not (home / "clusters" / "t-standin").exists()  # torn down, its volume with it
    # the stand-in filesystem's section is in the spec, checked as a real one is
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"name": "t-bad", "filesystem": "standin", "runtime": "standin", "nodes": 1,
                                   "standin": {"directory": "../x"}}))
    res = _dfslab_with_standins(["up", str(bad)], tmp_path, home)
    assert res.returncode != 0 and "standin.directory" in res.stderr, res.stdout + res.stderr
    # and what a cluster of it can run is judged from the same declarations
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "t-cap", "filesystem": "standin", "runtime": "standin", "nodes": 1}))
    cells = json.loads(_dfslab_with_standins(["capabilities", str(spec), "--json"], tmp_path, home).stdout)
    said = {c["capability"]: c["ok"] for c in cells}
    assert said["ddwrite"] and said["fio target=fs"] and not said["radosbench"], said


def test_the_stand_in_runtime_is_compared_with_local_in_one_runtimes_run(tmp_path):
    """A runtime registered after dfslab was imported is one an experiment's `runtimes:` may list:
    the stand-in filesystem runs on the stand-in runtime, then on local (network namespaces), and
    the second is compared with the first, as local is with docker."""
    exp = tmp_path / "both.yaml"
    exp.write_text(yaml.safe_dump({
        "name": "standin-both", "runtimes": ["standin", "local"], "repetitions": 2,
        "baselines": {"network": False, "disk": False},
        "cluster": {"name": "t-standin2", "filesystem": "standin", "nodes": 1, "network": {"subnet": "10.77.7.0/24"}},
        "workloads": [{"type": "ddwrite", "mib": 8}]}))
    home = tmp_path / "home"
    res = _dfslab_with_standins(["run", str(exp)], tmp_path, home)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    reports = [Path(line.split("report: ")[1]) for line in res.stdout.splitlines() if line.startswith("report: ")]
    assert [r.parent.name.rsplit("-", 1)[1] for r in reports] == ["standin", "local"], reports
    comparison = json.loads((reports[1].parent / "comparison.json").read_text())
    assert comparison["baseline_runtime"] == "standin" and comparison["runtime"] == "local"
    bandwidth = [r for r in comparison["rows"] if r["workload"] == "ddwrite" and r["metric"] == "bandwidth"]
    assert len(bandwidth) == 1 and bandwidth[0]["reps_a"] == bandwidth[0]["reps_b"] == 2, bandwidth
    status = json.loads((reports[1].parent / "status.json").read_text())
    assert status["runtime"] == "local" and status["health"] == "HEALTH_OK"
    assert not list((home / "clusters").glob("t-standin2*"))  # both torn down
