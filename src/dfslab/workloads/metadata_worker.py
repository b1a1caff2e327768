"""Worker for the metadata workload, run on the client node:
python -m dfslab.workloads.metadata_worker DIR PROCS FILES_PER_PROC FILE_SIZE [LATER_DIR] → JSON on
stdout. LATER_DIR: the same directory through another client of the filesystem, where the stat
and read phases run (cold: that client holds none of the files' metadata or data); create and
unlink run through DIR."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import queue
import shutil
import sys
import threading
import time

PHASES = ("create", "stat", "read", "unlink")
READS = ("stat", "read")  # through LATER_DIR when given


def worker(base: str, later: str, rank: int, files: int, size: int, barrier, results) -> None:
    try:
        _phases(base, later, rank, files, size, barrier, results)
    except threading.BrokenBarrierError:
        sys.exit(2)  # another worker died; main() says which


def _phases(base: str, later: str, rank: int, files: int, size: int, barrier, results) -> None:
    os.makedirs(os.path.join(base, f"proc{rank}"), exist_ok=True)
    payload = os.urandom(size)
    for phase in PHASES:
        names = [os.path.join(later if phase in READS else base, f"proc{rank}", f"f{i}") for i in range(files)]
        barrier.wait()
        start = time.perf_counter()
        for name in names:
            if phase == "create":
                with open(name, "wb") as fh:
                    fh.write(payload)
            elif phase == "stat":
                os.stat(name)
            elif phase == "read":
                with open(name, "rb") as fh:
                    if len(fh.read()) != size:
                        raise SystemExit(f"short read of {name}")
            else:
                os.unlink(name)
        results.put((phase, rank, start, time.perf_counter()))
    barrier.wait()


def _next_result(results, workers, barrier, deadline_s: float = 3600):
    """The next phase result; a worker that died makes the step fail within a second (the
    barrier is broken, so the others stop waiting for it) instead of after the deadline."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            return results.get(timeout=1)
        except queue.Empty:
            dead = [w for w in workers if w.exitcode not in (None, 0)]
            if dead:
                barrier.abort()
                raise SystemExit(f"a worker died (exit {dead[0].exitcode}); the others were stopped") from None
    barrier.abort()
    raise SystemExit(f"no phase finished within {deadline_s:.0f} s")


def main(base: str, procs: int, files: int, size: int, later: str | None = None) -> dict:
    os.makedirs(base, exist_ok=True)
    barrier = mp.Barrier(procs)
    results = mp.Queue()
    workers = [mp.Process(target=worker, args=(base, later or base, r, files, size, barrier, results)) for r in range(procs)]
    for w in workers:
        w.start()
    spans: dict[str, list[tuple[float, float]]] = {p: [] for p in PHASES}
    try:
        for _ in range(procs * len(PHASES)):
            phase, _rank, start, end = _next_result(results, workers, barrier)
            spans[phase].append((start, end))
    finally:
        for w in workers:
            if w.is_alive() and w.exitcode is None:
                w.join(timeout=5)
            if w.is_alive():
                w.kill()
                w.join()
    failed = [w.exitcode for w in workers if w.exitcode != 0]
    if failed:
        raise SystemExit(f"worker exited {failed[0]}")
    shutil.rmtree(base, ignore_errors=True)
    # A phase lasts from its first start to its last end across processes.
    return {p: {"ops": procs * files, "seconds": max(e for _, e in s) - min(b for b, _ in s)} for p, s in spans.items()}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]),
                          sys.argv[5] if len(sys.argv) > 5 else None)))
