"""Worker for the mdtest workload, run on the client node:
python -m dfslab.workloads.mdtest_worker DIR PROCS FILES_PER_PROC FILE_SIZE → JSON on stdout."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import shutil
import sys
import time

PHASES = ("create", "stat", "read", "unlink")


def worker(base: str, rank: int, files: int, size: int, barrier, results) -> None:
    mydir = os.path.join(base, f"proc{rank}")
    os.makedirs(mydir, exist_ok=True)
    payload = os.urandom(size)
    names = [os.path.join(mydir, f"f{i}") for i in range(files)]
    for phase in PHASES:
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


def main(base: str, procs: int, files: int, size: int) -> dict:
    os.makedirs(base, exist_ok=True)
    barrier = mp.Barrier(procs)
    results = mp.Queue()
    workers = [mp.Process(target=worker, args=(base, r, files, size, barrier, results)) for r in range(procs)]
    for w in workers:
        w.start()
    spans: dict[str, list[tuple[float, float]]] = {p: [] for p in PHASES}
    for _ in range(procs * len(PHASES)):
        phase, _rank, start, end = results.get(timeout=3600)
        spans[phase].append((start, end))
    for w in workers:
        w.join()
        if w.exitcode != 0:
            raise SystemExit(f"worker exited {w.exitcode}")
    shutil.rmtree(base, ignore_errors=True)
    # A phase lasts from its first start to its last end across processes.
    return {p: {"ops": procs * files, "seconds": max(e for _, e in s) - min(b for b, _ in s)} for p, s in spans.items()}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))))
