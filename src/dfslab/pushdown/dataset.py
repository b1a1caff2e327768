"""Datasets of RADOS objects: `ds.<name>.<k>` objects of one row group each plus a small
manifest object `ds.<name>.manifest` (JSON: schema, objects with their sizes and rows).

Synthetic data is seeded and has known distributions, so a selectivity is a predicate:
`c < 0.01` selects 1 % of the rows (c is uniform on [0, 1)).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from .columnar import TYPE_NAMES, Columns, column_type, encode, nrows

CATEGORIES = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
SYNTHETIC_SCHEMA = {
    "id": "int64: row number",
    "a": "float64: uniform [0, 1000)",
    "b": "float64: normal (mean 0, sd 1)",
    "c": "float64: uniform [0, 1): `c < s` selects s of the rows",
    "qty": "int64: uniform 0..100",
    "cat": f"string: one of {len(CATEGORIES)} categories, uniform",
}


def synthetic(rows: int, seed: int = 0, start: int = 0) -> Columns:
    rng = np.random.default_rng([seed, start])
    return {"id": np.arange(start, start + rows, dtype=np.int64),
            "a": rng.uniform(0, 1000, rows),
            "b": rng.normal(0, 1, rows),
            "c": rng.uniform(0, 1, rows),
            "qty": rng.integers(0, 101, rows, dtype=np.int64),
            "cat": [CATEGORIES[i] for i in rng.integers(0, len(CATEGORIES), rows)]}


def synthetic_chunks(rows: int, objects: int, seed: int = 0):
    """The row groups of a synthetic dataset: `objects` near-equal chunks of `rows`."""
    base, extra = divmod(rows, objects)
    start = 0
    for k in range(objects):
        n = base + (1 if k < extra else 0)
        yield synthetic(n, seed, start)
        start += n


def file_chunks(path: str, objects: int):
    """Row groups from a Parquet or CSV file (pyarrow), split into `objects` chunks."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq
    table = pq.read_table(path) if path.endswith((".parquet", ".pq")) else pacsv.read_csv(path)
    if table.num_rows == 0:
        raise ValueError(f"{path} has no rows")
    base, extra = divmod(table.num_rows, objects)
    start = 0
    for k in range(objects):
        n = base + (1 if k < extra else 0)
        chunk = table.slice(start, n)
        cols: Columns = {}
        for name in chunk.column_names:
            values = chunk.column(name)
            if values.null_count:
                raise ValueError(f"column {name!r} has nulls; dfslab's format has none (fill or drop them first)")
            arr = values.to_numpy(zero_copy_only=False)
            cols[name] = arr if arr.dtype.kind in "fiu" else [str(v) for v in arr]
        yield cols
        start += n


def object_name(dataset: str, k: int) -> str:
    return f"ds.{dataset}.{k:05d}"


def manifest_name(dataset: str) -> str:
    return f"ds.{dataset}.manifest"


def load(ioctx, dataset: str, chunks, source: dict[str, Any]) -> dict[str, Any]:
    """Write every chunk as an object, then the manifest (last: a dataset without one is incomplete)."""
    objects, schema = [], None
    for k, cols in enumerate(chunks):
        blob = encode(cols)
        kinds = {n: column_type(v) for n, v in cols.items()}
        if schema is None:
            schema = kinds
        elif kinds != schema:
            raise ValueError(f"row group {k} has columns {kinds}, the first had {schema}")
        name = object_name(dataset, k)
        ioctx.write_full(name, blob)
        objects.append({"name": name, "size": len(blob), "rows": nrows(cols)})
    manifest = {"dataset": dataset, "schema": schema, "types": {n: TYPE_NAMES[t] for n, t in (schema or {}).items()},
                "objects": objects, "rows": sum(o["rows"] for o in objects),
                "bytes": sum(o["size"] for o in objects), "source": source}
    ioctx.write_full(manifest_name(dataset), json.dumps(manifest).encode())
    return manifest


def read_manifest(ioctx, dataset: str) -> dict[str, Any]:
    import rados
    try:
        raw = ioctx.read(manifest_name(dataset), length=64 << 20)
    except rados.ObjectNotFound:
        raise LookupError(f"no dataset {dataset!r}; load one with `dfslab data load CLUSTER --name {dataset}`") from None
    return json.loads(raw)
