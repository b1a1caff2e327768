"""Processes dfslab starts, and only those.

Each daemon is started in its own session (so Ctrl-C on dfslab does not reach it and a
killed dfslab leaves it for `down` to find), with its PID *and* kernel start time written
to the state directory: a PID is only ever signalled if its start time still matches,
so a recycled PID of somebody else's process is never touched. Every child also carries
DFSLAB_CLUSTER in its environment, which lets `down` find a process whose PID file was
never written because dfslab died between fork and write.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

from .polling import poll
from .state import ClusterState

ENV_MARK = "DFSLAB_CLUSTER"


def proc_start_time(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            stat = fh.read()
    except OSError:
        return None
    # The command name may contain spaces and parentheses: split after the last ')'.
    return int(stat.rsplit(")", 1)[1].split()[19])


@dataclass
class TrackedProcess:
    name: str
    node: str
    pid: int
    start_time: int
    argv: list[str]
    log: str
    meta: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)  # what spawn added to dfslab's environment

    def restartable(self) -> dict:
        """What starting this process again as it was takes (a fault's undo)."""
        return {"name": self.name, "node": self.node, "cmd": self.meta.get("cmd", self.argv), "meta": self.meta,
                "env": self.env}

    def alive(self) -> bool:
        return _running(self.pid, self.start_time)

    def log_tail(self, lines: int = 5) -> str:
        """The last lines of its output (why it exited, when it did), one line each joined by " | "."""
        try:
            with open(self.log, "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - 8192))
                text = f.read().decode(errors="replace")
        except OSError as exc:
            return f"(no log: {exc.strerror})"
        return " | ".join(line.strip() for line in text.splitlines()[-lines:] if line.strip()) or "(empty log)"

    def rss_bytes(self) -> int | None:
        try:
            return psutil.Process(self.pid).memory_info().rss if self.alive() else None
        except psutil.Error:
            return None


class ProcessTable:
    def __init__(self, state: ClusterState):
        self.state = state
        self._popen: dict[str, subprocess.Popen] = {}

    def _file(self, name: str) -> Path:
        return self.state.pids_dir / f"{name}.json"

    def log_path(self, name: str) -> Path:
        """Where `spawn` appends the output of the process named `name` (across its restarts)."""
        return self.state.logs_dir / f"{name}.out"

    def spawn(self, name: str, node: str, argv: list[str], env: dict[str, str] | None = None, meta: dict | None = None) -> TrackedProcess:
        log = self.log_path(name)
        full_env = {**os.environ, **(env or {}), ENV_MARK: self.state.name}
        with open(log, "ab") as out:
            popen = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                env=full_env, start_new_session=True, close_fds=True,
            )
        start = proc_start_time(popen.pid) or 0
        proc = TrackedProcess(name, node, popen.pid, start, argv, str(log), meta or {}, env or {})
        self._record(proc)
        self._popen[name] = popen
        return proc

    def _record(self, proc: TrackedProcess) -> None:
        # Written aside and renamed: the sampler lists these files from its own thread, and
        # must never read one half-written.
        path = self._file(proc.name)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(proc)))
        os.replace(tmp, path)

    def adopt(self, name: str, node: str, pid: int, argv: list[str], log: str, env: dict[str, str] | None = None,
              meta: dict | None = None) -> TrackedProcess:
        """Track a process something else started for dfslab (a container's first process)."""
        proc = TrackedProcess(name, node, pid, proc_start_time(pid) or 0, argv, log, meta or {}, env or {})
        self._record(proc)
        self._popen.pop(name, None)
        return proc

    def get(self, name: str) -> TrackedProcess | None:
        try:
            return TrackedProcess(**json.loads(self._file(name).read_text()))
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def all(self) -> list[TrackedProcess]:
        if not (self.state.dir / "pids").is_dir():
            return []
        procs = []
        for path in sorted((self.state.dir / "pids").glob("*.json")):
            try:
                procs.append(TrackedProcess(**json.loads(path.read_text())))
            except FileNotFoundError:
                # Stopped between the listing and the read (the sampler lists from its own
                # thread while a workload stops its clients): it is no longer running.
                continue
            except (json.JSONDecodeError, TypeError):
                continue
        return procs

    def exited(self, name: str) -> int | None:
        """Exit code if a process this dfslab started has died (reaps it), else None."""
        popen = self._popen.get(name)
        if popen is not None:
            return popen.poll()
        proc = self.get(name)
        return None if proc is None or proc.alive() else -1

    def stop(self, name: str, timeout: float = 10.0) -> None:
        proc = self.get(name)
        if proc is not None:
            terminate([proc.pid], {proc.pid: proc.start_time}, timeout)
            self._reap(name)
            self._file(name).unlink(missing_ok=True)

    def _reap(self, name: str) -> None:
        popen = self._popen.pop(name, None)
        if popen is not None:
            try:
                popen.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass

    def stop_all(self, timeout: float = 10.0) -> list[int]:
        """Stop every tracked process and every process marked with this cluster's name."""
        procs = self.all()
        starts = {p.pid: p.start_time for p in procs}
        for pid in marked_pids(self.state.name):
            starts.setdefault(pid, proc_start_time(pid) or 0)
        killed = terminate(list(starts), starts, timeout)
        for name in list(self._popen):
            self._reap(name)
        for path in (self.state.dir / "pids").glob("*.json") if (self.state.dir / "pids").is_dir() else []:
            path.unlink(missing_ok=True)
        return killed


def cpu_seconds(procs: list[TrackedProcess], prefix: str) -> float | None:
    """CPU seconds the running processes named `prefix`* have used since they started, every
    thread's, to the nanosecond (the scheduler's own count, /proc/PID/task/*/schedstat: the
    10 ms ticks of /proc/PID/stat read 0 for an OSD serving a 10 MB query); None when none is
    running or none could be read."""
    total, read = 0.0, False
    for proc in procs:
        if not proc.name.startswith(prefix) or not proc.alive():
            continue
        seconds = _threads_cpu_seconds(proc.pid)
        if seconds is not None:
            total += seconds
            read = True
    return total if read else None


def proc_io(pid: int) -> tuple[int, int] | None:
    """(read, written) bytes the process caused at the block layer (/proc/PID/io: O_DIRECT
    BlueStore, bricks; page cache hits not counted), children it reaped included."""
    try:
        with open(f"/proc/{pid}/io") as fh:
            values = dict(line.split(": ") for line in fh.read().splitlines())
        return int(values["read_bytes"]), int(values["write_bytes"])
    except (OSError, KeyError, ValueError):
        return None


def disk_read_bytes(procs: list[TrackedProcess], prefix: str) -> int | None:
    """Bytes the running processes named `prefix`* have had read from block devices since they
    started; None when none is running or none could be read."""
    reads = [io[0] for proc in procs if proc.name.startswith(prefix) and proc.alive() and (io := proc_io(proc.pid))]
    return sum(reads) if reads else None


def _threads_cpu_seconds(pid: int) -> float | None:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    total = 0
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as fh:
                total += int(fh.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended between the listing and the read
    return total / 1e9


def is_marked(pid: int, cluster: str) -> bool:
    """The process carries cluster's DFSLAB_CLUSTER mark (its own or inherited, e.g. a brick glusterd started)."""
    try:
        return psutil.Process(pid).environ().get(ENV_MARK) == cluster
    except psutil.Error:
        return False


def marked_pids(cluster: str) -> list[int]:
    return [proc.pid for proc in psutil.process_iter(["pid"]) if proc.pid != os.getpid() and is_marked(proc.pid, cluster)]


def stray_tools(cluster: str, run_mark: str) -> dict[int, int]:
    """{pid: start time} of the cluster's marked processes that a run started (their environment
    has `run_mark`, which only a run's tools get): left running by a dfslab that died, they still
    write to what `down` is about to remove."""
    found = {}
    for pid in marked_pids(cluster):
        try:
            if run_mark in psutil.Process(pid).environ():
                found[pid] = proc_start_time(pid) or 0
        except psutil.Error:  # gone since
            continue
    return found


def terminate(pids: list[int], start_times: dict[int, int], timeout: float = 10.0) -> list[int]:
    """SIGTERM, then SIGKILL after `timeout`, only PIDs whose start time still matches."""
    ours = [pid for pid in pids if proc_start_time(pid) == start_times.get(pid)]
    for pid in ours:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    remaining = list(ours)

    def ended() -> bool:
        remaining[:] = [p for p in remaining if _running(p, start_times[p])]
        return not remaining
    poll(ended, f"PIDs {remaining} to end after SIGTERM", timeout, 0.1)
    for pid in remaining:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_gone({pid: start_times[pid] for pid in remaining})
    return ours


def wait_gone(start_times: dict[int, int], timeout: float = 30.0) -> list[int]:
    """Wait until every PID is gone (reaped, or a zombie left to its parent): the caller may
    reuse names, ports and files at once. Returns those still running after `timeout`
    (a process stuck in the kernel, in D state, cannot be hurried)."""
    left = [pid for pid in start_times if _running(pid, start_times[pid])]

    def gone() -> bool:
        left[:] = [pid for pid in left if _running(pid, start_times[pid])]
        return not left
    poll(gone, f"PIDs {left} to be gone", timeout, 0.05)
    return left


def _running(pid: int, start_time: int) -> bool:
    if proc_start_time(pid) != start_time:
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def tool_version(argv: list[str]) -> str:
    """First line of a tool's `--version`, or "not installed"."""
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        return (res.stdout or res.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "not installed"
