"""Faults timed into a run: a thread injects each fault `at` seconds after its workload
starts and undoes it `duration` later, while a checksummed writer keeps load on the cluster
and journals every acknowledged write. Afterwards: wait for recovery, then verify."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..fault import FaultedCluster
from ..workloads import Runner
from . import inject, undo
from .entry import FaultEntry
from .integrity import STREAM

INTEGRITY = [sys.executable, "-m", "dfslab.chaos.integrity"]


class TimedFault:
    """One fault entry: inject, hold, undo; events with wall-clock times."""

    def __init__(self, cluster: FaultedCluster, entry: FaultEntry, index: int):
        self.cluster, self.entry, self.index = cluster, entry, index
        self.events: dict[str, Any] = {"index": index, "kind": entry.kind, "target": entry.target,
                                       "during": entry.during, "error": None}
        self._thread = threading.Thread(target=self._run, name=f"fault-{index}", daemon=True)
        self._cancelled = threading.Event()

    def start(self) -> "TimedFault":
        self.events["workload_start"] = time.time()
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            if self._cancelled.wait(self.entry.at):
                return
            injected = inject(self.cluster, self.entry.kind, self.entry.target, **self.entry.options)
            self.events["inject"] = injected.at
            self.events["in_effect"] = injected.in_effect
            if "steps" in injected.record:  # what a long fault did, step by step (an upgrade's restarts)
                self.events["steps"] = injected.record["steps"]
            # what it did, as its undo is given it (the containers signalled and how many processes)
            self.events["done"] = {k: v for k, v in injected.record.items() if k != "steps"}
            self._cancelled.wait(self.entry.duration)  # cancelled: undone now
            # Recovery counts from here: an undo may itself wait for the system to come back (a
            # lost node's kubelet and pods), and that wait is part of recovering, not before it.
            self.events["undo_start"] = time.time()
            seen = undo(self.cluster, injected.as_dict())
            self.events["undo"] = time.time()
            if seen:
                self.events["seen"] = seen
        except Exception as exc:
            self.events["error"] = str(exc) or repr(exc)

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def cancel(self, timeout: float = 300) -> None:
        """The run was interrupted: a fault not yet injected never is, one in effect is undone now."""
        self._cancelled.set()
        self.join(timeout)


STOP_GRACE = 0.5  # s: a write that is not blocked by a fault ends well within it


class Writer:
    """The checksummed writer on the client node, with its journal of acknowledged writes. Its
    journal comes back on its stdout and it stops at its stdin's end (integrity.STREAM): the same
    where it runs in this machine's namespaces and where it runs in a pod reached through an exec."""

    def __init__(self, runner: Runner, directory: Path, store: str):
        self.runner, self.directory, self.store = runner, directory, store
        self.journal = directory / f"journal-{int(time.time() * 1000)}.jsonl"
        self.proc: subprocess.Popen | None = None
        self._copier: threading.Thread | None = None

    def start(self) -> "Writer":
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self.journal.with_suffix(".err"), "w") as err:
            self.proc = self.runner.popen([*INTEGRITY, "write", self.store, STREAM, STREAM], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=err, text=True)
        self._copier = threading.Thread(target=self._copy_journal, name="integrity-journal", daemon=True)
        self._copier.start()
        return self

    def _copy_journal(self) -> None:
        """The writer's journal lines into the journal file as they come (read during the run for
        the bytes it sent); its last line, what it wrote in all, is not the journal's."""
        with open(self.journal, "a") as fh:
            for line in self.proc.stdout:
                if '"op"' in line:
                    fh.write(line)
                    fh.flush()

    def request_stop(self) -> None:
        """No new write after the one in flight (the writer stops at its stdin's end). A writer that
        is not blocked ends within its write: waited for briefly, so that its journal lines still in
        the pipe are in the journal file when this returns (a blocked one is left to `stop`)."""
        if self.proc is not None and self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:  # it has already exited
                pass
            try:
                self.proc.wait(timeout=STOP_GRACE)
            except subprocess.TimeoutExpired:
                return
            if self._copier is not None:
                self._copier.join(timeout=STOP_GRACE)

    def stop(self, timeout: float = 300) -> None:
        self.request_stop()
        if self.proc is None:
            return
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:  # a write still blocked: its ack never came, nothing was promised
            self.proc.terminate()  # a Job's wrapper or an exec's relay passes it on
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._copier is not None:
            self._copier.join(timeout=30)

    def acks(self) -> list[dict[str, Any]]:
        if not self.journal.exists():
            return []
        lines = (json.loads(line) for line in self.journal.read_text().splitlines() if line.strip())
        return [entry for entry in lines if entry.get("op") == "ack"]


# Health must hold this long to count as recovered: right after a cut link comes back, Ceph may
# still mark the OSD down on its peers' queued failure reports, or report the ops it held.
STABLE_S = 5.0


def wait_recovered(cluster: FaultedCluster, timeout: float, stable: float = STABLE_S) -> float | None:
    """Seconds until the backend reports full health and keeps it for `stable` s (counted from the
    first healthy answer of that stretch), or None on timeout."""
    start = time.time()
    healthy_since = None
    while time.time() - start < timeout + stable:
        try:
            ok = cluster.backend.healthy()
        except Exception:
            ok = False  # MONs electing, MGR restarting: keep asking
        now = time.time()
        if not ok:
            healthy_since = None
            if now - start >= timeout:
                return None
        elif healthy_since is None:
            healthy_since = now
        elif now - healthy_since >= stable:
            return healthy_since - start
        time.sleep(1)
    return None


CLIENT_SERIES = ("net.client.tx", "net.client.rx")


def throughput(samples: list[tuple[float, str, float, str]], start: float, end: float) -> float | None:
    """Mean client throughput (MB/s, sent + received) in [start, end), from the client
    namespace's own network counters: the workload and the checksummed writer together, and
    without the seconds of lag of Ceph's MGR-reported client rates."""
    per_t: dict[float, float] = {}
    for t, series, value, _ in samples:
        if start <= t < end and series in CLIENT_SERIES:
            per_t[t] = per_t.get(t, 0.0) + value
    return sum(per_t.values()) / len(per_t) if per_t else None


def write_latency(acks: list[dict[str, Any]]) -> list[tuple[float, float, float, int]]:
    """Per second in which writes were issued: (second, mean ms, max ms, writes) of the
    checksummed writer's acknowledged writes, each timed from just before the call to its ack.
    A write issued during a fault counts there with its whole wait, even if its ack came after
    the undo; seconds in which no write was issued (one was blocked) are absent."""
    buckets: dict[int, list[float]] = {}
    for a in acks:
        buckets.setdefault(int(a["start"]), []).append((a["ack"] - a["start"]) * 1000)
    return [(float(t), sum(v) / len(v), max(v), len(v)) for t, v in sorted(buckets.items())]


def longest_stall(acks: list[dict[str, Any]], start: float, end: float) -> float | None:
    """The longest time in [start, end) in which no write was acknowledged: the writer has one
    write in flight at a time, so this is how long writes were blocked (None: no writer)."""
    if not acks or end <= start:
        return None
    times = sorted(a["ack"] for a in acks if start <= a["ack"] < end)
    edges = [start, *times, end]
    return max(b - a for a, b in zip(edges, edges[1:]))


def mean_latency(acks: list[dict[str, Any]], start: float, end: float, completed: bool = False) -> float | None:
    """Mean latency (ms) of the checksummed writer's writes in flight at any time in [start, end):
    a write blocked across the whole window counts with its whole wait (the writer has one write
    in flight at a time, so a fault that blocks it leaves no write issued inside the window; CI
    once saw exactly that, an OSD kill's 6 s with no latency at all). `completed`: only writes
    issued and acknowledged inside the window (the steady state before a fault)."""
    if completed:
        chosen = [a for a in acks if start <= a["start"] and a["ack"] < end]
    else:
        chosen = [a for a in acks if a["start"] < end and a["ack"] >= start]
    return sum((a["ack"] - a["start"]) * 1000 for a in chosen) / len(chosen) if chosen else None


def healthy_from(samples: list[tuple[float, str, float, str]], since: float, until: float) -> float | None:
    """The first sample time in [since, until] from which the backend's `<name>.degraded` series
    read 0 at every sample up to `until` (None: it did not, or nothing was sampled)."""
    points = sorted((t, value) for t, series, value, _ in samples if series.endswith(".degraded") and since <= t <= until)
    start = None
    for t, value in points:
        if value > 0:
            start = None
        elif start is None:
            start = t
    return start


def detection(samples: list[tuple[float, str, float, str]], inject_at: float) -> float | None:
    """Seconds from inject to the first sample where the backend saw something wrong."""
    for t, series, value, _ in sorted(samples):
        if t < inject_at:
            continue
        if series.endswith(".degraded") and value > 0:  # every backend samples <name>.degraded
            return t - inject_at
    return None
