"""What a bench's figures were measured on: every bench prints this line first, so a time
says which CPU it is of (CPUs of machines "of this size" differ by 2x)."""

from __future__ import annotations

import os
from pathlib import Path


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def describe() -> str:
    return f"CPU: {cpu_model()} ({os.cpu_count()} cores)"
