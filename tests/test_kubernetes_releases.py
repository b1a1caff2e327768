"""A newer Ceph release on runtime kubernetes, as docs/releases.md shows it (its lines run verbatim,
as a reader types them: no DFSLAB_* set, state in /var/lib/dfslab, runs in ./runs): Tentacle up
under Rook v1.18 from an image of Tentacle's root, every daemon Tentacle's, the quick workloads
measured from storage with Tentacle's own tools, nothing left after down.

Reef takes the same path (its root's image, the same Rook); Tentacle is the one run here: the
newest, whose ceph-volume needed its root patched (no udev records on these nodes)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from test_readme import run_dir_of, sh
from dfslab.registry import release_named
from dfslab.runtime import roots

pytestmark = [pytest.mark.cluster, pytest.mark.kubernetes]  # needs the Kubernetes and Rook build (scripts/build-kubernetes.sh)
TENTACLE = release_named("ceph", "tentacle")
# docs/releases.md's Kubernetes lines, run verbatim here (tests/test_docs_commands.py counts them)
DOCS_BLOCK = ["dfslab up examples/rook-tentacle.yaml", "dfslab exec rook-tentacle -- ceph versions",
              "dfslab run examples/quick-any.yaml --cluster rook-tentacle", "dfslab down rook-tentacle"]
STATE = Path("/var/lib/dfslab/clusters/rook-tentacle")


@pytest.fixture(scope="module")
def tentacle_on_kubernetes():
    assert not STATE.exists(), "a cluster named rook-tentacle is up"
    up = sh(DOCS_BLOCK[0], timeout=1200)
    try:
        yield up
    finally:
        if STATE.exists():
            sh(DOCS_BLOCK[3], timeout=600)
    assert not STATE.exists()


def test_every_daemon_is_tentacles_under_rook_v1_18(tentacle_on_kubernetes):
    said = tentacle_on_kubernetes.stderr
    assert "is up" in said and "operator (v1.18.8)" in said, said[-2000:]
    versions = json.loads(sh(DOCS_BLOCK[1] + " --format json").stdout)
    for kind in ("mon", "mgr", "osd", "mds"):
        assert list(versions[kind]) and all(f"{TENTACLE.version} " in v and "tentacle" in v for v in versions[kind]), versions
    assert sum(versions["osd"].values()) == 3
    info = json.loads(sh("dfslab status rook-tentacle --json").stdout)
    assert info["health"] == "HEALTH_OK", info.get("checks")
    # the daemons' image is the one made of Tentacle's root as it is built now (a rebuilt root is a new image)
    image = json.loads((STATE / "state.json").read_text())["k8s_images"]["rook"]
    assert image.startswith(f"dfslab/rook:{TENTACLE.key}-"), image


def test_quick_workloads_measure_tentacle_from_storage(tentacle_on_kubernetes):
    run_dir = run_dir_of(sh(DOCS_BLOCK[2], timeout=900).stdout)
    try:
        provenance = json.loads((run_dir / "provenance.json").read_text())
        assert f"ceph version {TENTACLE.version}" in provenance["filesystem_versions"]["ceph"], provenance
        root_fio = roots.read_manifest(TENTACLE)["versions"]["fio"].split("-")[0]
        assert provenance["fio_version"] == f"fio-{root_fio}", provenance["fio_version"]  # the root's fio, not the host's
        with open(run_dir / "results.csv") as fh:
            rows = list(csv.DictReader(fh))
        ratios = {(r["workload"], r["params"]): float(r["value"]) for r in rows if r["metric"] == "from_storage"}
        assert len(ratios) >= 6 and all(0.9 <= v <= 1.3 for v in ratios.values()), ratios
        # rados bench's write row: its raw "Bandwidth (MB/sec)" is MiB/s; the table's MB/s
        write = next(float(r["value"]) for r in rows if r["workload"] == "radosbench" and r["metric"] == "bandwidth"
                     and json.loads(r["params"]).get("mode") == "write")
        raw = next(p for p in (run_dir / "raw").iterdir() if p.name.startswith("radosbench") and "write" in p.name
                   and p.suffix == ".txt")
        mib = float(next(line for line in raw.read_text().splitlines()
                         if line.startswith("Bandwidth (MB/sec)")).split(":")[1])
        assert write == pytest.approx(mib * 1.048576, rel=0.01), (write, mib)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
