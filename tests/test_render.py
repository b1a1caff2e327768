"""`dfslab render`: the manifests a spec stands for, checked against Kubernetes 1.34's schema in
strict mode before any file is written (no cluster: the server-side dry run and a real apply of
the fio server DaemonSet are in test_kubernetes_existing.py)."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from conftest import dfslab
from dfslab import render
from dfslab.backends.external.daemonset import NODE_LABEL, fio_server_daemonset
from dfslab.spec import parse_spec

SITE = {"name": "lustre-site", "filesystem": "external", "runtime": "host", "external": {"posix": {"path": "/lustre/scratch/"}}}


def test_a_mounted_path_becomes_a_fio_server_daemonset_that_mounts_it_from_each_node(tmp_path):
    out = tmp_path / "out"
    done = render.render(parse_spec(SITE), out, image="registry.example.org/dfslab/rook:1")
    assert [p.name for p in done.files] == ["00-namespace.yaml", "10-fio-servers.yaml"]
    assert (done.objects, done.offline_checked, done.offline_skipped) == (2, 2, [])
    ns, ds = render.load_manifests(out)
    assert ns == {"apiVersion": "v1", "kind": "Namespace",
                  "metadata": {"name": "dfslab", "labels": {"app.kubernetes.io/managed-by": "dfslab"}}}
    pod = ds["spec"]["template"]["spec"]
    assert ds["metadata"]["namespace"] == "dfslab" and pod["hostNetwork"] is True
    assert pod["nodeSelector"] == {NODE_LABEL: "true"}
    assert pod["volumes"] == [{"name": "site-fs", "hostPath": {"path": "/lustre/scratch", "type": "Directory"}}]
    container = pod["containers"][0]
    assert container["command"] == ["fio", "--server=,8765"]
    assert container["volumeMounts"][0]["mountPath"] == "/lustre/scratch"
    assert "&id" not in (out / "10-fio-servers.yaml").read_text()  # every field written out, no YAML aliases


def test_an_object_the_schema_refuses_names_the_field_and_nothing_is_written(tmp_path):
    ds = fio_server_daemonset("dfslab", "img:1", "/gpfs/fs1")
    typo = copy.deepcopy(ds)
    typo["spec"]["template"]["spec"]["hostNetwrk"] = typo["spec"]["template"]["spec"].pop("hostNetwork")
    with pytest.raises(render.RenderError, match=r"DaemonSet dfslab-fio-server \(namespace dfslab\): spec\.template\.spec"
                                                 r".*hostNetwrk"):
        render.validate_offline([ds, typo])
    wrong_type = copy.deepcopy(ds)
    wrong_type["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "8765"
    with pytest.raises(render.RenderError, match=r"containers\.0\.ports\.0\.containerPort: '8765' is not of type 'integer'"):
        render.validate_offline([wrong_type])
    assert render.validate_offline([ds]) == (1, [])


def test_render_writes_only_into_a_new_or_empty_directory(tmp_path):
    (tmp_path / "mine.txt").write_text("the user's")
    res = dfslab("render", "-o", str(tmp_path), "--image", "img:1", str(_write(tmp_path / "s", SITE)), check=False)
    assert res.returncode == 2 and "not a new or empty directory" in res.stderr, res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt", "s"]


def _write(path, data):
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("spec, message", [
    ({"name": "c", "nodes": 3}, "filesystem ceph \\(runtime local\\) has no Kubernetes manifests"),
    ({"name": "k", "runtime": "kubernetes", "nodes": 3, "ceph": {"osd_size": "6GiB"}}, "kubernetes.kubeconfig: render writes"),
    ({"name": "e", "filesystem": "external", "runtime": "host",
      "external": {"ceph": {"conf": "/etc/ceph/ceph.conf", "keyring": "/etc/ceph/k"}}}, "external.posix: render writes"),
])
def test_specs_without_manifests_are_refused_with_what_to_give(tmp_path, spec, message):
    res = dfslab("render", "-o", str(tmp_path / "out"), "--image", "img:1", str(_write(tmp_path / "s.yaml", spec)), check=False)
    assert res.returncode == 2 and re.search(message, res.stderr.replace("\n", " ")), res.stderr
    assert not (tmp_path / "out").exists()


def test_rook_on_your_cluster_renders_what_up_applies(tmp_path, monkeypatch):
    # as on a machine that never built Kubernetes: Rook's manifests are fetched on this first use
    monkeypatch.setenv("DFSLAB_K8S_CACHE", str(tmp_path / "cache"))
    said = []
    spec = parse_spec(yaml.safe_load(open("examples/rook-yours.yaml")))
    done = render.render(spec, tmp_path / "rook", image="registry.example.org:5000/storage/dfslab-rook:1",
                         progress=lambda step, detail: said.append(step))
    assert said == ["fetching", "fetched"] and (tmp_path / "cache" / "rook" / "v1.12.11" / "crds.yaml").is_file()
    assert [p.stem for p in done.files] == ["00-namespace", "10-rook-crds", "11-rook-rbac", "12-rook-operator",
                                            "20-ceph-tuning", "30-ceph-cluster"]
    # Rook's kinds have no built-in schema: `up` (and render --kubeconfig) has the API server judge them
    assert done.offline_skipped == ["ceph.rook.io/v1/CephBlockPool", "ceph.rook.io/v1/CephCluster",
                                    "ceph.rook.io/v1/CephFilesystem"]
    objs = render.load_manifests(tmp_path / "rook")
    cluster = next(o for o in objs if o["kind"] == "CephCluster")
    assert cluster["metadata"]["namespace"] == "dfslab"
    assert cluster["spec"]["storage"]["nodes"][0] == {"name": "worker1", "devices": [{"name": "/dev/sdb"}]}
    operator = next(o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == "rook-ceph-operator")
    assert operator["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example.org:5000/storage/dfslab-rook:1"


def test_an_experiment_file_renders_its_cluster(tmp_path):
    spec = render.load_cluster_spec(Path("examples/external-mount.yaml"))
    assert (spec.name, spec.external.posix.path) == ("site-lustre", "/mnt/lustre/scratch")
    done = render.render(spec, tmp_path / "o", image="img:1")
    assert render.load_manifests(tmp_path / "o")[1]["spec"]["template"]["spec"]["volumes"][0]["hostPath"]["path"] \
        == "/mnt/lustre/scratch" and done.offline_checked == 2
