"""The run directory, the product's unit of truth:

    runs/<id>/spec.yaml          the exact cluster spec (and experiment, when there is one)
    runs/<id>/provenance.json    dfslab version + git revision, tool versions, kernel, CPU, memory, spec hash, start/end
    runs/<id>/raw/               every tool's output, untouched
    runs/<id>/results.csv        one row per measurement: workload, params, repetition, metric, value, unit, t
    runs/<id>/results.parquet    the same rows, typed, each parameter its own column (pandas, DuckDB)
    runs/<id>/units.json         each workload parameter's unit, recorded when the run starts
    runs/<id>/report.html        self-contained report
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Iterable

import psutil
import yaml

from . import __version__
from .procs import tool_version
from .units import PARAM_TYPES
from .workloads import Measurement, current_name, current_params

# `step`: which step of the experiment measured the row (its label and repetition): how a
# resumed run knows what is done. Runs made before it have no such column.
COLUMNS = ["workload", "params", "repetition", "metric", "value", "unit", "t", "step"]


def runs_root() -> Path:
    """Where runs are stored, absolute: paths built under it are removed by dfslab's own checks,
    which refuse relative ones (the default `runs` is the working directory's)."""
    return Path(os.environ.get("DFSLAB_RUNS", "runs")).absolute()


def _git_revision() -> str:
    here = Path(__file__).resolve().parent
    res = subprocess.run(["git", "-C", str(here), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if res.returncode != 0:
        return "unknown"
    dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain"], capture_output=True, text=True).stdout.strip()
    return res.stdout.strip() + ("-dirty" if dirty else "")


class RunDir:
    def __init__(self, path: Path):
        self.path = Path(path)

    @classmethod
    def create(cls, label: str, root: Path | None = None) -> "RunDir":
        root = root or runs_root()
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = root / f"{stamp}-{label}"
        n = 1
        while path.exists():
            n += 1
            path = root / f"{stamp}-{label}-{n}"
        (path / "raw").mkdir(parents=True)
        return cls(path)

    @property
    def raw_dir(self) -> Path:
        return self.path / "raw"

    @property
    def table(self) -> Path:
        return self.path / "results.csv"

    def write_spec(self, spec_data: dict[str, Any], name: str = "spec.yaml") -> str:
        text = yaml.safe_dump(spec_data, sort_keys=False)
        (self.path / name).write_text(text)
        return hashlib.sha256(text.encode()).hexdigest()

    def write_json(self, name: str, data: Any) -> None:
        """Whole or not at all (a kill -9 mid-write must not leave half a file for --resume to read)."""
        path = self.path / name
        tmp = path.with_name(f".{name}.tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str))
        os.replace(tmp, path)

    def read_json(self, name: str) -> Any:
        path = self.path / name
        return json.loads(path.read_text()) if path.exists() else {}

    def start(self, spec_hash: str, filesystem_versions: dict[str, str], charts: list[dict[str, Any]],
              metadata: dict[str, Any] | None = None, as_run: Callable[[list[str]], list[str]] = list) -> None:
        """`charts`: the backend's figures of its own sampler series (`backends.Chart`);
        `metadata`: where its metadata work goes ({servers: regex or None, path: text}); `as_run`:
        a tool's argv as the cluster's clients run it (from its release's root), for their versions."""
        self.write_json("provenance.json", {
            "dfslab_version": __version__, "git_revision": _git_revision(), "spec_sha256": spec_hash,
            "filesystem_versions": filesystem_versions, "charts": charts, "fio_version": tool_version(as_run(["fio", "--version"])),
            "iperf3_version": tool_version(as_run(["iperf3", "--version"])), "kernel": platform.release(),
            "cpu": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
            "memory_bytes": psutil.virtual_memory().total, "hostname": platform.node(),
            "start": time.time(), "end": None, "metadata": metadata,
        })

    def finish(self, **extra: Any) -> None:
        prov = self.read_json("provenance.json")
        prov.update(end=time.time(), **extra)
        self.write_json("provenance.json", prov)

    def add(self, rows: Iterable[Measurement], step: str = "") -> None:
        """Append rows; one call per step, flushed and synced, so a step's rows are all there or none."""
        rows = list(rows)
        new = not self.table.exists()
        lines = io.StringIO()
        writer = csv.DictWriter(lines, COLUMNS)
        if new:
            writer.writeheader()
        for m in rows:
            writer.writerow({**m.row(), "step": step})
        with open(self.table, "a", newline="") as fh:
            fh.write(lines.getvalue())  # one write(): a kill lands before it or after it, not inside
            fh.flush()
            os.fsync(fh.fileno())

    def completed_steps(self) -> set[str]:
        """Steps whose rows are in results.csv (a step's rows are written once it has succeeded)."""
        if not self.table.exists():
            return set()
        with open(self.table, newline="") as fh:
            reader = csv.DictReader(fh)
            if "step" not in (reader.fieldnames or []):
                raise ValueError(f"{self.path} was made before runs could be resumed (its results.csv has no "
                                 f"step column); re-run it instead: dfslab run {self.path}")
            return {row["step"] for row in reader if row.get("step") and row.get("value") not in (None, "")}

    def rows(self) -> list[dict[str, Any]]:
        if not self.table.exists():
            return []
        out = []
        units = self.read_json("units.json")  # {workload: {parameter: unit}}, recorded at the start
        with open(self.table, newline="") as fh:
            for row in csv.DictReader(fh):
                row["value"] = float(row["value"])
                row["repetition"] = int(row["repetition"])
                row["t"] = float(row["t"]) if row["t"] not in ("", None) else None
                row["params"] = with_units(current_params(json.loads(row["params"])), units.get(row["workload"], {}))
                row["workload"] = current_name(row["workload"])  # runs made before a rename compare with today's
                out.append(row)
        return out


    def write_parquet(self) -> Path | None:
        """results.parquet: results.csv's rows with typed columns and one column per parameter
        (a parameter named like a base column gets a `param_` prefix); None without results."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        if not self.table.exists():
            return None
        with open(self.table, newline="") as fh:
            raw = list(csv.DictReader(fh))
        params = [current_params(json.loads(r["params"])) for r in raw]
        columns: dict[str, Any] = {
            "workload": pa.array([current_name(r["workload"]) for r in raw], pa.string()),
            "metric": pa.array([r["metric"] for r in raw], pa.string()),
            "value": pa.array([float(r["value"]) for r in raw], pa.float64()),
            "unit": pa.array([r["unit"] for r in raw], pa.string()),
            "repetition": pa.array([int(r["repetition"]) for r in raw], pa.int64()),
            "t": pa.array([float(r["t"]) if r["t"] not in ("", None) else None for r in raw], pa.float64()),
            "step": pa.array([r.get("step") or None for r in raw], pa.string()),
        }
        # Each column's unit in its field metadata (`unit`), where it has one: the value's is
        # its row's `unit`, one per metric (schema metadata `metric_units`).
        units = {"t": "s"}
        for workload_units in (self.read_json("units.json") or {}).values():
            units.update(workload_units)
        for key in sorted({k for p in params for k in p}):
            name = f"param_{key}" if key in columns else key
            columns[name] = _typed_column([p.get(key) for p in params])
            if key in units:
                units[name] = units[key]
        fields = [pa.field(name, col.type, metadata={"unit": units[name]} if name in units else None)
                  for name, col in columns.items()]
        metric_units = {r["metric"]: r["unit"] for r in raw}
        schema = pa.schema(fields, metadata={"metric_units": json.dumps(metric_units, sort_keys=True)})
        path = self.path / "results.parquet"
        pq.write_table(pa.table(list(columns.values()), schema=schema), path)
        return path


def _typed_column(values: list[Any]) -> Any:
    """One parameter's values as the narrowest Arrow type that holds them all (null where absent)."""
    import pyarrow as pa
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return pa.array(values, pa.bool_())
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pa.array(values, pa.int64())
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return pa.array([None if v is None else float(v) for v in values], pa.float64())
    return pa.array([None if v is None else (v if isinstance(v, str) else json.dumps(v)) for v in values], pa.string())


def with_units(params: dict[str, Any], units: dict[str, str]) -> dict[str, Any]:
    return {k: PARAM_TYPES[units[k]](v) if units.get(k) in PARAM_TYPES and isinstance(v, int) else v
            for k, v in params.items()}


def list_runs(root: Path | None = None) -> list[dict[str, Any]]:
    root = root or runs_root()
    out = []
    for path in sorted(root.glob("*/provenance.json")) if root.is_dir() else []:
        run = RunDir(path.parent)
        prov = run.read_json("provenance.json")
        start, end = prov.get("start"), prov.get("end")
        out.append({
            "id": str(run.path), "experiment": prov.get("experiment", "-"), "cluster": prov.get("cluster", "-"),
            "started": time.strftime("%Y-%m-%d %H:%M", time.localtime(start)) if start else "?",
            "duration": f"{end - start:.0f}" if start and end else "-",
            "rows": len(run.rows()), "failures": len(prov.get("failures", [])), "state": run_state(prov),
        })
    return out


def run_state(prov: dict[str, Any]) -> str:
    """How a run ended, in the words `dfslab runs` prints: interrupted (Ctrl-C, SIGTERM), running or
    killed (no end recorded: it is running, or it was killed with no chance to say so), or its
    failures and steps not run as asked, else ok."""
    if prov.get("interrupted"):
        return "interrupted"
    if not prov.get("end"):
        return "running, or killed"
    said = [f"{len(prov[k])} {what}" for k, what in (("failures", "failed"), ("not_as_asked", "not as asked"))
            if prov.get(k)]
    return ", ".join(said) or "ok"
