"""Talks to the cluster's monitors and manager through `helper.py` on the client node."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ...procs import ENV_MARK
from ...runtime import CLIENT, Runtime
from .. import BackendError
from . import helper
from .conf import CephLayout
from .objects import release_python


class CephAdmin:
    def __init__(self, runtime: Runtime, layout: CephLayout):
        self.runtime = runtime
        self.layout = layout
        self._proc: subprocess.Popen | None = None
        self._lines: queue.Queue = queue.Queue()
        # One request and its reply at a time: the run's commands and its sampler's `status` (a
        # thread of its own) share the connection, one Backend per run.
        self._lock = threading.Lock()
        self._asked = 0  # the number of the last request: a late reply to one that timed out is dropped

    def _helper_argv(self) -> list[str]:
        """helper.py with the client's librados: a release root's own Python where the client runs
        one (its keys and protocol: Tentacle's AES-256 keys are beyond Pacific's librados), else
        dfslab's (this machine's Ceph)."""
        args = [str(self.layout.conf), str(self.layout.admin_keyring)]
        python = release_python(self.runtime, CLIENT)
        if python:
            return [*python, "-c", Path(helper.__file__).read_text(), *args]
        return [sys.executable, "-m", helper.__name__, *args]

    def start(self, timeout: float = 60) -> None:
        argv = self._helper_argv()
        log = open(self.runtime.state.logs_dir / "admin-helper.out", "ab")
        self._proc = subprocess.Popen(
            self.runtime.command(CLIENT, argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
            text=True, env={**os.environ, ENV_MARK: self.runtime.state.name}, start_new_session=True,
        )
        log.close()
        threading.Thread(target=self._read, daemon=True).start()
        reply = self._next(timeout, "connecting to the monitors")
        if not reply.get("ready"):
            raise BackendError(f"admin client did not connect: {reply}")

    def _read(self) -> None:
        assert self._proc and self._proc.stdout
        for line in self._proc.stdout:
            self._lines.put(json.loads(line))
        self._lines.put(None)

    def _next(self, timeout: float, what: str, allowed: float | None = None) -> dict:
        """The helper's next line, within `timeout` s (`allowed`: the whole wait the message names)."""
        try:
            reply = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise BackendError(f"no answer from the monitors within {allowed or timeout:.0f} s while {what}; "
                               f"see {self.runtime.state.logs_dir}/admin-helper.out and the ceph-mon logs") from None
        if reply is None:
            raise BackendError(f"admin client exited while {what}; see {self.runtime.state.logs_dir}/admin-helper.out")
        return reply

    def raw(self, prefix: str, *, target: str = "mon", inbuf: str = "", timeout: float = 60, **args: Any) -> tuple[int, str, str]:
        with self._lock:
            if self._proc is None:
                self.start()
            assert self._proc and self._proc.stdin
            cmd = {"prefix": prefix, "format": "json", **args}
            self._asked += 1
            self._proc.stdin.write(json.dumps({"cmd": cmd, "target": target, "inbuf": inbuf, "id": self._asked}) + "\n")
            self._proc.stdin.flush()
            deadline = time.monotonic() + timeout
            while (reply := self._next(max(0.0, deadline - time.monotonic()), f"running `{prefix}`", timeout)).get("id") != self._asked:
                pass  # the answer to an earlier request that gave up waiting for it
            return reply["ret"], reply["out"], reply["err"]

    def cmd(self, prefix: str, **kw: Any) -> Any:
        """Run a command; parsed JSON output (or None). Raises BackendError on failure."""
        ret, out, err = self.raw(prefix, **kw)
        if ret != 0:
            raise BackendError(f"`ceph {prefix}` failed ({ret}): {err.strip()}")
        try:
            return json.loads(out) if out.strip() else None
        except json.JSONDecodeError:
            return out

    def close(self) -> None:
        if self._proc is not None:
            try:
                if self._proc.stdin:
                    self._proc.stdin.close()
                self._proc.wait(timeout=10)
            except (subprocess.TimeoutExpired, BrokenPipeError, OSError):
                self._proc.kill()
                self._proc.wait()
            self._proc = None
