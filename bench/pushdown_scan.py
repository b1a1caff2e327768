#!/usr/bin/env python3
"""The object class's scan outside Ceph, per core: cls_dfslab.cc built with a stand-in for the
SDK calls it makes (native/cls_dfslab/scan_bench.cc; cls_read copies the object as the OSD's
does), run on one row group of examples/pushdown.yaml's dataset (125,000 rows, about 6 MB) for
each query and selectivity bench/pushdown.py runs. Prints GB/s of object scanned per core and the
answer's size. The end-to-end figure (BlueStore, network, client) is bench/pushdown.py's.

    .venv/bin/python bench/pushdown_scan.py [--rows 125000] [--iterations 50]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from dfslab.pushdown.columnar import column_type, encode
from dfslab.pushdown.dataset import synthetic
from dfslab.pushdown.query import bind, encode_request, parse
from dfslab.workloads.pushdown import QUERIES
from machine import describe

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build" / "cls"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=125_000, help="rows in the object (4M rows / 32 objects)")
    ap.add_argument("--iterations", type=int, default=50)
    args = ap.parse_args()
    print(describe())
    subprocess.run(["make", "-s", "-C", str(REPO / "native" / "cls_dfslab"), f"OUT={BUILD}", "bench"], check=True)
    columns = synthetic(args.rows, seed=1)
    schema = {name: column_type(values) for name, values in columns.items()}
    with tempfile.TemporaryDirectory(prefix="scan-bench-") as tmp:
        obj = Path(tmp) / "object"
        obj.write_bytes(encode(columns))
        size = obj.stat().st_size
        print(f"object: {args.rows} rows, {size / 1e6:.2f} MB")
        print(f"{'query':10} {'sel %':>6} {'ms per call':>12} {'GB/s per core':>14} {'answer bytes':>13}")
        for name in ("select", "aggregate"):
            for sel in (1, 10, 100):
                query = parse(QUERIES[name].format(ds="ds", s=sel / 100))
                bind(query, schema)
                req = Path(tmp) / "request"
                req.write_bytes(encode_request(query, size))
                out = subprocess.run([str(BUILD / "scan_bench"), str(obj), str(req), str(args.iterations)],
                                     capture_output=True, text=True, check=True).stdout.split()
                seconds, answer = float(out[0]), int(out[1])
                print(f"{name:10} {sel:6g} {seconds * 1e3:12.2f} {size / seconds / 1e9:14.2f} {answer:13d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
