"""Pushdown without a cluster: the columnar format, the query language's errors, and the
client-side path (per-object work + merge) against DuckDB on the same data."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from dfslab.pushdown.columnar import FormatError, decode, encode
from dfslab.pushdown.dataset import synthetic_chunks
from dfslab.pushdown.query import QueryError, bind, encode_request, execute_local, merge, parse
from pushdown_sql import arrow_table, duck, queries, same_rows

ROWS, OBJECTS, SEED = 3000, 4, 7
SCHEMA = {"id": 2, "a": 1, "b": 1, "c": 1, "qty": 2, "cat": 3}


def test_columnar_round_trip_keeps_every_value():
    cols = {"x": np.array([1.5, -2.0, np.inf]), "n": np.array([1, -2, 2**62], dtype=np.int64), "s": ["", "é", "abc"]}
    out = decode(encode(cols))
    assert out["x"].tolist() == [1.5, -2.0, np.inf] and out["n"].tolist() == [1, -2, 2**62] and list(out["s"]) == ["", "é", "abc"]
    empty = decode(encode({"x": np.array([], dtype=float), "s": []}))
    assert len(empty["x"]) == 0 and list(empty["s"]) == []


def test_malformed_objects_are_refused():
    blob = encode({"x": np.arange(4.0)})
    with pytest.raises(FormatError):
        decode(b"XXXX" + blob[4:])
    with pytest.raises(FormatError):
        decode(blob[:-8])  # column data cut short


@pytest.mark.parametrize("sql,hint", [
    ("SELECT a FROM", "ends where"),
    ("SELECT a FROM ds WHERE a ~ 3", "cannot read"),
    ("SELECT a FROM ds WHERE a < 3 OR b > 1", "unexpected 'OR'"),
    ("SELECT median(a) FROM ds", "unknown function 'median'"),
    ("SELECT a, count(*) FROM ds", "must be the GROUP BY column"),
    ("SELECT a FROM ds GROUP BY a", "needs an aggregate"),
    ("SELECT sum(*) FROM ds", "sum(*) is not defined"),
])
def test_bad_queries_say_what_is_wrong(sql, hint):
    with pytest.raises(QueryError, match=None) as exc:
        parse(sql)
    assert hint in str(exc.value)


@pytest.mark.parametrize("sql,hint", [
    ("SELECT nope FROM ds", "unknown column 'nope'; columns: id, a, b, c, qty, cat"),
    ("SELECT a FROM ds WHERE cat < 'b'", "only = and !="),
    ("SELECT a FROM ds WHERE cat = 3", "compare it with a quoted string"),
    ("SELECT sum(cat) FROM ds", "only count works on strings"),
])
def test_queries_are_checked_against_the_schema(sql, hint):
    with pytest.raises(QueryError) as exc:
        bind(parse(sql), SCHEMA)
    assert hint in str(exc.value)


def test_request_encoding_is_what_the_class_parses():
    req = encode_request(parse("SELECT a FROM ds WHERE qty >= 5 AND cat = 'beta' AND c < 0.5"), 1234)
    assert req[:4] == b"DFQ1" and int.from_bytes(req[4:8], "little") == 1234 and req[8] == 3


TABLE = arrow_table(ROWS, OBJECTS, SEED)
CHUNKS = list(synthetic_chunks(ROWS, OBJECTS, SEED))


def client_answer(sql: str) -> list[tuple]:
    query = parse(sql)
    bind(query, SCHEMA)
    return merge(query, [execute_local(decode(encode(c)), query) for c in CHUNKS], SCHEMA).rows


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries())
def test_client_side_answers_equal_duckdb(sql):
    assert same_rows(client_answer(sql), duck(TABLE, sql)), sql


@pytest.mark.parametrize("sql", [
    "SELECT count(*), sum(a), min(b), max(qty), avg(c) FROM ds WHERE c < 0",       # nothing matches: count 0, rest NULL
    "SELECT cat, count(*) FROM ds WHERE c < 0 GROUP BY cat",                        # no groups at all
    "SELECT * FROM ds WHERE c >= 0",                                                # everything
    "SELECT cat, count(*), avg(a) FROM ds GROUP BY cat",
])
def test_edge_cases_equal_duckdb(sql):
    assert same_rows(client_answer(sql), duck(TABLE, sql)), sql


def test_integer_literals_beyond_64_bits_are_refused():
    for big in (str(1 << 63), str(-(1 << 63) - 1), "99999999999999999999999"):
        with pytest.raises(QueryError, match="64 bits"):
            parse(f"SELECT a FROM ds WHERE id < {big}")
    parse(f"SELECT a FROM ds WHERE id < {(1 << 63) - 1}")  # the largest int64 is fine
    parse("SELECT a FROM ds WHERE id < 1e20")  # as a float it is a float comparison


@pytest.mark.parametrize("name", ["my-ds", "1ds", "select", "FROM", "", "a b", "x" * 65, "é"])
def test_dataset_names_queries_cannot_name_are_refused(name):
    from dfslab.pushdown.query import check_dataset_name
    with pytest.raises(QueryError, match="dataset name"):
        check_dataset_name(name)


def test_nan_keys_form_one_group_across_objects_as_in_duckdb():
    import pyarrow as pa
    pieces = [{"k": np.array([np.nan, 1.0, np.nan]), "v": np.array([1.0, 2.0, 3.0])},
              {"k": np.array([np.nan, 2.0]), "v": np.array([4.0, 5.0])}]
    sql = "SELECT k, count(*), sum(v) FROM ds GROUP BY k"
    query = parse(sql)
    schema = {"k": 1, "v": 1}
    bind(query, schema)
    got = merge(query, [execute_local(decode(encode(p)), query) for p in pieces], schema).rows
    table = pa.table({"k": np.concatenate([p["k"] for p in pieces]), "v": np.concatenate([p["v"] for p in pieces])})
    want = duck(table, sql)
    assert len(got) == 3 and same_rows(got, want), (got, want)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries())
def test_reply_bound_holds_for_every_answer(sql):
    """The buffer the engine gives the class is never too small: the class's answer for an
    object (here the same answer encoded on the client) fits in reply_bound."""
    from dfslab.pushdown.columnar import nrows
    from dfslab.pushdown.query import reply_bound
    query = parse(sql)
    bind(query, SCHEMA)
    for chunk in CHUNKS:
        blob = encode(chunk)
        answer = execute_local(decode(blob), query)
        if query.aggregate:
            size = 9 + sum(1 + (4 + len(k.encode()) if isinstance(k, str) else 8 if k is not None else 0)
                           + 32 * len(query.aggregates) for k in answer)
        else:
            names = query.columns or list(SCHEMA)
            size = len(encode({f"{n}#{i}": answer[n] for i, n in enumerate(names)})) - sum(len(f"#{i}") for i in range(len(names)))
        assert size <= reply_bound(query, SCHEMA, nrows(chunk), len(blob)), sql


def test_a_run_that_ends_forgets_the_datasets_it_loaded(tmp_path):
    """The workload object outlives a run; the next run of a sweep has a fresh cluster, so its
    first pushdown step loads the dataset again (its estimate counts the load)."""
    from dfslab.workloads import Runner
    from dfslab.workloads.pushdown import Pushdown, PushdownParams
    pushdown, params = Pushdown(), PushdownParams(rows=1_000_000, objects=4)
    before = pushdown.estimate(params)
    pushdown.loaded.add((params.rows, params.objects))
    assert pushdown.estimate(params) < before
    pushdown.finish(Runner(lambda node, argv: argv, {}, tmp_path))
    assert pushdown.estimate(params) == before
