"""SQL on the filesystem (DockerCEPH fig. 12): MariaDB with its datadir on CephFS, or on the
machine's own disk for comparison, loaded with mysqlslap's auto-generated SQL at a given
concurrency; seconds per run (min / avg / max over iterations) and queries per second.

One server per target is started on the client node for the first step that needs it and
stopped by `finish` after the last one. Where the cluster's mount is not on this machine (a
Kubernetes you run: only the client Jobs' pods mount it), each step is one command instead: the
Job's pod makes the datadir on the mount, starts the server, runs mysqlslap, stops the server and
removes the datadir (`in_one_command`)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

from pydantic import Field

from ..safety import remove_owned_tree
from ..state import clusters_root
from . import FS_TARGET, MACHINE, FileTarget, Measurement, Runner, Workload, WorkloadError, WorkloadParams
from ..polling import wait_until

TIMES = {"Average": "time_avg", "Minimum": "time_min", "Maximum": "time_max"}


class SqlParams(WorkloadParams):
    target: FileTarget = FS_TARGET
    concurrency: int = Field(4, ge=1, le=128, description="concurrent client sessions (sweep 4..20 as the seed)")
    iterations: int = Field(3, ge=1, le=50)
    queries: int = Field(2048, ge=1, description="total queries per iteration (corrected to divide evenly)")
    int_cols: int = Field(2, ge=1, le=50)
    char_cols: int = Field(3, ge=1, le=50)


def parse(output: str) -> dict[str, float]:
    found = {}
    for word, metric in TIMES.items():
        m = re.search(rf"{word} number of seconds to run all queries: ([\d.]+) seconds", output)
        if m:
            found[metric] = float(m.group(1))
    return found


INSTALL = ["mariadb-install-db", "--no-defaults", "--user=root", "--auth-root-authentication-method=normal",
           "--skip-test-db", "--skip-name-resolve"]


def install_argv(datadir: Path) -> list[str]:
    """The system tables made on the node's local /tmp and copied into `datadir`: made in place on
    CephFS they took 10.3 s (the bootstrap's many small synced writes through ceph-fuse), made
    locally and copied 0.9 + 1.3 s, the same 113 MB of files. Run as one command, so it works
    wherever the runtime runs the tool (a Job's own /tmp on Kubernetes)."""
    script = ('tmp=$(mktemp -d /tmp/dfslab-sql-install.XXXXXX) && trap \'rm -rf "$tmp"\' EXIT && '
              f'{shlex.join(INSTALL)} --datadir="$tmp" && cp -a "$tmp"/. {shlex.quote(str(datadir))}/')
    return ["bash", "-c", script]


SOCKET = "/tmp/dfslab-sql.sock"  # in the pod's own /tmp: a UNIX socket on a FUSE mount is not portable


def server_argv(datadir: str, socket: str) -> list[str]:
    return ["mariadbd", "--no-defaults", f"--datadir={datadir}", f"--socket={socket}",
            f"--pid-file={Path(socket).with_suffix('.pid')}", "--skip-networking", "--user=root",
            "--skip-grant-tables", "--innodb-buffer-pool-size=128M", f"--log-error={Path(socket).with_suffix('.err')}"]


def load_argv(socket: str, params: "SqlParams", queries: int) -> list[str]:
    return ["mysqlslap", f"--socket={socket}", "--user=root", f"--concurrency={params.concurrency}",
            f"--iterations={params.iterations}", f"--number-int-cols={params.int_cols}",
            f"--number-char-cols={params.char_cols}", f"--number-of-queries={queries}", "--auto-generate-sql", "-v"]


def in_one_command(datadir: Path, params: "SqlParams", queries: int, timeout: float = 120) -> list[str]:
    """One step as one command where the mount is: a fresh datadir (only its own directory, which
    the command made, is removed after), the server until its socket answers (its error log on
    stderr if it exits first), mysqlslap on stdout, then the server stopped and the datadir gone.
    The datadir's path is the last argument, so the runtime sees which mount the command needs."""
    err = shlex.quote(str(Path(SOCKET).with_suffix(".err")))
    script = (f'set -e; d="$1"; mkdir -p "$d"; {shlex.join(install_argv(datadir))}; '
              f'{shlex.join(server_argv(str(datadir), SOCKET))} & pid=$!; '
              "trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf \"$d\"' EXIT; "
              f'for i in $(seq {int(timeout * 5)}); do [ -S {SOCKET} ] && break; '
              f'kill -0 $pid 2>/dev/null || {{ cat {err} >&2; exit 1; }}; sleep 0.2; done; '
              f'[ -S {SOCKET} ] || {{ echo "mariadbd did not open {SOCKET} in {timeout:g} s" >&2; exit 1; }}; '
              f'{shlex.join(load_argv(SOCKET, params, queries))}')
    return ["bash", "-c", script, "sql", str(datadir)]


class MariaDB:
    """A mariadbd on the client node, datadir wherever the target puts it."""

    def __init__(self, runner: Runner, datadir: Path, socket: Path):
        self.runner, self.datadir, self.socket = runner, datadir, socket
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 120) -> None:
        for tool in ("mariadbd", "mariadb-install-db", "mysqlslap"):
            if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
                raise WorkloadError(f"{tool} is missing; scripts/install-deps.sh installs mariadb-server and mariadb-client")
        remove_owned_tree(self.datadir, [clusters_root()], "the sql workload's MariaDB datadir")
        self.datadir.mkdir(parents=True)
        self.runner.run(install_argv(self.datadir), f"sql-install-db-{self.datadir.parent.name}", timeout=timeout)
        self.socket.unlink(missing_ok=True)
        self.proc = self.runner.popen(server_argv(str(self.datadir), str(self.socket)),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        def listening() -> bool:
            if self.proc.poll() is not None:
                raise WorkloadError(f"mariadbd exited {self.proc.returncode}; see {self.socket.with_suffix('.err')}")
            return self.socket.exists()
        wait_until(listening, f"mariadbd to open {self.socket}", timeout, 0.2, WorkloadError)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        remove_owned_tree(self.datadir, [clusters_root()], "the sql workload's MariaDB datadir")


class Sql(Workload):
    name = "sql"
    Params = SqlParams

    def __init__(self) -> None:
        self.servers: dict[str, MariaDB] = {}

    def estimate(self, params: SqlParams) -> float:
        # MariaDB's first start: about 3 s with its datadir on CephFS (the system tables made locally
        # and copied), 1.4 s on the local disk (quickstart)
        start = 0 if params.target in self.servers else 1.4 if params.target == MACHINE else 3
        return params.iterations * params.queries / 1000 + 0.3 + start

    def server(self, runner: Runner, target: str) -> MariaDB:
        if target not in self.servers:
            datadir = runner.workdir(target, f"dfslab-sql-{target}") / "data"
            # The socket stays on local disk: a UNIX socket on a FUSE mount is not portable.
            socket = (runner.scratch or Path("/tmp")) / f"sql-{target}.sock"
            server = MariaDB(runner, datadir, socket)
            server.start()
            self.servers[target] = server
        return self.servers[target]

    def run(self, runner: Runner, params: SqlParams, repetition: int) -> list[Measurement]:
        c = params.concurrency
        queries = params.queries + (-params.queries % c)  # the seed's "queries_corrected": divides evenly
        tag = runner.raw_name(f"sql-{params.target}-c{c}-r{repetition}")
        if params.target != MACHINE and not runner.mount_is_here:
            datadir = runner.workdir(params.target, f"dfslab-sql-{params.target}") / "data"
            out = runner.run(in_one_command(datadir, params, queries), tag, timeout=1800)
        else:
            server = self.server(runner, params.target)
            out = runner.run(load_argv(str(server.socket), params, queries), tag, timeout=1800)
        times = parse(out)
        if "time_avg" not in times:
            raise WorkloadError(f"mysqlslap printed no timing; see {runner.raw_dir / tag}.txt")
        labels = {**params.model_dump(mode="python"), "queries": queries}
        rows = [Measurement(self.name, metric, value, "s", labels, repetition) for metric, value in times.items()]
        rows.append(Measurement(self.name, "qps", queries / times["time_avg"], "op/s", labels, repetition))
        # one iteration (all the queries) is the timed phase: mysqlslap times each and averages them
        rows.append(Measurement(self.name, "duration", times["time_avg"], "s", labels, repetition))
        return rows

    def headlines(self, rows: list[Measurement]) -> list[Measurement]:
        return [r for r in rows if r.metric == "qps"]

    def finish(self, runner: Runner) -> None:
        for server in self.servers.values():
            server.stop()
        self.servers.clear()
