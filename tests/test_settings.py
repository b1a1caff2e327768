"""Cluster settings as sweep axes: each combination on a cluster that really has it (changed in
place where Ceph can, read back from every daemon; else a fresh cluster), each compared with the
first in the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conftest import dfslab
from dfslab import cluster

pytestmark = pytest.mark.cluster


def test_each_setting_gets_a_cluster_that_has_it_and_a_comparison(tmp_path):
    exp = {"name": "t-set", "repetitions": 2,
           "cluster": {"name": "t-set", "nodes": 2,
                       "ceph": {"replica_size": [1, 2], "osd_size": "4GiB", "pg_num": 8, "cephfs": False,
                                "conf": {"osd": {"osd_max_backfills": [3, 5]}}}},
           "baselines": {"network": False, "disk": False},
           "workloads": [{"type": "radosbench", "seconds": 2, "mode": ["write"], "threads": 4, "object_size": "1MiB"}]}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(exp, sort_keys=False))  # axes in the order written: replica size outermost
    try:
        res = dfslab("run", str(path))
    finally:
        cluster.down("t-set", missing_ok=True)
    reports = [Path(line.removeprefix("report: ")) for line in res.stdout.splitlines() if line.startswith("report: ")]
    assert len(reports) == 4 and "B/A" in res.stdout
    runs = [r.parent for r in reports]
    settings = [json.loads((r / "provenance.json").read_text())["settings"] for r in runs]
    assert [(s["ceph.replica_size"], s["ceph.conf.osd.osd_max_backfills"]) for s in settings] == [(1, 3), (1, 5), (2, 3), (2, 5)]
    # A run-time option changes in place (read back from both OSDs); a replica size needs a fresh cluster.
    applied = [s["applied"] for s in settings]
    assert applied[0] == applied[2] == "fresh cluster"
    assert applied[1].startswith("changed in place: osd osd_max_backfills=5 (read back from 2 daemon(s))")
    assert applied[3].startswith("changed in place")
    # The pools really had each replica size: what the cluster said at the end of each run.
    assert [json.loads((r / "status.json").read_text())["write_amplification"] for r in runs] == [1, 1, 2, 2]
    comparison = json.loads((runs[-1] / "comparison.json").read_text())
    assert comparison["what"] == "settings" and "ceph.replica_size=2" in comparison["runtime"]
    html = reports[-1].read_text()
    assert "<h2>Settings ceph.replica_size=2" in html and "against settings ceph.replica_size=1" in html
    ranking = json.loads((runs[-1] / "settings.json").read_text())["ranking"]
    assert ranking and all(len(r["ranking"]) == 4 for r in ranking)
    assert "<h2>Settings ranked</h2>" in html
    for param in ("ceph.replica_size", "ceph.conf.osd.osd_max_backfills"):  # one figure per swept parameter
        assert f"<figcaption>{param}: each headline metric" in html
    assert cluster.leftovers("t-set") == []


# docs/experiments.md's tune line, run verbatim below (tests/test_docs_commands.py counts it)
TUNE_LINE = 'dfslab tune examples/tuning.yaml --maximize "radosbench mode=write bandwidth" --budget 8min'


def test_tune_searches_applies_in_place_and_confirms_the_winner_against_the_default():
    """The docs' line as a reader types it, from the repository root with no DFSLAB_* set: the
    example's 4 settings searched on one cluster, the winner measured again beside the default."""
    import shutil
    from conftest import REPO
    from test_readme import run_dir_of, sh
    assert not Path("/var/lib/dfslab/clusters/tuning").exists(), "a cluster named tuning is up"
    made = []
    try:
        res = sh(TUNE_LINE, timeout=1500)
        console = res.stdout + res.stderr  # the table and verdict go to the terminal; paths to stdout
        assert "best: " in console and "best/default = " in console
        run = run_dir_of(res.stdout)
        tune = json.loads((run / "tune.json").read_text())
        compared = json.loads((run / "comparison.json").read_text())
        # what the search made: each setting's run and the final comparison's four
        made += [run.parent / name for name in {t["run"] for t in tune["trials"] if t["run"]}
                 | {*compared["baseline_runs"], *compared["runs"]}]
        trials = tune["trials"]
        for t in trials:
            print(t["number"], t["settings"], t["values"], t["state"], t["applied"], f"{t['seconds']:.1f} s")
        print(f"tune: {tune['elapsed_seconds']:.0f} s; confirmation {tune['confirmation']}")
        assert tune["search"]["combinations"] == 4 and tune["search"]["stopped"] == "every combination measured"
        assert len(trials) == 4 and {t["state"] for t in trials} <= {"complete", "pruned"}
        assert trials[0]["state"] == "complete" and len(trials[0]["values"]) == 3  # tune's --reps 3 by default
        # one cluster for the whole search: the first setting fresh, every later one changed in place
        assert trials[0]["applied"] == "fresh cluster"
        assert all(t["applied"].startswith("changed in place") or t["applied"] == "unchanged" for t in trials[1:])
        assert any("client rbd_cache=" in t["applied"] for t in trials[1:])
        # the winner is the best complete setting, measured again beside the default
        complete = [t for t in trials if t["state"] == "complete"]
        assert tune["best"] == max(complete, key=lambda t: t["mean"])["settings"]
        assert tune["default"] == {"ceph.conf.osd.bluestore_throttle_bytes": "default", "ceph.conf.client.rbd_cache": "default"}
        confirmation = tune["confirmation"]
        assert len(confirmation["default"]) == 2 and len(confirmation["best"]) == 2 and confirmation["low"] is not None
        best_spec = yaml.safe_load((run / "best-spec.yaml").read_text())
        osd = best_spec["ceph"]["conf"]["osd"]
        assert osd["bluestore_throttle_bytes"] == tune["best"]["ceph.conf.osd.bluestore_throttle_bytes"]
        assert yaml.safe_load((run / "best-experiment.yaml").read_text())["cluster"]["ceph"]["conf"] == best_spec["ceph"]["conf"]
        html = (run / "report.html").read_text()
        assert "<h2>Tuning: maximize radosbench mode=write bandwidth</h2>" in html and "best / default" in html
        assert compared["baseline_runtime"].startswith("default (")
        assert cluster.leftovers("tuning") == []
    finally:
        if Path("/var/lib/dfslab/clusters/tuning").exists():
            sh("dfslab down tuning")
        for path in made:
            shutil.rmtree(path, ignore_errors=True)
