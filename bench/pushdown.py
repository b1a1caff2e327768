#!/usr/bin/env python3
"""Query pushdown vs client-side processing, one run on a 3-OSD cluster with every link
capped at 1 Gbit/s (examples/pushdown.yaml, the dataset in the OSDs' caches): median time,
bytes over the client link, the client's CPU seconds, the OSDs' and what they read from their
disk per selectivity, and the targets: at 1 % storage >= 10x
faster, <= 2 % of the bytes and >= 10x less client CPU; at 100 % no more than 10 % slower.

    sudo .venv/bin/python bench/pushdown.py [--experiment examples/pushdown.yaml]
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from machine import describe

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--experiment", default=str(REPO / "examples" / "pushdown.yaml"))
    args = ap.parse_args()
    print(describe())
    res = subprocess.run([sys.executable, "-m", "dfslab.cli", "run", args.experiment], cwd=REPO,
                         capture_output=True, text=True)
    if "report: " not in res.stdout:
        print(res.stderr[-3000:], file=sys.stderr)
        return 1
    run = Path(res.stdout.strip().split("report: ")[-1]).parent
    cells: dict[tuple, list[float]] = defaultdict(list)
    for row in csv.DictReader((run / "results.csv").open()):
        if row["workload"] == "pushdown" and row["metric"] in ("time", "bytes_moved", "client_cpu", "osd_cpu", "osd_disk_read"):
            p = json.loads(row["params"])
            cells[(p["query"], p["selectivity"], p["where"], row["metric"])].append(float(row["value"]))
    med = {k: statistics.median(v) for k, v in cells.items()}
    ok = True
    print(f"run: {run}")
    print(f"{'query':10} {'sel %':>6} {'storage s':>10} {'client s':>10} {'speedup':>8} "
          f"{'storage MB':>11} {'client MB':>10} {'bytes %':>8} {'client CPU s (storage/client)':>30} {'CPU ratio':>9} "
          f"{'OSD CPU s (storage/client)':>27} {'OSD disk MB (storage/client)':>29}")
    for query in ("select", "aggregate"):
        for sel in sorted({k[1] for k in med if k[0] == query}):
            ts, tc = med[(query, sel, "storage", "time")], med[(query, sel, "client", "time")]
            bs, bc = med[(query, sel, "storage", "bytes_moved")], med[(query, sel, "client", "bytes_moved")]
            cs, cc = med[(query, sel, "storage", "client_cpu")], med[(query, sel, "client", "client_cpu")]
            os_, oc = med.get((query, sel, "storage", "osd_cpu"), float("nan")), med.get((query, sel, "client", "osd_cpu"), float("nan"))
            ds, dc = (med.get((query, sel, side, "osd_disk_read"), float("nan")) for side in ("storage", "client"))
            print(f"{query:10} {sel:6g} {ts:10.3f} {tc:10.3f} {tc / ts:8.2f} {bs:11.2f} {bc:10.2f} {100 * bs / bc:7.2f}% "
                  f"{cs:14.3f} / {cc:<13.3f} {cc / cs:9.1f} {os_:12.2f} / {oc:<12.2f} {ds:13.1f} / {dc:<13.1f}")
            if sel == 1:
                ok &= tc / ts >= 10 and bs / bc <= 0.02 and cc / cs >= 10
            if sel == 100:
                ok &= ts <= 1.10 * tc
    print("targets (1 %: >= 10x faster, <= 2 % of bytes, >= 10x less client CPU; 100 %: <= 10 % slower):",
          "met" if ok else "NOT met")
    print("OSD disk MB: what the OSDs read from their disk per query (median); 0: their caches held the dataset")
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
