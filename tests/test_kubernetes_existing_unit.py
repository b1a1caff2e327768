"""A Kubernetes you run (`kubernetes.kubeconfig`) without a cluster: what the spec must say,
where Rook is told to put Ceph, how control commands and Jobs reach your nodes, and that a
Job's files come back only inside the run directory."""

from __future__ import annotations

import base64
import io
import tarfile

import pytest

from dfslab.backends.ceph import rook
from dfslab.backends.ceph.rook import client_fuse
from dfslab.runtime import CLIENT, RuntimeError_, select_runtime
from dfslab.runtime.kubernetes import job
from dfslab.runtime.kubernetes.existing import ExistingKubernetesRuntime, image_pushed
from dfslab.spec import SpecError, parse_spec
from dfslab.state import ClusterState


@pytest.fixture
def kubeconfig(tmp_path):
    path = tmp_path / "config"
    path.write_text("apiVersion: v1\nkind: Config\n")
    return str(path)


def _spec(kubeconfig, **over) -> dict:
    k = {"kubeconfig": kubeconfig, "namespace": "dfslab", "image": "registry.example.org/rook:1",
         "devices": {"n1": ["/dev/sdb"], "n2": ["/dev/sdb"]}, "clients": ["c1"], **over.pop("kubernetes", {})}
    return {"name": "yours", "runtime": "kubernetes", "nodes": [{"name": "n1"}, {"name": "n2"}], "kubernetes": k,
            "ceph": {"mons": 1, "osds_per_node": 1, "replica_size": 2}, **over}


def _problems(data) -> str:
    with pytest.raises(SpecError) as err:
        parse_spec(data)
    return str(err.value)


def test_a_spec_for_your_cluster_names_nodes_devices_clients_and_an_image(kubeconfig):
    spec = parse_spec(_spec(kubeconfig))
    assert spec.kubernetes.user_cluster and spec.kubernetes.local is None
    assert "kubernetes.image: your nodes must pull" in _problems(_spec(kubeconfig, kubernetes={"image": None}))
    assert "not both" in _problems(_spec(kubeconfig, kubernetes={"image_registry": "r:5000"}))
    assert "node n2 needs 1 device(s)" in _problems(_spec(kubeconfig, kubernetes={"devices": {"n1": ["/dev/sdb"]}}))
    assert "['n3'] are not in nodes" in _problems(_spec(kubeconfig, kubernetes={"devices": {
        "n1": ["/dev/sdb"], "n2": ["/dev/sdb"], "n3": ["/dev/sdc"]}}))
    assert "not device paths" in _problems(_spec(kubeconfig, kubernetes={"devices": {
        "n1": ["/dev/../etc/passwd"], "n2": ["/dev/sdb"]}}))
    assert "kubernetes.clients: name 2" in _problems(_spec(kubeconfig, clients=2))
    with pytest.raises(RuntimeError_, match="kubernetes.kubeconfig: no file"):
        ExistingKubernetesRuntime.preflight(None, parse_spec(_spec(kubeconfig + ".missing")))
    assert "not both" in _problems(_spec(kubeconfig, kubernetes={"local": {}}))
    # the local Kubernetes takes none of these
    local = {"name": "l", "runtime": "kubernetes", "nodes": 2}
    assert "only for a cluster you run" in _problems({**local, "kubernetes": {"image": "x:1"}})
    assert "devices" in _problems({**local, "kubernetes": {"devices": {"node1": ["/dev/sdb"]}}})
    assert parse_spec({**local, "kubernetes": {"namespace": "x"}}).kubernetes.local is not None


def test_rook_is_told_the_nodes_by_name_and_keeps_your_pod_network(kubeconfig):
    spec = parse_spec(_spec(kubeconfig))
    objs = rook.cluster_objects(spec, "dfslab", "img:1", "/var/lib/rook", spec.kubernetes.devices, "IfNotPresent")
    cluster = objs[0]["spec"]
    expr = cluster["placement"]["all"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]["matchExpressions"][0]
    assert expr == {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1", "n2"]}
    assert cluster["cephVersion"]["imagePullPolicy"] == "IfNotPresent"
    assert cluster["storage"]["nodes"] == [{"name": "n1", "devices": [{"name": "/dev/sdb"}]},
                                           {"name": "n2", "devices": [{"name": "/dev/sdb"}]}]
    # CephFS is offered: each client Job's pod mounts it; the s3 worker is not in the pods there
    assert "fs" in rook.RookCephBackend.targets_for(spec) and "s3" not in rook.RookCephBackend.targets_for(spec)
    assert "kubernetes.allow_faults" in rook.RookCephBackend.refusal(spec, fault="pod")  # the owner consents first


def test_the_pushed_image_keeps_dfslab_tag():
    assert image_pushed("registry.example.org:5000/storage/", "dfslab/rook:ceph16-rook1a2b") == \
        "registry.example.org:5000/storage/rook:ceph16-rook1a2b"


def test_control_commands_go_to_the_toolbox_and_tools_to_jobs(kubeconfig):
    spec = parse_spec(_spec(kubeconfig))
    state = ClusterState("t-yours-unit")
    state.create({"name": state.name, "spec": spec.model_dump(mode="json"), "runtime_kind": "kubernetes-existing"})
    try:
        rt = select_runtime(spec, state)
        assert isinstance(rt, ExistingKubernetesRuntime)
        assert [rt.kube_node(n) for n in (CLIENT, "n2")] == ["c1", "n2"]
        import sys
        helper = rt.command(CLIENT, [sys.executable, "-m", "dfslab.backends.ceph.helper", "/c", "/k"])
        assert helper[:3] == [sys.executable, "-m", "dfslab.runtime.kubernetes.podexec"]
        assert helper[5:7] == ["python3", "-c"] and "mon_command" in helper[7] and helper[8:] == ["/c", "/k"]
        assert rt.command(CLIENT, ["ceph", "-s"])[-2:] == ["ceph", "-s"]
        with pytest.raises(RuntimeError_, match="only as Jobs"):
            rt.command("n1", ["ceph", "-s"])
        # dfslab's image holds the integrity checker and the S3 load: they run in the toolbox with the
        # image's Python (the checker's streams go through the exec both ways); a module the image
        # cannot run (one that needs pydantic or typer) is refused
        for module, args in (("dfslab.chaos.integrity", ["verify", "@-"]), ("dfslab.s3_worker", ["http://a:7480"])):
            for wrap in (rt.command, rt.job_command):
                checker = wrap(CLIENT, [sys.executable, "-m", module, *args])
                assert checker[:3] == [sys.executable, "-m", "dfslab.runtime.kubernetes.podexec"], checker
                assert checker[-3 - len(args):] == ["python3", "-m", module, *args], checker
        with pytest.raises(RuntimeError_, match="needs dfslab"):
            rt.command(CLIENT, [sys.executable, "-m", "dfslab.cli"])
        with pytest.raises(RuntimeError_, match="dfslab's own tool"):
            rt.job_command(CLIENT, [sys.executable, "-m", "dfslab.cli"])
        assert rt.job_command(CLIENT, ["fio", "--name=x"])[-3:] == ["--", "fio", "--name=x"]
        # Ceph's admin CLI takes the toolbox (no pod start per command), once the runtime knows the
        # filesystem's admin tools (Backend.admin_tools); a self-contained module is a Job
        assert rt.job_command(CLIENT, ["ceph", "-s"])[:3] == [sys.executable, "-m", "dfslab.runtime.kubernetes.job"]
        from dfslab.backends import backend_for
        from dfslab.cluster import introduce
        introduce(rt, backend_for(spec, rt))
        assert rt.job_command(CLIENT, ["ceph", "osd", "pool", "ls"])[:3] == [sys.executable, "-m",
                                                                            "dfslab.runtime.kubernetes.podexec"]
        worker = [sys.executable, "-m", "dfslab.workloads.metadata_worker", "/m", "1", "10", "4096"]
        assert rt.job_command("n2", worker)[2] == "dfslab.runtime.kubernetes.job"
    finally:
        state.destroy()


def _tar(members: dict[str, bytes], link: tuple[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if link:
            info = tarfile.TarInfo(link[0])
            info.type, info.linkname = tarfile.SYMTYPE, link[1]
            tar.addfile(info)
    return buf.getvalue()


def test_a_jobs_files_come_back_only_inside_its_directories(tmp_path):
    run = tmp_path / "run" / "raw"
    run.mkdir(parents=True)
    rel = str(run).lstrip("/")
    log = (f"fio out\n\n{job.MARK}\nfio err\n\n{job.FILES_MARK}\n"
           f"{base64.b64encode(_tar({f'{rel}/bw_bw.1.log': b'1000, 5, 0'})).decode()}\n{job.RC_MARK} 0\n")
    out, err, files, rc = job.split_log(log)
    assert (out, err, rc) == ("fio out\n", "fio err\n", 0)
    assert job.unpack_into(files, [str(run)]) == [str(run / "bw_bw.1.log")]
    assert (run / "bw_bw.1.log").read_bytes() == b"1000, 5, 0"
    with pytest.raises(ValueError, match="outside"):
        job.unpack_into(_tar({f"{rel}/../../escape": b"x"}), [str(run)])
    with pytest.raises(ValueError, match="outside"):
        job.unpack_into(_tar({}, link=(f"{rel}/l", "/etc/passwd")), [str(run)])
    assert not (tmp_path / "escape").exists()
    # the pod's script tars exactly the carried directories
    script = job.pod_script([], client_fuse({"conf": "/c", "keyring": "/k"}), [str(run)])
    assert f"tar -C / -czf - {rel}" in script and job.FILES_MARK in script
    manifest = job.job_manifest("j", "ns", "c1", "img:1", ["fio"], [], {"conf": "/c", "keyring": "/k"}, [str(run)],
                                carry_back=True)
    pod = manifest["spec"]["template"]["spec"]
    assert {"name": "host-0", "emptyDir": {}} in pod["volumes"] and pod["containers"][0]["imagePullPolicy"] == "IfNotPresent"


def test_the_devices_lists_are_values_not_sweep_axes(kubeconfig):
    from dfslab.experiment import cluster_axes
    data = _spec(kubeconfig)
    assert cluster_axes(data) == []
    data["ceph"]["replica_size"] = [2, 3]  # a list where one value is taken still sweeps
    assert cluster_axes(data) == [(("ceph", "replica_size"), [2, 3])]


def test_the_pod_script_returns_the_tools_output_and_code_and_passes_on_sigterm():
    import subprocess
    import time
    script = job.pod_script([], ["ceph-fuse"])
    res = subprocess.run(["sh", "-c", script, "sh", "sh", "-c", "echo out; echo err >&2; exit 3"],
                         capture_output=True, text=True, timeout=30)
    assert job.split_output(res.stdout) == ("out\n", "err\n", 3)
    # the Job's deletion sends SIGTERM to the pod's shell: the tool (a server) ends with it, now
    pod = subprocess.Popen(["sh", "-c", script, "sh", "sleep", "60"], stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    pod.terminate()
    out, _ = pod.communicate(timeout=10)
    assert job.split_output(out)[2] == 128 + 15


def test_a_self_contained_dfslab_module_runs_in_the_pod_as_its_source():
    import sys
    argv = [sys.executable, "-m", "dfslab.workloads.metadata_worker", "/mnt/x", "2", "100", "4096"]
    assert job.shipped_module(argv) == "dfslab.workloads.metadata_worker" and job.tool_name(argv) == "metadata_worker"
    shipped = job.ship(argv)
    assert shipped[:2] == ["python3", "-c"] and "def worker" in shipped[2] and shipped[3:] == argv[3:]
    # a module that needs dfslab is not shipped (it runs on this machine, or is refused)
    assert job.shipped_module([sys.executable, "-m", "dfslab.chaos.integrity"]) is None


def test_a_jobs_pod_mounts_with_its_filesystems_fuse_client_and_waits_for_it_to_end():
    gluster = ["glusterfs", "--volfile-server=10.0.0.1", "--volfile-id=dfslab", "--log-file=/tmp/fuse-client.log"]
    script = job.pod_script(["/mnt/g"], gluster)
    assert "glusterfs --volfile-server=10.0.0.1 --volfile-id=dfslab --log-file=/tmp/fuse-client.log /mnt/g" in script
    assert "pgrep -x glusterfs" in script and "umount /mnt/g" in script
    # without a conf and keyring (GlusterFS) the pod gets no client Secret and no environment
    manifest = job.job_manifest("j", "ns", "c1", "img:1", ["fio"], ["/mnt/g"], {}, fuse=gluster)
    pod = manifest["spec"]["template"]["spec"]
    assert pod["volumes"] == [] and pod["containers"][0]["env"] == [] and pod["containers"][0]["securityContext"]["privileged"]
    # Ceph's: the client and environment Rook's backend records, the files from the Secret it made
    files = {"conf": "/c", "keyring": "/k"}
    ceph = job.job_manifest("j", "ns", "c1", "img:1", ["fio"], ["/mnt/c"], files, fuse=client_fuse(files),
                            env={"CEPH_CONF": "/c"})["spec"]["template"]["spec"]
    assert "ceph-fuse -c /c -n client.admin -k /k /mnt/c" in ceph["containers"][0]["command"][2]
    assert ceph["containers"][0]["env"] == [{"name": "CEPH_CONF", "value": "/c"}]
    assert ceph["volumes"] == [{"name": "client", "secret": {"secretName": job.CLIENT_SECRET}}]


def test_a_pod_mounts_the_filesystem_where_only_pods_have_it_and_makes_the_directories_its_tool_names():
    """A Kubernetes you run: CephFS only in the Jobs' pods, one mount point per client under the
    state's mnt/; the directories a step asked for are made in the pod once mounted, those of
    earlier steps (which their tools may have removed) are not."""
    import os
    root = "/st/mnt"
    argv = ["fio", "--name=x", f"--directory={root}/cephfs-client2/dfslab-ior/client2", "--size=1M"]
    assert job.pod_mounts(argv, root) == [f"{root}/cephfs-client2"]
    assert job.pod_mounts(argv, None) == [] and job.pod_mounts(["fio", "--directory=/elsewhere/x"], root) == []
    asked = os.pathsep.join([f"{root}/cephfs-client/dfslab-metadata/m-r0", f"{root}/cephfs-client2/dfslab-ior/client2",
                             "/scratch/dfslab-fio"])
    make = job.dirs_to_make(asked, job.pod_mounts(argv, root), argv)
    assert make == [f"{root}/cephfs-client2/dfslab-ior/client2"]
    script = job.pod_script(job.pod_mounts(argv, root), ["ceph-fuse"], make=make)
    mounted, made = script.index(f"ceph-fuse {root}/cephfs-client2"), script.index(f"mkdir -p {make[0]}")
    assert mounted < made < script.index('"$@"')  # after the mount, before the tool


def test_a_measuring_server_is_a_deployment_that_kubernetes_keeps_running_on_its_node():
    assert job.is_server(["iperf3", "-s", "-B", "10.0.0.2", "-p", "5201"]) and job.is_server(["/usr/bin/iperf3", "--server"])
    assert not job.is_server(["iperf3", "-c", "10.0.0.2"]) and not job.is_server(["mariadbd", "-s"])
    dep = job.deployment_manifest("dfslab-iperf3-1", "ns", "node2", "img:1", ["iperf3", "-s"])
    assert (dep["apiVersion"], dep["kind"], dep["spec"]["replicas"]) == ("apps/v1", "Deployment", 1)
    pod = dep["spec"]["template"]
    # its selector picks exactly its own pod, which the sampler and the stop find by the same label
    assert dep["spec"]["selector"]["matchLabels"] == {"dfslab.io/job": "dfslab-iperf3-1"} == {
        k: v for k, v in pod["metadata"]["labels"].items() if k == "dfslab.io/job"}
    spec = pod["spec"]
    assert spec["restartPolicy"] == "Always" and spec["hostNetwork"] and spec["nodeSelector"] == {"kubernetes.io/hostname": "node2"}
    assert spec["volumes"] == [] and not spec["containers"][0]["securityContext"]["privileged"]
    assert spec["containers"][0]["command"][3:] == ["sh", "iperf3", "-s"]  # sh -c SCRIPT sh ARGV...


def test_a_cluster_on_another_clusters_kubernetes_goes_down_first_and_after_it_without_an_api():
    from dfslab import cluster
    from dfslab.state import clusters_root, cluster_holding, teardown_order
    host, guest = ClusterState("t-unit-k8s"), ClusterState("t-unit-yours")
    host.create({"name": host.name})
    kubeconfig = host.sub("kubernetes") / "admin.kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    spec = parse_spec({**_spec(str(kubeconfig)), "name": guest.name})
    guest.create({"name": guest.name, "spec": spec.model_dump(mode="json"), "runtime_kind": "kubernetes-existing"})
    guest.add_resource("k8s_object", {"apiVersion": "v1", "kind": "Namespace", "name": "dfslab"})
    try:
        assert cluster_holding(kubeconfig) == host.name
        assert cluster_holding(clusters_root() / host.name) is None  # the root itself, not a path in it
        assert cluster_holding("/etc/kubernetes/admin.conf") is None
        # `down --all` takes the names sorted; the guest must go while its Kubernetes still answers
        assert teardown_order(sorted([host.name, guest.name])) == [guest.name, host.name]
        rt = select_runtime(spec, guest)
        assert not rt.kubernetes_gone()
        host.destroy()  # its Kubernetes is down: what the guest made there went with it
        assert rt.kubernetes_gone()
        result = cluster.down(guest.name)
        assert result["refused"] == [] and "took them with it" in result["namespaces"][0]
        assert not guest.exists() and cluster.leftovers(guest.name) == []
    finally:
        for state in (guest, host):
            if state.exists():
                state.destroy()


def test_down_waits_for_rooks_cleanup_jobs_to_be_made_not_only_to_end(monkeypatch):
    """Rook makes its cleanup Jobs only once every daemon pod is gone, after the CephCluster: no Job
    yet is not "finished" (the namespace went with no Job run: the admin key stayed on the nodes)."""
    from types import SimpleNamespace as NS
    import kubernetes.client
    from dfslab.backends.ceph import rook
    lists = iter([[], [], [("cluster-cleanup-job-node1", None)],
                  [("cluster-cleanup-job-node1", 1), ("cluster-cleanup-job-node2", None)],
                  [("cluster-cleanup-job-node1", 1), ("cluster-cleanup-job-node2", 1)]])
    asked = []

    class Batch:
        def __init__(self, api):
            pass

        def list_namespaced_job(self, namespace, label_selector):
            asked.append(label_selector)
            jobs = next(lists)
            return NS(items=[NS(metadata=NS(name=n), status=NS(succeeded=done, failed=None)) for n, done in jobs])
    monkeypatch.setattr(kubernetes.client, "BatchV1Api", Batch)
    monkeypatch.setattr(rook, "poll", lambda done, what, timeout, interval: any(done() for _ in range(10)))
    assert rook.wait_cleanup_jobs(None, "ns", {"node1", "node2"}, "/var/lib/rook") == []
    assert len(asked) == 5  # it went on past the first empty lists until both were made and done
    lists = iter([[]] * 10)
    [problem] = rook.wait_cleanup_jobs(None, "ns", {"node1", "node2"}, "/var/lib/rook")
    assert "made no cleanup Job" in problem and "/var/lib/rook on node1, node2" in problem, problem
    assert rook.wait_cleanup_jobs(None, "ns", set(), "/var/lib/rook") == []  # no daemon pod, no Job to wait for



class _EndedExec:
    """An exec whose command said its piece and ended before its input did: one update brings its
    output, its status and the server's close at once (the Kubernetes API closes the socket after
    the status frame), so a send afterwards fails."""

    def __init__(self):
        self.open, self.returncode = True, None
        self.out, self.err = "", ""

    def is_open(self):
        return self.open

    def update(self, timeout=0):
        self.out, self.err = "Inter-|   Receive\n  eth0: 1 2 3\n", "note\n"
        self.open, self.returncode = False, 0

    def peek_stdout(self):
        return bool(self.out)

    def read_stdout(self):
        out, self.out = self.out, ""
        return out

    def peek_stderr(self):
        return bool(self.err)

    def read_stderr(self):
        err, self.err = self.err, ""
        return err

    def close_channel(self, channel):
        from websocket import WebSocketConnectionClosedException
        raise WebSocketConnectionClosedException("socket is already closed.")

    write_stdin = close_channel

    def close(self):
        pass


def test_an_exec_that_ends_before_its_input_keeps_its_output_and_exit_code(capsys):
    """The byte ledger's counter read (`cat /proc/net/dev ...` through the toolbox, stdin at its end
    from the start): the command can end and the socket close before podexec passes stdin's end
    on. That send failed and podexec exited 1 with a traceback: the step lost its from_storage."""
    import os
    from dfslab.runtime.kubernetes.podexec import relay
    read, write = os.pipe()
    os.close(write)  # stdin at its end at once, as subprocess gives it with nothing to say
    try:
        assert relay(_EndedExec(), read) == 0
    finally:
        os.close(read)
    said = capsys.readouterr()
    assert said.out == "Inter-|   Receive\n  eth0: 1 2 3\n" and said.err == "note\n"
