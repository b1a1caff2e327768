"""`dfslab run` against a real cluster: baselines, every workload kind, sampler, results,
report (checked in headless Chromium), runs and compare."""

import csv
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from conftest import cluster_up, dfslab, small_spec, steps_table, write_spec
from dfslab import cluster

pytestmark = pytest.mark.cluster
NAME = "t-run"

EXPERIMENT = {
    "name": "t-exp",
    "cluster": {"name": NAME, "nodes": 3},  # ignored with --cluster; present so the file stands alone
    "repetitions": 2,
    "baselines": {"network": True, "disk": True, "seconds": 1},
    "sampler": {"interval": "1s"},
    "workloads": [
        {"type": "radosbench", "mode": ["write", "seq"], "seconds": 3, "threads": 16},
        # "local" is the former name of target machine (this machine's disk): accepted, its rows say machine
        {"type": "fio", "target": ["cephfs", "rbd", "local"], "rw": ["randread", "write"], "bs": "64KiB",
         "size": "32MiB", "seconds": 2},
        {"type": "fio", "target": "rados", "rw": "write", "bs": "64KiB", "size": "32MiB", "seconds": 2},
        # a warm read on purpose: buffered, through the client that laid the file out (its cache)
        {"type": "fio", "target": "cephfs", "rw": "randread", "bs": "64KiB", "size": "32MiB", "seconds": 2, "direct": False,
         "iodepth": 1},
        {"type": "filegrid", "file_size": ["8MiB", "16MiB"], "threads": [1, 2]},
        {"type": "metadata", "procs": 2, "files_per_proc": 100},
        {"type": "sql", "target": ["cephfs", "machine"], "concurrency": [2, 4], "iterations": 1, "queries": 128},
        # `scaling` is the servers workload's former name: its parameters are translated.
        {"type": "scaling", "servers": [1, 2], "modes": ["write"], "seconds": 2},
        {"type": "parallel", "clients": [1, 2], "procs": 2, "block_size": "16MiB", "transfer_size": "4MiB"},
        # one fio job on both client namespaces at once, each in its own directory
        {"type": "fio", "target": "fs", "rw": ["write", "randread"], "bs": "1MiB", "size": "16MiB", "seconds": 2,
         "iodepth": 2, "clients": 2},
    ],
}


def load_rows(run: Path) -> list[dict]:
    with open(run / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        r["params"] = json.loads(r["params"])
        r["value"] = float(r["value"])
    return rows


# What the client namespace's links received and sent over the whole run, counted by the test itself.
CLIENT_WIRE: dict[str, int] = {}
PROCESSES_AFTER: list[str] = []  # what dfslab tracks on the cluster once the run has ended


def client_wire() -> tuple[int, int]:
    """(received, sent) bytes over both client namespaces' links but lo, read inside each."""
    fields = []
    for client in ("client", "client2"):
        text = subprocess.run(["ip", "netns", "exec", f"dfs-{NAME}-{client}", "cat", "/proc/net/dev"], check=True,
                              capture_output=True, text=True).stdout
        lines = [line.split(":", 1) for line in text.splitlines()[2:]]
        fields += [rest.split() for name, rest in lines if name.strip() != "lo"]
    return sum(int(f[0]) for f in fields), sum(int(f[8]) for f in fields)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("run")
    cluster_up(write_spec(tmp, small_spec(NAME, cephfs=True, clients=2)), NAME)
    exp = tmp / "exp.yaml"
    exp.write_text(yaml.safe_dump(EXPERIMENT))
    try:
        rx, tx = client_wire()
        res = dfslab("run", str(exp), "--cluster", NAME)
        rx_after, tx_after = client_wire()
        CLIENT_WIRE.update(rx=rx_after - rx, tx=tx_after - tx, stdout=res.stdout)
        attached = cluster.attach(NAME)
        PROCESSES_AFTER.extend(p.name for p in attached.runtime.sampled_processes())
        attached.close()
        assert cluster.status(NAME)["health"] == "HEALTH_OK"  # --cluster: the cluster stays up
    finally:
        cluster.down(NAME, missing_ok=True)
    yield Path(res.stdout.strip().split("report: ")[-1]).parent


def test_run_directory_is_complete(run_dir):
    assert "mysqlslap" in (run_dir / "report.html").read_text()
    for name in ("experiment.yaml", "spec.yaml", "provenance.json", "results.csv", "timeseries.csv",
                 "intervals.json", "status.json", "report.html"):
        assert (run_dir / name).is_file(), name
    prov = json.loads((run_dir / "provenance.json").read_text())
    assert prov["filesystem_versions"]["ceph"].startswith("ceph version 16.") and prov["fio_version"].startswith("fio-")
    assert prov["end"] > prov["start"] and prov["failures"] == [] and prov["spec_sha256"]
    raw = {p.name for p in (run_dir / "raw").iterdir()}
    assert any(n.startswith("baseline-iperf3-client") or n.endswith("-client.txt") for n in raw)
    fio_json = [p for p in (run_dir / "raw").glob("fio-*.txt")]
    assert fio_json and all(json.loads(p.read_text())["jobs"] for p in fio_json)  # untouched fio JSON


def test_every_workload_measured_with_units(run_dir):
    rows = load_rows(run_dir)
    by = defaultdict(list)
    for r in rows:
        by[(r["workload"], r["metric"])].append(r)
    assert len(by[("baseline", "network_bandwidth")]) == 6  # 3 nodes + client: every pair
    for key, unit in {("radosbench", "bandwidth"): "MB/s", ("fio", "bandwidth"): "MB/s", ("fio", "iops"): "op/s",
                      ("fio", "latency_p99"): "ms", ("filegrid", "bandwidth"): "MB/s", ("metadata", "ops"): "op/s",
                      ("baseline", "disk_write_bandwidth"): "MB/s"}.items():
        assert by[key], key
        assert all(r["unit"] == unit and r["value"] > 0 for r in by[key]), key
    assert {r["repetition"] for r in by[("radosbench", "bandwidth")]} == {"0", "1"}
    targets = {(r["params"]["target"], r["params"]["op"]) for r in by[("fio", "bandwidth")]}
    assert targets == {(t, op) for t in ("cephfs", "rbd", "machine") for op in ("read", "write")} | {("rados", "write")} \
        | {("fs", "read"), ("fs", "write")}
    # fio on both client namespaces at once: its bandwidth is their sum, each node's its own row
    both = [r for r in by[("fio", "bandwidth")] if r["params"]["clients"] == 2]
    assert len(both) == 4, both
    for r in both:
        nodes = {c["params"]["client"]: c["value"] for c in by[("fio", "client_bandwidth")]
                 if c["repetition"] == r["repetition"] and c["params"]["op"] == r["params"]["op"]}
        assert set(nodes) == {"client", "client2"} and all(v > 0 for v in nodes.values()), nodes
        assert r["value"] == pytest.approx(sum(nodes.values())), (r, nodes)
    cells = {(r["params"]["file_size"], r["params"]["threads"], r["params"]["op"]) for r in by[("filegrid", "bandwidth")]}
    assert len(cells) == 8
    assert {r["params"]["phase"] for r in by[("metadata", "ops")]} == {"create", "stat", "read", "unlink"}
    sql = {(r["params"]["target"], r["params"]["concurrency"]) for r in by[("sql", "time_avg")]}
    assert sql == {("cephfs", 2), ("cephfs", 4), ("machine", 2), ("machine", 4)}
    assert all(r["unit"] == "s" for r in by[("sql", "time_avg")]) and by[("sql", "qps")]
    assert {(r["params"]["servers"], r["params"]["osds"]) for r in by[("servers", "bandwidth")]} == {(1, 1), (2, 2)}
    assert {(r["params"]["clients"], r["params"]["op"]) for r in by[("parallel", "bandwidth")]} == \
        {(c, op) for c in (1, 2) for op in ("write", "read")}


def test_parquet_latencies_are_the_tools_own_in_one_unit(run_dir):
    """results.parquet read as a user would (pyarrow for the schema, DuckDB for the rows): every
    latency row is in ms, and each one fio or rados bench measured (fio, filegrid, radosbench,
    servers) is the one in its raw output."""
    import duckdb
    schema = pq.read_schema(run_dir / "results.parquet")
    assert schema.field("bs").metadata == {b"unit": b"B"} and schema.field("t").metadata == {b"unit": b"s"}
    assert json.loads(schema.metadata[b"metric_units"])["latency_avg"] == "ms"
    rows = duckdb.sql(f"SELECT workload, metric, value, unit, step, target, rw, bs, iodepth, numjobs, repetition, mode,"
                      f" object_size, threads, file_size, op, servers, direct, clients FROM '{run_dir / 'results.parquet'}'"
                      f" WHERE regexp_matches(metric, '(latency|clat|slat)_') AND t IS NULL").fetchall()
    assert rows and {r[3] for r in rows} == {"ms"} and all(r[4] for r in rows)  # every row names its step
    checked = 0
    fio_parts = {"latency": "lat_ns", "clat": "clat_ns", "slat": "slat_ns"}
    rados_labels = {"latency_avg": "Average Latency", "latency_stddev": "Stddev Latency", "latency_max": "Max latency",
                    "latency_min": "Min latency"}
    for workload, metric, value, _, _, target, rw, bs, iodepth, numjobs, rep, mode, size, threads, file_size, op, servers, \
            direct, clients in rows:
        if workload == "fio" and clients == 2:
            # one job on both client namespaces: the mean over every I/O of both, each percentile
            # between the two nodes' own (fio's histograms added)
            name = f"fio-{target}-{rw}-{bs}-qd{iodepth}-j{numjobs}-r{rep}-c2"
            part, _, stat = metric.partition("_")
            nodes = [json.loads((run_dir / "raw" / f"{name}-{c}.txt").read_text())["jobs"][0][op][fio_parts[part]]
                     for c in ("client", "client2")]
            if stat == "avg":
                raw = sum(n["mean"] * n["N"] for n in nodes) / sum(n["N"] for n in nodes)
                assert value == pytest.approx(raw / 1e6), (name, metric)
            else:
                own = sorted(n["percentile"][f"{float(stat[1:]):.6f}"] / 1e6 for n in nodes)
                assert own[0] <= value <= own[1], (name, metric, own, value)
        elif workload in ("fio", "filegrid"):
            name = (f"fio-{target}-{rw}-{bs}-qd{iodepth}-j{numjobs}-r{rep}" + ("-buffered" if direct is False else "")
                    if workload == "fio" else f"filegrid-{target}-{file_size}-t{threads}-{op}-r{rep}")
            job = json.loads((run_dir / "raw" / f"{name}.txt").read_text())
            part, _, stat = metric.partition("_")
            ns = job["jobs"][0][op][fio_parts[part]]
            raw = ns["mean"] if stat == "avg" else ns["percentile"][f"{float(stat[1:]):.6f}"]
            assert value == pytest.approx(raw / 1e6), (name, metric)
        elif workload in ("radosbench", "servers") and metric in rados_labels:
            name = f"radosbench-{size}-{threads}t-r{rep}-{mode}" if workload == "radosbench" else f"servers-{servers}-r{rep}-{rw}"
            raw = (run_dir / "raw" / f"{name}.txt").read_text()
            found = re.search(rados_labels[metric] + r"\(s\):\s+([\d.]+)", raw)
            assert value == pytest.approx(float(found.group(1)) * 1000), (name, metric)
        else:
            continue
        checked += 1
    # per repetition: fio 3 targets x 2 rw + rados and filegrid's 8 cells, lat and clat mean + 4 percentiles, slat
    # mean; rados bench 4 per mode, 2 modes; servers 4 at 1 and 2 servers
    assert checked >= 2 * (15 * 10 + 2 * 4 + 2 * 4), checked


def test_filegrid_reads_through_a_client_that_did_not_write_the_files(run_dir):
    """The writing ceph-fuse keeps the files' data in its own cache (drop_caches leaves it): the
    read goes through a second, new ceph-fuse on the client, unmounted after each read."""
    reads, writes = sorted((run_dir / "raw").glob("filegrid-*-read-r*.cmd")), sorted((run_dir / "raw").glob("filegrid-*-write-r*.cmd"))
    assert len(reads) == len(writes) == 8
    assert all("/cephfs-client.fresh/dfslab-fio" in p.read_text() for p in reads), reads[0].read_text()
    assert all("/cephfs-client/dfslab-fio" in p.read_text() for p in writes), writes[0].read_text()
    assert not [line for line in Path("/proc/mounts").read_text().splitlines() if "cephfs-client.fresh" in line]


def test_results_are_plausible_against_baselines(run_dir):
    rows = load_rows(run_dir)
    link = max(r["value"] for r in rows if r["metric"] == "network_bandwidth" and "client" in r["params"].values())
    # RADOS traffic and RBD writes cross the client's link: they cannot beat what iperf3 got through it.
    crossing = [r for r in rows if r["metric"] == "bandwidth" and (r["workload"] == "radosbench" or
                (r["workload"] == "fio" and r["params"]["target"] == "rbd" and r["params"]["op"] == "write"))]
    assert crossing and all(0 < r["value"] < 1.5 * link for r in crossing), (link, [r["value"] for r in crossing])


def test_sampler_time_series(run_dir):
    times: dict[str, list[float]] = defaultdict(list)
    with open(run_dir / "timeseries.csv") as fh:
        for row in csv.DictReader(fh):
            times[row["series"]].append(float(row["t"]))
    for expected in ("cpu.total", "rss.osd.0", "net.node1.tx", "net.client.rx", "ceph.health", "ceph.pgs.active+clean",
                     "disk.node2.write"):
        assert expected in times, expected
    # client2 mounts only for the parallel step; its link is counted from the run's first seconds all the same
    for client in ("net.client.rx", "net.client2.rx"):
        assert min(times[client]) - min(times["net.node1.rx"]) < 2.5, client
        assert len(times[client]) >= len(times["net.node1.rx"]) - 2, client
    assert not [name for name in PROCESSES_AFTER if name.startswith("counters.")]  # its idle windows went with it


def test_report_names_a_bottleneck_for_every_workload(run_dir):
    steps = steps_table((run_dir / "report.html").read_text())
    assert {cells[0].split()[0] for cells in steps} == {"radosbench", "fio", "filegrid", "metadata", "sql", "servers", "parallel"}
    # a phase under 2 s is a burst: no rate, no share of a limit, and the row says so (as the results table);
    # every other step has its CPU measured and what limited it
    bursts = [cells for cells in steps if cells[5].startswith("too short to time (")]
    assert all(cells[1] == cells[2] == "–" for cells in bursts), bursts
    timed = [cells for cells in steps if cells not in bursts]
    assert any(cells[0] == "radosbench write" for cells in timed), steps  # 3 s of writes: never a burst
    assert all(re.fullmatch(r"\d+ %", cells[2]) for cells in timed), steps
    # what limited it, and a note where a result beat a baseline (the data came from a cache there)
    limits = [cells[5].partition("; above the ")[0] for cells in timed]
    assert all(limit in ("CPU", "network", "disk", "none saturated") for limit in limits), steps


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    assert path, "chromium is needed for the report test; scripts/install-deps.sh installs it"
    return path


def test_report_renders_in_headless_chromium(run_dir, request):
    profile = tempfile.mkdtemp(prefix="dfslab-chromium-")
    request.addfinalizer(lambda: shutil.rmtree(profile, ignore_errors=True))  # one was left in /tmp a run
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0"]
    url = f"file://{run_dir / 'report.html'}"
    res = subprocess.run([chromium(), *flags, "--virtual-time-budget=3000", "--dump-dom", url],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    dom = res.stdout
    html = (run_dir / "report.html").read_text()
    figures = html.count("<figure>")
    assert figures >= 8
    assert dom.count("<svg") == html.count("<svg") >= figures  # every plot is in the rendered page
    console = [l for l in res.stderr.splitlines() if "CONSOLE" in l and ("Error" in l or "error" in l)]
    assert console == []
    # The verdict and the first steps with what limited them fit the first screen, the page is no
    # wider than the window; no cell in scientific notation
    probe = Path(profile) / "report.html"
    probe.write_text(html.replace("</body>", "<script>const t = document.querySelector('table.steps tr:nth-child(2)');"
                                  "document.documentElement.dataset.verdict = document.querySelector('p.verdict')"
                                  ".getBoundingClientRect().bottom + ',' + t.getBoundingClientRect().bottom + ',' + "
                                  "(document.documentElement.scrollWidth - document.documentElement.clientWidth);"
                                  "</script></body>"))
    shown = subprocess.run([chromium(), *flags, "--window-size=1280,800", "--dump-dom", f"file://{probe}"],
                           capture_output=True, text=True, timeout=120).stdout
    verdict_bottom, first_step_bottom, overflow = map(float, re.search(r'data-verdict="([\d.]+),([\d.]+),(-?[\d.]+)"',
                                                                       shown).groups())
    assert verdict_bottom < 800 and first_step_bottom < 800, (verdict_bottom, first_step_bottom)
    assert overflow <= 0, f"the page is {overflow:.0f} px wider than a 1280-px window"  # wide tables scroll in their box
    cells = re.findall(r"<td[^>]*>(.*?)</td>", html, re.S)
    assert cells and not [c for c in cells if re.search(r"\d[eE][+-]?\d", c)]
    shot = run_dir / "screenshot.png"
    subprocess.run([chromium(), *flags, "--window-size=1200,3000", f"--screenshot={shot}", url],
                   capture_output=True, timeout=120, check=True)
    assert shot.stat().st_size > 50_000  # a page with plots, not a blank one


def test_runs_lists_the_run(run_dir):
    out = dfslab("runs").stdout
    assert run_dir.name in out.replace("\n", "") or "t-exp" in out


def test_compare_with_itself_is_ratio_one_and_not_significant(run_dir):
    rows = json.loads(dfslab("compare", str(run_dir), str(run_dir), "--json").stdout)
    bw = [r for r in rows if r["metric"] == "bandwidth"]
    assert bw and all(r["ratio"] == pytest.approx(1.0) and not r["significant"] for r in bw)
    # with 2 repetitions, an interval within the one run; or, where fio's millisecond clock gave a short
    # phase the same time twice (filegrid's 16 MiB writes), none, saying why
    untested = [r for r in bw if r["reps_a"] >= 2 and not (r["over"] == "one run" or "same value" in r["why"])]
    assert not untested, untested
    table = dfslab("compare", str(run_dir), str(run_dir)).stdout
    assert "B/A" in table and "radosbench" in table


def test_run_owning_its_cluster_tears_it_down(tmp_path):
    exp = {"name": "t-own", "cluster": {"name": "t-own", "nodes": 1, "ceph": {"replica_size": 1, "cephfs": False,
                                                                             "osd_size": "6GiB"}},
           "baselines": {"network": False, "disk": False},
           "workloads": [{"type": "radosbench", "seconds": 2, "mode": ["write"]}]}
    path = tmp_path / "own.yaml"
    path.write_text(yaml.safe_dump(exp))
    try:
        res = dfslab("run", str(path), "--runs", "2")  # two runs, each on its own fresh cluster
    finally:
        cluster.down("t-own", missing_ok=True)
    assert cluster.leftovers("t-own") == []
    first, run = [Path(line.split("report: ")[1]).parent for line in res.stdout.splitlines() if "report: " in line]
    assert "2 runs, one side of a comparison over runs" in res.stdout
    assert json.loads((first / "provenance.json").read_text())["start"] < json.loads((run / "provenance.json").read_text())["start"]
    assert any(r["metric"] == "bandwidth" for r in load_rows(run))
    assert Path(os.environ["DFSLAB_RUNS"]) in run.parents
    assert len(pq.read_table(run / "results.parquet")) == len(load_rows(run))
    # Re-run from the run directory alone (the experiment file is gone), then compared with it.
    path.unlink()
    try:
        again = dfslab("run", str(run))
    finally:
        cluster.down("t-own", missing_ok=True)
    assert "re-running" in again.stderr and "B/A" in again.stdout and "radosbench" in again.stdout
    rerun = Path(again.stdout.strip().split("report: ")[-1]).parent
    assert rerun != run and yaml.safe_load((rerun / "spec.yaml").read_text()) == yaml.safe_load((run / "spec.yaml").read_text())
    assert any(r["metric"] == "bandwidth" for r in load_rows(rerun))
    # the two runs against the re-run: tested over runs, 2 against 1
    compared = json.loads(dfslab("compare", f"{first},{run}", str(rerun), "--json").stdout)
    assert compared and all(r["over"] == "runs" and (r["runs_a"], r["runs_b"]) == (2, 1) for r in compared if r["low"])
    bad = dfslab("run", str(tmp_path), check=False)
    assert bad.returncode == 2 and "not a run directory" in bad.stdout + bad.stderr


def test_cephfs_workload_on_a_cluster_without_cephfs_is_refused_before_anything_runs(tmp_path):
    exp = {"name": "t-nofs", "cluster": {"name": "t-nofs", "nodes": 1, "ceph": {"replica_size": 1, "cephfs": False}},
           "workloads": [{"type": "radosbench"}, {"type": "fio", "target": ["rbd", "cephfs"], "seconds": 1}]}
    path = tmp_path / "nofs.yaml"
    path.write_text(yaml.safe_dump(exp))
    res = dfslab("run", str(path), check=False)
    assert res.returncode == 2 and "workloads[1].target" in res.stderr and "ceph.cephfs: true" in res.stderr
    assert cluster.leftovers("t-nofs") == []
    assert not list(Path(os.environ["DFSLAB_RUNS"]).glob("*-t-nofs"))


def run_on_one_osd(tmp_path: Path, name: str, osd_size: str, workloads: list[dict]) -> subprocess.CompletedProcess:
    """`dfslab run` of `workloads` on a 1-node, 1-OSD cluster of the run's own, taken down after."""
    exp = {"name": name, "cluster": {"name": name, "nodes": 1, "ceph": {"replica_size": 1, "cephfs": False,
                                                                         "osd_size": osd_size}},
           "baselines": {"network": False, "disk": False}, "workloads": workloads}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(exp))
    try:
        return dfslab("run", str(path), check=False)
    finally:
        cluster.down(name, missing_ok=True)


def test_failing_workload_is_reported_and_makes_run_exit_nonzero(tmp_path):
    res = run_on_one_osd(tmp_path, "t-fail", "2GiB", [{"type": "radosbench", "seconds": 1, "pool": "no-such-pool"},
                                                     {"type": "radosbench", "seconds": 1, "mode": ["write"]}])
    assert res.returncode == 1
    assert "no-such-pool" in res.stderr
    run = Path(res.stdout.strip().split("report: ")[-1]).parent
    assert any(r["metric"] == "bandwidth" for r in load_rows(run))  # the step after the failure still ran
    assert "Failures" in (run / "report.html").read_text()


def test_a_write_stopped_at_dfslabs_cap_is_not_a_check_mark_and_the_run_exits_1(tmp_path):
    """60 s of rados bench writes asked on 1 GiB OSDs: dfslab's object cap (40 % of the pool's free
    space) ends the write within seconds. Its numbers stand, but the step is marked with the reason,
    listed first in the report, and the run exits 1 (it once ended with ✓ and exit 0)."""
    res = run_on_one_osd(tmp_path, "t-cap", "1GiB", [{"type": "radosbench", "seconds": 60, "mode": ["write"],
                                                    "threads": 16}])
    assert cluster.leftovers("t-cap") == []
    assert res.returncode == 1, res.stdout + res.stderr
    step = next(line for line in res.stderr.splitlines() if "radosbench[0]" in line and "rep 1/1" in line)
    assert step.startswith("◐ ") and "not as asked: stopped at dfslab's cap of " in step, step
    assert re.search(r"after \d+\.\d of 60 s: give the OSDs more room", step), step
    assert "not as asked: radosbench[0]" in res.stderr
    run = Path(res.stdout.strip().split("report: ")[-1]).parent
    html = (run / "report.html").read_text()
    assert "Not as asked" in html and html.index("Not as asked") < html.index("<h2>Summary")
    assert any(r["metric"] == "bandwidth" and r["value"] > 0 for r in load_rows(run))  # its numbers kept


def test_every_read_and_write_row_says_how_much_of_it_crossed_the_clients_links(run_dir):
    """The byte ledger: each step's client bytes from exact counters at its start and end. The
    default fio read (O_DIRECT) and the parallel read (a fresh client) reach the cluster; the
    ledger never claims more than the client's links carried over the whole run (counted here,
    independently); a row under 0.8 is listed in the report."""
    rows = load_rows(run_dir)
    intervals = json.loads((run_dir / "intervals.json").read_text())
    ledgers = [iv["ledger"] for iv in intervals if iv.get("ledger")]
    assert ledgers and sum(lg["client_rx"] for lg in ledgers) <= CLIENT_WIRE["rx"]
    assert sum(lg["client_tx"] for lg in ledgers) <= CLIENT_WIRE["tx"]
    share = {(r["params"].get("target"), r["params"].get("op"), r["workload"], r["params"].get("clients"), r["repetition"],
              r["params"].get("direct", True)): r["value"] for r in rows if r["metric"] == "from_storage"}
    fio_reads = [v for (t, op, w, _, _, direct), v in share.items() if w == "fio" and t == "cephfs" and op == "read" and direct]
    warm = [v for (t, op, w, _, _, direct), v in share.items() if w == "fio" and not direct]
    parallel_reads = [v for (_, op, w, _, _, _), v in share.items() if w == "parallel" and op == "read"]
    assert len(fio_reads) == 2 and len(parallel_reads) == 4 and len(warm) == 2, share
    assert all(0.9 <= v <= 1.2 for v in fio_reads + parallel_reads), share
    assert all(v < 0.8 for v in warm), share  # the warm read is marked: in the report and on the terminal
    # fio on two nodes: the ledger counted both nodes' links (each node's reads are O_DIRECT)
    both = [v for (t, op, w, c, _, _), v in share.items() if w == "fio" and t == "fs" and c == 2]
    assert len(both) == 4 and all(0.9 <= v <= 1.2 for v in both), share
    html = (run_dir / "report.html").read_text()
    assert "Not measuring the storage" in html and "direct=False" in html, "the warm read is not listed"
    assert any("not from the storage" in line and "direct=False" in line for line in CLIENT_WIRE["stdout"].splitlines())
    # per step and direction: the wire over what the step's tools counted that way
    from dfslab.workloads import direction
    steps: dict = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r["metric"] in ("bytes", "wire_bytes", "from_storage") and r["params"].get("target") != "machine":
            steps[(r["step"], direction(r["params"]))][r["metric"]].append(r["value"])
    for key, got in steps.items():
        assert len(set(got["wire_bytes"])) == 1 and len(set(got["from_storage"])) == 1, key
        assert got["from_storage"][0] == pytest.approx(got["wire_bytes"][0] / sum(got["bytes"])), key
    assert not any(r["params"].get("target") == "machine" for r in rows if r["metric"] == "from_storage")
    low = [v for v in share.values() if v < 0.8]
    assert ("Not measuring the storage" in (run_dir / "report.html").read_text()) == bool(low)


def test_rbd_writes_are_timed_until_the_cluster_has_them_and_rados_bench_in_decimal_mb(run_dir):
    rows = [r for r in load_rows(run_dir) if not r["t"]]

    def value(metric, **params):
        found = [r["value"] for r in rows if r["metric"] == metric
                 and all(r["params"].get(k) == v for k, v in params.items())]
        return sum(found) / len(found)
    # librbd's cache off (client_cache: false): a write waits for both replicas, not the cache
    assert value("latency_p50", target="rbd", op="write") >= value("latency_p50", target="rbd", op="read")
    assert all(r["params"]["client_cache"] is None for r in rows if r["workload"] == "fio")  # unset: off
    # rados bench: objects x size / its time, in 10^6 B (it prints MiB/s as "MB/sec")
    rados = defaultdict(dict)
    for r in rows:
        if r["workload"] == "radosbench":
            rados[(r["params"]["mode"], r["repetition"])][r["metric"]] = r["value"]
    assert len(rados) == 4
    for key, got in rados.items():
        assert got["bandwidth"] == pytest.approx(got["bytes"] / got["duration"] / 1e6, rel=2e-3), key


def test_the_run_ends_with_its_results_on_the_terminal(run_dir):
    """Piped (as here), one tab-separated line per workload row, the same values as the report's table."""
    out = CLIENT_WIRE["stdout"].splitlines()
    header = out.index(next(line for line in out if line.startswith("workload\tparameters\t")))
    heads = out[header].split("\t")
    table = [line.split("\t") for line in out[header + 1:] if "\t" in line]
    assert heads[-2:] == ["from storage (ratio)", "note"] and all(len(r) == len(heads) for r in table)
    assert {r[0] for r in table} >= {"radosbench", "fio", "filegrid", "metadata", "sql", "servers", "parallel"}
    rows = load_rows(run_dir)
    bw = heads.index("bandwidth (MB/s)")
    compared = []
    for line in table:
        if line[0] != "radosbench":
            continue
        mode = line[1].split("mode=")[1].split(",")[0]
        durations = [r["value"] for r in rows if r["workload"] == "radosbench" and r["metric"] == "duration"
                     and r["params"]["mode"] == mode and not r["t"]]
        if min(durations) < 2.0:  # too short to time: no rate on the table (results.csv keeps it)
            assert line[bw] == "–" and "too short to time" in line[-1], line
            continue
        values = [r["value"] for r in rows if r["workload"] == "radosbench" and r["metric"] == "bandwidth"
                  and r["params"]["mode"] == mode]
        number, *rest = line[bw].split()  # 3 significant figures and an SI suffix: "1.24 k ± 0.1 k"
        shown = float(number) * {"k": 1e3, "M": 1e6}.get(rest[0] if rest else "", 1)
        assert shown == pytest.approx(sum(values) / len(values), rel=5e-3), line[bw]
        compared.append(mode)
    assert "write" in compared, table  # a timed write's number is the rows' mean
    assert not any(line.endswith(" ") for line in out)  # nothing padded (an empty last field ends in a tab)
