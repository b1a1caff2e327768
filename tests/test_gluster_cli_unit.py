"""The gluster CLI's helpers die with it: `heal info` forks glfsheal, which outlived a CLI that
gave up (its --timeout) and piled up until no heal query answered (a flake hunt found 39). The
wrapper every CLI call runs under (glusterd.reaped) is checked here with a stand-in CLI that
leaves a child behind, as glfsheal is left: the child must be gone when the call returns."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import psutil

from dfslab.backends.gluster.glusterd import TIMED_OUT, reaped

LEAVES_A_CHILD = """#!/bin/sh
sleep 300 &
echo "$!"
{rest}
"""


def _cli(tmp_path: Path, rest: str) -> Path:
    path = tmp_path / "cli.sh"
    path.write_text(LEAVES_A_CHILD.format(rest=rest))
    path.chmod(0o755)
    return path


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.05)
    return False


def test_a_cli_that_returns_leaves_no_helper_and_keeps_its_exit_status_and_output(tmp_path):
    res = subprocess.run(reaped([str(_cli(tmp_path, "echo answer; exit 3"))], 10), capture_output=True, text=True,
                         timeout=30)
    child, answer = res.stdout.split()
    assert (res.returncode, answer) == (3, "answer")
    assert _gone(int(child)), "the CLI's helper outlived it"


def test_a_cli_past_its_limit_is_stopped_with_its_helpers_and_says_so(tmp_path):
    started = time.monotonic()
    res = subprocess.run(reaped([str(_cli(tmp_path, "sleep 100"))], 1), capture_output=True, text=True, timeout=30)
    assert res.returncode == TIMED_OUT and time.monotonic() - started < 10
    assert _gone(int(res.stdout.split()[0]))
