"""Query pushdown into Ceph (SkyhookDM's experiment): a columnar dataset of RADOS objects
(`columnar`, `dataset`), a small SQL subset (`query`), and `engine`, run on the client node,
which answers a query either inside the OSDs through native/cls_dfslab or on the client.
`QueryWorker` below drives one engine process from outside the cluster's namespaces."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from .query import QueryError

WORKER = [sys.executable, "-m", "dfslab.pushdown.worker"]
TARGET = "rados"  # what a cluster must offer (dfslab.registry.TARGETS): the worker reads and runs in its pools


class QueryWorker:
    """One query worker process on the client node (pushdown/worker.py); `call` sends a request and waits for its answer."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc

    @classmethod
    def start(cls, argv: list[str], env: dict[str, str]) -> "QueryWorker":
        return cls(subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True))

    def call(self, **request: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        line = self.proc.stdout.readline()
        if not line:
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise QueryError(f"the query worker on the client node exited: {err.strip()[-800:]}")
        answer = json.loads(line)
        if "error" in answer:
            raise QueryError(answer["error"])
        return answer

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (subprocess.TimeoutExpired, BrokenPipeError, OSError):
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> "QueryWorker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["WORKER", "TARGET", "QueryWorker", "QueryError"]
