"""results.parquet: the CSV's rows, typed, one column per parameter."""

from __future__ import annotations

import csv

import pyarrow as pa
import pyarrow.parquet as pq

from dfslab.results import RunDir
from dfslab.workloads import Measurement


def test_parquet_has_the_csv_rows_with_typed_parameter_columns(tmp_path):
    run = RunDir.create("unit", tmp_path)
    run.add([Measurement("fio", "bandwidth", 120.5, "MB/s", {"bs": 4096, "target": "rbd", "direct": False}, 0),
             Measurement("fio", "bandwidth_sample", 118.0, "MB/s", {"bs": 4096, "target": "rbd", "direct": False}, 0, t=3),
             Measurement("radosbench", "bandwidth", 300.0, "MB/s", {"mode": "seq", "threads": 16, "unit": "x"}, 1),
             Measurement("iozone", "bandwidth", 80.0, "MB/s", {"file_size": 2**20, "ratio": 0.5}, 0),
             Measurement("iozone", "bandwidth", 81.0, "MB/s", {"file_size": 2**21, "ratio": 1}, 0)])
    table = pq.read_table(run.write_parquet())
    with open(run.table) as fh:
        assert table.num_rows == len(list(csv.DictReader(fh))) == 5
    types = dict(zip(table.schema.names, table.schema.types))
    assert types["bs"] == pa.int64() and types["target"] == pa.string() and types["direct"] == pa.bool_()
    assert types["value"] == pa.float64() and types["repetition"] == pa.int64() and types["ratio"] == pa.float64()
    assert "param_unit" in types  # a parameter named like a base column keeps both
    rows = table.to_pylist()
    assert rows[0]["bs"] == 4096 and rows[2]["bs"] is None and rows[1]["t"] == 3.0 and rows[0]["t"] is None
    assert {r["workload"] for r in rows} == {"fio", "radosbench", "filegrid"}  # former names read as today's
