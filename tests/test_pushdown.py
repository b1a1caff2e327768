"""Query pushdown on a real cluster: cls_dfslab runs inside the OSDs; its answers equal the
client-side ones and DuckDB's for random queries; malformed input never takes an OSD down;
the class never changes the data it reads."""

import base64
import csv
import errno
import json
import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings

from conftest import cluster_up, dfslab, run_against, small_spec, status_json, write_spec
from dfslab import cluster
from dfslab.pushdown import WORKER, QueryWorker
from dfslab.pushdown.columnar import encode
from dfslab.pushdown.dataset import synthetic
from dfslab.pushdown.query import encode_request, parse
from pushdown_sql import arrow_table, duck, queries, same_rows

pytestmark = pytest.mark.cluster
NAME = "t-push"
ROWS, OBJECTS, SEED = 20_000, 6, 7
TABLE = arrow_table(ROWS, OBJECTS, SEED)


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    cluster_up(write_spec(tmp_path_factory.mktemp("p"), small_spec(NAME, cephfs=False)), NAME)
    try:  # a setup that raises is never torn down: the cluster goes here whatever happens
        res = dfslab("data", "load", NAME, "--rows", str(ROWS), "--objects", str(OBJECTS), "--seed", str(SEED))
        assert f"{ROWS} rows in {OBJECTS} objects" in res.stderr
        argv, env = cluster.client_command(NAME, WORKER)
        with QueryWorker.start(argv, env) as eng:
            yield eng
    finally:
        cluster.down(NAME, missing_ok=True)
    assert cluster.leftovers(NAME) == []


def both(engine: QueryWorker, sql: str) -> tuple[dict, dict]:
    return engine.call(op="query", sql=sql, where="storage"), engine.call(op="query", sql=sql, where="client")


def test_cli_query_gives_the_same_answer_in_both_places(engine):
    sql = "SELECT cat, count(*), avg(a) FROM ds WHERE c < 0.1 GROUP BY cat"
    storage = json.loads(dfslab("query", NAME, sql, "--where", "storage", "--json").stdout)
    client = json.loads(dfslab("query", NAME, sql, "--where", "client", "--json").stdout)
    assert same_rows(storage["rows"], client["rows"]) and same_rows(storage["rows"], duck(TABLE, sql))
    assert storage["bytes_moved"] < client["bytes_moved"] / 20  # only partial aggregates crossed the link
    assert client["bytes_moved"] == client["dataset_bytes"]
    text = dfslab("query", NAME, "SELECT id, a FROM ds WHERE c < 0.01", "--limit", "3").stderr
    assert "row(s)" in text and "moved" in text and "where=storage" in text


def test_bad_queries_fail_clearly(engine):
    res = dfslab("query", NAME, "SELECT nope FROM ds", check=False)
    assert res.returncode == 2 and "unknown column 'nope'" in res.stderr
    res = dfslab("query", NAME, "SELECT a FROM missing", check=False)
    assert res.returncode == 2 and "no dataset 'missing'" in res.stderr


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(sql=queries())
def test_storage_answers_equal_client_answers_and_duckdb(engine, sql):
    storage, client = both(engine, sql)
    assert same_rows(storage["rows"], client["rows"]), sql
    assert same_rows(storage["rows"], duck(TABLE, sql)), sql


@pytest.mark.parametrize("sql", [
    "SELECT count(*), sum(a), min(b), max(qty), avg(c) FROM ds WHERE c < 0",   # nothing matches
    "SELECT cat, count(*) FROM ds WHERE cat = 'none-such' GROUP BY cat",         # no group
    "SELECT * FROM ds WHERE c >= 0",                                            # every row, every column
    "SELECT id FROM ds WHERE id = 12345",
])
def test_edge_cases(engine, sql):
    storage, client = both(engine, sql)
    assert same_rows(storage["rows"], client["rows"]) and same_rows(storage["rows"], duck(TABLE, sql)), sql


def object_digests(engine: QueryWorker) -> dict[str, str]:
    digests = engine.call(op="digests", dataset="ds")
    assert len(digests) == OBJECTS
    return digests


def mutations(rng: random.Random, valid: bytes, n: int) -> list[bytes]:
    out = []
    for _ in range(n):
        b = bytearray(valid)
        kind = rng.randrange(5)
        if kind == 0:
            b = bytearray(rng.randbytes(rng.randrange(0, 64)))
        elif kind == 1:
            b = b[:rng.randrange(len(b))]
        elif kind == 2:
            for _ in range(rng.randrange(1, 6)):
                b[rng.randrange(len(b))] = rng.randrange(256)
        elif kind == 3:
            b += rng.randbytes(rng.randrange(1, 40))
        else:  # a huge count or length field
            pos = rng.randrange(max(1, len(b) - 4))
            b[pos:pos + 4] = struct.pack("<I", rng.choice([0xFFFFFFFF, 0x7FFFFFFF, 1 << 28, 255]))
        out.append(bytes(b))
    return out


def test_fuzzing_never_takes_an_osd_down_and_never_changes_data(engine):
    rng = random.Random(1234)
    before = object_digests(engine)
    # Malformed objects beside the real ones: random bytes, and valid objects with bytes flipped.
    good = encode(synthetic(200, 3))
    bad_objects = {f"fuzz.{i}": blob for i, blob in enumerate(mutations(rng, good, 40))}
    for name, blob in bad_objects.items():
        engine.call(op="put", object=name, data=base64.b64encode(blob).decode())
    targets = [(f"ds.ds.{k:05d}", None) for k in range(OBJECTS)] + [(n, len(b)) for n, b in bad_objects.items()]
    requests = [encode_request(parse(sql), 0) for sql in (
        "SELECT a, cat FROM ds WHERE c < 0.5 AND cat = 'beta'",
        "SELECT cat, count(*), sum(a), min(qty) FROM ds WHERE qty > 10 GROUP BY cat")]
    calls = []
    for _ in range(3000):
        obj, size = rng.choice(targets)
        size = size or 1 << 20
        req = bytearray(rng.choice(requests))
        req[4:8] = struct.pack("<I", size)  # the object length the class reads
        payload = rng.choice([bytes(req)] + mutations(rng, bytes(req), 1))
        calls.append([obj, base64.b64encode(payload).decode(), 1 << 22])
    codes = []
    for i in range(0, len(calls), 500):
        codes += engine.call(op="exec", calls=calls[i:i + 500])["codes"]
    assert len(codes) == 3000 and all(isinstance(c, int) for c in codes)
    # rados_exec returns the answer's length on success, -errno when the class refused the call.
    assert any(c < 0 for c in codes) and any(c > 0 for c in codes)  # both refused and answered calls happened
    osds = [d for d in status_json(NAME)["daemons"] if d["name"].startswith("osd.")]
    assert len(osds) == 3 and all(d["alive"] for d in osds)
    dump = json.loads(dfslab("exec", NAME, "--", "ceph", "osd", "dump", "--format", "json").stdout)
    assert all(o["up"] == 1 for o in dump["osds"])
    assert object_digests(engine) == before  # read-only: the dataset is byte-for-byte what it was
    sql = "SELECT cat, count(*), avg(a) FROM ds WHERE c < 0.3 GROUP BY cat"
    assert same_rows(engine.call(op="query", sql=sql, where="storage")["rows"], duck(TABLE, sql))


@pytest.mark.parametrize("sql", [
    "SELECT id, count(*), sum(a), min(b), max(c) FROM ds GROUP BY id",    # one group per row
    "SELECT a, a, b, cat, cat, id, a FROM ds WHERE c < 0.5",             # repeated projections
    "SELECT c, count(*) FROM ds GROUP BY c",
])
def test_big_answers_are_sliced_and_still_equal(engine, sql):
    """With answers capped at 16 KiB per call, every object is asked for in slices; the answer
    is the client's and DuckDB's all the same."""
    sliced = engine.call(op="query", sql=sql, where="storage", max_reply=16 << 10)
    whole = engine.call(op="query", sql=sql, where="storage")
    client = engine.call(op="query", sql=sql, where="client")
    assert sliced["nrows"] == whole["nrows"] == client["nrows"] == len(duck(TABLE, sql))
    assert same_rows(sliced["rows"], client["rows"]) and same_rows(whole["rows"], duck(TABLE, sql)), sql
    assert sliced["bytes_moved"] > whole["bytes_moved"]  # more calls, more request bytes


def test_the_class_refuses_what_it_would_have_to_allocate_beyond_its_bound(engine):
    """GROUP BY id with 255 aggregates over 20,000 rows needs ~160 MB of groups: -E2BIG, the
    OSD stays up; a slice of the same object is answered."""
    blob = encode(synthetic(20_000, 5))
    engine.call(op="put", object="big.0", data=base64.b64encode(blob).decode())
    query = parse("SELECT id, " + ", ".join(["sum(a)"] * 255) + " FROM ds GROUP BY id")
    calls = [["big.0", base64.b64encode(encode_request(query, len(blob))).decode(), 1 << 22],
             ["big.0", base64.b64encode(encode_request(query, len(blob), (0, 100))).decode(), 1 << 22]]
    codes = engine.call(op="exec", calls=calls)["codes"]
    assert codes[0] == -errno.E2BIG and codes[1] > 0, codes
    assert all(d["alive"] for d in status_json(NAME)["daemons"] if d["name"].startswith("osd."))


def test_limit_reaches_the_engine_and_names_are_checked_at_load(engine):
    res = json.loads(dfslab("query", NAME, "SELECT id FROM ds", "--limit", "5", "--json").stdout)
    assert len(res["rows"]) == 5 and res["nrows"] == ROWS
    res = dfslab("data", "load", NAME, "--rows", "10", "--objects", "1", "--name", "my-ds", check=False)
    assert res.returncode == 2 and "dataset name 'my-ds'" in res.stderr


def test_the_workload_records_the_clients_cpu_and_the_osds(engine, tmp_path):
    """SkyhookDM's measure beside time and bytes: each pushdown row has the client's CPU seconds
    and the OSDs' for its query; in the OSDs the client does a fraction of the work."""
    write_spec(tmp_path, small_spec(NAME, cephfs=False))
    exp = tmp_path / "push.yaml"
    exp.write_text("name: t-push-cpu\ncluster: spec.yaml\nrepetitions: 2\nbaselines: {network: false, disk: false}\n"
                   "workloads:\n  - {type: pushdown, query: aggregate, selectivity: 1, where: [storage, client], "
                   "rows: 200000, objects: 4}\n")
    run, _ = run_against(exp, NAME)
    cpu: dict[tuple[str, str], list[float]] = {}
    for row in csv.DictReader((run / "results.csv").open()):
        if row["metric"] in ("client_cpu", "osd_cpu", "osd_disk_read"):
            cpu.setdefault((json.loads(row["params"])["where"], row["metric"]), []).append(float(row["value"]))
    assert all(len(cpu.get((where, metric), [])) == 2 for where in ("storage", "client")
               for metric in ("client_cpu", "osd_cpu")), cpu
    assert all(len(cpu.get((where, "osd_disk_read"), [])) == 2 for where in ("storage", "client")), cpu
    assert all(v > 0 for (_, metric), values in cpu.items() if metric != "osd_disk_read" for v in values), cpu  # the OSDs read 10 MB either way
    assert max(cpu[("storage", "client_cpu")]) < min(cpu[("client", "client_cpu")]), cpu
    raw = run / "raw" / "pushdown-aggregate-1-storage-r0.txt"
    assert "client CPU" in raw.read_text() and "OSDs' CPU" in raw.read_text() and "OSDs' disk reads" in raw.read_text()
