"""The docs' command lines, run verbatim as a reader types them: from the repository root, with none
of the DFSLAB_* variables the rest of the suite sets (state in /var/lib/dfslab, runs in ./runs).

A line with a placeholder (NAME, EXPERIMENT.yaml, runs/<id>/, [optional]) is a synopsis: it cannot
run as written and is checked against the CLI (tests/test_docs_unit.py). Every other line is a
command and must be in one of four lists here: run verbatim (RUN; RUN_ELSEWHERE by the test of
what they do), run verbatim as its own `--dry-run`
(spec and experiment validated, every step planned, nothing started: DRY_RUN), or too costly for the suite with
the reason (COSTLY: a Kubernetes cluster of the reader's). A new command in the docs that is
in none of them fails test_every_docs_command_is_run_or_listed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, metric_rows
from test_docs_unit import _doc_commands
from test_docker import DOCS_BLOCK as DOCKER_BLOCK
from test_kubernetes import DOCS_BLOCK as ROOK_K8S_BLOCK
from test_kubernetes_gluster import DOCS_BLOCK as GLUSTER_K8S_BLOCK
from test_kubernetes_moosefs import DOCS_BLOCK as MOOSEFS_K8S_BLOCK
from test_kubernetes_releases import DOCS_BLOCK as RELEASES_K8S_BLOCK
from test_releases import (DOCS_BLOCK as RELEASES_BLOCK, GLUSTER_11_LINE, GLUSTER_UPGRADE_LINE, MOOSEFS_4_LINE,
                           MOOSEFS_UPGRADE_LINE, UPGRADE_LINE)
from test_settings import TUNE_LINE
from test_readme import run_dir_of, sh, user_env

# A word in capitals outside quotes (NAME, EXPERIMENT.yaml, B.yaml), <id>, or [optional].
PLACEHOLDER = re.compile(r"\b[A-Z][A-Z_]*\b|<[^>]+>|\[")


def _placeholder(line: str) -> bool:
    return bool(PLACEHOLDER.search(re.sub(r'"[^"]*"', '""', line)))

# Run verbatim, in this order, from the repository root (docs page, its lines).
RUN = {
    "getting-started.md": ["dfslab up examples/ceph-small.yaml", "dfslab runs", "dfslab list"],
    "pushdown.md": [
        "dfslab data load small --rows 1000000 --objects 16",
        "dfslab data load small --from trips.parquet --name trips",
        'dfslab query small "SELECT id, a FROM ds WHERE c < 0.01" --where storage',
        'dfslab query small "SELECT cat, count(*), avg(a), max(qty) FROM ds WHERE c < 0.1 GROUP BY cat" --where client',
    ],
    "spec.md": ["dfslab up examples/gluster-small.yaml", "dfslab status gsmall", "dfslab scale gsmall --add-bricks 3",
                "dfslab fault gsmall brick node2", "dfslab exec gsmall --node node1 -- gluster volume heal dfslab info",
                "dfslab up examples/moosefs-small.yaml", "dfslab status msmall", "dfslab fault msmall kill chunkserver.node2"],
    "kubernetes.md": ["dfslab render examples/rook-yours.yaml -o rook/ --image registry.example.org/dfslab-rook:1",
                      "dfslab render examples/external-k8s-mount.yaml -o site/ --image registry.example.org/dfslab-rook:1"],
    # 94 s and 88 s here (each up, 12 fio runs of 4 s, down)
    "measurements.md": ["dfslab run examples/files-ceph.yaml", "dfslab run examples/files-gluster.yaml"],
}
# The page's Rook, GlusterFS and MooseFS blocks are run verbatim by the Kubernetes tests
# (test_kubernetes.py, test_kubernetes_gluster.py, test_kubernetes_moosefs.py), whose module fixture
# is that cluster (the GlusterFS block's faults run replaces a test of the same faults).
# The docker page's first lines likewise, by test_docker.py before its own docker cluster is up;
# the tune line by test_settings.py (it replaces a tune of an experiment of the test's own).
RUN_ELSEWHERE = {"kubernetes.md": [*ROOK_K8S_BLOCK, *GLUSTER_K8S_BLOCK, *MOOSEFS_K8S_BLOCK], "docker.md": DOCKER_BLOCK, "experiments.md": [TUNE_LINE],
                 "releases.md": [*RELEASES_BLOCK, *RELEASES_K8S_BLOCK, MOOSEFS_4_LINE, GLUSTER_11_LINE, UPGRADE_LINE, MOOSEFS_UPGRADE_LINE,
                                 GLUSTER_UPGRADE_LINE]}
# Run as their own `--dry-run` (the spec and experiment validated, every step planned): a
# measurement's recipe too long to run whole here, and what it costs.
DRY_RUN = {
    "releases.md": {"dfslab run examples/ceph-releases.yaml":
                    "about 8 min: six fresh clusters, three releases; test_releases runs Reef's cluster and "
                    "workloads, test_settings a sweep of cluster settings over runs",
                    "dfslab run examples/ceph-releases.yaml --until-decided --budget 60min": "an hour of runs"},
    "docker.md": {"dfslab run examples/containerized-vs-host.yaml":
                  "about 40 min: four runtimes, Rook among them, twice each; test_docker and "
                  "test_kubernetes compare runtimes on experiments of their own"},
}
# What each costs is measured in docs/measurements.md; the tests named run the same commands' work.
COSTLY = {
    "dfslab up examples/rook-yours.yaml": "a Kubernetes cluster of the reader's (test_kubernetes_existing)",
    "dfslab run examples/quick-any.yaml --cluster rook-yours": "a Kubernetes cluster of the reader's",
    "dfslab down rook-yours": "a Kubernetes cluster of the reader's",
    "dfslab up examples/gluster-yours.yaml": "a Kubernetes cluster of the reader's (test_kubernetes_existing runs the "
                                             "same cluster and faults)",
    "dfslab run examples/gluster-yours-faults.yaml --cluster gluster-yours": "a Kubernetes cluster of the reader's",
    "dfslab down gluster-yours": "a Kubernetes cluster of the reader's",
    "dfslab run examples/three-filesystems.yaml": "2 min 55 s here: six fresh clusters of three filesystems (its "
                                                  "numbers are on the page); test_moosefs runs MooseFS's file steps, "
                                                  "test_settings a sweep of settings over runs",
}
# Lines that name the reader's own things without a placeholder's capitals, and where they run.
ILLUSTRATIONS = {
    "dfslab compare runs/a1,runs/a2 runs/b1,runs/b2": "the reader's run directories (test_compare_unit, test_readme)",
    "dfslab up bad.yaml": "run with the file the page describes, output compared: test_a_bad_spec_is_refused_as_the_docs_show",
}
# The clusters the commands above bring up (each page's example), taken down at the end.
DOCS_CLUSTERS = ("small", "gsmall", "msmall")
# Written by the commands above in the repository root; refused if there before, removed after.
MADE_HERE = ("trips.parquet", "rook", "site")


def _commands() -> list[tuple[str, str]]:
    return [(page, line) for page, line in _doc_commands() if not _placeholder(line)]


def test_every_docs_command_is_run_or_listed():
    listed = {(p, c) for lists in (RUN, DRY_RUN, RUN_ELSEWHERE) for p, cs in lists.items() for c in cs}
    missing = [f"{page}: {line}" for page, line in _commands()
               if (page, line) not in listed and line not in COSTLY and line not in ILLUSTRATIONS]
    assert missing == [], "run these in tests/test_docs_commands.py or list them in COSTLY with why"
    # and nothing listed that the docs no longer say
    said = set(_commands())
    assert listed <= said and set(COSTLY) | set(ILLUSTRATIONS) <= {line for _, line in said}


def test_a_bad_spec_is_refused_as_the_docs_show():
    """getting-started.md shows `dfslab up bad.yaml` and its output; the same file gets the same words."""
    page = (Path(REPO) / "docs" / "getting-started.md").read_text()
    shown = page.split("    $ dfslab up bad.yaml\n", 1)[1].split("\n\n", 1)[0]
    expected = [line[4:] for line in shown.splitlines()]
    bad = Path(REPO) / "bad.yaml"
    assert not bad.exists()
    bad.write_text((Path(REPO) / "examples" / "ceph-small.yaml").read_text()
                   .replace("osd_size: 8GiB", "osd_size: 4").replace("  replica_size: 2", "  replica_sise: 2"))
    try:
        res = subprocess.run(["bash", "-c", "dfslab up bad.yaml"], cwd=REPO, env=user_env(), capture_output=True,
                             text=True, timeout=120)
    finally:
        bad.unlink()
    assert res.returncode == 2
    assert (res.stdout + res.stderr).strip().splitlines() == expected


@pytest.mark.cluster
def test_the_docs_commands_run_verbatim_from_the_repository_root(tmp_path):
    for cluster in DOCS_CLUSTERS:
        assert not Path(f"/var/lib/dfslab/clusters/{cluster}").exists(), f"a cluster named {cluster} is up"
    for name in MADE_HERE:
        assert not (Path(REPO) / name).exists(), f"{name} is in the repository root; the docs' commands write it"
    import pyarrow as pa
    import pyarrow.parquet as pq
    # the reader's own file `--from trips.parquet` loads: made here, as theirs would be there
    pq.write_table(pa.table({"id": list(range(1000)), "fare": [i * 0.5 for i in range(1000)]}),
                   Path(REPO) / "trips.parquet")
    made = {}
    try:
        for page, lines in {**RUN, **DRY_RUN}.items():
            for line in lines:
                out = sh(line + (" --dry-run" if page in DRY_RUN else ""), timeout=900).stdout
                if line.startswith("dfslab run ") and page not in DRY_RUN:
                    made[line] = run_dir_of(out)
            if page == "pushdown.md":  # the next page's cluster uses the same default subnet
                sh("dfslab down small")
            if page == "spec.md":  # files-gluster's cluster is examples/gluster-small.yaml's
                sh("dfslab down gsmall")
        assert (Path(REPO) / "rook").is_dir() and any((Path(REPO) / "rook").iterdir())
        # the site's mounted path as fio servers, one per labelled node: a DaemonSet that mounts it by hostPath
        site = "".join(f.read_text() for f in sorted((Path(REPO) / "site").iterdir()))
        assert "kind: DaemonSet" in site and "hostPath" in site and "fio" in site
        # the measurements page's explanation of its from_storage column: GlusterFS's FUSE client
        # sends every replica of a write itself (replica 3: three times the bytes acknowledged),
        # ceph-fuse one copy to the primary OSD; reads cross the link once on both
        for line, writes in (("dfslab run examples/files-ceph.yaml", (0.95, 1.3)),
                             ("dfslab run examples/files-gluster.yaml", (2.8, 3.5))):
            ratios = {(json.loads(r["params"])["op"], float(r["value"])) for r in metric_rows(made[line], "from_storage")}
            assert {op for op, _ in ratios} == {"write", "read"}, ratios
            assert all(writes[0] <= v <= writes[1] for op, v in ratios if op == "write"), (line, ratios)
            assert all(0.95 <= v <= 1.3 for op, v in ratios if op == "read"), (line, ratios)
    finally:
        for cluster in DOCS_CLUSTERS:
            subprocess.run(["bash", "-c", f"dfslab down {cluster}"], cwd=REPO, env=user_env(), capture_output=True,
                           timeout=600)
        (Path(REPO) / "trips.parquet").unlink(missing_ok=True)
        shutil.rmtree(Path(REPO) / "rook", ignore_errors=True)
        shutil.rmtree(Path(REPO) / "site", ignore_errors=True)
        for path in made.values():
            shutil.rmtree(path)
    assert not any(Path(f"/var/lib/dfslab/clusters/{cluster}").exists() for cluster in DOCS_CLUSTERS)


