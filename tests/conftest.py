"""Shared fixtures. Cluster tests run real Ceph daemons in network namespaces: they need
root and Debian's Ceph packages (scripts/install-deps.sh installs them)."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from leftovers import SESSION_MARK, Snapshot

# Every dfslab process a test starts (CLI subprocesses included) keeps its state here,
# away from a user's own clusters in /var/lib/dfslab.
_HOME = tempfile.mkdtemp(prefix="dfslab-test-")
os.environ["DFSLAB_HOME"] = _HOME
os.environ["DFSLAB_RUNS"] = str(Path(_HOME) / "runs")
os.environ.setdefault(SESSION_MARK, _HOME)  # pytest-xdist's workers keep the mark of the session that started them

REPO = Path(__file__).resolve().parent.parent
DFSLAB = [sys.executable, "-m", "dfslab.cli"]
_OWNER = Path(_HOME) / "pytest.pid"
# pytest-xdist's workers run tests; the process that started them checks the machine around them all.
_CONTROLLER = "PYTEST_XDIST_WORKER" not in os.environ
_before: Snapshot | None = None


def pytest_sessionstart(session):
    # A test session killed mid-way (Ctrl-C twice, a CI timeout, a lost machine) leaves its
    # clusters' namespaces behind, and the next session's `up` of the same test cluster is then
    # refused. Each session marks its home with its PID; homes whose session is gone are torn
    # down from their own state files (only what that session recorded) before anything runs.
    _OWNER.write_text(str(os.getpid()))
    for home in Path(tempfile.gettempdir()).glob("dfslab-test-*"):
        if home == Path(_HOME) or not (home / "clusters").is_dir() or home.is_symlink():
            continue
        try:
            owner = int((home / "pytest.pid").read_text())
        except (OSError, ValueError):
            owner = 0
        if owner and psutil.pid_exists(owner):
            continue
        env = {**os.environ, "DFSLAB_HOME": str(home), "DFSLAB_RUNS": str(home / "runs")}
        subprocess.run([*DFSLAB, "down", "--all"], env=env, cwd=REPO, capture_output=True, timeout=600)
        try:
            empty = not any((home / "clusters").iterdir())
        except FileNotFoundError:  # a session starting beside this one (the suite's phases) cleaned it first
            continue
        if empty:
            shutil.rmtree(home, ignore_errors=True)
    global _before
    if _CONTROLLER:
        # scripts/test-suite.sh runs phases side by side and checks the machine around them all.
        _before = Snapshot(_HOME, machine=os.environ.get("DFSLAB_SUITE_MACHINE_CHECK") != "outside")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    # Whatever a test or fixture started and did not stop fails the session, named (a fixture whose
    # setup failed is never torn down, so each one must clean up after its own failure). Last of
    # the hooks: after Ctrl-C, pytest's own sessionfinish tears the fixtures down that are still up.
    left = _before.left() if _before else {}
    if left:
        report = session.config.pluginmanager.get_plugin("terminalreporter")
        lines = [f"the test suite left {sum(map(len, left.values()))} thing(s) behind:"]
        for kind, items in left.items():
            lines += [f"  {kind}:"] + [f"    {item}" for item in items]
        lines.append(f"  (clusters: DFSLAB_HOME={_HOME} dfslab down --all)")
        if report:
            report.section("leftovers", sep="=", red=True, bold=True)
            for line in lines:
                report.write_line(line)
        else:
            print("\n".join(lines), file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    # The temporary DFSLAB_HOME goes when no cluster is left in it (a test that failed to tear
    # down keeps its state, so `DFSLAB_HOME=... dfslab down --all` can still clean up).
    clusters = Path(_HOME) / "clusters"
    if not clusters.is_dir() or not any(clusters.iterdir()):
        shutil.rmtree(_HOME, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="cluster tests need root (network namespaces, Ceph daemons)")
    for item in items:
        if "cluster" in item.keywords:
            item.add_marker(skip)


def dfslab(*args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
    res = subprocess.run([*DFSLAB, *args], capture_output=True, text=True, timeout=timeout, cwd=REPO)
    if check and res.returncode != 0:
        raise AssertionError(f"dfslab {' '.join(args)} exited {res.returncode}\nstdout:{res.stdout}\nstderr:{res.stderr}")
    return res


def cluster_up(spec: Path, name: str, *options: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """`dfslab up SPEC` for a fixture. dfslab removes a cluster whose bring-up fails, but not one
    whose CLI this helper killed at its timeout: then `dfslab down NAME` does, before the error
    goes on (a fixture whose setup raises is never torn down)."""
    try:
        return dfslab("up", str(spec), *options, timeout=timeout)
    except BaseException:
        dfslab("down", name, check=False, timeout=600)
        raise


def made_here(name: str) -> list[str]:
    """What this test session made of cluster `name`: its state dir in the session's own
    DFSLAB_HOME, and processes carrying both the session's mark and the cluster's. A cluster of
    the same name that a reader's command (the docs' `small`) or another phase made is not ours,
    so `cluster.leftovers(name)`, which looks machine-wide, cannot answer this beside them."""
    from dfslab.procs import marked_pids
    from dfslab.state import ClusterState
    found = [f"state dir {ClusterState(name).dir}"] if ClusterState(name).dir.exists() else []
    for pid in marked_pids(name):
        try:
            if psutil.Process(pid).environ().get(SESSION_MARK) == os.environ[SESSION_MARK]:
                found.append(f"process {pid}")
        except psutil.Error:  # gone since
            continue
    return found


def small_spec(name: str, cephfs: bool = True, clients: int = 1) -> str:
    return SMALL_SPEC.format(name=name, cephfs=str(cephfs).lower(), clients=clients)


def write_spec(tmp: Path, text: str) -> Path:
    path = tmp / "spec.yaml"
    path.write_text(text)
    return path


def run_against(experiment: Path, cluster_name: str, timeout: float = 900) -> tuple[Path, str]:
    """`dfslab run EXPERIMENT --cluster NAME`: (the run directory it printed, its stdout)."""
    out = dfslab("run", str(experiment), "--cluster", cluster_name, timeout=timeout).stdout
    return printed_run_dir(out), out


def run_dirs_of(stdout: str, cwd: Path | str = REPO) -> list[Path]:
    """The run directories a `dfslab run`/`tune`/`plan` printed (their reports'), resolved from where
    it ran. Tests of two phases write into ./runs at once: a test finds and removes exactly what
    dfslab said it made, never by listing ./runs (tests/test_shared_listing_unit.py checks)."""
    reports = [line.split("report: ", 1)[1].strip() for line in stdout.splitlines() if line.startswith("report: ")]
    return [Path(cwd, report).parent for report in reports]


def metric_rows(run: Path, metric: str) -> list[dict]:
    """The rows of a run's results.csv with this metric."""
    with open(run / "results.csv") as fh:
        return [r for r in csv.DictReader(fh) if r["metric"] == metric]


def printed_run_dir(stdout: str) -> Path:
    """The run directory of the last `report: ` line a `dfslab run` printed."""
    made = run_dirs_of(stdout)
    assert made, f"no report line in:\n{stdout[-2000:]}"
    return made[-1]


def status_json(name: str) -> dict:
    return json.loads(dfslab("status", name, "--json").stdout)


def listening(port: int, netns: str | None = None) -> bool:
    """A TCP server listens on `port` (in network namespace `netns`, else this one): what a
    fixture waits for after starting a server, instead of a guess at how long that takes."""
    enter = ["nsenter", f"--net=/run/netns/{netns}"] if netns else []
    out = subprocess.run([*enter, "ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True).stdout
    return bool(out.strip())


def stop_group(proc: subprocess.Popen) -> None:
    """Kill a server a test started with start_new_session=True, and everything it forked: fio
    --server forks a child per job, which outlives a terminated parent (the leftover check saw
    one with parent 1). The group is killed even when its leader has already exited."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


def ctrl_c_as_at_a_terminal() -> None:
    """Popen's preexec_fn for a dfslab that a test interrupts: SIGINT as a terminal's foreground job
    has it. A suite started in the background (`make test &`) ignores SIGINT, its children inherit
    that and Python then installs no KeyboardInterrupt: a Ctrl-C test's `up` ran on to HEALTH_OK."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_for(pred, timeout: float, what: str, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


# 10 GiB sparse OSDs (they take only what is written): rados bench's writes stop at dfslab's object
# cap, 40 % of the pool's free space, and a write stopped there before 80 % of its seconds is a
# step not run as asked (the run exits 1); on 2 GiB OSDs a 3-s write of 16 x 4 MiB stopped at 1.6 s,
# and a pool's space comes back only a while after a step's cleanup (a repetition right after
# another sees less free space: a 1-OSD run's cap fell from 1.0 GB to 0.7 GB between two).
SMALL_SPEC = """
name: {name}
nodes: 3
clients: {clients}
ceph:
  mons: 1
  osds_per_node: 1
  osd_size: 10GiB
  replica_size: 2
  cephfs: {cephfs}
"""


PLATFORM_COLUMN = "of it Kubernetes"  # a Kubernetes run's extra column of the verdict table


def _verdict_table(html: str) -> tuple[list[str], list[list[str]]]:
    """The report's verdict table: its header cells and, per step, its cells."""
    table = html[html.index('<table class="steps">'):]
    table = table[:table.index("</table>")]
    header = re.findall(r"<th[^>]*>(.*?)</th>", table.split("<tr>")[1], re.S)
    return header, [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for row in table.split("<tr>")[2:]]


def steps_table(html: str) -> list[list[str]]:
    """The report's verdict table: per step its cells (step, result, CPU, link, disk, limited by),
    without a Kubernetes run's platform column (platform_cells reads it)."""
    header, rows = _verdict_table(html)
    if PLATFORM_COLUMN in header:
        at = header.index(PLATFORM_COLUMN)
        rows = [cells[:at] + cells[at + 1:] for cells in rows]
    return rows


def platform_cells(html: str) -> list[str]:
    """The report's "of it Kubernetes" column: the CPU Kubernetes itself took in each step."""
    header, rows = _verdict_table(html)
    return [cells[header.index(PLATFORM_COLUMN)] for cells in rows]
