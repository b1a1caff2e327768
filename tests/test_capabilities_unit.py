"""`dfslab capabilities`: the matrix is what a run is refused by, cell for cell. Each workload
cell is checked against `run.check_against_cluster` with a one-step experiment of that workload
and target on that cluster's spec, so the command cannot say yes where a run is refused (or the
reverse); no cluster is started."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from conftest import REPO
from dfslab.capabilities import capability_names, matrix, samples
from dfslab.cli import app
from dfslab.experiment import load_experiment, parse_experiment
from dfslab.run import check_against_cluster
from dfslab.spec import SpecError, load_spec, parse_spec

KINDS = {"local", "docker", "kubernetes", "kubernetes-yours", "external-ceph", "external-posix", "external-s3"}


def test_json_names_every_kind_and_a_reason_for_every_no():
    res = CliRunner().invoke(app, ["capabilities", "--json"])
    assert res.exit_code == 0, res.output
    cells = json.loads(res.output)
    assert {c["cluster"] for c in cells} == KINDS
    assert all(set(c) == {"cluster", "filesystem", "capability", "ok", "reason"} for c in cells)
    refused = [c for c in cells if not c["ok"]]
    assert refused and all(c["reason"].strip() for c in refused)
    # every kind is judged on every capability, once per filesystem it is judged with
    per = {(c["cluster"], c["filesystem"]): [] for c in cells}
    for c in cells:
        per[(c["cluster"], c["filesystem"])].append(c["capability"])
    assert all(names == capability_names() for names in per.values())


def _one_step(name: str, picked: str | None) -> dict:
    key, _, value = (picked or "").partition("=")
    step = {"type": name, **({key: value} if picked else {}), **({"rw": "write"} if name == "fio" else {})}
    return {"name": "probe", "workloads": [step], "repetitions": 1, "baselines": {"network": False, "disk": False}}


@pytest.mark.parametrize("kind,data", samples(), ids=[f"{k}-{d['filesystem']}" for k, d in samples()])
def test_every_workload_cell_is_what_the_run_check_says(kind, data):
    try:
        spec = parse_spec({"name": "probe", **data})
    except SpecError:
        assert not any(c.ok for c in matrix() if (c.cluster, c.filesystem) == (kind, data["filesystem"]))
        return
    disagree = []
    for cell in matrix([(kind, spec)]):
        name, _, picked = cell.capability.partition(" ")
        if name in ("deploy", "integrity", "ledger", "watch", "fault"):
            continue
        exp = parse_experiment(_one_step(name, picked or None), Path(REPO), running=spec)
        try:
            check_against_cluster(exp, spec)
            refused = None
        except SpecError as err:
            refused = "; ".join(m for _, m in err.problems)
        if cell.ok != (refused is None):
            disagree.append(f"{cell.capability}: capabilities says {cell.ok} ({cell.reason}), the run check {refused}")
    assert disagree == []


def test_a_fault_the_runtime_cannot_inject_is_refused_before_the_run_not_at_the_inject():
    # drain is a Kubernetes event: on runtime local it used to fail only when injected, mid-run
    spec = parse_spec({"name": "probe", "nodes": 3})
    data = {**_one_step("radosbench", None), "faults": [{"kind": "drain", "target": "node2", "at": "2s", "during": 0}]}
    exp = parse_experiment(data, Path(REPO), running=spec)
    with pytest.raises(SpecError, match=r"faults\[0\]\.kind.*fault drain: for a filesystem in Kubernetes' pods"):
        check_against_cluster(exp, spec)
    cell = next(c for c in matrix([("local", spec)]) if c.capability == "fault drain")
    assert not cell.ok and "Kubernetes' pods" in cell.reason


def test_on_a_kubernetes_you_run_the_docs_example_says_what_it_refuses_and_why():
    res = CliRunner().invoke(app, ["capabilities", f"{REPO}/examples/rook-yours.yaml", "--json"])
    cells = {c["capability"]: c for c in json.loads(res.output)}
    assert cells["radosbench"]["ok"] and cells["fio target=rbd"]["ok"]
    # CephFS through the client Jobs' own mounts (sql: datadir, server and load in one Job's pod)
    assert all(cells[f"{work} target=fs"]["ok"] for work in ("fio", "metadata", "filegrid", "sql", "parallel"))
    # the pushdown worker, the object class and the s3 load (with a gateway) are in dfslab's image
    assert cells["pushdown where=storage"]["ok"] and cells["pushdown where=client"]["ok"]
    assert not cells["s3"]["ok"] and "ceph.rgw" in cells["s3"]["reason"]
    gateway = yaml.safe_load(Path(f"{REPO}/examples/rook-yours.yaml").read_text())
    gateway["ceph"]["rgw"] = 1
    assert next(c for c in matrix([("gateway", parse_spec(gateway))]) if c.capability == "s3").ok
    # the checksummed writer and read-back run in the toolbox pod (dfslab's image holds them);
    # faults only with the owner's consent, and none that acts on what is not dfslab's
    assert cells["integrity"]["ok"]
    assert not cells["fault pod"]["ok"] and "kubernetes.allow_faults" in cells["fault pod"]["reason"]
    assert not cells["fault nodeloss"]["ok"] and "which are yours" in cells["fault nodeloss"]["reason"]
    consented = yaml.safe_load(Path(f"{REPO}/examples/rook-yours.yaml").read_text())
    consented["kubernetes"]["allow_faults"] = ["pod"]
    cell = next(c for c in matrix([("yes", parse_spec(consented))]) if c.capability == "fault pod")
    assert cell.ok
    # each client node's bytes, through the toolbox pod on it (one on every client node)
    two = yaml.safe_load(Path(f"{REPO}/examples/rook-yours.yaml").read_text())
    two["clients"], two["kubernetes"]["clients"] = 2, ["worker4", "worker5"]
    assert cells["ledger"]["ok"] and next(c for c in matrix([("two", parse_spec(two))]) if c.capability == "ledger").ok


def test_every_run_the_docs_show_on_a_cluster_of_the_readers_passes_its_check():
    # docs/kubernetes.md's line against rook-yours cannot run here: its check can (no cluster needed)
    from test_docs_commands import COSTLY
    runs = [line.split() for line in COSTLY if line.startswith("dfslab run ") and " --cluster " in line]
    assert runs
    for argv in runs:
        spec = load_spec(f"{REPO}/examples/{argv[argv.index('--cluster') + 1]}.yaml")
        check_against_cluster(load_experiment(f"{REPO}/{argv[2]}", running=spec), spec)
    # and what the docs' cluster of yours cannot run is refused there, for the reason capabilities gives
    spec = load_spec(f"{REPO}/examples/rook-yours.yaml")
    drain = {"name": "drain-yours", "repetitions": 1, "workloads": [{"type": "radosbench"}],
             "faults": [{"kind": "drain", "target": "worker2", "during": 0, "at": "1s"}]}
    with pytest.raises(SpecError, match=r"faults\[0\]\.kind: fault drain: not on a Kubernetes you run.*every pod of your node"):
        check_against_cluster(parse_experiment(drain, Path(REPO), running=spec), spec)
    refused = {c["capability"]: c["reason"] for c in json.loads(CliRunner().invoke(
        app, ["capabilities", f"{REPO}/examples/rook-yours.yaml", "--json"]).output) if not c["ok"]}
    assert "which are yours" in refused["fault nodeloss"] and "other Rook clusters" in refused["fault operator"]
    # what dfslab's fault agent injects (the daemons' processes, their network) needs the owner's consent only
    consent = [f"fault {kind}" for kind in ("kill", "stop", "node", "partition", "degrade")]
    assert all("kubernetes.allow_faults" in refused[cell] for cell in consent)
    consented = yaml.safe_load(Path(f"{REPO}/examples/rook-yours.yaml").read_text())
    consented["kubernetes"]["allow_faults"] = ["pod", "out", "fill", "kill", "stop", "node", "partition", "degrade"]
    cells = {c.capability: c for c in matrix([("all", parse_spec(consented))])}
    faults_refused = sorted(name for name, c in cells.items() if name.startswith("fault ") and not c.ok)
    # only what acts on what is not dfslab's, what runs on no Kubernetes, and another filesystem's kind
    assert faults_refused == ["fault brick", "fault drain", "fault nodeloss", "fault operator", "fault upgrade"], faults_refused
    assert "a new release is a new image" in cells["fault upgrade"].reason
