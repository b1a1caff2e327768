"""How a measurement's parameters read in tables and legends, shared by the report and run
comparison (which builds on the same grouping)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any



def param_text(key: str, value: Any) -> str:
    """A parameter as a label shows it. Units come with the value (RunDir.rows gives byte
    parameters as units.ByteCount, from the units the run recorded), never from the key's name."""
    if isinstance(value, list):
        return "/".join(map(str, value))
    return str(value)


def varying_keys(rows: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Per workload, the parameter keys that differ between its rows (what labels need)."""
    seen: dict[str, dict[str, set]] = defaultdict(lambda: defaultdict(set))
    for r in rows:
        seen[r["workload"]]  # a workload whose rows have no parameters still has an (empty) entry
        for k, v in r["params"].items():
            seen[r["workload"]][k].add(repr(v))
    keep = {"op", "mode", "phase", "target", "src", "dst", "fault"}  # a faulted repetition's rows stand apart
    return defaultdict(set, {w: {k for k, vals in keys.items() if len(vals) > 1 or k in keep} for w, keys in seen.items()})


def params_label(params: dict[str, Any], keys: set[str]) -> str:
    return ", ".join(f"{k}={param_text(k, v)}" for k, v in sorted(params.items()) if k in keys)


SUMMARY_METRICS = ["bandwidth", "iops", "ops", "qps", "latency_avg", "latency_p99", "time_avg"]
