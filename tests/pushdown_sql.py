"""Shared by the pushdown tests: random queries (hypothesis) over the synthetic schema, the
same data as a pyarrow table, and comparing answers with DuckDB's, an independent engine."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

from dfslab.pushdown.dataset import CATEGORIES, synthetic_chunks

NUMERIC = ["id", "a", "b", "c", "qty"]
INTS = {"id", "qty"}


def arrow_table(rows: int, objects: int, seed: int) -> pa.Table:
    chunks = list(synthetic_chunks(rows, objects, seed))
    return pa.table({name: pa.array(np.concatenate([np.asarray(c[name]) for c in chunks]) if name != "cat"
                                    else [v for c in chunks for v in c[name]])
                     for name in chunks[0]})


def _predicate(draw) -> str:
    if draw(st.booleans()) and draw(st.booleans()):
        op = draw(st.sampled_from(["=", "!="]))
        value = draw(st.sampled_from(CATEGORIES + ["none-such"]))
        return f"cat {op} '{value}'"
    col = draw(st.sampled_from(NUMERIC))
    op = draw(st.sampled_from(["<", "<=", ">", ">=", "=", "!="]))
    if col in INTS:
        value = str(draw(st.integers(-5, 120)))
    elif col == "c":
        value = repr(draw(st.sampled_from([0.0, 0.001, 0.01, 0.1, 0.5, 1.0, 2.0])))
    elif col == "a":
        value = repr(draw(st.floats(-10, 1010, allow_nan=False)))
    else:
        value = repr(draw(st.floats(-4, 4, allow_nan=False)))
    return f"{col} {op} {value}"


@st.composite
def queries(draw) -> str:
    where = [_predicate(draw) for _ in range(draw(st.integers(0, 3)))]
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    if draw(st.booleans()):
        # Repeated projections too (SELECT a, a): the class answers each copy.
        cols = draw(st.lists(st.sampled_from(NUMERIC + ["cat"]), min_size=1, max_size=5))
        return f"SELECT {', '.join(cols)} FROM ds{clause}"
    aggs = []
    for _ in range(draw(st.integers(1, 4))):
        func = draw(st.sampled_from(["count", "sum", "min", "max", "avg"]))
        col = "*" if func == "count" and draw(st.booleans()) else draw(st.sampled_from(NUMERIC))
        aggs.append(f"{func}({col})")
    group = draw(st.sampled_from([None, *NUMERIC, "cat"]))  # any column, also one key per row (id, a, c)
    select = ([group] if group else []) + aggs
    return f"SELECT {', '.join(select)} FROM ds{clause}" + (f" GROUP BY {group}" if group else "")


def duck(table: pa.Table, sql: str) -> list[tuple]:
    con = duckdb.connect()
    con.register("ds", table)
    return [tuple(r) for r in con.execute(sql).fetchall()]


def _close(x, y) -> bool:
    if x is None or y is None:
        return x is None and y is None
    if isinstance(x, str) or isinstance(y, str):
        return x == y
    if math.isnan(float(x)) or math.isnan(float(y)):
        return math.isnan(float(x)) and math.isnan(float(y))
    return math.isclose(float(x), float(y), rel_tol=1e-9, abs_tol=1e-6)


def _key(row) -> tuple:
    def part(v):
        nan = isinstance(v, float) and math.isnan(v)
        return (v is None, nan, str(type(v)), 0 if v is None or nan else v)
    return tuple(part(v) for v in row)


def same_rows(got: list, want: list) -> bool:
    got, want = sorted((tuple(r) for r in got), key=_key), sorted((tuple(r) for r in want), key=_key)
    return len(got) == len(want) and all(len(g) == len(w) and all(_close(a, b) for a, b in zip(g, w))
                                          for g, w in zip(got, want))
